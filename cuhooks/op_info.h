/* What an intercepted driver call does, computed from its arguments: bytes moved and
 * direction of copies and sets. Plain C (static inline) so that the interposer and the
 * test double libcuda (tests/cuhooks/fake_cuda.c) compute the same numbers from the
 * same expressions in cuhooks/hook_list.h. Include after <cuda.h>. */
#ifndef RIPPLE_CUHOOKS_OP_INFO_H
#define RIPPLE_CUHOOKS_OP_INFO_H

#include <stddef.h>

enum { RH_KERNEL = 0, RH_GRAPH = 1, RH_COPY = 2, RH_SET = 3, RH_PREFETCH = 4, RH_HOSTFN = 5, RH_END = 6 };
enum { RH_DIR_NONE = 0, RH_DIR_H2D = 1, RH_DIR_D2H = 2, RH_DIR_D2D = 3, RH_DIR_H2H = 4, RH_DIR_UNKNOWN = 5 };

/* A direction that asks the driver (cuhooks/hook_list.h, column dir). The interposer
 * defines it before including this header (a closure it calls only where it needs the
 * direction); everyone else evaluates the expression. */
#ifndef RH_DIR_LAZY
#define RH_DIR_LAZY(expr) (expr)
#endif

/* In _ptsz/_ptds variants stream 0 is the calling thread's default stream. */
#define RH_STREAM(ptds, s) ((ptds) && (s) == 0 ? CU_STREAM_PER_THREAD : (s))

#ifdef __cplusplus
extern "C" {
#endif
/* Direction of a unified-addressing copy; each includer defines it (the interposer
 * asks the driver for the pointers' memory types, the test double its registry). */
int rh_resolve_dir(CUdeviceptr dst, CUdeviceptr src);
#ifdef __cplusplus
}
#endif

static inline int rh_dir_of_types(CUmemorytype src, CUmemorytype dst) {
  int sh = src == CU_MEMORYTYPE_HOST, dh = dst == CU_MEMORYTYPE_HOST;
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return RH_DIR_UNKNOWN;
  return sh && dh ? RH_DIR_H2H : sh ? RH_DIR_H2D : dh ? RH_DIR_D2H : RH_DIR_D2D;
}
static inline unsigned long long rh_bytes_2d(const CUDA_MEMCPY2D* p) {
  return p ? (unsigned long long)p->WidthInBytes * p->Height : 0;
}
static inline int rh_dir_2d(const CUDA_MEMCPY2D* p) {
  return p ? rh_dir_of_types(p->srcMemoryType, p->dstMemoryType) : RH_DIR_UNKNOWN;
}
static inline unsigned long long rh_bytes_3d(const CUDA_MEMCPY3D* p) {
  return p ? (unsigned long long)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1) : 0;
}
static inline int rh_dir_3d(const CUDA_MEMCPY3D* p) {
  return p ? rh_dir_of_types(p->srcMemoryType, p->dstMemoryType) : RH_DIR_UNKNOWN;
}
static inline unsigned long long rh_bytes_3dpeer(const CUDA_MEMCPY3D_PEER* p) {
  return p ? (unsigned long long)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1) : 0;
}
static inline unsigned long long rh_bytes_batch(const size_t* sizes, size_t count) {
  unsigned long long total = 0;
  for (size_t i = 0; sizes && i < count; ++i) total += sizes[i];
  return total;
}
/* A batch is as host-facing as its first copy (engines batch one kind of copy). */
static inline int rh_dir_batch(const CUdeviceptr* dsts, const CUdeviceptr* srcs, size_t count) {
  return count && dsts && srcs ? rh_resolve_dir(dsts[0], srcs[0]) : RH_DIR_UNKNOWN;
}
/* Extent is width x height x depth; for pointer operands the width is in bytes. */
static inline unsigned long long rh_bytes_3dbatch(const CUDA_MEMCPY3D_BATCH_OP* ops, size_t n) {
  unsigned long long total = 0;
  for (size_t i = 0; ops && i < n; ++i)
    total += (unsigned long long)ops[i].extent.width * ops[i].extent.height * ops[i].extent.depth;
  return total;
}
static inline int rh_dir_3dbatch(const CUDA_MEMCPY3D_BATCH_OP* ops, size_t n) {
  if (!ops || n == 0) return RH_DIR_UNKNOWN;
  if (ops[0].src.type != CU_MEMCPY_OPERAND_TYPE_POINTER || ops[0].dst.type != CU_MEMCPY_OPERAND_TYPE_POINTER)
    return RH_DIR_UNKNOWN;
  return rh_resolve_dir(ops[0].dst.op.ptr.ptr, ops[0].src.op.ptr.ptr);
}

#endif
