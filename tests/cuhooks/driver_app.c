/* driver_app: a CUDA driver-API program for the interposer's tests, built against the
 * real <cuda.h> (twice: once with CUDA_API_PER_THREAD_DEFAULT_STREAM, which makes the
 * header name the _ptsz/_ptds entry points). It knows nothing of Ripple; it runs on the
 * test double libcuda (tests/cuhooks/fake_cuda.c) and prints one line to stdout at the
 * end (the tests check the hook adds nothing to it).
 *
 *   driver_app PATH [MODE...]
 *   PATH: direct                 functions taken by symbol (linked against libcuda)
 *         dlsym                  dlopen("libcuda.so.1") + dlsym(handle, name)
 *         procaddr VER FLAGS     dlsym(handle, "cuGetProcAddress_v2"), then every function
 *                                by base name with cudaVersion VER and flags FLAGS
 *         procaddr-v1 VER FLAGS  the same through the CUDA 11 cuGetProcAddress
 *         legacy-abi             cuMemcpyHtoD asked with cudaVersion 3010 (the 32-bit ABI)
 *                                and cuGetProcAddress asked for itself
 *   MODE: ops                    the standard mix: every kind of launch, copy and set
 *         layers P L K           P forward passes of L layers x K kernels
 *                                ("attn_k", "mlp_k", ...; first param = bytes)
 *         nvtx P L K             the same, each layer inside nvtxRangePushA("model.layers.N")
 *         api P L K              the same, each layer inside ripple_cuhook_unit_begin/end
 *         apinest P L K          the same, and each kernel inside a unit of its own within
 *                                the layer's (nested begin/end)
 *         offload P L K BYTES    P passes; before each an 8 KiB host-to-device input copy
 *                                outside any unit; then L ranges "model.layers.N", each with
 *                                an H2D copy of BYTES issued by a helper thread on its own
 *                                stream (an offloading engine's weight stream), a 4 KiB
 *                                D2H copy on the main stream and K kernels; then an
 *                                "lm_head" range with the head kernel and no copy
 *         vlm P V L K            P passes of V ranges "visual.blocks.N" (a vision tower),
 *                                L ranges "model.layers.N" and "lm_head", K kernels each
 *         copies N BYTES         N host-to-device copies of BYTES (offload-style streaming)
 *         roundtrip HOW BYTES    a position-dependent pattern of BYTES copied to the device
 *                                and back, then compared (exit 4 on a difference); HOW:
 *                                sync (cuMemcpyHtoD/DtoH), async (the Async forms on one
 *                                stream), unified (cuMemcpy/cuMemcpyAsync), 2d (cuMemcpy2D
 *                                rows of 1000 bytes, pitch 1024), 3d (cuMemcpy3D slices of
 *                                8 rows of 1000 bytes, pitch 1024)
 *         layercopies P L K SIZES
 *                                P forward passes of L layers, no NVTX: per layer one
 *                                host-to-device copy of each size in SIZES (comma-separated,
 *                                in order; a layer's weights copied by a forward pre-hook,
 *                                as transformers offloading does), then K kernels; before
 *                                the layers an embedding kernel, after them a head kernel
 *                                and a 4 KiB device-to-host copy (the next token)
 *         graph N                N CUDA graph launches
 *         llama P S K            llama.cpp's CUDA-graph decoding: P steps on S streams
 *                                (step i on stream i % S); a stream's graph is captured
 *                                (cuStreamBeginCapture_v2, relaxed) at its first step and
 *                                again every 4th of its steps (a graph update): K kernels,
 *                                alternately cuLaunchKernel and a cuBLAS-style
 *                                cuLaunchKernelEx, and a 2 MiB host-to-device copy, then
 *                                cuStreamEndCapture + cuGraphInstantiate; every step: an
 *                                8-byte input copy, cuGraphLaunch, a 128 KiB logits
 *                                read-back and cuStreamSynchronize
 *         fork                   ops, fork; the child runs the ops mix again
 *         forks N T BYTES CHILD  T threads keep creating a context, copying BYTES host to
 *                                device on a stream of it (a gated copy: a grant, timing
 *                                events from that context's pool), destroying the stream
 *                                and the context (the pool goes), while the main thread
 *                                forks N times; each child makes one copy of CHILD bytes
 *                                on the main stream and _exit(0)s. A child that fails or
 *                                is not gone within 10 s (killed) stops the forks: exit 5.
 *                                Prints "forks: K of N children exited 0, C copies by
 *                                the threads meanwhile" to stderr
 *         forkheld BYTES         a thread copies BYTES host to device on its own stream
 *                                (with an agent that holds its grants: it waits at the
 *                                boundary); once the hook counted that boundary the main
 *                                thread forks, and the child copies BYTES on the main
 *                                stream and _exit(0)s.
 *                                Exit 5 if fork() took 1 s or more in the parent, or the
 *                                child failed or was not gone within 10 s. Prints
 *                                "forkheld: fork took N ms" to stderr
 *         sleep MS               sleep between passes (layers/nvtx/copies)
 *         comm N                 N launches of an "nccl" kernel
 *         nvtxnames N            N push/pop pairs of NVTX ranges with distinct names that
 *                                are no units ("aten::add, seq = K", as a profiler names them)
 *         nvtxcapture OTHER      thread A opens the NVTX unit "model.layers.0" and, once
 *                                thread B (whose stream is capturing) has pushed and popped
 *                                "model.layers.1" (OTHER 1) or not (0), copies 4 MiB inside
 *                                it on its own stream
 *         commcopy ON N BYTES    an "nccl" kernel launched on ON (stream: the app's stream;
 *                                default: stream 0), then N host-to-device copies of BYTES
 *                                and a graph launch on that same stream
 *         twoctx ON N BYTES      two GPUs in one process: each device's primary context
 *                                and a stream on it; N host-to-device copies of BYTES,
 *                                copy i on device i % 2 (its context made current), on
 *                                ON: stream (its stream), default (stream 0), or unit: N
 *                                NVTX ranges "model.layers.K", each with a copy on
 *                                device 0's stream, then one on device 1's
 *         ctxend HOW N BYTES     N contexts that end, each after a stream on it ran a
 *                                host-to-device copy of BYTES and was destroyed; HOW:
 *                                destroy (cuCtxCreate on device 0, cuCtxDestroy), release
 *                                (device 1's primary context retained and released) or
 *                                reset (retained, reset, released); the ends through PATH
 *         endwait MS             ctxend waits MS after each context's work before it ends it
 *         commreuse N BYTES      an "nccl" kernel on a new stream, that stream destroyed
 *                                (cuStreamDestroy through PATH), a new stream that must
 *                                get the same handle back (exit 6 if not), then N
 *                                host-to-device copies of BYTES on it
 *         streamend N            N NVTX ranges "model.layers.0", each with a kernel on a
 *                                new stream that is destroyed before the range is popped
 *         capclose N             N NVTX ranges "model.layers.0", each with a kernel on the
 *                                app's stream, then a kernel captured on a second stream
 *                                (relaxed capture begun inside the range), the range popped
 *                                before the capture ends
 *         ctxmid HOW N           N times, one grant over three NVTX ranges "model.layers.0..2"
 *                                (with a profile of those units), each with a kernel on the
 *                                per-thread default stream (CU_STREAM_PER_THREAD) of a
 *                                context that ends after layers.0 and whose handle is given
 *                                out again at once: HOW destroy (cuCtxCreate on device 0,
 *                                cuCtxDestroy, cuCtxCreate) or reset (device 1's primary
 *                                context retained, reset, retained again; both released at
 *                                the end); the ends through PATH
 *         lanes N K              N NVTX ranges "model.layers.0", each with K kernels
 *                                "attn_k" on the app's stream and then one "mlp_k" on a
 *                                second created stream, never synchronised in between (the
 *                                first stream's work falls behind the second's, as a copy
 *                                stream's behind a compute stream's); both synchronised
 *                                at the end
 *         lanesend N K           as lanes, the second stream created in each range, and
 *                                one more "attn_k" on the app's stream after its kernel,
 *                                then it is destroyed before the range is popped
 *         ptsclose ON N K        N times: a worker thread opens the NVTX range
 *                                "model.layers.0", launches K kernels "attn_k" on its
 *                                per-thread default stream (ON: pt, CU_STREAM_PER_THREAD;
 *                                0, stream 0, the per-thread stream in the _ptds build) and
 *                                pops it; then the main thread pushes and pops
 *                                "model.layers.1" with no GPU work (with a profile of those
 *                                two units, it ends the grant); only then does the worker
 *                                synchronise its stream
 *         stats                  ripple_cuhook_get_stats with the full size and with the size
 *                                before passes_learned was added (the rest must stay
 *                                untouched); prints "stats: passes_learned=N relearns=M
 *                                units_nvtx=U old_size_ok=0|1" to stderr
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/ripple/cuhook.h"

#define CHECK(x)                                                                     \
  do {                                                                               \
    CUresult r_ = (x);                                                               \
    if (r_ != CUDA_SUCCESS) {                                                        \
      fprintf(stderr, "driver_app: %s failed: %d (line %d)\n", #x, (int)r_, __LINE__); \
      exit(3);                                                                       \
    }                                                                                \
  } while (0)

typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
typedef CUresult (*launch_ex_t)(const CUlaunchConfig*, CUfunction, void**, void**);
typedef CUresult (*coop_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void**);
typedef CUresult (*graph_t)(CUgraphExec, CUstream);
typedef CUresult (*htod_t)(CUdeviceptr, const void*, size_t);
typedef CUresult (*dtoh_t)(void*, CUdeviceptr, size_t);
typedef CUresult (*dtod_t)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*htod_async_t)(CUdeviceptr, const void*, size_t, CUstream);
typedef CUresult (*dtoh_async_t)(void*, CUdeviceptr, size_t, CUstream);
typedef CUresult (*copy_t)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*copy_async_t)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*set8_t)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*set32_async_t)(CUdeviceptr, unsigned int, size_t, CUstream);
typedef CUresult (*copy2d_t)(const CUDA_MEMCPY2D*);
typedef CUresult (*batch_t)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, CUstream);
typedef CUresult (*stream_destroy_t)(CUstream);
typedef CUresult (*ctx_destroy_t)(CUcontext);
typedef CUresult (*primary_end_t)(CUdevice);
typedef CUresult (*pa2_t)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*pa1_t)(const char*, void**, int, cuuint64_t);

struct api {
  launch_t launch;
  launch_ex_t launch_ex;
  coop_t coop;
  graph_t graph;
  htod_t htod;
  dtoh_t dtoh;
  dtod_t dtod;
  htod_async_t htod_async;
  dtoh_async_t dtoh_async;
  copy_t copy;
  copy_async_t copy_async;
  set8_t set8;
  set32_async_t set32_async;
  copy2d_t copy2d;
  batch_t batch;
  stream_destroy_t stream_destroy;
  ctx_destroy_t ctx_destroy;
  primary_end_t primary_release, primary_reset;
};
static struct api A;

static void from_symbols(void) {
  A.launch = cuLaunchKernel;
  A.launch_ex = cuLaunchKernelEx;
  A.coop = cuLaunchCooperativeKernel;
  A.graph = cuGraphLaunch;
  A.htod = cuMemcpyHtoD;
  A.dtoh = cuMemcpyDtoH;
  A.dtod = cuMemcpyDtoD;
  A.htod_async = cuMemcpyHtoDAsync;
  A.dtoh_async = cuMemcpyDtoHAsync;
  A.copy = cuMemcpy;
  A.copy_async = cuMemcpyAsync;
  A.set8 = cuMemsetD8;
  A.set32_async = cuMemsetD32Async;
  A.copy2d = cuMemcpy2D;
  A.batch = cuMemcpyBatchAsync;
  A.stream_destroy = cuStreamDestroy;
  A.ctx_destroy = cuCtxDestroy;
  A.primary_release = cuDevicePrimaryCtxRelease;
  A.primary_reset = cuDevicePrimaryCtxReset;
}

/* The exported names the header maps each call to (legacy or per-thread). */
#define NAME_OF(x) NAME_OF_(x)
#define NAME_OF_(x) #x
static void* must_dlsym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) { fprintf(stderr, "driver_app: dlsym(%s) failed\n", name); exit(3); }
  return p;
}
static void from_dlsym(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "driver_app: dlopen: %s\n", dlerror()); exit(3); }
  A.launch = (launch_t)must_dlsym(h, NAME_OF(cuLaunchKernel));
  A.launch_ex = (launch_ex_t)must_dlsym(h, NAME_OF(cuLaunchKernelEx));
  A.coop = (coop_t)must_dlsym(h, NAME_OF(cuLaunchCooperativeKernel));
  A.graph = (graph_t)must_dlsym(h, NAME_OF(cuGraphLaunch));
  A.htod = (htod_t)must_dlsym(h, NAME_OF(cuMemcpyHtoD));
  A.dtoh = (dtoh_t)must_dlsym(h, NAME_OF(cuMemcpyDtoH));
  A.dtod = (dtod_t)must_dlsym(h, NAME_OF(cuMemcpyDtoD));
  A.htod_async = (htod_async_t)must_dlsym(h, NAME_OF(cuMemcpyHtoDAsync));
  A.dtoh_async = (dtoh_async_t)must_dlsym(h, NAME_OF(cuMemcpyDtoHAsync));
  A.copy = (copy_t)must_dlsym(h, NAME_OF(cuMemcpy));
  A.copy_async = (copy_async_t)must_dlsym(h, NAME_OF(cuMemcpyAsync));
  A.set8 = (set8_t)must_dlsym(h, NAME_OF(cuMemsetD8));
  A.set32_async = (set32_async_t)must_dlsym(h, NAME_OF(cuMemsetD32Async));
  A.copy2d = (copy2d_t)must_dlsym(h, NAME_OF(cuMemcpy2D));
  A.batch = (batch_t)must_dlsym(h, NAME_OF(cuMemcpyBatchAsync));
  A.stream_destroy = (stream_destroy_t)must_dlsym(h, NAME_OF(cuStreamDestroy));
  A.ctx_destroy = (ctx_destroy_t)must_dlsym(h, NAME_OF(cuCtxDestroy));
  A.primary_release = (primary_end_t)must_dlsym(h, NAME_OF(cuDevicePrimaryCtxRelease));
  A.primary_reset = (primary_end_t)must_dlsym(h, NAME_OF(cuDevicePrimaryCtxReset));
}

static pa2_t g_pa2;
static pa1_t g_pa1;
static void* by_procaddr(const char* base, int ver, cuuint64_t flags) {
  void* p = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_pa2 ? g_pa2(base, &p, ver, flags, &st) : g_pa1(base, &p, ver, flags);
  if (r != CUDA_SUCCESS || !p) { fprintf(stderr, "driver_app: cuGetProcAddress(%s, %d, %llu) failed\n", base, ver, (unsigned long long)flags); exit(3); }
  return p;
}
static void from_procaddr(int v1, int ver, cuuint64_t flags) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "driver_app: dlopen: %s\n", dlerror()); exit(3); }
  if (v1) g_pa1 = (pa1_t)must_dlsym(h, "cuGetProcAddress");
  else g_pa2 = (pa2_t)must_dlsym(h, "cuGetProcAddress_v2");
  A.launch = (launch_t)by_procaddr("cuLaunchKernel", ver, flags);
  A.launch_ex = (launch_ex_t)by_procaddr("cuLaunchKernelEx", ver, flags);
  A.coop = (coop_t)by_procaddr("cuLaunchCooperativeKernel", ver, flags);
  A.graph = (graph_t)by_procaddr("cuGraphLaunch", ver, flags);
  A.htod = (htod_t)by_procaddr("cuMemcpyHtoD", ver, flags);
  A.dtoh = (dtoh_t)by_procaddr("cuMemcpyDtoH", ver, flags);
  A.dtod = (dtod_t)by_procaddr("cuMemcpyDtoD", ver, flags);
  A.htod_async = (htod_async_t)by_procaddr("cuMemcpyHtoDAsync", ver, flags);
  A.dtoh_async = (dtoh_async_t)by_procaddr("cuMemcpyDtoHAsync", ver, flags);
  A.copy = (copy_t)by_procaddr("cuMemcpy", ver, flags);
  A.copy_async = (copy_async_t)by_procaddr("cuMemcpyAsync", ver, flags);
  A.set8 = (set8_t)by_procaddr("cuMemsetD8", ver, flags);
  A.set32_async = (set32_async_t)by_procaddr("cuMemsetD32Async", ver, flags);
  A.copy2d = (copy2d_t)by_procaddr("cuMemcpy2D", ver, flags);
  A.batch = (batch_t)by_procaddr("cuMemcpyBatchAsync", ver, flags);
  A.stream_destroy = (stream_destroy_t)by_procaddr("cuStreamDestroy", ver, flags);
  A.ctx_destroy = (ctx_destroy_t)by_procaddr("cuCtxDestroy", ver, flags);
  A.primary_release = (primary_end_t)by_procaddr("cuDevicePrimaryCtxRelease", ver, flags);
  A.primary_reset = (primary_end_t)by_procaddr("cuDevicePrimaryCtxReset", ver, flags);
}

static CUmodule g_mod;
static CUstream g_stream;
static CUcontext g_ctx; /* the main thread's (device 0's primary context) */
static CUgraphExec g_graph;
static CUfunction func(const char* name) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, g_mod, name));
  return f;
}
static void kernel(CUfunction f, unsigned long long bytes) {
  void* params[] = {&bytes};
  CHECK(A.launch(f, 1, 1, 1, 32, 1, 1, 0, g_stream, params, NULL));
}

/* The standard mix: one of each kind, with known bytes (tests/cuhooks/cuhook_intercept_test.cc). */
static void ops(void) {
  enum { MB = 1 << 20 };
  CUfunction f = func("stream_kernel");
  unsigned long long bytes = MB;
  void* params[] = {&bytes};
  for (int i = 0; i < 3; ++i) kernel(f, MB);
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 32, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = g_stream;
  CHECK(A.launch_ex(&cfg, f, params, NULL));
  CHECK(A.coop(f, 1, 1, 1, 32, 1, 1, 0, g_stream, params));
  CHECK(A.graph(g_graph, g_stream));
  CUdeviceptr d1, d2;
  CHECK(cuMemAlloc(&d1, 4 * MB));
  CHECK(cuMemAlloc(&d2, 4 * MB));
  char* h = malloc(4 * MB);
  memset(h, 7, 4 * MB);
  CHECK(A.htod(d1, h, 4 * MB));
  CHECK(A.dtoh(h, d1, 2 * MB));
  CHECK(A.dtod(d2, d1, MB));
  CHECK(A.htod_async(d1, h, 3 * MB, g_stream));
  CHECK(A.dtoh_async(h, d1, MB, g_stream));
  CHECK(A.copy(d2, (CUdeviceptr)h, 512 * 1024));              /* unified: host -> device */
  CHECK(A.copy_async((CUdeviceptr)h, d2, 256 * 1024, g_stream)); /* unified: device -> host */
  CHECK(A.set8(d1, 0, 4096));
  CHECK(A.set32_async(d1, 0, 1024, g_stream));
  CUDA_MEMCPY2D c2;
  memset(&c2, 0, sizeof c2);
  c2.srcMemoryType = CU_MEMORYTYPE_HOST, c2.srcHost = h, c2.srcPitch = 1024;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE, c2.dstDevice = d2, c2.dstPitch = 1024;
  c2.WidthInBytes = 1024, c2.Height = 64;
  CHECK(A.copy2d(&c2));
  CUdeviceptr dsts[2] = {d1, d2}, srcs[2] = {(CUdeviceptr)h, (CUdeviceptr)h};
  size_t sizes[2] = {8192, 4096};
  CUmemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  size_t idx = 0;
  CHECK(A.batch(dsts, srcs, sizes, 2, &attr, &idx, 1, g_stream));
  if (h[0] != 7) { fprintf(stderr, "driver_app: copies lost data\n"); exit(4); }
  free(h);
  CHECK(cuMemFree(d1));
  CHECK(cuMemFree(d2));
}

static int g_sleep_ms;
static void nap(void) {
  if (g_sleep_ms > 0) {
    struct timespec ts = {g_sleep_ms / 1000, (long)(g_sleep_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* P passes of L layers x K kernels. how: 0 plain, 1 NVTX ranges, 2 explicit API, 3 the
 * explicit API with each kernel in a unit of its own nested in the layer's. */
static void layers(int passes, int L, int K, int how) {
  static const char* names[] = {"attn_k", "mlp_k", "norm_k", "rope_k", "gemv_k", "act_k"};
  CUfunction fs[6];
  for (int k = 0; k < 6; ++k) fs[k] = func(names[k]);
  CUfunction embed = func("embed_k"), head = func("head_k");
  for (int p = 0; p < passes; ++p) {
    kernel(embed, 4096);
    for (int l = 0; l < L; ++l) {
      char rn[64];
      snprintf(rn, sizeof rn, "model.layers.%d", l);
      if (how == 1) nvtxRangePushA(rn);
      if (how >= 2 && ripple_cuhook_unit_begin) ripple_cuhook_unit_begin(rn + 6, 0);
      for (int k = 0; k < K; ++k) {
        if (how == 3 && ripple_cuhook_unit_begin) ripple_cuhook_unit_begin(names[k % 6], 0);
        kernel(fs[k % 6], 65536);
        if (how == 3 && ripple_cuhook_unit_end) ripple_cuhook_unit_end();
      }
      if (how == 1) nvtxRangePop();
      if (how >= 2 && ripple_cuhook_unit_end) ripple_cuhook_unit_end();
    }
    kernel(head, 8192);
    nap();
  }
}

/* The helper thread of `offload`: one H2D copy of g_off_bytes on its own stream per
 * post of g_off_go, answered by g_off_done (the main thread waits: the copy is issued
 * while the main thread's range is open). */
static sem_t g_off_go, g_off_done;
static unsigned long long g_off_bytes;
static CUdeviceptr g_off_dev;
static char* g_off_host;
static int g_off_quit;
static void* offload_helper(void* ctx) {
  CHECK(cuCtxSetCurrent((CUcontext)ctx));
  CUstream s;
  CHECK(cuStreamCreate(&s, 0));
  for (;;) {
    sem_wait(&g_off_go);
    if (g_off_quit) break;
    CHECK(A.htod_async(g_off_dev, g_off_host, g_off_bytes, s));
    sem_post(&g_off_done);
  }
  return NULL;
}

static void offload(int passes, int L, int K, unsigned long long bytes, CUcontext ctx) {
  static const char* names[] = {"attn_k", "mlp_k", "norm_k", "rope_k", "gemv_k", "act_k"};
  CUfunction fs[6];
  for (int k = 0; k < 6; ++k) fs[k] = func(names[k]);
  CUfunction head = func("head_k");
  enum { kIn = 8192, kOut = 4096 };
  CUdeviceptr io;
  CHECK(cuMemAlloc(&g_off_dev, bytes));
  CHECK(cuMemAlloc(&io, kIn));
  g_off_host = calloc(1, bytes);
  char buf[kIn] = {0};
  g_off_bytes = bytes;
  sem_init(&g_off_go, 0, 0);
  sem_init(&g_off_done, 0, 0);
  pthread_t t;
  pthread_create(&t, NULL, offload_helper, ctx);
  for (int p = 0; p < passes; ++p) {
    CHECK(A.htod_async(io, buf, kIn, g_stream)); /* the input: outside any unit */
    for (int l = 0; l < L; ++l) {
      char rn[64];
      snprintf(rn, sizeof rn, "model.layers.%d", l);
      nvtxRangePushA(rn);
      sem_post(&g_off_go);
      sem_wait(&g_off_done);
      for (int k = 0; k < K; ++k) kernel(fs[k % 6], 65536);
      CHECK(A.dtoh_async(buf, io, kOut, g_stream));
      nvtxRangePop();
    }
    nvtxRangePushA("lm_head");
    kernel(head, 8192);
    nvtxRangePop();
    nap();
  }
  g_off_quit = 1;
  sem_post(&g_off_go);
  pthread_join(t, NULL);
  free(g_off_host);
  CHECK(cuMemFree(g_off_dev));
  CHECK(cuMemFree(io));
}

static void vlm(int passes, int V, int L, int K) {
  CUfunction f = func("attn_k"), head = func("head_k");
  for (int p = 0; p < passes; ++p) {
    char rn[64];
    for (int v = 0; v < V; ++v) {
      snprintf(rn, sizeof rn, "visual.blocks.%d", v);
      nvtxRangePushA(rn);
      for (int k = 0; k < K; ++k) kernel(f, 4096);
      nvtxRangePop();
    }
    for (int l = 0; l < L; ++l) {
      snprintf(rn, sizeof rn, "model.layers.%d", l);
      nvtxRangePushA(rn);
      for (int k = 0; k < K; ++k) kernel(f, 4096);
      nvtxRangePop();
    }
    nvtxRangePushA("lm_head");
    kernel(head, 8192);
    nvtxRangePop();
    nap();
  }
}

static void layercopies(int passes, int L, int K, const char* sizes_arg) {
  unsigned long long sizes[64], max = 0;
  int n = 0;
  for (const char* p = sizes_arg; *p && n < 64;) {
    char* end = NULL;
    sizes[n] = strtoull(p, &end, 0);
    if (end == p || sizes[n] == 0) { fprintf(stderr, "driver_app: bad layercopies sizes '%s'\n", sizes_arg); exit(2); }
    if (sizes[n] > max) max = sizes[n];
    ++n;
    p = *end == ',' ? end + 1 : end;
  }
  static const char* names[] = {"attn_k", "mlp_k", "norm_k", "rope_k", "gemv_k", "act_k"};
  CUfunction fs[6];
  for (int k = 0; k < 6; ++k) fs[k] = func(names[k]);
  CUfunction embed = func("embed_k"), head = func("head_k");
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, max));
  char* h = calloc(1, max);
  for (int p = 0; p < passes; ++p) {
    kernel(embed, 4096);
    for (int l = 0; l < L; ++l) {
      for (int c = 0; c < n; ++c) CHECK(A.htod_async(d, h, sizes[c], g_stream));
      for (int k = 0; k < K; ++k) kernel(fs[k % 6], 65536);
    }
    kernel(head, 8192);
    CHECK(A.dtoh_async(h, d, 4096, g_stream)); /* the next token: below RIPPLE_COPY_MIN_BYTES */
    nap();
  }
  free(h);
  CHECK(cuMemFree(d));
}

static unsigned char pattern_at(size_t i) { return (unsigned char)(i * 131u + i / 4096u + 7u); }

static void roundtrip(const char* how, unsigned long long bytes) {
  enum { W = 1000, P = 1024, R = 8 };
  const int is2d = !strcmp(how, "2d"), is3d = !strcmp(how, "3d");
  size_t rows = (size_t)(bytes / W), slices = rows / R;
  if (is3d) rows = slices * R;
  const size_t span = (is2d || is3d) ? rows * P : (size_t)bytes; /* bytes the buffers hold */
  unsigned char* h = malloc(span);
  unsigned char* back = calloc(1, span);
  for (size_t i = 0; i < span; ++i) h[i] = pattern_at(i);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, span));
  if (!strcmp(how, "sync")) {
    CHECK(A.htod(d, h, span));
    CHECK(A.dtoh(back, d, span));
  } else if (!strcmp(how, "async")) {
    CHECK(A.htod_async(d, h, span, g_stream));
    CHECK(A.dtoh_async(back, d, span, g_stream));
  } else if (!strcmp(how, "unified")) {
    CHECK(A.copy(d, (CUdeviceptr)h, span));
    CHECK(A.copy_async((CUdeviceptr)back, d, span, g_stream));
  } else if (is2d || is3d) {
    for (int dir = 0; dir < 2; ++dir) {
      CUDA_MEMCPY3D c;
      memset(&c, 0, sizeof c);
      c.srcMemoryType = dir ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      c.dstMemoryType = dir ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      c.srcHost = h, c.srcDevice = d, c.dstHost = back, c.dstDevice = d;
      if (dir) c.srcHost = NULL; else c.dstHost = NULL;
      c.srcPitch = c.dstPitch = P, c.WidthInBytes = W;
      if (is3d) {
        c.srcHeight = c.dstHeight = R, c.Height = R, c.Depth = slices;
        CHECK(cuMemcpy3D(&c));
      } else {
        CUDA_MEMCPY2D c2;
        memset(&c2, 0, sizeof c2);
        c2.srcMemoryType = c.srcMemoryType, c2.dstMemoryType = c.dstMemoryType;
        c2.srcHost = c.srcHost, c2.srcDevice = c.srcDevice, c2.dstHost = c.dstHost, c2.dstDevice = c.dstDevice;
        c2.srcPitch = c2.dstPitch = P, c2.WidthInBytes = W, c2.Height = rows;
        CHECK(A.copy2d(&c2));
      }
    }
  } else { fprintf(stderr, "driver_app: unknown roundtrip '%s'\n", how); exit(2); }
  CHECK(cuStreamSynchronize(g_stream));
  for (size_t i = 0; i < span; ++i) {
    if ((is2d || is3d) && i % P >= W) continue; /* the pitch's padding is not copied */
    if (back[i] != h[i]) { fprintf(stderr, "driver_app: roundtrip %s differs at byte %zu\n", how, i); exit(4); }
  }
  free(h);
  free(back);
  CHECK(cuMemFree(d));
}

static void copies(int n, unsigned long long bytes) {
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, bytes));
  char* h = calloc(1, bytes);
  for (int i = 0; i < n; ++i) {
    CHECK(A.htod_async(d, h, bytes, g_stream));
    nap();
  }
  free(h);
  CHECK(cuMemFree(d));
}

/* nvtxcapture: a range pushed on a thread whose stream captures opens no unit, so its pop
 * must close none (it closed the other thread's). */
static pthread_barrier_t g_cap_bar;
static CUcontext g_cap_ctx;
static int g_cap_other;
static void* capture_thread(void* arg) {
  (void)arg;
  CUstream s;
  CHECK(cuCtxSetCurrent(g_cap_ctx));
  CHECK(cuStreamCreate(&s, 0));
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  unsigned long long n = 64;
  void* params[] = {&n};
  CHECK(A.launch(func("captured_kernel"), 1, 1, 1, 32, 1, 1, 0, s, params, NULL));  /* its last stream captures */
  pthread_barrier_wait(&g_cap_bar);  /* A is inside its unit */
  if (g_cap_other) {
    nvtxRangePushA("model.layers.1");
    CHECK(A.launch(func("captured_kernel"), 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    nvtxRangePop();
  }
  pthread_barrier_wait(&g_cap_bar);
  CUgraph g;
  CHECK(cuStreamEndCapture(s, &g));
  return NULL;
}
static void nvtxcapture(int other, CUcontext ctx) {
  enum { MB = 1 << 20 };
  g_cap_ctx = ctx, g_cap_other = other;
  pthread_barrier_init(&g_cap_bar, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, capture_thread, NULL);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, 4 * MB));
  char* h = calloc(1, 4 * MB);
  kernel(func("stream_kernel"), 64);  /* the thread's last stream: the app's */
  nvtxRangePushA("model.layers.0");
  kernel(func("stream_kernel"), 64);
  pthread_barrier_wait(&g_cap_bar);
  pthread_barrier_wait(&g_cap_bar);
  CHECK(A.htod_async(d, h, 4 * MB, g_stream));  /* 4 MiB inside layers.0 */
  nvtxRangePop();
  pthread_join(t, NULL);
  pthread_barrier_destroy(&g_cap_bar);
  free(h);
  CHECK(cuMemFree(d));
}

/* capclose: N times, a unit whose first work runs on the app's stream and whose last is
 * captured on a second stream (cudaStreamBeginCapture inside the unit, as a graph capture
 * of a decode step), the unit closed while that stream still captures. */
static void capclose(int n) {
  CUfunction f = func("attn_k");
  CUstream s;
  CHECK(cuStreamCreate(&s, 0));
  unsigned long long bytes = 4096;
  void* params[] = {&bytes};
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("model.layers.0");
    CHECK(A.launch(f, 1, 1, 1, 32, 1, 1, 0, g_stream, params, NULL));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(A.launch(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    nvtxRangePop();
    CUgraph g;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuStreamSynchronize(g_stream));
    nap();
  }
  CHECK(A.stream_destroy(s));
}

/* lanes: a grant's work on two created streams, its last on the one that is ahead. */
static void lanes(int n, int k, int destroy) {
  CUfunction fa = func("attn_k"), fm = func("mlp_k");
  CUstream s;
  if (!destroy) CHECK(cuStreamCreate(&s, 0));
  unsigned long long bytes = 4096;
  void* params[] = {&bytes};
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("model.layers.0");
    if (destroy) CHECK(cuStreamCreate(&s, 0));
    for (int j = 0; j < k; ++j) CHECK(A.launch(fa, 1, 1, 1, 32, 1, 1, 0, g_stream, params, NULL));
    CHECK(A.launch(fm, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    if (destroy) {  /* the last work on the first stream again: the second is neither start nor last */
      CHECK(A.launch(fa, 1, 1, 1, 32, 1, 1, 0, g_stream, params, NULL));
      CHECK(A.stream_destroy(s));
    }
    nvtxRangePop();
  }
  CHECK(cuStreamSynchronize(g_stream));
  if (!destroy) {
    CHECK(cuStreamSynchronize(s));
    CHECK(A.stream_destroy(s));
  }
}

/* twoctx: one process driving two GPUs, each through its primary context (cudaSetDevice
 * makes it current); `main_ctx` is current again at the end. */
static void twoctx(const char* on, int n, unsigned long long bytes, CUcontext main_ctx) {
  CUcontext c[2];
  CUstream st[2];
  CUdeviceptr d[2];
  char* h = calloc(1, bytes);
  for (int k = 0; k < 2; ++k) {
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, k));
    CHECK(cuDevicePrimaryCtxRetain(&c[k], dev));
    CHECK(cuCtxSetCurrent(c[k]));
    CHECK(cuStreamCreate(&st[k], 0));
    CHECK(cuMemAlloc(&d[k], bytes));
  }
  const int unit = !strcmp(on, "unit"), dflt = !strcmp(on, "default");
  if (!unit && !dflt && strcmp(on, "stream") != 0) { fprintf(stderr, "driver_app: twoctx: unknown ON '%s'\n", on); exit(2); }
  for (int i = 0; i < n; ++i) {
    if (unit) {
      char rn[64];
      snprintf(rn, sizeof rn, "model.layers.%d", i);
      nvtxRangePushA(rn);
      for (int k = 0; k < 2; ++k) {
        CHECK(cuCtxSetCurrent(c[k]));
        CHECK(A.htod_async(d[k], h, bytes, st[k]));
      }
      nvtxRangePop();
    } else {
      const int k = i % 2;
      CHECK(cuCtxSetCurrent(c[k]));
      CHECK(A.htod_async(d[k], h, bytes, dflt ? (CUstream)0 : st[k]));
    }
    nap();
  }
  for (int k = 0; k < 2; ++k) {
    CHECK(cuCtxSetCurrent(c[k]));
    CHECK(cuStreamSynchronize(st[k]));
    CHECK(cuMemFree(d[k]));
  }
  CHECK(cuCtxSetCurrent(main_ctx));
  free(h);
}

/* ctxend: contexts that end after their work, their handles given out again. */
static int g_end_wait_ms; /* endwait MS */
static void ctxend(const char* how, int n, unsigned long long bytes, CUcontext main_ctx) {
  const int destroy = !strcmp(how, "destroy"), reset = !strcmp(how, "reset");
  if (!destroy && !reset && strcmp(how, "release") != 0) { fprintf(stderr, "driver_app: ctxend: unknown HOW '%s'\n", how); exit(2); }
  char* h = calloc(1, bytes);
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, destroy ? 0 : 1));
  for (int i = 0; i < n; ++i) {
    CUcontext c;
    if (destroy) CHECK(cuCtxCreate(&c, NULL, 0, dev));
    else CHECK(cuDevicePrimaryCtxRetain(&c, dev));
    CHECK(cuCtxSetCurrent(c));
    CUstream s;
    CUdeviceptr d;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuMemAlloc(&d, bytes));
    CHECK(A.htod_async(d, h, bytes, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemFree(d));
    if (g_end_wait_ms > 0) {
      struct timespec ts = {g_end_wait_ms / 1000, (long)(g_end_wait_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    CHECK(A.stream_destroy(s));
    if (destroy) {
      CHECK(A.ctx_destroy(c));
    } else {
      if (reset) CHECK(A.primary_reset(dev));
      CHECK(A.primary_release(dev));
    }
    CHECK(cuCtxSetCurrent(main_ctx));
    nap();
  }
  free(h);
}

/* Waits for a forked child at most 10 s (then kills it): a child stuck on a lock that a
 * parent thread held at the fork fails the run instead of hanging it. */
static int child_exited_0(pid_t pid, int k) {
  int st = 0;
  pid_t w = 0;
  for (int ms = 0; ms < 10000 && (w = waitpid(pid, &st, WNOHANG)) == 0; ++ms) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fprintf(stderr, "driver_app: fork %d: the child was not gone after 10 s (killed)\n", k);
    return 0;
  }
  if (w != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "driver_app: fork %d: the child failed (status 0x%x)\n", k, st);
    return 0;
  }
  return 1;
}

/* forks: a threaded engine forks (a DataLoader's workers, a subprocess) while its other
 * threads change what the hook keeps: event pools made and dropped with their contexts,
 * works opened and grants closed. */
static int g_forks_stop;
static unsigned long long g_forks_copies;
/* One copy of BYTES from H on a stream of its own, in the current context, waited for. */
static void copy_on_own_stream(const char* h, unsigned long long bytes) {
  CUstream s;
  CUdeviceptr d;
  CHECK(cuStreamCreate(&s, 0));
  CHECK(cuMemAlloc(&d, bytes));
  CHECK(A.htod_async(d, h, bytes, s));
  CHECK(cuStreamSynchronize(s));
  CHECK(cuMemFree(d));
  CHECK(A.stream_destroy(s));
}
static void* forks_churn(void* arg) {
  const unsigned long long bytes = *(const unsigned long long*)arg;
  char* h = calloc(1, bytes);
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  while (!__atomic_load_n(&g_forks_stop, __ATOMIC_ACQUIRE)) {
    CUcontext c;
    CHECK(cuCtxCreate(&c, NULL, 0, dev));
    copy_on_own_stream(h, bytes);
    CHECK(A.ctx_destroy(c));
    __atomic_fetch_add(&g_forks_copies, 1, __ATOMIC_RELAXED);
  }
  free(h);
  return NULL;
}

static int forks(int n, int nthreads, unsigned long long bytes, unsigned long long child_bytes) {
  enum { kMaxThreads = 8 };
  pthread_t th[kMaxThreads];
  if (nthreads > kMaxThreads) nthreads = kMaxThreads;
  for (int t = 0; t < nthreads; ++t)
    if (pthread_create(&th[t], NULL, forks_churn, &bytes) != 0) { fprintf(stderr, "driver_app: pthread_create failed\n"); exit(3); }
  /* The threads under way before the first fork. */
  while (nthreads > 0 && __atomic_load_n(&g_forks_copies, __ATOMIC_RELAXED) < (unsigned long long)nthreads) sched_yield();
  const unsigned long long copies0 = __atomic_load_n(&g_forks_copies, __ATOMIC_RELAXED);
  char* h = calloc(1, child_bytes);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, child_bytes));
  fflush(stdout);
  fflush(stderr);
  int failed = 0, ok = 0;
  for (int k = 0; k < n && !failed; ++k) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); failed = 1; break; }
    if (pid == 0) _exit(A.htod_async(d, h, child_bytes, g_stream) == CUDA_SUCCESS ? 0 : 3); /* no atexit handlers */
    if (!child_exited_0(pid, k)) failed = 1;
    else ++ok;
  }
  const unsigned long long copies = __atomic_load_n(&g_forks_copies, __ATOMIC_RELAXED) - copies0;
  __atomic_store_n(&g_forks_stop, 1, __ATOMIC_RELEASE);
  for (int t = 0; t < nthreads; ++t) pthread_join(th[t], NULL);
  CHECK(cuMemFree(d));
  free(h);
  fprintf(stderr, "forks: %d of %d children exited 0, %llu copies by the threads meanwhile\n", ok, n, copies);
  return failed;
}

/* forkheld: a fork while another thread waits at a boundary for its grant. */
static void* forkheld_copy(void* arg) {
  const unsigned long long bytes = *(const unsigned long long*)arg;
  char* h = calloc(1, bytes);
  CHECK(cuCtxSetCurrent(g_ctx));
  copy_on_own_stream(h, bytes);
  free(h);
  return NULL;
}

static int forkheld(unsigned long long bytes) {
  pthread_t th;
  if (pthread_create(&th, NULL, forkheld_copy, &bytes) != 0) { fprintf(stderr, "driver_app: pthread_create failed\n"); exit(3); }
  char* h = calloc(1, bytes);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, bytes));
  /* Until the thread's copy is a boundary: counted under the gate's lock, which the
   * thread holds from then on until its grant comes. */
  for (int ms = 0; ms < 10000; ++ms) {
    struct ripple_cuhook_stats st;
    memset(&st, 0, sizeof st);
    if (ripple_cuhook_get_stats && ripple_cuhook_get_stats(&st, sizeof st) == 0 && st.units_copy >= 1) break;
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  fflush(stdout);
  fflush(stderr);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid == 0) _exit(A.htod_async(d, h, bytes, g_stream) == CUDA_SUCCESS ? 0 : 3);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (pid < 0) { perror("fork"); exit(3); }
  const long ms = (t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L;
  fprintf(stderr, "forkheld: fork took %ld ms\n", ms);
  const int ok = child_exited_0(pid, 0);
  pthread_join(th, NULL);
  CHECK(cuMemFree(d));
  free(h);
  return ok && ms < 1000 ? 0 : 1;
}

/* commreuse: a communication stream destroyed, its handle another stream's. */
static void commreuse(int n, unsigned long long bytes) {
  CUstream s1, s2;
  CHECK(cuStreamCreate(&s1, 0));
  unsigned long long k = 1024;
  void* params[] = {&k};
  CHECK(A.launch(func("ncclAllReduce_k"), 1, 1, 1, 32, 1, 1, 0, s1, params, NULL));
  CHECK(cuStreamSynchronize(s1));
  CHECK(A.stream_destroy(s1));
  CHECK(cuStreamCreate(&s2, 0));
  if (s2 != s1) { fprintf(stderr, "driver_app: commreuse: the destroyed stream's handle was not reused\n"); exit(6); }
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, bytes));
  char* h = calloc(1, bytes);
  for (int i = 0; i < n; ++i) CHECK(A.htod_async(d, h, bytes, s2));
  CHECK(cuStreamSynchronize(s2));
  CHECK(A.stream_destroy(s2));
  free(h);
  CHECK(cuMemFree(d));
}

/* streamend: a unit's work ran last on a stream destroyed before the unit ends. */
static void streamend(int n) {
  CUfunction f = func("stream_kernel");
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("model.layers.0");
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    unsigned long long bytes = 4096;
    void* params[] = {&bytes};
    CHECK(A.launch(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    CHECK(A.stream_destroy(s));
    nvtxRangePop();
    nap();
  }
}

/* ctxmid: a context ends inside a grant (its handle at once another context's), the grant's
 * units before and after it on the per-thread default stream. */
static void ctxmid(const char* how, int n, CUcontext main_ctx) {
  const int destroy = !strcmp(how, "destroy");
  if (!destroy && strcmp(how, "reset") != 0) { fprintf(stderr, "driver_app: ctxmid: unknown HOW '%s'\n", how); exit(2); }
  CUfunction f = func("attn_k");
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, destroy ? 0 : 1));
  for (int i = 0; i < n; ++i) {
    CUcontext c, again;
    if (destroy) CHECK(cuCtxCreate(&c, NULL, 0, dev));
    else CHECK(cuDevicePrimaryCtxRetain(&c, dev));
    for (int u = 0; u < 3; ++u) {
      if (u == 1) {
        if (destroy) {
          CHECK(A.ctx_destroy(c));
          CHECK(cuCtxCreate(&again, NULL, 0, dev));
        } else {
          CHECK(A.primary_reset(dev));
          CHECK(cuDevicePrimaryCtxRetain(&again, dev));
        }
        if (again != c) { fprintf(stderr, "driver_app: ctxmid: the ended context's handle was not reused\n"); exit(6); }
      }
      CHECK(cuCtxSetCurrent(c));
      char rn[32];
      snprintf(rn, sizeof rn, "model.layers.%d", u);
      nvtxRangePushA(rn);
      unsigned long long bytes = 4096;
      void* params[] = {&bytes};
      CHECK(A.launch(f, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, params, NULL));
      nvtxRangePop();
    }
    CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    if (destroy) {
      CHECK(A.ctx_destroy(c));
    } else {
      CHECK(A.primary_release(dev));
      CHECK(A.primary_release(dev));
    }
    CHECK(cuCtxSetCurrent(main_ctx));
    nap();
  }
}

/* ptsclose: a grant's work on one thread's per-thread default stream, the grant closed on
 * another thread (which names its own per-thread stream with the same handle). */
static pthread_barrier_t g_pc_bar;
static CUcontext g_pc_ctx;
static CUstream g_pc_on;
static CUfunction g_pc_f;
static int g_pc_n, g_pc_k;
static void* ptsclose_worker(void* arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(g_pc_ctx));
  for (int i = 0; i < g_pc_n; ++i) {
    nvtxRangePushA("model.layers.0");
    unsigned long long bytes = 4096;
    void* params[] = {&bytes};
    for (int k = 0; k < g_pc_k; ++k) CHECK(A.launch(g_pc_f, 1, 1, 1, 32, 1, 1, 0, g_pc_on, params, NULL));
    nvtxRangePop();
    pthread_barrier_wait(&g_pc_bar); /* submitted */
    pthread_barrier_wait(&g_pc_bar); /* the other thread closed the grant */
    CHECK(cuStreamSynchronize(g_pc_on));
  }
  return NULL;
}
static void ptsclose(const char* on, int n, int k, CUcontext ctx) {
  if (strcmp(on, "pt") != 0 && strcmp(on, "0") != 0) { fprintf(stderr, "driver_app: ptsclose: unknown ON '%s'\n", on); exit(2); }
  g_pc_on = !strcmp(on, "pt") ? CU_STREAM_PER_THREAD : (CUstream)0;
  g_pc_ctx = ctx, g_pc_n = n, g_pc_k = k, g_pc_f = func("attn_k");
  pthread_barrier_init(&g_pc_bar, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, ptsclose_worker, NULL);
  for (int i = 0; i < n; ++i) {
    pthread_barrier_wait(&g_pc_bar);
    nvtxRangePushA("model.layers.1");
    nvtxRangePop();
    pthread_barrier_wait(&g_pc_bar);
    nap();
  }
  pthread_join(t, NULL);
  pthread_barrier_destroy(&g_pc_bar);
}

/* llama.cpp's decode loop with CUDA graphs (ggml-cuda: capture, instantiate or update,
 * launch), on several streams; launches and copies go through the chosen PATH. */
static void llama(int steps, int nstreams, int k) {
  enum { MB = 1 << 20, kLogits = 128 * 1024, kMax = 8 };
  if (nstreams < 1 || nstreams > kMax) { fprintf(stderr, "driver_app: llama: 1..%d streams\n", kMax); exit(2); }
  CUstream st[kMax];
  CUgraphExec exec[kMax] = {0};
  int uses[kMax] = {0};
  for (int s = 0; s < nstreams; ++s) CHECK(cuStreamCreate(&st[s], 0));
  CUfunction mm = func("mul_mat_vec_f16"), gemm = func("cutlass_80_tensorop_gemm");
  CUdeviceptr in, w, logits;
  CHECK(cuMemAlloc(&in, 8));
  CHECK(cuMemAlloc(&w, 2 * MB));
  CHECK(cuMemAlloc(&logits, kLogits));
  char* h = malloc(2 * MB);
  memset(h, 3, 2 * MB);
  for (int i = 0; i < steps; ++i) {
    const int s = i % nstreams;
    if (uses[s]++ % 4 == 0) {
      CHECK(cuStreamBeginCapture(st[s], CU_STREAM_CAPTURE_MODE_RELAXED));
      for (int j = 0; j < k; ++j) {
        unsigned long long bytes = 65536;
        void* params[] = {&bytes};
        if (j % 2 == 0) {
          CHECK(A.launch(mm, 1, 1, 1, 32, 1, 1, 0, st[s], params, NULL));
        } else {
          CUlaunchAttribute attr;
          memset(&attr, 0, sizeof attr);
          attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
          attr.value.programmaticStreamSerializationAllowed = 1;
          CUlaunchConfig cfg;
          memset(&cfg, 0, sizeof cfg);
          cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
          cfg.blockDimX = 128, cfg.blockDimY = cfg.blockDimZ = 1;
          cfg.hStream = st[s];
          cfg.attrs = &attr, cfg.numAttrs = 1;
          CHECK(A.launch_ex(&cfg, gemm, params, NULL));
        }
      }
      CHECK(A.htod_async(w, h, 2 * MB, st[s]));
      CUgraph g;
      CHECK(cuStreamEndCapture(st[s], &g));
      if (exec[s]) CHECK(cuGraphExecDestroy(exec[s]));
      CHECK(cuGraphInstantiate(&exec[s], g, 0));
      CHECK(cuGraphDestroy(g));
    }
    long long token = i;
    CHECK(A.htod_async(in, &token, 8, st[s]));
    CHECK(A.graph(exec[s], st[s]));
    CHECK(A.dtoh_async(h, logits, kLogits, st[s]));
    CHECK(cuStreamSynchronize(st[s]));
    nap();
  }
  if (h[kLogits] != 3) { fprintf(stderr, "driver_app: llama: copies lost data\n"); exit(4); }
  for (int s = 0; s < nstreams; ++s) if (exec[s]) CHECK(cuGraphExecDestroy(exec[s]));
  free(h);
  CHECK(cuMemFree(in));
  CHECK(cuMemFree(w));
  CHECK(cuMemFree(logits));
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: driver_app PATH [MODE...]\n"); return 2; }
  int i = 1;
  const char* path = argv[i++];
  if (!strcmp(path, "direct")) from_symbols();
  else if (!strcmp(path, "dlsym")) from_dlsym();
  else if (!strcmp(path, "procaddr") || !strcmp(path, "procaddr-v1")) {
    if (i + 2 > argc) { fprintf(stderr, "driver_app: %s needs VER FLAGS\n", path); return 2; }
    from_procaddr(!strcmp(path, "procaddr-v1"), atoi(argv[i]), strtoull(argv[i + 1], NULL, 0));
    i += 2;
  } else if (strcmp(path, "legacy-abi") != 0) { fprintf(stderr, "driver_app: unknown path '%s'\n", path); return 2; }

  CHECK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  g_ctx = ctx;
  CHECK(cuModuleLoadData(&g_mod, "fake image"));
  CHECK(cuStreamCreate(&g_stream, 0));
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CHECK(cuGraphInstantiate(&g_graph, graph, 0));

  if (!strcmp(path, "legacy-abi")) {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    g_pa2 = (pa2_t)must_dlsym(h, "cuGetProcAddress_v2");
    /* cudaVersion 3010: the driver returns the 32-bit-size ABI. */
    CUresult (*htod_v1)(unsigned int, const void*, unsigned int) =
        (CUresult(*)(unsigned int, const void*, unsigned int))by_procaddr("cuMemcpyHtoD", 3010, 0);
    char buf[64] = {0};
    CHECK(htod_v1(0, buf, sizeof buf));
    /* cuGetProcAddress asked for itself, then used. */
    g_pa2 = (pa2_t)by_procaddr("cuGetProcAddress", 12000, 0);
    A.launch = (launch_t)by_procaddr("cuLaunchKernel", 12000, 0);
    kernel(func("stream_kernel"), 1024);
  }

  for (; i < argc; ++i) {
    const char* m = argv[i];
    int a = i + 1 < argc ? atoi(argv[i + 1]) : 0;
    int b = i + 2 < argc ? atoi(argv[i + 2]) : 0;
    int c = i + 3 < argc ? atoi(argv[i + 3]) : 0;
    if (!strcmp(m, "ops")) ops();
    else if (!strcmp(m, "layers")) layers(a, b, c, 0), i += 3;
    else if (!strcmp(m, "nvtx")) layers(a, b, c, 1), i += 3;
    else if (!strcmp(m, "api")) layers(a, b, c, 2), i += 3;
    else if (!strcmp(m, "apinest")) layers(a, b, c, 3), i += 3;
    else if (!strcmp(m, "copies")) copies(a, strtoull(argv[i + 2], NULL, 0)), i += 2;
    else if (!strcmp(m, "roundtrip")) {
      if (i + 2 >= argc) { fprintf(stderr, "driver_app: roundtrip needs HOW BYTES\n"); return 2; }
      roundtrip(argv[i + 1], strtoull(argv[i + 2], NULL, 0)), i += 2;
    }
    else if (!strcmp(m, "layercopies")) {
      if (i + 4 >= argc) { fprintf(stderr, "driver_app: layercopies needs P L K SIZES\n"); return 2; }
      layercopies(a, b, c, argv[i + 4]), i += 4;
    }
    else if (!strcmp(m, "offload")) {
      if (i + 4 >= argc) { fprintf(stderr, "driver_app: offload needs P L K BYTES\n"); return 2; }
      offload(a, b, c, strtoull(argv[i + 4], NULL, 0), ctx), i += 4;
    } else if (!strcmp(m, "vlm")) {
      if (i + 4 >= argc) { fprintf(stderr, "driver_app: vlm needs P V L K\n"); return 2; }
      vlm(a, b, c, atoi(argv[i + 4])), i += 4;
    }
    else if (!strcmp(m, "graph")) { for (int k = 0; k < a; ++k) { CHECK(A.graph(g_graph, g_stream)); nap(); } i += 1; }
    else if (!strcmp(m, "llama")) llama(a, b, c), i += 3;
    else if (!strcmp(m, "sleep")) g_sleep_ms = a, i += 1;
    else if (!strcmp(m, "endwait")) g_end_wait_ms = a, i += 1;
    else if (!strcmp(m, "stats")) {
      struct ripple_cuhook_stats full, old;
      memset(&full, 0, sizeof full);
      memset(&old, 0xab, sizeof old);
      int ok = ripple_cuhook_get_stats && ripple_cuhook_get_stats(&full, sizeof full) == 0 &&
               ripple_cuhook_get_stats(&old, offsetof(struct ripple_cuhook_stats, passes_learned)) == 0;
      const unsigned char* tail = (const unsigned char*)&old + offsetof(struct ripple_cuhook_stats, passes_learned);
      for (size_t k = 0; ok && k < sizeof old - offsetof(struct ripple_cuhook_stats, passes_learned); ++k) ok = tail[k] == 0xab;
      ok = ok && old.units_nvtx == full.units_nvtx;
      fprintf(stderr, "stats: passes_learned=%llu relearns=%llu units_nvtx=%llu old_size_ok=%d\n",
              (unsigned long long)full.passes_learned, (unsigned long long)full.relearns,
              (unsigned long long)full.units_nvtx, ok);
    }
    else if (!strcmp(m, "comm")) { CUfunction f = func("ncclAllReduce_k"); for (int k = 0; k < a; ++k) kernel(f, 1024); i += 1; }
    else if (!strcmp(m, "nvtxcapture")) nvtxcapture(a, ctx), i += 1;
    else if (!strcmp(m, "nvtxnames")) {
      char name[64];
      for (int k = 0; k < a; ++k) {
        snprintf(name, sizeof name, "aten::add, seq = %d", k);
        nvtxRangePushA(name);
        nvtxRangePop();
      }
      i += 1;
    }
    else if (!strcmp(m, "twoctx") || !strcmp(m, "ctxend")) {
      if (i + 3 >= argc) { fprintf(stderr, "driver_app: %s needs 3 arguments\n", m); return 2; }
      if (!strcmp(m, "twoctx")) twoctx(argv[i + 1], b, strtoull(argv[i + 3], NULL, 0), ctx);
      else ctxend(argv[i + 1], b, strtoull(argv[i + 3], NULL, 0), ctx);
      i += 3;
    }
    else if (!strcmp(m, "commreuse")) commreuse(a, strtoull(argv[i + 2], NULL, 0)), i += 2;
    else if (!strcmp(m, "streamend")) streamend(a), i += 1;
    else if (!strcmp(m, "capclose")) capclose(a), i += 1;
    else if (!strcmp(m, "lanes") || !strcmp(m, "lanesend")) {
      if (i + 2 >= argc) { fprintf(stderr, "driver_app: %s needs N K\n", m); return 2; }
      lanes(a, b, !strcmp(m, "lanesend")), i += 2;
    }
    else if (!strcmp(m, "ctxmid")) {
      if (i + 2 >= argc) { fprintf(stderr, "driver_app: ctxmid needs HOW N\n"); return 2; }
      ctxmid(argv[i + 1], b, ctx), i += 2;
    }
    else if (!strcmp(m, "ptsclose")) {
      if (i + 3 >= argc) { fprintf(stderr, "driver_app: ptsclose needs ON N K\n"); return 2; }
      ptsclose(argv[i + 1], b, c, ctx), i += 3;
    }
    else if (!strcmp(m, "commcopy")) {
      if (i + 3 >= argc) { fprintf(stderr, "driver_app: commcopy needs ON N BYTES\n"); return 2; }
      CUstream on = !strcmp(argv[i + 1], "stream") ? g_stream : (CUstream)0;
      unsigned long long n = 1024, bytes = strtoull(argv[i + 3], NULL, 0);
      void* params[] = {&n};
      CHECK(A.launch(func("ncclAllReduce_k"), 1, 1, 1, 32, 1, 1, 0, on, params, NULL));
      CUdeviceptr d;
      CHECK(cuMemAlloc(&d, bytes));
      char* h = calloc(1, bytes);
      for (int k = 0; k < b; ++k) CHECK(A.htod_async(d, h, bytes, on));
      CHECK(A.graph(g_graph, on));
      CHECK(cuStreamSynchronize(on));
      free(h);
      CHECK(cuMemFree(d));
      i += 3;
    }
    else if (!strcmp(m, "forks")) {
      if (i + 4 >= argc) { fprintf(stderr, "driver_app: forks needs N T BYTES CHILD\n"); return 2; }
      if (forks(a, b, strtoull(argv[i + 3], NULL, 0), strtoull(argv[i + 4], NULL, 0))) return 5;
      i += 4;
    }
    else if (!strcmp(m, "forkheld")) {
      if (i + 1 >= argc) { fprintf(stderr, "driver_app: forkheld needs BYTES\n"); return 2; }
      if (forkheld(strtoull(argv[i + 1], NULL, 0))) return 5;
      i += 1;
    }
    else if (!strcmp(m, "fork")) {
      ops(); /* the parent holds a live session (and a watcher thread) when it forks */
      fflush(stdout);
      pid_t pid = fork();
      if (pid < 0) { perror("fork"); return 3; }
      if (pid == 0) { ops(); exit(0); } /* an ordinary exit: atexit handlers (the hook's stats) run */
      int st = 0;
      if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "driver_app: child failed (status %d)\n", st);
        return 5;
      }
    } else { fprintf(stderr, "driver_app: unknown mode '%s'\n", m); return 2; }
  }
  CHECK(cuStreamSynchronize(g_stream));
  printf("driver_app: done\n");
  return 0;
}
