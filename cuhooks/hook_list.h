/* The ONE list of CUDA driver entry points libripple-cuhook.so interposes.
 *
 * Everything that must agree is generated from it: the hook enum and name table, the
 * real-function pointer slots, the exported hook functions, their cuGetProcAddress
 * wrappers (cuhooks/hooks.cc) and the test double libcuda (tests/cuhooks/fake_cuda.c),
 * so the lists can never drift apart (STYLE.md "The interposer"; HAMi-core keeps two
 * hand-synced lists). C and C++ both include it, after <cuda.h> compiled with
 * __CUDA_API_VERSION_INTERNAL (so every exported name, _ptsz/_ptds included, is
 * declared without the header's renaming macros) and after cuhooks/op_info.h.
 *
 * RIPPLE_CU_HOOK(name, base, ptds, minver, maxver, kind, params, args,
 *                stream, bytes, dir, func, kparams)
 *   name     the exported driver symbol
 *   base     the name cuGetProcAddress is asked for (the driver picks _v2/_ptsz)
 *   ptds     1 for the per-thread-default-stream variant (_ptsz/_ptds)
 *   minver,  the cudaVersion range [minver, maxver) for which cuGetProcAddress(base)
 *   maxver   returns this ABI; other versions are passed through untouched (counted)
 *   kind     RH_KERNEL, RH_GRAPH, RH_COPY, RH_SET, RH_PREFETCH, RH_HOSTFN, RH_END (a stream
 *            or context ends: no operation, one handle as the only parameter)
 *   params, args   the C parameter list and the argument names
 *   stream   the CUstream the operation runs on (RH_STREAM maps 0 to the per-thread
 *            stream in ptds variants; sync copies run on the default stream)
 *   bytes    bytes moved (exact for copies and sets; 0 for kernels: units give those)
 *   dir      RH_DIR_* or an expression resolving it from the arguments; one that asks the
 *            driver (unified-addressing pointers) is wrapped in RH_DIR_LAZY(expr): the
 *            interposer evaluates it only where it needs the direction, never when it
 *            only counts (RIPPLE_CUHOOK=off); other includers evaluate it as it is
 *   func, kparams  the CUfunction and kernel parameters of kernel launches (else 0)
 */

#define RH_NOFUNC ((CUfunction)0)
#define RH_NOPARAMS ((void**)0)
#define RH_MAXVER 1000000

#define RIPPLE_CU_HOOK_LAUNCHES(X)                                                                     \
  X(cuLaunchKernel, "cuLaunchKernel", 0, 4000, RH_MAXVER, RH_KERNEL,                                   \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
     unsigned int bz, unsigned int shmem, CUstream hStream, void** kernelParams, void** extra),         \
    (f, gx, gy, gz, bx, by, bz, shmem, hStream, kernelParams, extra), RH_STREAM(0, hStream), 0,         \
    RH_DIR_NONE, f, kernelParams)                                                                      \
  X(cuLaunchKernel_ptsz, "cuLaunchKernel", 1, 7000, RH_MAXVER, RH_KERNEL,                              \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
     unsigned int bz, unsigned int shmem, CUstream hStream, void** kernelParams, void** extra),         \
    (f, gx, gy, gz, bx, by, bz, shmem, hStream, kernelParams, extra), RH_STREAM(1, hStream), 0,         \
    RH_DIR_NONE, f, kernelParams)                                                                      \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", 0, 11060, RH_MAXVER, RH_KERNEL,                              \
    (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),                  \
    (config, f, kernelParams, extra), RH_STREAM(0, config ? config->hStream : 0), 0, RH_DIR_NONE, f,    \
    kernelParams)                                                                                      \
  X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 1, 11060, RH_MAXVER, RH_KERNEL,                         \
    (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),                  \
    (config, f, kernelParams, extra), RH_STREAM(1, config ? config->hStream : 0), 0, RH_DIR_NONE, f,    \
    kernelParams)                                                                                      \
  X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 0, 9000, RH_MAXVER, RH_KERNEL,             \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
     unsigned int bz, unsigned int shmem, CUstream hStream, void** kernelParams),                      \
    (f, gx, gy, gz, bx, by, bz, shmem, hStream, kernelParams), RH_STREAM(0, hStream), 0, RH_DIR_NONE,   \
    f, kernelParams)                                                                                   \
  X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 1, 9000, RH_MAXVER, RH_KERNEL,        \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
     unsigned int bz, unsigned int shmem, CUstream hStream, void** kernelParams),                      \
    (f, gx, gy, gz, bx, by, bz, shmem, hStream, kernelParams), RH_STREAM(1, hStream), 0, RH_DIR_NONE,   \
    f, kernelParams)                                                                                   \
  X(cuLaunchCooperativeKernelMultiDevice, "cuLaunchCooperativeKernelMultiDevice", 0, 9000, RH_MAXVER,  \
    RH_KERNEL, (CUDA_LAUNCH_PARAMS * list, unsigned int numDevices, unsigned int flags),               \
    (list, numDevices, flags), RH_STREAM(0, list ? list->hStream : 0), 0, RH_DIR_NONE,                 \
    list ? list->function : RH_NOFUNC, list ? list->kernelParams : RH_NOPARAMS)                        \
  X(cuGraphLaunch, "cuGraphLaunch", 0, 10000, RH_MAXVER, RH_GRAPH, (CUgraphExec g, CUstream hStream),  \
    (g, hStream), RH_STREAM(0, hStream), 0, RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)                       \
  X(cuGraphLaunch_ptsz, "cuGraphLaunch", 1, 10000, RH_MAXVER, RH_GRAPH,                                \
    (CUgraphExec g, CUstream hStream), (g, hStream), RH_STREAM(1, hStream), 0, RH_DIR_NONE, RH_NOFUNC,  \
    RH_NOPARAMS)                                                                                       \
  X(cuLaunchHostFunc, "cuLaunchHostFunc", 0, 10000, RH_MAXVER, RH_HOSTFN,                              \
    (CUstream hStream, CUhostFn fn, void* data), (hStream, fn, data), RH_STREAM(0, hStream), 0,         \
    RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)                                                               \
  X(cuLaunchHostFunc_ptsz, "cuLaunchHostFunc", 1, 10000, RH_MAXVER, RH_HOSTFN,                         \
    (CUstream hStream, CUhostFn fn, void* data), (hStream, fn, data), RH_STREAM(1, hStream), 0,         \
    RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)

/* Linear copies: sync (_ptds) and async (_ptsz). */
#define RH_LINEAR_COPY(X, name, base, ptds, minver, dir)                                               \
  X(name, base, ptds, minver, RH_MAXVER, RH_COPY, (RH_DST_##dir dst, RH_SRC_##dir src, size_t n),      \
    (dst, src, n), RH_STREAM(ptds, 0), n, RH_DIR_EXPR_##dir, RH_NOFUNC, RH_NOPARAMS)
#define RH_LINEAR_COPY_ASYNC(X, name, base, ptds, minver, dir)                                         \
  X(name, base, ptds, minver, RH_MAXVER, RH_COPY,                                                      \
    (RH_DST_##dir dst, RH_SRC_##dir src, size_t n, CUstream hStream), (dst, src, n, hStream),          \
    RH_STREAM(ptds, hStream), n, RH_DIR_EXPR_##dir, RH_NOFUNC, RH_NOPARAMS)
#define RH_DST_H2D CUdeviceptr
#define RH_SRC_H2D const void*
#define RH_DIR_EXPR_H2D RH_DIR_H2D
#define RH_DST_D2H void*
#define RH_SRC_D2H CUdeviceptr
#define RH_DIR_EXPR_D2H RH_DIR_D2H
#define RH_DST_D2D CUdeviceptr
#define RH_SRC_D2D CUdeviceptr
#define RH_DIR_EXPR_D2D RH_DIR_D2D
#define RH_DST_ANY CUdeviceptr
#define RH_SRC_ANY CUdeviceptr
#define RH_DIR_EXPR_ANY RH_DIR_LAZY(rh_resolve_dir(dst, src))

#define RIPPLE_CU_HOOK_COPIES(X)                                                                       \
  RH_LINEAR_COPY(X, cuMemcpy, "cuMemcpy", 0, 4000, ANY)                                                \
  RH_LINEAR_COPY(X, cuMemcpy_ptds, "cuMemcpy", 1, 7000, ANY)                                           \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyAsync, "cuMemcpyAsync", 0, 4000, ANY)                                \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyAsync_ptsz, "cuMemcpyAsync", 1, 7000, ANY)                           \
  RH_LINEAR_COPY(X, cuMemcpyHtoD_v2, "cuMemcpyHtoD", 0, 3020, H2D)                                     \
  RH_LINEAR_COPY(X, cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 1, 7000, H2D)                                \
  RH_LINEAR_COPY(X, cuMemcpyDtoH_v2, "cuMemcpyDtoH", 0, 3020, D2H)                                     \
  RH_LINEAR_COPY(X, cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 1, 7000, D2H)                                \
  RH_LINEAR_COPY(X, cuMemcpyDtoD_v2, "cuMemcpyDtoD", 0, 3020, D2D)                                     \
  RH_LINEAR_COPY(X, cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 1, 7000, D2D)                                \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 0, 3020, H2D)                     \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 1, 7000, H2D)                \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 0, 3020, D2H)                     \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 1, 7000, D2H)                \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 0, 3020, D2D)                     \
  RH_LINEAR_COPY_ASYNC(X, cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 1, 7000, D2D)                \
  X(cuMemcpyPeer, "cuMemcpyPeer", 0, 4000, RH_MAXVER, RH_COPY,                                         \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n),                      \
    (dst, dctx, src, sctx, n), RH_STREAM(0, 0), n, RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                  \
  X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 1, 7000, RH_MAXVER, RH_COPY,                                    \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n),                      \
    (dst, dctx, src, sctx, n), RH_STREAM(1, 0), n, RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                  \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 0, 4000, RH_MAXVER, RH_COPY,                               \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream),    \
    (dst, dctx, src, sctx, n, hStream), RH_STREAM(0, hStream), n, RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)   \
  X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 1, 7000, RH_MAXVER, RH_COPY,                          \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream),    \
    (dst, dctx, src, sctx, n, hStream), RH_STREAM(1, hStream), n, RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)   \
  X(cuMemcpy2D_v2, "cuMemcpy2D", 0, 3020, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY2D* p), (p),           \
    RH_STREAM(0, 0), rh_bytes_2d(p), rh_dir_2d(p), RH_NOFUNC, RH_NOPARAMS)                             \
  X(cuMemcpy2D_v2_ptds, "cuMemcpy2D", 1, 7000, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY2D* p), (p),      \
    RH_STREAM(1, 0), rh_bytes_2d(p), rh_dir_2d(p), RH_NOFUNC, RH_NOPARAMS)                             \
  X(cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 0, 3020, RH_MAXVER, RH_COPY,                        \
    (const CUDA_MEMCPY2D* p), (p), RH_STREAM(0, 0), rh_bytes_2d(p), rh_dir_2d(p), RH_NOFUNC,            \
    RH_NOPARAMS)                                                                                       \
  X(cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 1, 7000, RH_MAXVER, RH_COPY,                   \
    (const CUDA_MEMCPY2D* p), (p), RH_STREAM(1, 0), rh_bytes_2d(p), rh_dir_2d(p), RH_NOFUNC,            \
    RH_NOPARAMS)                                                                                       \
  X(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 0, 3020, RH_MAXVER, RH_COPY,                                \
    (const CUDA_MEMCPY2D* p, CUstream hStream), (p, hStream), RH_STREAM(0, hStream), rh_bytes_2d(p),   \
    rh_dir_2d(p), RH_NOFUNC, RH_NOPARAMS)                                                              \
  X(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 1, 7000, RH_MAXVER, RH_COPY,                           \
    (const CUDA_MEMCPY2D* p, CUstream hStream), (p, hStream), RH_STREAM(1, hStream), rh_bytes_2d(p),   \
    rh_dir_2d(p), RH_NOFUNC, RH_NOPARAMS)                                                              \
  X(cuMemcpy3D_v2, "cuMemcpy3D", 0, 3020, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY3D* p), (p),           \
    RH_STREAM(0, 0), rh_bytes_3d(p), rh_dir_3d(p), RH_NOFUNC, RH_NOPARAMS)                             \
  X(cuMemcpy3D_v2_ptds, "cuMemcpy3D", 1, 7000, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY3D* p), (p),      \
    RH_STREAM(1, 0), rh_bytes_3d(p), rh_dir_3d(p), RH_NOFUNC, RH_NOPARAMS)                             \
  X(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 0, 3020, RH_MAXVER, RH_COPY,                                \
    (const CUDA_MEMCPY3D* p, CUstream hStream), (p, hStream), RH_STREAM(0, hStream), rh_bytes_3d(p),   \
    rh_dir_3d(p), RH_NOFUNC, RH_NOPARAMS)                                                              \
  X(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 1, 7000, RH_MAXVER, RH_COPY,                           \
    (const CUDA_MEMCPY3D* p, CUstream hStream), (p, hStream), RH_STREAM(1, hStream), rh_bytes_3d(p),   \
    rh_dir_3d(p), RH_NOFUNC, RH_NOPARAMS)                                                              \
  X(cuMemcpy3DPeer, "cuMemcpy3DPeer", 0, 4000, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY3D_PEER* p), (p), \
    RH_STREAM(0, 0), rh_bytes_3dpeer(p), RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                           \
  X(cuMemcpy3DPeer_ptds, "cuMemcpy3DPeer", 1, 7000, RH_MAXVER, RH_COPY, (const CUDA_MEMCPY3D_PEER* p), \
    (p), RH_STREAM(1, 0), rh_bytes_3dpeer(p), RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                      \
  X(cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync", 0, 4000, RH_MAXVER, RH_COPY,                           \
    (const CUDA_MEMCPY3D_PEER* p, CUstream hStream), (p, hStream), RH_STREAM(0, hStream),              \
    rh_bytes_3dpeer(p), RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                                            \
  X(cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync", 1, 7000, RH_MAXVER, RH_COPY,                      \
    (const CUDA_MEMCPY3D_PEER* p, CUstream hStream), (p, hStream), RH_STREAM(1, hStream),              \
    rh_bytes_3dpeer(p), RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)                                            \
  X(cuMemcpyBatchAsync, "cuMemcpyBatchAsync", 0, 12080, 13000, RH_COPY,                                \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count, CUmemcpyAttributes * attrs,  \
     size_t * attrsIdxs, size_t numAttrs, size_t * failIdx, CUstream hStream),                         \
    (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream), RH_STREAM(0, hStream),   \
    rh_bytes_batch(sizes, count),                                                                      \
    RH_DIR_LAZY(rh_dir_batch(dsts, srcs, count)), RH_NOFUNC, RH_NOPARAMS)                              \
  X(cuMemcpyBatchAsync_ptsz, "cuMemcpyBatchAsync", 1, 12080, 13000, RH_COPY,                           \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count, CUmemcpyAttributes * attrs,  \
     size_t * attrsIdxs, size_t numAttrs, size_t * failIdx, CUstream hStream),                         \
    (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream), RH_STREAM(1, hStream),   \
    rh_bytes_batch(sizes, count),                                                                      \
    RH_DIR_LAZY(rh_dir_batch(dsts, srcs, count)), RH_NOFUNC, RH_NOPARAMS)                              \
  X(cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync", 0, 13000, RH_MAXVER, RH_COPY,                         \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count, CUmemcpyAttributes * attrs,  \
     size_t * attrsIdxs, size_t numAttrs, CUstream hStream),                                           \
    (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream), RH_STREAM(0, hStream),            \
    rh_bytes_batch(sizes, count),                                                                      \
    RH_DIR_LAZY(rh_dir_batch(dsts, srcs, count)), RH_NOFUNC, RH_NOPARAMS)                              \
  X(cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync", 1, 13000, RH_MAXVER, RH_COPY,                    \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count, CUmemcpyAttributes * attrs,  \
     size_t * attrsIdxs, size_t numAttrs, CUstream hStream),                                           \
    (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream), RH_STREAM(1, hStream),            \
    rh_bytes_batch(sizes, count),                                                                      \
    RH_DIR_LAZY(rh_dir_batch(dsts, srcs, count)), RH_NOFUNC, RH_NOPARAMS)                              \
  X(cuMemcpy3DBatchAsync_v2, "cuMemcpy3DBatchAsync", 0, 13000, RH_MAXVER, RH_COPY,                     \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * ops, unsigned long long flags, CUstream hStream),         \
    (numOps, ops, flags, hStream), RH_STREAM(0, hStream), rh_bytes_3dbatch(ops, numOps),               \
    RH_DIR_LAZY(rh_dir_3dbatch(ops, numOps)), RH_NOFUNC, RH_NOPARAMS)                                  \
  X(cuMemcpy3DBatchAsync_v2_ptsz, "cuMemcpy3DBatchAsync", 1, 13000, RH_MAXVER, RH_COPY,                \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * ops, unsigned long long flags, CUstream hStream),         \
    (numOps, ops, flags, hStream), RH_STREAM(1, hStream), rh_bytes_3dbatch(ops, numOps),               \
    RH_DIR_LAZY(rh_dir_3dbatch(ops, numOps)), RH_NOFUNC, RH_NOPARAMS)                                  \
  X(cuMemPrefetchAsync_v2, "cuMemPrefetchAsync", 0, 12020, RH_MAXVER, RH_PREFETCH,                     \
    (CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream hStream),                \
    (p, n, loc, flags, hStream), RH_STREAM(0, hStream), n, RH_DIR_UNKNOWN, RH_NOFUNC, RH_NOPARAMS)      \
  X(cuMemPrefetchAsync_v2_ptsz, "cuMemPrefetchAsync", 1, 12020, RH_MAXVER, RH_PREFETCH,                \
    (CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream hStream),                \
    (p, n, loc, flags, hStream), RH_STREAM(1, hStream), n, RH_DIR_UNKNOWN, RH_NOFUNC, RH_NOPARAMS)

/* Sets: device-only traffic of N elements. */
#define RH_SET(X, name, base, ptds, minver, T, sz)                                                     \
  X(name, base, ptds, minver, RH_MAXVER, RH_SET, (CUdeviceptr dst, T v, size_t n), (dst, v, n),        \
    RH_STREAM(ptds, 0), (unsigned long long)n * sz, RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)
#define RH_SET_ASYNC(X, name, base, ptds, minver, T, sz)                                               \
  X(name, base, ptds, minver, RH_MAXVER, RH_SET, (CUdeviceptr dst, T v, size_t n, CUstream hStream),   \
    (dst, v, n, hStream), RH_STREAM(ptds, hStream), (unsigned long long)n * sz, RH_DIR_D2D, RH_NOFUNC, \
    RH_NOPARAMS)
#define RH_SET2D(X, name, base, ptds, minver, T, sz)                                                   \
  X(name, base, ptds, minver, RH_MAXVER, RH_SET, (CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h), \
    (dst, pitch, v, w, h), RH_STREAM(ptds, 0), (unsigned long long)w * h * sz, RH_DIR_D2D, RH_NOFUNC,   \
    RH_NOPARAMS)
#define RH_SET2D_ASYNC(X, name, base, ptds, minver, T, sz)                                             \
  X(name, base, ptds, minver, RH_MAXVER, RH_SET,                                                       \
    (CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h, CUstream hStream),                        \
    (dst, pitch, v, w, h, hStream), RH_STREAM(ptds, hStream), (unsigned long long)w * h * sz,           \
    RH_DIR_D2D, RH_NOFUNC, RH_NOPARAMS)

#define RIPPLE_CU_HOOK_SETS(X)                                                                         \
  RH_SET(X, cuMemsetD8_v2, "cuMemsetD8", 0, 3020, unsigned char, 1)                                    \
  RH_SET(X, cuMemsetD8_v2_ptds, "cuMemsetD8", 1, 7000, unsigned char, 1)                               \
  RH_SET(X, cuMemsetD16_v2, "cuMemsetD16", 0, 3020, unsigned short, 2)                                 \
  RH_SET(X, cuMemsetD16_v2_ptds, "cuMemsetD16", 1, 7000, unsigned short, 2)                            \
  RH_SET(X, cuMemsetD32_v2, "cuMemsetD32", 0, 3020, unsigned int, 4)                                   \
  RH_SET(X, cuMemsetD32_v2_ptds, "cuMemsetD32", 1, 7000, unsigned int, 4)                              \
  RH_SET_ASYNC(X, cuMemsetD8Async, "cuMemsetD8Async", 0, 3020, unsigned char, 1)                       \
  RH_SET_ASYNC(X, cuMemsetD8Async_ptsz, "cuMemsetD8Async", 1, 7000, unsigned char, 1)                  \
  RH_SET_ASYNC(X, cuMemsetD16Async, "cuMemsetD16Async", 0, 3020, unsigned short, 2)                    \
  RH_SET_ASYNC(X, cuMemsetD16Async_ptsz, "cuMemsetD16Async", 1, 7000, unsigned short, 2)               \
  RH_SET_ASYNC(X, cuMemsetD32Async, "cuMemsetD32Async", 0, 3020, unsigned int, 4)                      \
  RH_SET_ASYNC(X, cuMemsetD32Async_ptsz, "cuMemsetD32Async", 1, 7000, unsigned int, 4)                 \
  RH_SET2D(X, cuMemsetD2D8_v2, "cuMemsetD2D8", 0, 3020, unsigned char, 1)                              \
  RH_SET2D(X, cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 1, 7000, unsigned char, 1)                         \
  RH_SET2D(X, cuMemsetD2D16_v2, "cuMemsetD2D16", 0, 3020, unsigned short, 2)                           \
  RH_SET2D(X, cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 1, 7000, unsigned short, 2)                      \
  RH_SET2D(X, cuMemsetD2D32_v2, "cuMemsetD2D32", 0, 3020, unsigned int, 4)                             \
  RH_SET2D(X, cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 1, 7000, unsigned int, 4)                        \
  RH_SET2D_ASYNC(X, cuMemsetD2D8Async, "cuMemsetD2D8Async", 0, 3020, unsigned char, 1)                 \
  RH_SET2D_ASYNC(X, cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 1, 7000, unsigned char, 1)            \
  RH_SET2D_ASYNC(X, cuMemsetD2D16Async, "cuMemsetD2D16Async", 0, 3020, unsigned short, 2)              \
  RH_SET2D_ASYNC(X, cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 1, 7000, unsigned short, 2)         \
  RH_SET2D_ASYNC(X, cuMemsetD2D32Async, "cuMemsetD2D32Async", 0, 3020, unsigned int, 4)               \
  RH_SET2D_ASYNC(X, cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 1, 7000, unsigned int, 4)

/* Ends of what the interposer keeps state about: a stream (its communication mark, the
 * grant's start or end stream) and a context (its pool of timing events). A primary
 * context ends at its last release or at a reset. Only the _v2 ABIs (what cuda.h has
 * named since CUDA 4.0, and 11.0 for the primary context's): an older one asked of
 * cuGetProcAddress passes through (counted), as an old cuMemcpyHtoD does. */
#define RIPPLE_CU_HOOK_ENDS(X)                                                                         \
  X(cuStreamDestroy_v2, "cuStreamDestroy", 0, 4000, RH_MAXVER, RH_END, (CUstream hStream), (hStream),  \
    RH_STREAM(0, hStream), 0, RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)                                     \
  X(cuCtxDestroy_v2, "cuCtxDestroy", 0, 4000, RH_MAXVER, RH_END, (CUcontext ctx), (ctx),               \
    RH_STREAM(0, 0), 0, RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)                                           \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 0, 11000, RH_MAXVER, RH_END,           \
    (CUdevice dev), (dev), RH_STREAM(0, 0), 0, RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)                    \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 0, 11000, RH_MAXVER, RH_END,               \
    (CUdevice dev), (dev), RH_STREAM(0, 0), 0, RH_DIR_NONE, RH_NOFUNC, RH_NOPARAMS)

#define RIPPLE_CU_HOOKS(X) \
  RIPPLE_CU_HOOK_LAUNCHES(X) RIPPLE_CU_HOOK_COPIES(X) RIPPLE_CU_HOOK_SETS(X) RIPPLE_CU_HOOK_ENDS(X)
