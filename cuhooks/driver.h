// The driver functions libripple-cuhook.so's runtime calls on its own account (timing
// events, capture checks, contexts), looked up once through the driver's own symbols
// (cuhooks/hooks.h, driver_symbol). Internal to libripple-cuhook.so.
#pragma once

#include "cuhooks/hooks.h"

namespace ripple::cuhook {

struct Driver {
  CUresult(CUDAAPI* event_create)(CUevent*, unsigned int) = nullptr;
  CUresult(CUDAAPI* event_destroy)(CUevent) = nullptr;
  CUresult(CUDAAPI* event_record)(CUevent, CUstream) = nullptr;
  CUresult(CUDAAPI* event_query)(CUevent) = nullptr;
  CUresult(CUDAAPI* elapsed)(float*, CUevent, CUevent) = nullptr;
  CUresult(CUDAAPI* is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult(CUDAAPI* func_name)(const char**, CUfunction) = nullptr;
  CUresult(CUDAAPI* ctx_get)(CUcontext*) = nullptr;
  CUresult(CUDAAPI* ctx_set)(CUcontext) = nullptr;
  CUresult(CUDAAPI* exchange_capture_mode)(CUstreamCaptureMode*) = nullptr;
  CUresult(CUDAAPI* ctx_get_device)(CUdevice*) = nullptr;
  CUresult(CUDAAPI* device_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult(CUDAAPI* stream_ctx)(CUstream, CUcontext*) = nullptr;
  CUresult(CUDAAPI* primary_state)(CUdevice, unsigned int*, int*) = nullptr;
  void load() {
    auto sym = [](const char* a, const char* b = nullptr) {
      void* p = driver_symbol(a);
      return p || !b ? p : driver_symbol(b);
    };
    event_create = reinterpret_cast<decltype(event_create)>(sym("cuEventCreate"));
    event_destroy = reinterpret_cast<decltype(event_destroy)>(sym("cuEventDestroy_v2", "cuEventDestroy"));
    event_record = reinterpret_cast<decltype(event_record)>(sym("cuEventRecord"));
    event_query = reinterpret_cast<decltype(event_query)>(sym("cuEventQuery"));
    elapsed = reinterpret_cast<decltype(elapsed)>(sym("cuEventElapsedTime_v2", "cuEventElapsedTime"));
    is_capturing = reinterpret_cast<decltype(is_capturing)>(sym("cuStreamIsCapturing"));
    func_name = reinterpret_cast<decltype(func_name)>(sym("cuFuncGetName"));
    ctx_get = reinterpret_cast<decltype(ctx_get)>(sym("cuCtxGetCurrent"));
    ctx_set = reinterpret_cast<decltype(ctx_set)>(sym("cuCtxSetCurrent"));
    exchange_capture_mode = reinterpret_cast<decltype(exchange_capture_mode)>(sym("cuThreadExchangeStreamCaptureMode"));
    ctx_get_device = reinterpret_cast<decltype(ctx_get_device)>(sym("cuCtxGetDevice"));
    device_attribute = reinterpret_cast<decltype(device_attribute)>(sym("cuDeviceGetAttribute"));
    stream_ctx = reinterpret_cast<decltype(stream_ctx)>(sym("cuStreamGetCtx"));
    primary_state = reinterpret_cast<decltype(primary_state)>(sym("cuDevicePrimaryCtxGetState"));
  }
};

}  // namespace ripple::cuhook
