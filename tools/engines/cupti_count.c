/* cupti_count: an independent count of a process's CUDA driver API calls, to check that
 * the interposer sees every launch and copy (tools/packaging/gpu/engines-check.sh). The driver loads
 * it as a CUPTI injection library:
 *
 *   CUDA_INJECTION64_PATH=libripple-cupticount.so RIPPLE_CUPTI_COUNT=out.%p.txt CMD...
 *
 * It subscribes to CUPTI's driver-API callbacks (inside the driver, so it counts the calls
 * the driver receives whatever path they took: direct, dlsym, cuGetProcAddress, through
 * the interposer or around it) and at exit writes one "NAME COUNT" line per entry point
 * called. libcupti is opened at run time (RIPPLE_CUPTI_LIB, else libcupti.so.13, else
 * libcupti.so): the library links against nothing of CUDA's.
 * Build: cc -shared -fPIC -O2 -I/usr/local/cuda/include -o libripple-cupticount.so cupti_count.c -ldl
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXCB 4096
static atomic_ullong counts[MAXCB];
static CUptiResult (*p_subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
static CUptiResult (*p_enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
static CUptiResult (*p_cb_name)(CUpti_CallbackDomain, uint32_t, const char**);
static CUpti_SubscriberHandle sub;

static void CUPTIAPI on_call(void* u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  (void)u;
  const CUpti_CallbackData* cb = (const CUpti_CallbackData*)data;
  if (d != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER || id >= MAXCB) return;
  atomic_fetch_add_explicit(&counts[id], 1, memory_order_relaxed);
}

static void write_counts(void) {
  const char* path = getenv("RIPPLE_CUPTI_COUNT");
  char buf[4096];
  if (!path || !*path) return;
  const char* at = strstr(path, "%p");
  if (at) snprintf(buf, sizeof buf, "%.*s%d%s", (int)(at - path), path, (int)getpid(), at + 2);
  else snprintf(buf, sizeof buf, "%s", path);
  FILE* f = fopen(buf, "w");
  if (!f) return;
  for (unsigned i = 0; i < MAXCB; ++i) {
    unsigned long long n = atomic_load(&counts[i]);
    if (!n) continue;
    const char* name = NULL;
    if (!p_cb_name || p_cb_name(CUPTI_CB_DOMAIN_DRIVER_API, i, &name) != CUPTI_SUCCESS || !name) name = "?";
    fprintf(f, "%s %llu\n", name, n);
  }
  fclose(f);
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char* lib = getenv("RIPPLE_CUPTI_LIB");
  void* h = dlopen(lib && *lib ? lib : "libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!h) h = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "cupti_count: no libcupti (%s): nothing counted\n", dlerror());
    return 1;
  }
  p_subscribe = (CUptiResult(*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*))dlsym(h, "cuptiSubscribe");
  p_enable_domain = (CUptiResult(*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))dlsym(h, "cuptiEnableDomain");
  p_cb_name = (CUptiResult(*)(CUpti_CallbackDomain, uint32_t, const char**))dlsym(h, "cuptiGetCallbackName");
  if (!p_subscribe || !p_enable_domain || p_subscribe(&sub, on_call, NULL) != CUPTI_SUCCESS ||
      p_enable_domain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_count: cannot subscribe to driver API callbacks: nothing counted\n");
    return 1;
  }
  atexit(write_counts);
  return 1;
}
