// NVTX tool injection: NVTX (the header-only nvtx3 in every module that emits ranges)
// dlopens $NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2 once per module copy;
// we install push/pop callbacks into its core and domain tables. The callbacks run on
// the launching thread, which is where a gate must block (notes §3).
#include <stdint.h>
#include <stdlib.h>
#include <wchar.h>

#include <string>

#include <nvtx3/nvToolsExt.h>

namespace ripple::cuhook {
void nvtx_push(const char* name);
void nvtx_pop();
}  // namespace ripple::cuhook

namespace {

std::string narrow(const wchar_t* w) {
  std::string s;
  for (; w && *w; ++w) s += static_cast<char>(*w < 128 ? *w : '?');
  return s;
}

std::string attr_message(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    default: return {};  // registered strings: their text is not in the event
  }
}

int NVTX_API push_a(const char* m) {
  ripple::cuhook::nvtx_push(m);
  return 0;
}
int NVTX_API push_w(const wchar_t* m) {
  ripple::cuhook::nvtx_push(narrow(m).c_str());
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  ripple::cuhook::nvtx_push(attr_message(a).c_str());
  return 0;
}
int NVTX_API pop() {
  ripple::cuhook::nvtx_pop();
  return 0;
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return push_ex(a); }
int NVTX_API domain_pop(nvtxDomainHandle_t) { return pop(); }

bool install(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, unsigned id, NvtxFunctionPointer fn) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(module, &table, &size) || table == nullptr || id >= size) return false;
  *table[id] = fn;  // the table holds pointers to the module's function pointers
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (get == nullptr) return 0;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  auto fp = [](auto f) { return reinterpret_cast<NvtxFunctionPointer>(f); };
  bool ok = install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, fp(&push_a));
  ok &= install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, fp(&push_w));
  ok &= install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, fp(&push_ex));
  ok &= install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, fp(&pop));
  // Domain ranges (nvtx3 C++ scoped ranges, TensorRT): optional in old NVTX copies.
  install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, fp(&domain_push_ex));
  install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, fp(&domain_pop));
  return ok ? 1 : 0;
}
