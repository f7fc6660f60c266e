/* fake libcuda.so.1 — a TEST DOUBLE of the CUDA driver, not a model of a GPU.
 *
 * It lets the interposer's tests run on machines without a GPU: the test programs
 * (tests/cuhooks/driver_app.c) link against it (or dlopen it) as "libcuda.so.1" and the
 * hook is preloaded in front of it, exactly as on a real machine.
 *
 * What it does:
 *  - exports every entry point of cuhooks/hook_list.h (generated from the same list)
 *    plus the handful of context/module/stream/event/graph calls the tests and the hook
 *    need; "device memory" is host memory it allocated, and it remembers which;
 *  - "executes" each kernel synchronously as a memory stream of its declared bytes:
 *    the first kernel parameter is a uint64 byte count, streamed from a scratch buffer;
 *    copies and sets really copy/set the bytes; a graph launch streams
 *    FAKE_CUDA_GRAPH_BYTES;
 *  - cuGetProcAddress(_v2) honours version and flags like the real driver: the base
 *    name, the ABI for the requested cudaVersion, the _ptsz/_ptds variant when the
 *    per-thread flag is set; it returns *internal* pointers (not the exported symbols),
 *    as the real driver does, so a hook that only interposes symbols misses them;
 *  - counts every call per entry point and per path (exported symbol vs pointer from
 *    cuGetProcAddress) and writes the counts at exit to $FAKE_CUDA_LOG
 *    ("name calls bytes via_symbol via_procaddr" lines), then the queries about pointers,
 *    functions and streams the interposer makes ("query name calls" lines: a hook that
 *    only counts must make none per call); with $FAKE_CUDA_TRACE each
 *    executed operation is appended as "monotonic_ns name bytes function stream".
 *
 * Faults armed by environment variables (read once):
 *   FAKE_CUDA_CAPTURING=1     every stream reports an active capture
 *
 * Stream capture (cuStreamBeginCapture_v2 .. cuStreamEndCapture, as cudart and llama.cpp
 * use it): a stream being captured reports an active capture, and its kernels are
 * recorded, not executed (counted, not streamed, not traced); a graph launch streams
 * FAKE_CUDA_GRAPH_BYTES whatever it holds.
 *   FAKE_CUDA_FAIL_LAUNCH=N   the N-th kernel launch (1-based) fails with LAUNCH_FAILED
 *   FAKE_CUDA_EVENT_DELAY_US  an event completes only this long after its record
 *   FAKE_CUDA_QUERY_DELAY_US  cuEventQuery takes this long before it looks at the event (a
 *                             context that ends meanwhile, on another thread, ended it);
 *                             a query, elapsed time or destroy of an event whose context
 *                             ended (the real driver freed it with its context: a use
 *                             after free) is counted ("query cuEvent-of-ended-context N")
 *   FAKE_CUDA_NO_FUNC_NAME=1  cuFuncGetName is not supported (old drivers)
 *   FAKE_CUDA_INTEGRATED=1    the device reports CU_DEVICE_ATTRIBUTE_INTEGRATED = 1 (a
 *                             Jetson or GB10: unified memory); =fail: the query fails
 *   FAKE_CUDA_FAIL_EVENT_RECORD=N  every N-th cuEventRecord fails (1: all); cuEventCreate
 *                             calls are counted ("query cuEventCreate N")
 *   FAKE_CUDA_ELAPSED_MS=X    cuEventElapsedTime answers X ms for every pair
 *   FAKE_CUDA_KERNEL_US=N     the GPU runs behind the host: a kernel still executes at its
 *                             launch, but keeps its stream busy N us past the later of its
 *                             launch and the stream's earlier work; an event recorded on a
 *                             stream is reached (its time, its completion) once that
 *                             stream's earlier work is done, and cuStreamSynchronize waits
 *                             for it. Each thread's per-thread default stream
 *                             (CU_STREAM_PER_THREAD, or 0 through a _ptsz/_ptds entry point)
 *                             is its own; the legacy stream is one more (its implicit
 *                             ordering with the other blocking streams is not modelled)
 *
 * Contexts, streams and events, as the real driver keeps them apart: two devices, each
 * with a primary context (retained, released: it ends at its last release; reset: it
 * ends, and the next retain starts it again) and contexts of cuCtxCreate (a per-thread
 * stack; cuCtxDestroy ends one). A stream belongs to the context current at its
 * creation, a default stream to the calling thread's current one; an event to the
 * context current at its creation. cuEventRecord refuses (CUDA_ERROR_INVALID_HANDLE, the
 * runtime's "invalid resource handle") an event of another context than the stream's,
 * one whose context ended, and a destroyed stream; cuEventElapsedTime refuses a pair of
 * two contexts. These refusals are counted ("query cuEventRecord-refused N"). Handles
 * come back as an allocator hands out freed memory: cuStreamCreate and cuCtxCreate
 * return the handle destroyed last, so a destroyed stream's or context's handle is soon
 * another one's (what an interposer keying state on handles must survive).
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuhooks/op_info.h"
#include "cuhooks/hook_list.h"

#define EXPORT __attribute__((visibility("default")))

enum {
#define FK_ENUM(name, ...) FK_##name,
  RIPPLE_CU_HOOKS(FK_ENUM) FK_cuMemcpyHtoD_v1, FK_COUNT
};
static const char* const fk_names[FK_COUNT] = {
#define FK_NAME(name, ...) #name,
    RIPPLE_CU_HOOKS(FK_NAME) "cuMemcpyHtoD(v1)"};

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long fk_calls[FK_COUNT], fk_bytes[FK_COUNT], fk_via_sym[FK_COUNT], fk_via_pa[FK_COUNT];
static unsigned long long fk_launches;
/* Queries (not in the hook list): counted atomically, written as "query" lines. */
enum { FQ_POINTER_ATTR, FQ_FUNC_NAME, FQ_IS_CAPTURING, FQ_DEVICE_ATTR, FQ_EVENT_CREATE, FQ_EVENT_REFUSED, FQ_EVENT_ENDED,
       FQ_EVENT_CAPTURED, FQ_COUNT };
static const char* const fq_names[FQ_COUNT] = {"cuPointerGetAttribute", "cuFuncGetName", "cuStreamIsCapturing",
                                               "cuDeviceGetAttribute", "cuEventCreate", "cuEventRecord-refused",
                                               "cuEvent-of-ended-context", "cuEventRecord-captured"};
static unsigned long long fq_calls[FQ_COUNT];
#define FQ_COUNT_CALL(q) __atomic_fetch_add(&fq_calls[q], 1, __ATOMIC_RELAXED)
static int fk_capturing, fk_fail_launch, fk_no_func_name;
static int fk_integrated;  /* -1: the attribute query fails */
static long fk_event_delay_ns;
static long fk_query_delay_ns; /* FAKE_CUDA_QUERY_DELAY_US */
/* Whether the hook keeps the events it could not record (cuEventCreate is counted). */
static long fk_fail_event_record;
/* What the hook reports for a grant that stayed open for hours. */
static double fk_elapsed_ms = -1;
static unsigned long long fk_graph_bytes;
static unsigned long long fk_kernel_ns; /* FAKE_CUDA_KERNEL_US */
static FILE* fk_trace;
static volatile unsigned long long fk_sink;
static unsigned char* fk_scratch;
enum { kScratch = 1 << 20 };

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* fork: fk_lock is held across it, so the child of a threaded program finds the fake's
 * state whole and its lock free (the interposer's fork tests fork while other threads
 * call in; the real driver's own locks are its business). */
static void fk_fork_prepare(void) { pthread_mutex_lock(&fk_lock); }
static void fk_fork_done(void) { pthread_mutex_unlock(&fk_lock); }

__attribute__((constructor)) static void fk_init(void) {
  const char* v;
  pthread_atfork(fk_fork_prepare, fk_fork_done, fk_fork_done);
  fk_capturing = (v = getenv("FAKE_CUDA_CAPTURING")) && atoi(v) != 0;
  fk_fail_launch = (v = getenv("FAKE_CUDA_FAIL_LAUNCH")) ? atoi(v) : 0;
  fk_event_delay_ns = (v = getenv("FAKE_CUDA_EVENT_DELAY_US")) ? atol(v) * 1000 : 0;
  fk_query_delay_ns = (v = getenv("FAKE_CUDA_QUERY_DELAY_US")) ? atol(v) * 1000 : 0;
  fk_fail_event_record = (v = getenv("FAKE_CUDA_FAIL_EVENT_RECORD")) ? atol(v) : 0;
  fk_elapsed_ms = (v = getenv("FAKE_CUDA_ELAPSED_MS")) ? strtod(v, NULL) : -1;
  fk_graph_bytes = (v = getenv("FAKE_CUDA_GRAPH_BYTES")) ? strtoull(v, NULL, 0) : 0;
  fk_kernel_ns = (v = getenv("FAKE_CUDA_KERNEL_US")) ? strtoull(v, NULL, 0) * 1000 : 0;
  fk_no_func_name = (v = getenv("FAKE_CUDA_NO_FUNC_NAME")) && atoi(v) != 0;
  fk_integrated = (v = getenv("FAKE_CUDA_INTEGRATED")) ? (strcmp(v, "fail") == 0 ? -1 : atoi(v) != 0) : 0;
  if ((v = getenv("FAKE_CUDA_TRACE")) && *v) fk_trace = fopen(v, "a");
  if (fk_trace) setvbuf(fk_trace, NULL, _IOLBF, 0);
  fk_scratch = calloc(1, kScratch);
}

__attribute__((destructor)) static void fk_fini(void) {
  const char* path = getenv("FAKE_CUDA_LOG");
  if (!path || !*path) return;
  char p[4096];
  snprintf(p, sizeof p, "%s.%d", path, (int)getpid()); /* one file per process (fork tests) */
  FILE* f = fopen(p, "w");
  if (!f) return;
  for (int i = 0; i < FK_COUNT; ++i)
    if (fk_calls[i])
      fprintf(f, "%s %llu %llu %llu %llu\n", fk_names[i], fk_calls[i], fk_bytes[i], fk_via_sym[i], fk_via_pa[i]);
  for (int q = 0; q < FQ_COUNT; ++q) fprintf(f, "query %s %llu\n", fq_names[q], __atomic_load_n(&fq_calls[q], __ATOMIC_RELAXED));
  fclose(f);
}

/* Streams `bytes` through the scratch buffer: the "execution" of a kernel. */
static void fk_stream(unsigned long long bytes) {
  unsigned long long sum = 0;
  while (bytes > 0) {
    size_t n = bytes < kScratch ? (size_t)bytes : kScratch;
    for (size_t i = 0; i < n; i += 64) sum += fk_scratch[i];
    bytes -= n;
  }
  fk_sink += sum;
}

/* --- memory registry: which addresses are "device" memory ------------------------ */
struct fk_alloc { uintptr_t base; size_t size; int device; };
static struct fk_alloc fk_allocs[4096];
static int fk_nallocs;

static int fk_is_device(uintptr_t p) {
  int dev = 0;
  pthread_mutex_lock(&fk_lock);
  for (int i = 0; i < fk_nallocs; ++i)
    if (p >= fk_allocs[i].base && p < fk_allocs[i].base + fk_allocs[i].size) { dev = fk_allocs[i].device; break; }
  pthread_mutex_unlock(&fk_lock);
  return dev;
}
int rh_resolve_dir(CUdeviceptr dst, CUdeviceptr src) {
  int d = fk_is_device(dst), s = fk_is_device(src);
  return s && d ? RH_DIR_D2D : s ? RH_DIR_D2H : d ? RH_DIR_H2D : RH_DIR_H2H;
}
static void* fk_alloc(size_t n, int device) {
  void* p = calloc(1, n ? n : 1);
  pthread_mutex_lock(&fk_lock);
  if (fk_nallocs < 4096) fk_allocs[fk_nallocs++] = (struct fk_alloc){(uintptr_t)p, n, device};
  pthread_mutex_unlock(&fk_lock);
  return p;
}
static void fk_free(void* p) {
  pthread_mutex_lock(&fk_lock);
  for (int i = 0; i < fk_nallocs; ++i)
    if (fk_allocs[i].base == (uintptr_t)p) { fk_allocs[i] = fk_allocs[--fk_nallocs]; break; }
  pthread_mutex_unlock(&fk_lock);
  free(p);
}

/* --- objects ------------------------------------------------------------------ */
struct CUfunc_st { char name[128]; };
/* A context that ended keeps its memory; its generation moves on (a handle that comes
 * back is a new context: the old one's events and streams are refused). */
struct CUctx_st { int device, alive, refs, primary; unsigned gen; };
struct CUevent_st { unsigned long long ns; int recorded; CUcontext ctx; unsigned gen; };
struct CUgraphExec_st { unsigned long long bytes; }; /* what its graph captured */
struct CUgraph_st { unsigned long long bytes; };
struct CUmod_st { int dummy; };
struct CUstream_st {
  int capturing;
  unsigned long long captured;
  unsigned long long busy_until; /* FAKE_CUDA_KERNEL_US: when its work is done (under fk_lock) */
  CUcontext ctx;
  unsigned gen;  /* its context's when created */
  int alive;
  struct CUstream_st* next_free;
};
/* A stream made by cuStreamCreate (not NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD). */
#define FK_REAL_STREAM(s) ((uintptr_t)(s) > 2)
enum { FK_DEVICES = 2, FK_CREATED = 16, FK_STACK = 8 };
static struct CUctx_st fk_primary[FK_DEVICES];
static struct CUctx_st fk_created[FK_CREATED];
static struct CUctx_st* fk_free_ctx[FK_CREATED];
static int fk_ncreated, fk_nfree_ctx;
static struct CUstream_st* fk_free_streams;
/* The calling thread's context stack (its top is current). */
static __thread CUcontext fk_stack[FK_STACK];
static __thread int fk_depth;
#define fk_current (fk_depth ? fk_stack[fk_depth - 1] : (CUcontext)NULL)

static int fk_ctx_live(CUcontext c) { return c && c->alive; }
static int fk_event_live(CUevent e) { return e && fk_ctx_live(e->ctx) && e->gen == e->ctx->gen; }
/* The context of a stream: its own, or for a default stream the current one (NULL: a
 * destroyed stream, or one whose context ended). */
static CUcontext fk_stream_ctx(CUstream s) {
  if (!FK_REAL_STREAM(s)) return fk_ctx_live(fk_current) ? fk_current : NULL;
  return s->alive && fk_ctx_live(s->ctx) && s->gen == s->ctx->gen ? s->ctx : NULL;
}
/* A context ends: its generation moves on; popped if it is this thread's current one. */
static void fk_ctx_end(CUcontext c) {
  c->alive = 0;
  c->gen++;
  if (fk_depth && fk_stack[fk_depth - 1] == c) fk_depth--;
}

/* --- streams' timelines (FAKE_CUDA_KERNEL_US) ----------------------------------- */
/* When each stream's work is done, under fk_lock: a created stream's own, the calling
 * thread's per-thread default stream (CU_STREAM_PER_THREAD names it, and 0 does through
 * a per-thread entry point), the legacy stream. */
static unsigned long long fk_legacy_busy;
static __thread unsigned long long fk_thread_busy;
static unsigned long long* fk_timeline(CUstream s, int ptds) {
  if (s == CU_STREAM_PER_THREAD || (s == NULL && ptds)) return &fk_thread_busy;
  return FK_REAL_STREAM(s) ? &s->busy_until : &fk_legacy_busy;
}
/* When a mark put on the stream now is reached: once its earlier work is done. */
static unsigned long long fk_reached(CUstream s, int ptds) {
  const unsigned long long now = now_ns();
  if (!fk_kernel_ns) return now;
  pthread_mutex_lock(&fk_lock);
  const unsigned long long busy = *fk_timeline(s, ptds);
  pthread_mutex_unlock(&fk_lock);
  return busy > now ? busy : now;
}
static void fk_wait_stream(CUstream s, int ptds) {
  const unsigned long long until = fk_reached(s, ptds);
  for (unsigned long long now = now_ns(); now < until; now = now_ns()) {
    struct timespec ts = {0, (long)(until - now)};
    nanosleep(&ts, NULL);
  }
}

/* --- the generic operation ----------------------------------------------------- */
static CUresult fk_op(int id, int via_pa, int kind, unsigned long long bytes, CUfunction f, void** kparams, void* stream,
                     int ptds) {
  CUresult r = CUDA_SUCCESS;
  if (kind == RH_KERNEL) {
    bytes = kparams && kparams[0] ? *(const unsigned long long*)kparams[0] : 0;
    pthread_mutex_lock(&fk_lock);
    unsigned long long n = ++fk_launches;
    pthread_mutex_unlock(&fk_lock);
    if (fk_fail_launch && n == (unsigned long long)fk_fail_launch) return CUDA_ERROR_LAUNCH_FAILED;
    if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
  } else if (kind == RH_GRAPH) {
    bytes = fk_graph_bytes;
  }
  struct CUstream_st* cs = FK_REAL_STREAM(stream) ? (struct CUstream_st*)stream : NULL;
  if (kind == RH_KERNEL && cs && cs->capturing) {
    cs->captured += bytes; /* recorded into the graph, not executed */
    pthread_mutex_lock(&fk_lock);
    fk_calls[id]++;
    if (via_pa) fk_via_pa[id]++; else fk_via_sym[id]++;
    pthread_mutex_unlock(&fk_lock);
    return r;
  }
  if (kind == RH_KERNEL || kind == RH_GRAPH) fk_stream(bytes);
  pthread_mutex_lock(&fk_lock);
  if (kind == RH_KERNEL && fk_kernel_ns) {
    unsigned long long* busy = fk_timeline((CUstream)stream, ptds);
    const unsigned long long now = now_ns();
    *busy = (*busy > now ? *busy : now) + fk_kernel_ns;
  }
  fk_calls[id]++;
  fk_bytes[id] += bytes;
  if (via_pa) fk_via_pa[id]++; else fk_via_sym[id]++;
  pthread_mutex_unlock(&fk_lock);
  if (fk_trace) fprintf(fk_trace, "%llu %s %llu %s %p\n", now_ns(), fk_names[id], bytes, f ? f->name : "-", stream);
  return r;
}

/* Copies and sets really move their bytes (the first pointer-ish args decide). */
static void fk_copy(CUdeviceptr dst, const void* src, size_t n) { if (dst && src && n) memmove((void*)dst, src, n); }

/* The exported hook-list entry points and their procaddr twins. Copies of plain
 * linear form do the memmove; the rest only count (the tests check bytes and calls). */
#define FK_DEFINE(name, base, ptds, minver, maxver, kind, params, args, stream, bytes, dir, func, kparams) \
  static CUresult fk_impl_##name params;                                                               \
  EXPORT CUresult CUDAAPI name params {                                                                \
    (void)(dir);                                                                                       \
    CUresult r = fk_op(FK_##name, 0, kind, bytes, func, kparams, (void*)(stream), ptds);               \
    return r == CUDA_SUCCESS ? fk_impl_##name args : r;                                                \
  }                                                                                                    \
  static CUresult CUDAAPI fk_pa_##name params {                                                        \
    CUresult r = fk_op(FK_##name, 1, kind, bytes, func, kparams, (void*)(stream), ptds);               \
    return r == CUDA_SUCCESS ? fk_impl_##name args : r;                                                \
  }
RIPPLE_CU_HOOKS(FK_DEFINE)

/* Bodies: linear copies move memory; everything else has nothing more to do. */
#define FK_NOOP(name, base, ptds, minver, maxver, kind, params, args, ...) \
  static CUresult fk_impl_##name params { return CUDA_SUCCESS; }
#define FK_LIN(name) static CUresult fk_impl_##name
FK_LIN(cuMemcpy)(CUdeviceptr d, CUdeviceptr s, size_t n) { fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpy_ptds)(CUdeviceptr d, CUdeviceptr s, size_t n) { fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyAsync)(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyAsync_ptsz)(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyHtoD_v2)(CUdeviceptr d, const void* s, size_t n) { fk_copy(d, s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyHtoD_v2_ptds)(CUdeviceptr d, const void* s, size_t n) { fk_copy(d, s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoH_v2)(void* d, CUdeviceptr s, size_t n) { fk_copy((CUdeviceptr)d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoH_v2_ptds)(void* d, CUdeviceptr s, size_t n) { fk_copy((CUdeviceptr)d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoD_v2)(CUdeviceptr d, CUdeviceptr s, size_t n) { fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoD_v2_ptds)(CUdeviceptr d, CUdeviceptr s, size_t n) { fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyHtoDAsync_v2)(CUdeviceptr d, const void* s, size_t n, CUstream st) { (void)st; fk_copy(d, s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyHtoDAsync_v2_ptsz)(CUdeviceptr d, const void* s, size_t n, CUstream st) { (void)st; fk_copy(d, s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoHAsync_v2)(void* d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy((CUdeviceptr)d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoHAsync_v2_ptsz)(void* d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy((CUdeviceptr)d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoDAsync_v2)(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
FK_LIN(cuMemcpyDtoDAsync_v2_ptsz)(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; fk_copy(d, (void*)s, n); return CUDA_SUCCESS; }
/* 2D and 3D copies move their rows (pitch, X/Y/Z offsets; host or device pointers). */
static void fk_copy3d(const void* sbase, size_t sx, size_t sy, size_t sz, size_t spitch, size_t sheight, void* dbase,
                      size_t dx, size_t dy, size_t dz, size_t dpitch, size_t dheight, size_t width, size_t height,
                      size_t depth) {
  if (!sbase || !dbase) return;
  for (size_t z = 0; z < depth; ++z)
    for (size_t y = 0; y < height; ++y)
      memmove((char*)dbase + ((dz + z) * dheight + dy + y) * dpitch + dx,
              (const char*)sbase + ((sz + z) * sheight + sy + y) * spitch + sx, width);
}
#define FK_PTR(p, side) ((p)->side##MemoryType == CU_MEMORYTYPE_HOST ? (const void*)(p)->side##Host : (const void*)(p)->side##Device)
static CUresult fk_2d(const CUDA_MEMCPY2D* p) {
  if (p) fk_copy3d(FK_PTR(p, src), p->srcXInBytes, p->srcY, 0, p->srcPitch, 0, (void*)FK_PTR(p, dst), p->dstXInBytes,
                   p->dstY, 0, p->dstPitch, 0, p->WidthInBytes, p->Height, 1);
  return CUDA_SUCCESS;
}
static CUresult fk_3d(const CUDA_MEMCPY3D* p) {
  if (p) fk_copy3d(FK_PTR(p, src), p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, p->srcHeight, (void*)FK_PTR(p, dst),
                   p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch, p->dstHeight, p->WidthInBytes, p->Height,
                   p->Depth ? p->Depth : 1);
  return CUDA_SUCCESS;
}
FK_LIN(cuMemcpy2D_v2)(const CUDA_MEMCPY2D* p) { return fk_2d(p); }
FK_LIN(cuMemcpy2D_v2_ptds)(const CUDA_MEMCPY2D* p) { return fk_2d(p); }
FK_LIN(cuMemcpy2DAsync_v2)(const CUDA_MEMCPY2D* p, CUstream s) { (void)s; return fk_2d(p); }
FK_LIN(cuMemcpy2DAsync_v2_ptsz)(const CUDA_MEMCPY2D* p, CUstream s) { (void)s; return fk_2d(p); }
FK_LIN(cuMemcpy3D_v2)(const CUDA_MEMCPY3D* p) { return fk_3d(p); }
FK_LIN(cuMemcpy3D_v2_ptds)(const CUDA_MEMCPY3D* p) { return fk_3d(p); }
FK_LIN(cuMemcpy3DAsync_v2)(const CUDA_MEMCPY3D* p, CUstream s) { (void)s; return fk_3d(p); }
FK_LIN(cuMemcpy3DAsync_v2_ptsz)(const CUDA_MEMCPY3D* p, CUstream s) { (void)s; return fk_3d(p); }
/* The remaining entries: no-op bodies. */
#define FK_REST_LAUNCH(X) RIPPLE_CU_HOOK_LAUNCHES(X)
FK_REST_LAUNCH(FK_NOOP)
RIPPLE_CU_HOOK_SETS(FK_NOOP)
FK_NOOP(cuMemcpyPeer, 0, 0, 0, 0, 0, (CUdeviceptr a, CUcontext b, CUdeviceptr c, CUcontext d, size_t n), 0)
FK_NOOP(cuMemcpyPeer_ptds, 0, 0, 0, 0, 0, (CUdeviceptr a, CUcontext b, CUdeviceptr c, CUcontext d, size_t n), 0)
FK_NOOP(cuMemcpyPeerAsync, 0, 0, 0, 0, 0, (CUdeviceptr a, CUcontext b, CUdeviceptr c, CUcontext d, size_t n, CUstream s), 0)
FK_NOOP(cuMemcpyPeerAsync_ptsz, 0, 0, 0, 0, 0, (CUdeviceptr a, CUcontext b, CUdeviceptr c, CUcontext d, size_t n, CUstream s), 0)
FK_NOOP(cuMemcpy2DUnaligned_v2, 0, 0, 0, 0, 0, (const CUDA_MEMCPY2D* p), 0)
FK_NOOP(cuMemcpy2DUnaligned_v2_ptds, 0, 0, 0, 0, 0, (const CUDA_MEMCPY2D* p), 0)
FK_NOOP(cuMemcpy3DPeer, 0, 0, 0, 0, 0, (const CUDA_MEMCPY3D_PEER* p), 0)
FK_NOOP(cuMemcpy3DPeer_ptds, 0, 0, 0, 0, 0, (const CUDA_MEMCPY3D_PEER* p), 0)
FK_NOOP(cuMemcpy3DPeerAsync, 0, 0, 0, 0, 0, (const CUDA_MEMCPY3D_PEER* p, CUstream s), 0)
FK_NOOP(cuMemcpy3DPeerAsync_ptsz, 0, 0, 0, 0, 0, (const CUDA_MEMCPY3D_PEER* p, CUstream s), 0)
FK_NOOP(cuMemcpyBatchAsync, 0, 0, 0, 0, 0, (CUdeviceptr* d, CUdeviceptr* s, size_t* z, size_t c, CUmemcpyAttributes* a, size_t* i, size_t n, size_t* f, CUstream st), 0)
FK_NOOP(cuMemcpyBatchAsync_ptsz, 0, 0, 0, 0, 0, (CUdeviceptr* d, CUdeviceptr* s, size_t* z, size_t c, CUmemcpyAttributes* a, size_t* i, size_t n, size_t* f, CUstream st), 0)
FK_NOOP(cuMemcpyBatchAsync_v2, 0, 0, 0, 0, 0, (CUdeviceptr* d, CUdeviceptr* s, size_t* z, size_t c, CUmemcpyAttributes* a, size_t* i, size_t n, CUstream st), 0)
FK_NOOP(cuMemcpyBatchAsync_v2_ptsz, 0, 0, 0, 0, 0, (CUdeviceptr* d, CUdeviceptr* s, size_t* z, size_t c, CUmemcpyAttributes* a, size_t* i, size_t n, CUstream st), 0)
FK_NOOP(cuMemcpy3DBatchAsync_v2, 0, 0, 0, 0, 0, (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, unsigned long long f, CUstream s), 0)
FK_NOOP(cuMemcpy3DBatchAsync_v2_ptsz, 0, 0, 0, 0, 0, (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, unsigned long long f, CUstream s), 0)
FK_NOOP(cuMemPrefetchAsync_v2, 0, 0, 0, 0, 0, (CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s), 0)
FK_NOOP(cuMemPrefetchAsync_v2_ptsz, 0, 0, 0, 0, 0, (CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s), 0)

/* Ends of streams and contexts (RH_END in the hook list). */
static CUresult fk_impl_cuStreamDestroy_v2(CUstream s) {
  if (!FK_REAL_STREAM(s)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fk_lock);
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  if (s->alive) {
    s->alive = 0;
    s->next_free = fk_free_streams;
    fk_free_streams = s;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&fk_lock);
  return r;
}
static CUresult fk_impl_cuCtxDestroy_v2(CUcontext c) {
  if (!fk_ctx_live(c) || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fk_lock);
  fk_ctx_end(c);
  fk_free_ctx[fk_nfree_ctx++] = c;
  pthread_mutex_unlock(&fk_lock);
  return CUDA_SUCCESS;
}
static CUresult fk_impl_cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  if (d < 0 || d >= FK_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st* p = &fk_primary[d];
  if (p->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--p->refs == 0 && p->alive) fk_ctx_end(p);
  return CUDA_SUCCESS;
}
static CUresult fk_impl_cuDevicePrimaryCtxReset_v2(CUdevice d) {
  if (d < 0 || d >= FK_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  if (fk_primary[d].alive) fk_ctx_end(&fk_primary[d]);
  return CUDA_SUCCESS;
}

/* The CUDA 3.0 ABI of cuMemcpyHtoD (32-bit sizes): what cuGetProcAddress returns for
 * cudaVersion < 3020. The hook must pass it through untouched. */
#undef cuMemcpyHtoD
EXPORT CUresult CUDAAPI cuMemcpyHtoD(unsigned int dst, const void* src, unsigned int n) {
  (void)dst; (void)src;
  pthread_mutex_lock(&fk_lock);
  fk_calls[FK_cuMemcpyHtoD_v1]++;
  fk_bytes[FK_cuMemcpyHtoD_v1] += n;
  fk_via_sym[FK_cuMemcpyHtoD_v1]++;
  pthread_mutex_unlock(&fk_lock);
  return CUDA_SUCCESS;
}

/* --- the rest of the driver the tests and the hook use ---------------------------- */
EXPORT CUresult CUDAAPI cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuDriverGetVersion(int* v) { *v = 13000; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
  *d = ordinal;
  return ordinal >= 0 && ordinal < FK_DEVICES ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (d < 0 || d >= FK_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st* p = &fk_primary[d];
  p->device = d, p->primary = 1, p->alive = 1; /* started again after its end */
  p->refs++;
  *c = p;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice d, unsigned int* flags, int* active) {
  if (d < 0 || d >= FK_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = fk_primary[d].alive && fk_primary[d].refs > 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* c, CUctxCreateParams* params, unsigned int flags, CUdevice d) {
  (void)params, (void)flags;
  if (d < 0 || d >= FK_DEVICES || fk_depth == FK_STACK) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fk_lock);
  struct CUctx_st* n = fk_nfree_ctx ? fk_free_ctx[--fk_nfree_ctx] : fk_ncreated < FK_CREATED ? &fk_created[fk_ncreated++] : NULL;
  pthread_mutex_unlock(&fk_lock);
  if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
  n->device = d, n->alive = 1, n->primary = 0;
  fk_stack[fk_depth++] = n;
  *c = n;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
  if (!c) { if (fk_depth) fk_depth--; }
  else if (fk_depth) fk_stack[fk_depth - 1] = c;
  else fk_stack[fk_depth++] = c;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* c) { *c = fk_current; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* d) {
  if (!fk_ctx_live(fk_current)) return CUDA_ERROR_INVALID_CONTEXT;
  *d = fk_current->device;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuStreamGetCtx(CUstream s, CUcontext* c) {
  *c = fk_stream_ctx(s);
  return *c ? CUDA_SUCCESS : FK_REAL_STREAM(s) ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
}
EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  FQ_COUNT_CALL(FQ_DEVICE_ATTR);
  if (d < 0 || d >= FK_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  if (a != CU_DEVICE_ATTRIBUTE_INTEGRATED || fk_integrated < 0) return CUDA_ERROR_INVALID_VALUE;
  *v = fk_integrated;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* m, const void* image) { (void)image; static struct CUmod_st mod; *m = &mod; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  (void)m;
  struct CUfunc_st* fn = calloc(1, sizeof *fn);
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction f) {
  FQ_COUNT_CALL(FQ_FUNC_NAME);
  if (fk_no_func_name) return CUDA_ERROR_NOT_SUPPORTED;
  *name = f ? f->name : NULL;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int flags) {
  (void)flags;
  CUcontext c = fk_current;
  if (!fk_ctx_live(c)) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fk_lock);
  struct CUstream_st* n = fk_free_streams; /* the handle destroyed last comes back first */
  if (n) fk_free_streams = n->next_free;
  pthread_mutex_unlock(&fk_lock);
  if (!n) n = malloc(sizeof *n);
  memset(n, 0, sizeof *n);
  n->ctx = c, n->gen = c->gen, n->alive = 1;
  *s = n;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) { fk_wait_stream(s, 0); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) { fk_wait_stream(s, 1); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  FQ_COUNT_CALL(FQ_IS_CAPTURING);
  const int cap = fk_capturing || (FK_REAL_STREAM(s) && s->capturing);
  *st = cap ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m) {
  (void)m;
  if (!FK_REAL_STREAM(s) || s->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  s->capturing = 1, s->captured = 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph* g) {
  if (!FK_REAL_STREAM(s) || !s->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  *g = calloc(1, sizeof(struct CUgraph_st));
  (*g)->bytes = s->captured;
  s->capturing = 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m) { return cuStreamBeginCapture_v2(s, m); }
EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) { return cuStreamEndCapture(s, g); }
EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph g) { free(g); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) { free(e); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* st) { return cuStreamIsCapturing(s, st); }
EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* m) { (void)m; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int flags) {
  (void)flags;
  FQ_COUNT_CALL(FQ_EVENT_CREATE);
  if (!fk_ctx_live(fk_current)) return CUDA_ERROR_INVALID_CONTEXT;
  *e = calloc(1, sizeof(struct CUevent_st));
  (*e)->ctx = fk_current, (*e)->gen = fk_current->gen;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent e) {
  if (!fk_event_live(e)) FQ_COUNT_CALL(FQ_EVENT_ENDED); /* kept: the test double never reuses it */
  else free(e);
  return CUDA_SUCCESS;
}
static CUresult fk_event_record(CUevent e, CUstream s, int ptds) {
  static unsigned long records;
  if (fk_fail_event_record > 0 && __atomic_add_fetch(&records, 1, __ATOMIC_RELAXED) % (unsigned long)fk_fail_event_record == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!fk_event_live(e) || fk_stream_ctx(s) != e->ctx) {
    FQ_COUNT_CALL(FQ_EVENT_REFUSED);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (FK_REAL_STREAM(s) && s->capturing) {
    /* The real driver captures the record into the stream's graph (an event-record node,
     * run at each launch of the graph): the event is not recorded now. Counted: the hook
     * must never put a node of its own into the application's graph. */
    FQ_COUNT_CALL(FQ_EVENT_CAPTURED);
    return CUDA_SUCCESS;
  }
  e->ns = fk_reached(s, ptds);
  e->recorded = 1;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return fk_event_record(e, s, 0); }
EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) { return fk_event_record(e, s, 1); }
EXPORT CUresult CUDAAPI cuEventQuery(CUevent e) {
  if (fk_query_delay_ns) {
    struct timespec ts = {fk_query_delay_ns / 1000000000L, fk_query_delay_ns % 1000000000L};
    nanosleep(&ts, NULL);
  }
  if (!fk_event_live(e)) {
    FQ_COUNT_CALL(FQ_EVENT_ENDED);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!e->recorded) return CUDA_SUCCESS;
  return now_ns() >= e->ns + (unsigned long long)fk_event_delay_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (!fk_event_live(a) || !fk_event_live(b)) {
    FQ_COUNT_CALL(FQ_EVENT_ENDED);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (a->ctx != b->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (fk_elapsed_ms >= 0) {
    *ms = (float)fk_elapsed_ms;
    return CUDA_SUCCESS;
  }
  *ms = (float)((double)(long long)(b->ns - a->ns) / 1e6); /* negative: b was reached first */
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* p, size_t n) { *p = (CUdeviceptr)fk_alloc(n, 1); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p) { fk_free((void*)p); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void** p, size_t n) { *p = fk_alloc(n, 0); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuMemFreeHost(void* p) { fk_free(p); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
  FQ_COUNT_CALL(FQ_POINTER_ATTR);
  if (a != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_NOT_SUPPORTED;
  *(unsigned int*)data = fk_is_device(p) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph* g, unsigned int flags) { (void)flags; *g = calloc(1, sizeof(struct CUgraph_st)); return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  (void)flags; *e = calloc(1, sizeof(struct CUgraphExec_st)); (*e)->bytes = g ? g->bytes : 0; return CUDA_SUCCESS;
}
EXPORT CUresult CUDAAPI cuGetErrorString(CUresult r, const char** s) { (void)r; *s = "fake libcuda error"; return CUDA_SUCCESS; }
EXPORT CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) { (void)r; *s = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }

/* --- cuGetProcAddress ------------------------------------------------------------ */
struct fk_entry { const char* base; int ptds, minver, maxver; void* pa; };
static const struct fk_entry fk_table[] = {
#define FK_TABLE(name, base, ptds, minver, maxver, ...) {base, ptds, minver, maxver, (void*)fk_pa_##name},
    RIPPLE_CU_HOOKS(FK_TABLE)};
struct fk_plain { const char* name; void* fn; int minver; };
EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* status);
EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);
static const struct fk_plain fk_plain[] = {
    {"cuInit", (void*)cuInit, 2000},
    {"cuDriverGetVersion", (void*)cuDriverGetVersion, 2020},
    {"cuDeviceGet", (void*)cuDeviceGet, 2000},
    {"cuDevicePrimaryCtxRetain", (void*)cuDevicePrimaryCtxRetain, 7000},
    {"cuCtxSetCurrent", (void*)cuCtxSetCurrent, 4000},
    {"cuCtxGetCurrent", (void*)cuCtxGetCurrent, 4000},
    {"cuCtxGetDevice", (void*)cuCtxGetDevice, 2000},
    {"cuCtxCreate", (void*)cuCtxCreate_v4, 12050},
    {"cuDevicePrimaryCtxGetState", (void*)cuDevicePrimaryCtxGetState, 7000},
    {"cuStreamGetCtx", (void*)cuStreamGetCtx, 9020},
    {"cuDeviceGetAttribute", (void*)cuDeviceGetAttribute, 2000},
    {"cuModuleLoadData", (void*)cuModuleLoadData, 2000},
    {"cuModuleGetFunction", (void*)cuModuleGetFunction, 2000},
    {"cuFuncGetName", (void*)cuFuncGetName, 12030},
    {"cuStreamCreate", (void*)cuStreamCreate, 2000},
    {"cuStreamSynchronize", (void*)cuStreamSynchronize, 2000},
    {"cuStreamIsCapturing", (void*)cuStreamIsCapturing, 10000},
    {"cuThreadExchangeStreamCaptureMode", (void*)cuThreadExchangeStreamCaptureMode, 10010},
    {"cuEventCreate", (void*)cuEventCreate, 2000},
    {"cuEventDestroy", (void*)cuEventDestroy_v2, 4000},
    {"cuEventRecord", (void*)cuEventRecord, 2000},
    {"cuEventQuery", (void*)cuEventQuery, 2000},
    {"cuEventElapsedTime", (void*)cuEventElapsedTime_v2, 12080},
    {"cuMemAlloc", (void*)cuMemAlloc_v2, 3020},
    {"cuMemFree", (void*)cuMemFree_v2, 3020},
    {"cuMemAllocHost", (void*)cuMemAllocHost_v2, 3020},
    {"cuPointerGetAttribute", (void*)cuPointerGetAttribute, 4000},
    {"cuGraphInstantiate", (void*)cuGraphInstantiateWithFlags, 11040},
    {"cuGraphInstantiateWithFlags", (void*)cuGraphInstantiateWithFlags, 11040},
    {"cuGraphCreate", (void*)cuGraphCreate, 10000},
    {"cuStreamBeginCapture", (void*)cuStreamBeginCapture_v2, 10010},
    {"cuStreamEndCapture", (void*)cuStreamEndCapture, 10000},
    {"cuGraphDestroy", (void*)cuGraphDestroy, 10000},
    {"cuGraphExecDestroy", (void*)cuGraphExecDestroy, 10000},
    {"cuGetProcAddress", (void*)cuGetProcAddress_v2, 12000},
    {"cuGetProcAddress", (void*)cuGetProcAddress, 11030},
    {"cuMemcpyHtoD", (void*)cuMemcpyHtoD, 2000}, /* the v1 ABI, below 3020 */
};

/* Internal: the exported entry points below must not call each other through the PLT
 * (an interposer would see one request twice). */
static CUresult fk_proc_address(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int found_name = 0;
  const struct fk_entry* legacy = NULL;
  for (size_t i = 0; i < sizeof fk_table / sizeof fk_table[0]; ++i) {
    const struct fk_entry* e = &fk_table[i];
    if (strcmp(e->base, symbol) != 0) continue;
    found_name = 1;
    if (version < e->minver || version >= e->maxver) continue;
    if (e->ptds == per_thread) { *pfn = e->pa; break; }
    if (!e->ptds) legacy = e; /* per-thread asked, no per-thread version: the legacy one */
  }
  if (!*pfn && legacy) *pfn = legacy->pa;
  if (!*pfn)
    for (size_t i = 0; i < sizeof fk_plain / sizeof fk_plain[0]; ++i)
      if (strcmp(fk_plain[i].name, symbol) == 0) {
        found_name = 1;
        if (version >= fk_plain[i].minver) { *pfn = fk_plain[i].fn; break; }
      }
  if (status)
    *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
                   : found_name ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn || found_name ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* status) {
  return fk_proc_address(symbol, pfn, version, flags, status);
}
EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return fk_proc_address(symbol, pfn, version, flags, NULL);
}
