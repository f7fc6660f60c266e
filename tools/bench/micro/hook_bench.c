/* ripple-hook-bench: what one intercepted driver call costs (issue 18, "overhead <= 1 %").
 *
 * A plain driver-API program that knows nothing of Ripple: it dlopens the driver
 * ($RIPPLE_CUDA_LIBRARY, else libcuda.so.1), takes every entry point through
 * cuGetProcAddress_v2 as cudart does (so a preloaded interposer wraps them the way it
 * wraps an engine's), and times the calls an LLM decode step makes (llama.cpp: ~8
 * launches and ~7 small copies a token), in and out of a stream capture:
 *   kernel            cuLaunchKernel of an empty kernel (one u64 parameter, 0)
 *   graph             cuGraphLaunch of a one-kernel graph
 *   h2d-async-8B      cuMemcpyHtoDAsync, 8 bytes from pinned host memory
 *   memcpy-async-d2h  cuMemcpyAsync (generic: the direction is the pointers'), 8 bytes
 *                     device to pinned host
 *   memcpy-async-d2d  cuMemcpyAsync, 8 bytes device to device (never a boundary)
 *   *-capture         the same inside cuStreamBeginCapture_v2 (relaxed) .. EndCapture
 * Each kind runs in batches of B calls timed together (the stream is synchronized, the
 * capture ended, between batches, untimed); it prints the median batch's ns per call:
 *   KIND NS
 * Run it plain, under the interposer (LD_PRELOAD=libripple-cuhook.so, or ripple-run) with
 * RIPPLE_CUHOOK=off, and gated; the differences are the interposer's cost per call.
 * On a machine without a GPU run it on the test double (LD_LIBRARY_PATH=the folder of
 * tests/cuhooks' fake libcuda.so.1): its numbers are the interposer's CPU cost against a
 * driver that does almost nothing, not a GPU's.
 *
 *   ripple-hook-bench [-n CALLS] [-b BATCH] [-k KIND]
 * (default 20000 calls a kind, batches of 100; -k: that kind alone, out of a capture:
 * tools/bench/micro/hook_bench_ir.sh counts instructions per call of each kind that way).
 * Documentation/cuhook.md ("Per-call cost").
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* An empty kernel with one u64 parameter (the test double reads it as bytes to stream).
 * PTX, so the real driver compiles it for whatever GPU it has. */
static const char kPtx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry ripple_bench_noop(.param .u64 p)\n"
    "{\n"
    "  ret;\n"
    "}\n";

typedef CUresult (*proc_t)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
static struct {
  CUresult (*init)(unsigned);
  CUresult (*driver_version)(int*);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*ctx_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_set)(CUcontext);
  CUresult (*module_load)(CUmodule*, const void*);
  CUresult (*module_func)(CUfunction*, CUmodule, const char*);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*stream_sync)(CUstream);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_alloc_host)(void**, size_t);
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode);
  CUresult (*end_capture)(CUstream, CUgraph*);
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*graph_destroy)(CUgraph);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void**, void**);
  CUresult (*graph_launch)(CUgraphExec, CUstream);
  CUresult (*h2d_async)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*copy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
} D;

static proc_t proc;
static int version = 12000;

static void* get(const char* name) {
  void* p = NULL;
  CUdriverProcAddressQueryResult st;
  if (proc(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || p == NULL) {
    fprintf(stderr, "ripple-hook-bench: the driver has no %s (cudaVersion %d)\n", name, version);
    exit(2);
  }
  return p;
}

#define CHECK(x)                                                                          \
  do {                                                                                    \
    CUresult r_ = (x);                                                                    \
    if (r_ != CUDA_SUCCESS) {                                                             \
      fprintf(stderr, "ripple-hook-bench: %s failed: %d (line %d)\n", #x, (int)r_, __LINE__); \
      exit(3);                                                                            \
    }                                                                                     \
  } while (0)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

enum kind { K_KERNEL, K_GRAPH, K_H2D, K_COPY, K_D2D, K_COUNT };
static const char* const kNames[] = {"kernel", "graph", "h2d-async-8B", "memcpy-async-d2h", "memcpy-async-d2d"};

static CUstream stream;
static CUfunction func;
static CUgraphExec exec1;
static CUdeviceptr dbuf;
static void* hbuf;
static unsigned long long zero;

static void one(enum kind k) {
  void* params[] = {&zero};
  switch (k) {
    case K_KERNEL: CHECK(D.launch(func, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL)); break;
    case K_GRAPH: CHECK(D.graph_launch(exec1, stream)); break;
    case K_H2D: CHECK(D.h2d_async(dbuf, hbuf, 8, stream)); break;
    case K_COPY: CHECK(D.copy_async((CUdeviceptr)hbuf + 64, dbuf, 8, stream)); break;
    case K_D2D: CHECK(D.copy_async(dbuf + 64, dbuf, 8, stream)); break;
    case K_COUNT: break;
  }
}

/* The median batch's ns per call of `calls` calls of kind k, in batches of `batch`. */
static double measure(enum kind k, int capture, int calls, int batch) {
  const int nb = calls / batch > 0 ? calls / batch : 1;
  double* per = malloc(sizeof(double) * (size_t)nb);
  for (int w = -2; w < nb; ++w) { /* two warm-up batches */
    if (capture) CHECK(D.begin_capture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    const double t0 = now_ns();
    for (int i = 0; i < batch; ++i) one(k);
    const double t1 = now_ns();
    if (capture) {
      CUgraph g = NULL;
      CHECK(D.end_capture(stream, &g));
      CHECK(D.graph_destroy(g));
    } else {
      CHECK(D.stream_sync(stream));
    }
    if (w >= 0) per[w] = (t1 - t0) / batch;
  }
  qsort(per, (size_t)nb, sizeof(double), cmp_double);
  const double m = per[nb / 2];
  free(per);
  return m;
}

int main(int argc, char** argv) {
  int calls = 20000, batch = 100, only = -1, opt;
  while ((opt = getopt(argc, argv, "n:b:k:h")) != -1) {
    if (opt == 'n') calls = atoi(optarg);
    else if (opt == 'b') batch = atoi(optarg);
    else if (opt == 'k') {
      for (int k = 0; k < K_COUNT; ++k)
        if (strcmp(optarg, kNames[k]) == 0) only = k;
      if (only < 0) {
        fprintf(stderr, "ripple-hook-bench: no kind %s\n", optarg);
        return 1;
      }
    } else {
      fprintf(stderr, "usage: ripple-hook-bench [-n CALLS] [-b BATCH] [-k KIND]\n");
      return opt == 'h' ? 0 : 1;
    }
  }
  if (calls <= 0 || batch <= 0) return 1;
  const char* lib = getenv("RIPPLE_CUDA_LIBRARY");
  void* h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW);
  if (!h) {
    fprintf(stderr, "ripple-hook-bench: %s\n", dlerror());
    return 2;
  }
  proc = (proc_t)dlsym(h, "cuGetProcAddress_v2");
  if (!proc) {
    fprintf(stderr, "ripple-hook-bench: the driver has no cuGetProcAddress_v2 (CUDA 12+)\n");
    return 2;
  }
  *(void**)&D.init = get("cuInit");
  *(void**)&D.driver_version = get("cuDriverGetVersion");
  CHECK(D.init(0));
  int dv = 0;
  CHECK(D.driver_version(&dv));
  version = dv < CUDA_VERSION ? dv : CUDA_VERSION; /* as cudart asks: its own version */
  *(void**)&D.device_get = get("cuDeviceGet");
  *(void**)&D.ctx_retain = get("cuDevicePrimaryCtxRetain");
  *(void**)&D.ctx_set = get("cuCtxSetCurrent");
  *(void**)&D.module_load = get("cuModuleLoadData");
  *(void**)&D.module_func = get("cuModuleGetFunction");
  *(void**)&D.stream_create = get("cuStreamCreate");
  *(void**)&D.stream_sync = get("cuStreamSynchronize");
  *(void**)&D.mem_alloc = get("cuMemAlloc");
  *(void**)&D.mem_alloc_host = get("cuMemAllocHost");
  *(void**)&D.begin_capture = get("cuStreamBeginCapture");
  *(void**)&D.end_capture = get("cuStreamEndCapture");
  *(void**)&D.instantiate = get("cuGraphInstantiateWithFlags");
  *(void**)&D.graph_destroy = get("cuGraphDestroy");
  *(void**)&D.launch = get("cuLaunchKernel");
  *(void**)&D.graph_launch = get("cuGraphLaunch");
  *(void**)&D.h2d_async = get("cuMemcpyHtoDAsync");
  *(void**)&D.copy_async = get("cuMemcpyAsync");

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CHECK(D.device_get(&dev, 0));
  CHECK(D.ctx_retain(&ctx, dev));
  CHECK(D.ctx_set(ctx));
  CHECK(D.module_load(&mod, kPtx));
  CHECK(D.module_func(&func, mod, "ripple_bench_noop"));
  CHECK(D.stream_create(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(D.mem_alloc(&dbuf, 4096));
  CHECK(D.mem_alloc_host(&hbuf, 4096));
  memset(hbuf, 0, 4096);
  /* The graph: one kernel, captured. */
  CUgraph g = NULL;
  CHECK(D.begin_capture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
  one(K_KERNEL);
  CHECK(D.end_capture(stream, &g));
  CHECK(D.instantiate(&exec1, g, 0));

  printf("# ripple-hook-bench: ns per call, median of %d batches of %d (cudaVersion %d)\n", calls / batch, batch,
         version);
  if (only >= 0) {
    printf("%-26s %8.1f\n", kNames[only], measure((enum kind)only, 0, calls, batch));
    return 0;
  }
  for (int k = K_KERNEL; k < K_COUNT; ++k) printf("%-26s %8.1f\n", kNames[k], measure((enum kind)k, 0, calls, batch));
  for (int k = K_KERNEL; k < K_COUNT; ++k) {
    if (k == K_GRAPH || k == K_D2D) continue;
    char name[64];
    snprintf(name, sizeof name, "%s-capture", kNames[k]);
    printf("%-26s %8.1f\n", name, measure((enum kind)k, 1, calls, batch));
  }
  return 0;
}
