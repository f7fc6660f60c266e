// The interposed entry points (generated from cuhooks/hook_list.h) and the access to
// the real driver the runtime needs. Internal to libripple-cuhook.so.
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <type_traits>

// A direction that asks the driver (cuPointerGetAttribute): a closure over the hook's
// arguments, called by Op::resolve_dir() only where the runtime needs the direction.
#define RH_DIR_LAZY(expr) ([&]() -> int { return (expr); })
#include "cuhooks/op_info.h"
#include "cuhooks/hook_list.h"

namespace ripple::cuhook {

enum class Hook : int {
#define RH_ENUM(name, ...) name,
  RIPPLE_CU_HOOKS(RH_ENUM)
#undef RH_ENUM
};
inline constexpr int kHookCount = 0
#define RH_COUNT(name, ...) +1
    RIPPLE_CU_HOOKS(RH_COUNT)
#undef RH_COUNT
    ;
extern const char* const kHookNames[kHookCount];

// One intercepted call, as the runtime sees it.
struct Op {
  Hook hook;
  int kind;          // RH_KERNEL ...
  CUstream stream;
  unsigned long long bytes;
  int dir;           // RH_DIR_*; read it through resolve_dir() (see set_dir)
  CUfunction func;
  int slot;          // 0: the exported symbol; >0: a pointer from cuGetProcAddress
  int end_unit = -1; // set by before(): this launch ends a profile unit
  bool gated = false;
  // A copy the runtime may split into chunks (sub-layer grants): issue() runs bytes
  // [off, off + len) of it through the real entry point it wraps, with the original
  // arguments otherwise (same stream; a synchronous entry point stays synchronous).
  // nullptr: this call cannot be split. `granule`: bytes no cut may split (a row of a
  // 2D copy, a slice or row of a 3D one; 1 for a linear copy).
  CUresult (*issue)(const Op& op, unsigned long long off, unsigned long long len) = nullptr;
  void* real = nullptr;
  const void* args = nullptr;
  unsigned long long granule = 1;
  // Set by before() when it issued the whole call itself, chunk by chunk.
  bool issued = false;
  CUresult result = CUDA_SUCCESS;

  // The direction: a constant, or an RH_DIR_LAZY closure (it asks the driver about the
  // pointers, two calls) kept until the runtime needs it; with RIPPLE_CUHOOK=off it never
  // does. The closure lives in the hook's frame, which outlives the Op.
  void set_dir(int d) { dir = d; }
  template <class F>
    requires std::is_invocable_r_v<int, const F&>
  void set_dir(const F& f) {
    dir_of = [](const void* c) { return (*static_cast<const F*>(c))(); };
    dir_ctx = &f;
  }
  int resolve_dir() {
    if (dir_of) {
      dir = dir_of(dir_ctx);
      dir_of = nullptr;
    }
    return dir;
  }
  int (*dir_of)(const void*) = nullptr;
  const void* dir_ctx = nullptr;
};

// The runtime (cuhooks/runtime.cc): before() may block the calling thread at a unit
// boundary; after() sees the driver's result.
void before(Op& op);
void after(const Op& op, CUresult r);
// A stream or context ends (RH_END; cuhooks/runtime.cc): what the runtime keeps about it
// goes. Before the driver call, whose freed handle another thread may be handed at once;
// a primary context's release after it (whether the context ended is asked then).
void ends_before(const Op& op, CUstream s);
void ends_before(const Op& op, CUcontext c);
void ends_before(const Op& op, CUdevice d);
void ends_after(const Op& op, CUstream s, CUresult r);
void ends_after(const Op& op, CUcontext c, CUresult r);
void ends_after(const Op& op, CUdevice d, CUresult r);
void count_passthrough();
void count_unwrapped(const char* symbol);

// A driver symbol from the real libcuda (never our own export), or nullptr.
void* driver_symbol(const char* name);
// The real dlsym (never the hook).
void* real_dlsym(void* handle, const char* name);

}  // namespace ripple::cuhook
