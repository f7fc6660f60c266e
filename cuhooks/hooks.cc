// The interposed entry points, generated from the one list in cuhooks/hook_list.h, and
// the three ways a process reaches the driver (notes/cuda-interposition.md §1):
//   1. direct symbols: our exports shadow libcuda's (LD_PRELOAD);
//   2. dlsym(handle, "cuX"): the dlsym hook (dlsym_trampoline.S) returns our wrapper;
//   3. cuGetProcAddress(_v2)("cuX", version, flags): the real driver is asked first and
//      the pointer it returns is wrapped, so its choice of ABI version and of the
//      _ptsz/_ptds variant stays exactly the driver's (THAPI's pattern).
// Each hook has kSlots real-pointer slots: slot 0 is libcuda's exported symbol, slots
// 1.. hold distinct pointers cuGetProcAddress returned; each slot has its own wrapper
// (a template instance), so a wrapper always calls exactly the pointer it wraps.
#include "cuhooks/hooks.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#define RH_EXPORT __attribute__((visibility("default")))
#define RH_STRIP(...) __VA_ARGS__

namespace ripple::cuhook {

const char* const kHookNames[kHookCount] = {
#define RH_NAME(name, ...) #name,
    RIPPLE_CU_HOOKS(RH_NAME)
#undef RH_NAME
};

namespace {

struct HookInfo {
  const char* base;
  int ptds, minver, maxver;
};
constexpr HookInfo kInfo[kHookCount] = {
#define RH_INFO(name, base, ptds, minver, maxver, ...) {base, ptds, minver, maxver},
    RIPPLE_CU_HOOKS(RH_INFO)
#undef RH_INFO
};

constexpr int kSlots = 4;
std::atomic<void*> g_real[kHookCount][kSlots];
std::atomic<bool> g_resolved0[kHookCount];

using DlsymFn = void* (*)(void*, const char*);

std::atomic<void*> g_cuda_handle{nullptr};

const char* cuda_library() {
  static const char* lib = [] {
    const char* v = getenv("RIPPLE_CUDA_LIBRARY");
    return v && *v ? v : "libcuda.so.1";
  }();
  return lib;
}

}  // namespace
}  // namespace ripple::cuhook

// The real dlsym, used by the trampoline's tail jump (dlsym_trampoline.S).
extern "C" {
__attribute__((visibility("hidden"))) ripple::cuhook::DlsymFn ripple_real_dlsym_ptr = nullptr;
}

namespace ripple::cuhook {
namespace {

// The dlsym hook runs inside a sanitizer runtime's own start (its interceptors look up
// libc functions through dlsym before its shadow memory exists), so this path is not
// instrumented: otherwise the sanitized test build (tests/sanitize) dies at start.
#define RIPPLE_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

RIPPLE_NO_SANITIZE DlsymFn resolve_real_dlsym() {
  DlsymFn f = __atomic_load_n(&ripple_real_dlsym_ptr, __ATOMIC_ACQUIRE);
  if (f) return f;
  // glibc 2.34 moved dlsym into libc (GLIBC_2.34); older: GLIBC_2.2.5 (x86_64), GLIBC_2.17 (aarch64).
  // A plain array: an initializer_list's inline (instrumented) accessors would undo the above.
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.17", "GLIBC_2.2.5"};
  for (std::size_t i = 0; i < sizeof kVersions / sizeof kVersions[0]; ++i) {
    f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", kVersions[i]));
    if (f) break;
  }
  __atomic_store_n(&ripple_real_dlsym_ptr, f, __ATOMIC_RELEASE);
  return f;
}

void* cuda_handle() {
  void* h = g_cuda_handle.load(std::memory_order_acquire);
  if (h) return h;
  h = dlopen(cuda_library(), RTLD_LAZY | RTLD_NOLOAD);
  if (!h) h = dlopen(cuda_library(), RTLD_LAZY);
  if (h) g_cuda_handle.store(h, std::memory_order_release);
  return h;
}

void* real_slot(Hook h, int slot) {
  const int i = static_cast<int>(h);
  if (slot == 0 && !g_resolved0[i].load(std::memory_order_acquire)) {
    void* p = driver_symbol(kHookNames[i]);
    g_real[i][0].store(p, std::memory_order_release);
    g_resolved0[i].store(true, std::memory_order_release);
  }
  return g_real[i][slot].load(std::memory_order_acquire);
}

}  // namespace

void* real_dlsym(void* handle, const char* name) {
  DlsymFn f = resolve_real_dlsym();
  return f ? f(handle, name) : nullptr;
}

void* driver_symbol(const char* name) {
  void* h = cuda_handle();
  return h ? real_dlsym(h, name) : nullptr;
}

// --- splitting copies (sub-layer grants) ---------------------------------------------
// Chunking<Fn>: whether a copy entry point of type Fn can be issued in pieces, and how.
// Keyed on the exact parameter types, so only the linear host<->device forms (and the
// 2D/3D descriptors) qualify: sets, peer and batch copies never match (they pass through
// whole). The arguments travel as a tuple of exactly the entry point's parameters.
template <class Fn>
struct Chunking {
  static constexpr bool kOk = false;
};
template <class... A>
struct ChunkArgs {
  using Tuple = std::tuple<A...>;
  using Fn = CUresult(CUDAAPI*)(A...);
};

inline CUdeviceptr advance(CUdeviceptr p, unsigned long long off) { return p + off; }
inline void* advance(void* p, unsigned long long off) { return static_cast<char*>(p) + off; }
inline const void* advance(const void* p, unsigned long long off) { return static_cast<const char*>(p) + off; }

// Linear: (dst, src, n) and (dst, src, n, stream); both pointers advance by the offset.
template <class D, class S, class... Rest>
struct LinearChunking : ChunkArgs<D, S, size_t, Rest...> {
  using Base = ChunkArgs<D, S, size_t, Rest...>;
  static constexpr bool kOk = true;
  static unsigned long long granule(const typename Base::Tuple&) { return 1; }
  static CUresult issue(const Op& op, unsigned long long off, unsigned long long len) {
    auto t = *static_cast<const typename Base::Tuple*>(op.args);
    std::get<0>(t) = advance(std::get<0>(t), off);
    std::get<1>(t) = advance(std::get<1>(t), off);
    std::get<2>(t) = static_cast<size_t>(len);
    return std::apply(reinterpret_cast<typename Base::Fn>(op.real), t);
  }
};
template <> struct Chunking<CUresult(CUDAAPI*)(CUdeviceptr, const void*, size_t)> : LinearChunking<CUdeviceptr, const void*> {};
template <> struct Chunking<CUresult(CUDAAPI*)(void*, CUdeviceptr, size_t)> : LinearChunking<void*, CUdeviceptr> {};
template <> struct Chunking<CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t)> : LinearChunking<CUdeviceptr, CUdeviceptr> {};
template <> struct Chunking<CUresult(CUDAAPI*)(CUdeviceptr, const void*, size_t, CUstream)>
    : LinearChunking<CUdeviceptr, const void*, CUstream> {};
template <> struct Chunking<CUresult(CUDAAPI*)(void*, CUdeviceptr, size_t, CUstream)>
    : LinearChunking<void*, CUdeviceptr, CUstream> {};
template <> struct Chunking<CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>
    : LinearChunking<CUdeviceptr, CUdeviceptr, CUstream> {};

// 2D: whole rows (srcY/dstY advance, Height shrinks); the descriptor is copied.
template <class... Rest>
struct Chunking2D : ChunkArgs<const CUDA_MEMCPY2D*, Rest...> {
  using Base = ChunkArgs<const CUDA_MEMCPY2D*, Rest...>;
  static constexpr bool kOk = true;
  static unsigned long long granule(const typename Base::Tuple& t) {
    const CUDA_MEMCPY2D* p = std::get<0>(t);
    return p && p->WidthInBytes ? p->WidthInBytes : 0;  // 0: not split
  }
  static CUresult issue(const Op& op, unsigned long long off, unsigned long long len) {
    auto t = *static_cast<const typename Base::Tuple*>(op.args);
    CUDA_MEMCPY2D c = *std::get<0>(t);
    const size_t rows = static_cast<size_t>(off / c.WidthInBytes);
    c.srcY += rows;
    c.dstY += rows;
    c.Height = static_cast<size_t>(len / c.WidthInBytes);
    std::get<0>(t) = &c;
    return std::apply(reinterpret_cast<typename Base::Fn>(op.real), t);
  }
};
template <> struct Chunking<CUresult(CUDAAPI*)(const CUDA_MEMCPY2D*)> : Chunking2D<> {};
template <> struct Chunking<CUresult(CUDAAPI*)(const CUDA_MEMCPY2D*, CUstream)> : Chunking2D<CUstream> {};

// 3D: whole slices (srcZ/dstZ, Depth) when Depth > 1, else whole rows (srcY/dstY, Height).
template <class... Rest>
struct Chunking3D : ChunkArgs<const CUDA_MEMCPY3D*, Rest...> {
  using Base = ChunkArgs<const CUDA_MEMCPY3D*, Rest...>;
  static constexpr bool kOk = true;
  static unsigned long long granule(const typename Base::Tuple& t) {
    const CUDA_MEMCPY3D* p = std::get<0>(t);
    if (!p || !p->WidthInBytes || !p->Height) return 0;
    return p->Depth > 1 ? static_cast<unsigned long long>(p->WidthInBytes) * p->Height : p->WidthInBytes;
  }
  static CUresult issue(const Op& op, unsigned long long off, unsigned long long len) {
    auto t = *static_cast<const typename Base::Tuple*>(op.args);
    CUDA_MEMCPY3D c = *std::get<0>(t);
    if (c.Depth > 1) {
      const unsigned long long slice = static_cast<unsigned long long>(c.WidthInBytes) * c.Height;
      c.srcZ += static_cast<size_t>(off / slice);
      c.dstZ += static_cast<size_t>(off / slice);
      c.Depth = static_cast<size_t>(len / slice);
    } else {
      c.srcY += static_cast<size_t>(off / c.WidthInBytes);
      c.dstY += static_cast<size_t>(off / c.WidthInBytes);
      c.Height = static_cast<size_t>(len / c.WidthInBytes);
    }
    std::get<0>(t) = &c;
    return std::apply(reinterpret_cast<typename Base::Fn>(op.real), t);
  }
};
template <> struct Chunking<CUresult(CUDAAPI*)(const CUDA_MEMCPY3D*)> : Chunking3D<> {};
template <> struct Chunking<CUresult(CUDAAPI*)(const CUDA_MEMCPY3D*, CUstream)> : Chunking3D<CUstream> {};

// --- the hooks -------------------------------------------------------------------

// One intercepted call: before(), the real entry point (or the chunks before() issued
// itself), after(). A template, so the copy-splitting branch exists only for the entry
// points Chunking knows.
template <class Fn, class... A>
CUresult run(Op& op, void* real, A... a) {
  // A stream or context ends (RH_END): its one handle picks the overload.
  if constexpr (requires { ends_before(op, a...); }) {
    if (op.kind == RH_END) {
      ends_before(op, a...);
      const CUresult r = reinterpret_cast<Fn>(real)(a...);
      ends_after(op, a..., r);
      return r;
    }
  }
  if constexpr (Chunking<Fn>::kOk) {
    if (op.kind == RH_COPY) {
      const typename Chunking<Fn>::Tuple t(a...);
      op.issue = &Chunking<Fn>::issue;
      op.real = real;
      op.args = &t;
      op.granule = Chunking<Fn>::granule(t);
      if (op.granule == 0) op.issue = nullptr;
      before(op);
      const CUresult r = op.issued ? op.result : reinterpret_cast<Fn>(real)(a...);
      after(op, r);
      return r;
    }
  }
  before(op);
  const CUresult r = reinterpret_cast<Fn>(real)(a...);
  after(op, r);
  return r;
}

#define RH_DEFINE_CALL(name, base, ptds, minver, maxver, kind, params, args, stream, bytes, dir, func, kparams) \
  static CUresult name##_call(int rh_slot, RH_STRIP params) {                                          \
    using Fn = CUresult(CUDAAPI*) params;                                                              \
    void* rh_real = real_slot(Hook::name, rh_slot);                                                    \
    if (rh_real == nullptr) return CUDA_ERROR_NOT_FOUND;                                               \
    const auto rh_dir = dir;                                                                           \
    Op op{Hook::name, kind, stream, static_cast<unsigned long long>(bytes), RH_DIR_NONE, func, rh_slot}; \
    op.set_dir(rh_dir);                                                                                \
    return run<Fn>(op, rh_real, RH_STRIP args);                                                        \
  }                                                                                                    \
  template <int S>                                                                                     \
  CUresult CUDAAPI name##_slot params {                                                                \
    return name##_call(S, RH_STRIP args);                                                              \
  }
RIPPLE_CU_HOOKS(RH_DEFINE_CALL)
#undef RH_DEFINE_CALL

}  // namespace ripple::cuhook

#define RH_DEFINE_EXPORT(name, base, ptds, minver, maxver, kind, params, args, ...) \
  extern "C" RH_EXPORT CUresult CUDAAPI name params { return ripple::cuhook::name##_call(0, RH_STRIP args); }
RIPPLE_CU_HOOKS(RH_DEFINE_EXPORT)
#undef RH_DEFINE_EXPORT

namespace ripple::cuhook {
namespace {

void* const kWrappers[kHookCount][kSlots] = {
#define RH_WRAP(name, ...)                                                                          \
  {reinterpret_cast<void*>(&::name), reinterpret_cast<void*>(&name##_slot<1>),                     \
   reinterpret_cast<void*>(&name##_slot<2>), reinterpret_cast<void*>(&name##_slot<3>)},
    RIPPLE_CU_HOOKS(RH_WRAP)
#undef RH_WRAP
};

// Our wrapper for real pointer p of hook h: the slot that already holds p, or a free one.
void* wrap(Hook h, void* p) {
  const int i = static_cast<int>(h);
  if (p == real_slot(h, 0)) return kWrappers[i][0];
  for (int s = 1; s < kSlots; ++s) {
    void* cur = g_real[i][s].load(std::memory_order_acquire);
    if (cur == p) return kWrappers[i][s];
    if (cur == nullptr) {
      void* expected = nullptr;
      if (g_real[i][s].compare_exchange_strong(expected, p, std::memory_order_acq_rel) || expected == p)
        return kWrappers[i][s];
    }
  }
  count_unwrapped(kHookNames[i]);  // more distinct pointers than slots: seen nowhere, say so
  return p;
}

struct Index {
  std::unordered_map<std::string_view, int> by_name;
  std::unordered_map<std::string_view, std::vector<int>> by_base;
  Index() {
    for (int i = 0; i < kHookCount; ++i) {
      by_name.emplace(kHookNames[i], i);
      by_base[kInfo[i].base].push_back(i);
    }
  }
};
const Index& index() {
  static const Index idx;
  return idx;
}

using ProcV2 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using ProcV1 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);

}  // namespace

// Wraps what the real cuGetProcAddress returned for (symbol, version, flags).
void* wrap_procaddr(const char* symbol, void* p, int version, cuuint64_t flags);

}  // namespace ripple::cuhook

extern "C" RH_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                          cuuint64_t flags, CUdriverProcAddressQueryResult* st) {
  static auto real = reinterpret_cast<ripple::cuhook::ProcV2>(ripple::cuhook::driver_symbol("cuGetProcAddress_v2"));
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  CUresult r = real(symbol, pfn, version, flags, st);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) *pfn = ripple::cuhook::wrap_procaddr(symbol, *pfn, version, flags);
  return r;
}

// The CUDA 11.3-11.x ABI (no symbolStatus).
extern "C" RH_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  static auto real = reinterpret_cast<ripple::cuhook::ProcV1>(ripple::cuhook::driver_symbol("cuGetProcAddress"));
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) *pfn = ripple::cuhook::wrap_procaddr(symbol, *pfn, version, flags);
  return r;
}

namespace ripple::cuhook {

void* wrap_procaddr(const char* symbol, void* p, int version, cuuint64_t flags) {
  // Asked for cuGetProcAddress itself: hand out our wrapper of the same ABI, never NULL
  // (a NULL here crashes the runtime: vcuda-controller #20).
  if (strcmp(symbol, "cuGetProcAddress") == 0)
    return version >= 12000 ? reinterpret_cast<void*>(&::cuGetProcAddress_v2) : reinterpret_cast<void*>(&::cuGetProcAddress);
  const Index& idx = index();
  auto b = idx.by_base.find(symbol);
  if (b == idx.by_base.end()) {
    auto n = idx.by_name.find(symbol);  // asked by exact name (cuMemcpyHtoD_v2)
    return n == idx.by_name.end() ? p : wrap(static_cast<Hook>(n->second), p);
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int legacy = -1, chosen = -1;
  for (int i : b->second) {
    if (version < kInfo[i].minver || version >= kInfo[i].maxver) continue;
    if (kInfo[i].ptds == static_cast<int>(per_thread)) chosen = i;
    if (!kInfo[i].ptds) legacy = i;
  }
  if (chosen < 0) chosen = legacy;  // no per-thread variant: the driver returns the legacy one
  if (chosen < 0) {
    // An ABI older (or newer) than the one we know for this name: pass it through.
    count_passthrough();
    return p;
  }
  return wrap(static_cast<Hook>(chosen), p);
}

}  // namespace ripple::cuhook

// --- dlsym ---------------------------------------------------------------------------
// dlsym_trampoline.S exports `dlsym`: it calls this and, when it returns NULL, tail-jumps
// to the real dlsym with the caller's return address intact (RTLD_NEXT is resolved
// relative to the caller; HAMi-core's dlsym_entry.S does the same).
namespace {
thread_local bool t_in_dlsym = false;
}

extern "C" __attribute__((visibility("hidden"))) RIPPLE_NO_SANITIZE void* ripple_dlsym_hook(void* handle,
                                                                                        const char* name) {
  using namespace ripple::cuhook;
  if (resolve_real_dlsym() == nullptr) return nullptr;
  // The thread-local flag last: its first access may call __tls_get_addr, which a
  // sanitizer intercepts, and its own lookups (RTLD_NEXT, libc names) end above it.
  if (name == nullptr || handle == RTLD_NEXT || handle == RTLD_DEFAULT) return nullptr;
  if (name[0] != 'c' || name[1] != 'u' || t_in_dlsym) return nullptr;
  t_in_dlsym = true;
  void* result = nullptr;
  if (strcmp(name, "cuGetProcAddress_v2") == 0 || strcmp(name, "cuGetProcAddress") == 0) {
    if (real_dlsym(handle, name) != nullptr)
      result = name[16] == '_' ? reinterpret_cast<void*>(&::cuGetProcAddress_v2) : reinterpret_cast<void*>(&::cuGetProcAddress);
  } else {
    const Index& idx = index();
    auto n = idx.by_name.find(name);
    if (n != idx.by_name.end()) {
      void* p = real_dlsym(handle, name);
      if (p != nullptr) result = wrap(static_cast<Hook>(n->second), p);
    }
  }
  t_in_dlsym = false;
  return result;
}

extern "C" int rh_resolve_dir(CUdeviceptr dst, CUdeviceptr src) {
  using Fn = CUresult(CUDAAPI*)(void*, CUpointer_attribute, CUdeviceptr);
  static auto get = reinterpret_cast<Fn>(ripple::cuhook::driver_symbol("cuPointerGetAttribute"));
  auto is_host = [&](CUdeviceptr p) {
    unsigned int type = 0;
    if (get == nullptr || get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS) return true;  // unregistered host memory
    return type == CU_MEMORYTYPE_HOST;
  };
  const bool sh = is_host(src), dh = is_host(dst);
  return sh && dh ? RH_DIR_H2H : sh ? RH_DIR_H2D : dh ? RH_DIR_D2H : RH_DIR_D2D;
}
