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

/* Counters of the interposer (a snapshot). */
struct ripple_cuhook_stats {
  uint64_t launches;          /* kernel and graph launches seen */
  uint64_t copies;            /* copies and sets seen */
  uint64_t h2d_bytes, d2h_bytes;
  uint64_t units;             /* unit boundaries found (all sources) */
  uint64_t units_nvtx, units_profile, units_copy, units_graph, units_api;
  uint64_t grants;            /* grants received and started */
  uint64_t grant_waits;       /* boundaries that blocked for a grant */
  uint64_t wait_ns;           /* total time blocked */
  uint64_t done_reported;     /* grants whose GPU time was reported */
  uint64_t unmanaged_units;   /* units run without a grant (fail-open, no agent) */
  uint64_t capture_skips;     /* boundaries not gated: stream capture */
  uint64_t comm_skips;        /* launches on communication streams, never gated */
  uint64_t agent_connects, agent_losses;
  uint64_t passthrough;       /* cuGetProcAddress results passed through unwrapped */
  uint64_t via_procaddr;      /* calls through pointers from cuGetProcAddress */
  /* Added later: a caller passing the older, smaller size gets the fields above only. */
  uint64_t passes_learned;    /* NVTX or copy passes learned (whole-pass works since) */
  uint64_t relearns;          /* learned passes dropped: the engine went another way */
  uint64_t grant_timeouts;    /* grant waits past RIPPLE_GRANT_TIMEOUT_MS (each ended the session) */
  uint64_t chunked_copies;    /* host<->device copies issued in chunks (sub-layer grants) */
  uint64_t chunks;            /* the chunks they were issued as */
  uint64_t chunk_gates;       /* chunks that crossed into a sub-unit not yet granted */
};

/* The calling thread blocks until it holds a grant covering the unit `name` (a unit of
 * the loaded profile; otherwise a unit of `bytes`). Returns 0, or -1 when the unit ran
 * unmanaged (no agent, fail-open). Stream capture is never blocked. */
int ripple_cuhook_unit_begin(const char* name, uint64_t bytes) __attribute__((weak));
/* The unit begun last on this thread has been launched completely. */
int ripple_cuhook_unit_end(void) __attribute__((weak));
/* Launches on this stream (a CUstream) are never gated: communication streams. */
int ripple_cuhook_set_comm_stream(void* stream) __attribute__((weak));
/* Copies the first `size` bytes of the counters into *out (size: sizeof *out; the
 * struct only grows at its end, so an older caller's size still works). Returns 0. */
int ripple_cuhook_get_stats(struct ripple_cuhook_stats* out, size_t size) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
