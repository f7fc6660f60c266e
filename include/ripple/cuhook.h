/* Explicit unit boundaries for engines that want to say them (libripple-cuhook.so).
 *
 * libripple-cuhook.so, preloaded into a CUDA process (ripple-run does it), finds unit
 * boundaries by itself (NVTX ranges, a recorded kernel-sequence profile, host<->device
 * copies); an engine may instead mark them here. The functions are weak: a program
 * built with this header runs unchanged without the interposer, where they are NULL:
 *
 *   if (ripple_cuhook_unit_begin) ripple_cuhook_unit_begin("layers.3", 0);
 *
 * Documentation/cuhook.md describes the interposer.
 */
#ifndef RIPPLE_CUHOOK_H
#define RIPPLE_CUHOOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of the interposer: ONE list generates this struct, the interposer's own
 * atomic counters (cuhooks/counters.h) and the stats file's JSON keys, so they cannot
 * drift apart. X(name, doc). The struct only grows at its end: a counter is added at the
 * bottom of the list, never between (an older caller's size then still works). */
#define RIPPLE_CUHOOK_COUNTERS(X)                                                               \
  X(launches, "kernel and graph launches seen")                                                 \
  X(copies, "copies and sets seen")                                                             \
  X(h2d_bytes, "host-to-device bytes")                                                          \
  X(d2h_bytes, "device-to-host bytes")                                                          \
  X(units, "unit boundaries found (all sources)")                                               \
  X(units_nvtx, "... of them NVTX ranges")                                                      \
  X(units_profile, "... kernel-sequence profile matches")                                       \
  X(units_copy, "... bare host<->device copies")                                                \
  X(units_graph, "... CUDA graph launches")                                                     \
  X(units_api, "... ripple_cuhook_unit_begin")                                                  \
  X(grants, "grants received and started")                                                      \
  X(grant_waits, "acquires that waited for a grant (boundaries and chunk gates)")               \
  X(wait_ns, "total time blocked for grants")                                                   \
  X(done_reported, "grants whose GPU time was reported")                                        \
  X(unmanaged_units, "units run without a grant (fail-open, no agent)")                         \
  X(capture_skips, "boundaries not gated: stream capture")                                      \
  X(comm_skips, "launches on communication streams, never gated")                               \
  X(agent_connects, "sessions opened with the agent")                                           \
  X(agent_losses, "sessions lost")                                                              \
  X(passthrough, "cuGetProcAddress results passed through unwrapped")                           \
  X(via_procaddr, "calls through pointers from cuGetProcAddress")                               \
  /* v2: */                                                                                     \
  X(passes_learned, "NVTX or copy passes learned (whole-pass works since)")                      \
  X(relearns, "learned passes dropped: the engine went another way")                            \
  X(grant_timeouts, "grant waits past RIPPLE_GRANT_TIMEOUT_MS (each ended the session)")        \
  X(chunked_copies, "host<->device copies issued in chunks (sub-layer grants)")                 \
  X(chunks, "the chunks they were issued as")                                                   \
  X(chunk_gates, "chunks that crossed into a sub-unit not yet granted")                         \
  /* v3 (were in the stats file only): */                                                       \
  X(unwrapped, "driver pointers beyond the wrapper slots (not intercepted)")                    \
  X(errors, "driver calls that failed")                                                         \
  X(profile_resyncs, "profile sequence resynchronisations")                                     \
  X(nvtx_pushes, "NVTX range pushes seen")                                                      \
  X(seq_mismatch, "boundaries off the announced work's next unit")                              \
  X(learned_pass_units, "units of the pass learned last (a gauge)")                             \
  X(unit_copy_bytes, "host copy bytes inside NVTX unit occurrences")                            \
  X(copy_passes_learned, "copy passes learned")                                                 \
  X(units_drained, "units of an abandoned work acquired and closed without running")            \
  X(subunits_skipped, "sub-units granted and closed unrun (fewer bytes than announced)")       \
  /* v4: */                                                                                     \
  X(chunk_changes, "chunk sizes suggested by the agent and applied (each a new session)")       \
  X(chunk_waits, "grant_waits at chunk gates (inside a unit); the rest were at boundaries")     \
  X(chunk_wait_ns, "wait_ns spent at chunk gates; wait_ns - chunk_wait_ns: at boundaries")     \
  /* v5: */                                                                                     \
  X(multi_pass_works, "works of a learned bare pass spanning more than one pass")              \
  X(passes_per_work, "passes the last learned bare-pass work spans (a gauge; RIPPLE_MIN_WORK_MS)")    \
  /* v6: */                                                                                     \
  X(works_ahead, "bare-pass works announced ahead (the work before granted to its end)")       \
  X(ahead_drained, "... of them drained: the engine went another way (acquired, closed unrun)") \
  X(grants_in_hand, "acquires whose grant had already arrived (no wait)")                       \
  X(work_start_waits, "acquires at a work's first unit")                                        \
  X(work_starts_in_hand, "... whose grant had already arrived (announced ahead, granted ahead)") \
  X(work_start_wait_ns, "wait_ns spent at a work's first unit (the announce -> grant trip)")   \
  /* v7: */                                                                                     \
  X(boundary_gaps, "consecutive grant pairs whose GPU gap was read (end event to next start)")  \
  X(boundary_gap_ns, "GPU time from a grant's end event to the next grant's start, summed") \
  /* v8: */                                                                                     \
  X(connect_failures, "connect attempts that failed (no agent, no Welcome in time, not the agent)") \
  /* v9: */                                                                                     \
  X(passes_recalled, "bare passes learned again that were stable before: stable at once")     \
  /* v10: */                                                                                    \
  X(nvtx_uncached, "NVTX range names matched again: past the 4096 names the hook keeps")       \
  /* v11: */                                                                                    \
  X(event_record_failures, "grant timing events the driver refused to record (no GPU time)")   \
  X(event_pools, "contexts whose timing events the hook pools (a gauge; each ends with its context)") \
  /* v12: */                                                                                    \
  X(pin_waits_given_up, "context ends that stopped waiting (1 s) for a driver call on their timing events")

/* Counters of the interposer (a snapshot), one field per RIPPLE_CUHOOK_COUNTERS entry. */
struct ripple_cuhook_stats {
#define RIPPLE_CUHOOK_FIELD(name, doc) uint64_t name;
  RIPPLE_CUHOOK_COUNTERS(RIPPLE_CUHOOK_FIELD)
#undef RIPPLE_CUHOOK_FIELD
};

/* The calling thread blocks until it holds a grant covering the unit `name` (a unit of
 * the loaded profile; otherwise a unit of `bytes`). Returns 0, or -1 when the unit ran
 * unmanaged (no agent, fail-open). Stream capture is never blocked. Units do not nest: a
 * begin inside a unit open on the same thread returns 0 and opens nothing (what it
 * launches is the outer unit's, so the outer unit's bytes must include it), and its end
 * closes nothing. */
int ripple_cuhook_unit_begin(const char* name, uint64_t bytes) __attribute__((weak));
/* The unit begun last on this thread has been launched completely. */
int ripple_cuhook_unit_end(void) __attribute__((weak));
/* Nothing on this stream (a CUstream) is gated: communication streams. The default
 * streams (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) are never marked. */
int ripple_cuhook_set_comm_stream(void* stream) __attribute__((weak));
/* Copies the first `size` bytes of the counters into *out (size: sizeof *out; the
 * struct only grows at its end, so an older caller's size still works). Returns 0. */
int ripple_cuhook_get_stats(struct ripple_cuhook_stats* out, size_t size) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
