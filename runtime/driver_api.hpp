#pragma once
// The CUDA driver, loaded lazily: dlopen("libcuda.so.1") + cuGetProcAddress.
// moejit never links libcuda, so its binaries start (and compile, plan and
// precompile) on machines without a GPU; only what launches needs the driver.

#include <cuda.h>
#include <cudaTypedefs.h>

#include <stdexcept>
#include <string>

namespace moejit::runtime {

// Every driver entry point moejit uses, with the ABI version it is typed for.
#define MOEJIT_DRIVER_FUNCTIONS(X)                     \
  X(cuInit, 2000)                                      \
  X(cuDriverGetVersion, 2020)                          \
  X(cuGetErrorName, 6000)                              \
  X(cuGetErrorString, 6000)                            \
  X(cuDeviceGet, 2000)                                 \
  X(cuDeviceGetCount, 2000)                            \
  X(cuDeviceGetName, 2000)                             \
  X(cuDeviceGetAttribute, 2000)                        \
  X(cuDeviceTotalMem, 3020)                            \
  X(cuDeviceGetPCIBusId, 4010)                         \
  X(cuDevicePrimaryCtxRetain, 7000)                    \
  X(cuDevicePrimaryCtxRelease, 11000)                  \
  X(cuCtxSetCurrent, 4000)                             \
  X(cuCtxGetCurrent, 4000)                             \
  X(cuCtxGetDevice, 2000)                              \
  X(cuCtxSynchronize, 2000)                            \
  X(cuFuncSetAttribute, 9000)                          \
  X(cuTensorMapEncodeTiled, 12000)                     \
  X(cuMemsetD8, 3020)                                  \
  X(cuLibraryLoadData, 12000)                          \
  X(cuLibraryUnload, 12000)                            \
  X(cuLibraryGetKernel, 12000)                         \
  X(cuKernelGetFunction, 12000)                        \
  X(cuKernelSetAttribute, 12000)                       \
  X(cuFuncGetAttribute, 2020)                          \
  X(cuLaunchKernel, 4000)                              \
  X(cuLaunchKernelEx, 11060)                           \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuMemAlloc, 3020)                                  \
  X(cuMemFree, 3020)                                   \
  X(cuMemGetInfo, 3020)                                \
  X(cuMemGetAddressRange, 3020)                        \
  X(cuPointerGetAttribute, 4000)                       \
  X(cuIpcGetMemHandle, 4010)                           \
  X(cuIpcOpenMemHandle, 11000)                         \
  X(cuIpcCloseMemHandle, 4010)                         \
  X(cuDeviceCanAccessPeer, 4000)                       \
  X(cuCtxEnablePeerAccess, 4000)                       \
  X(cuMemcpyHtoD, 3020)                                \
  X(cuMemcpyDtoH, 3020)                                \
  X(cuMemcpyHtoDAsync, 3020)                           \
  X(cuMemcpyDtoHAsync, 3020)                           \
  X(cuMemcpyDtoDAsync, 3020)                           \
  X(cuMemsetD8Async, 3020)                             \
  X(cuMemsetD32Async, 3020)                            \
  X(cuStreamCreate, 2000)                              \
  X(cuStreamDestroy, 4000)                             \
  X(cuStreamSynchronize, 2000)                         \
  X(cuEventCreate, 2000)                               \
  X(cuEventRecord, 2000)                               \
  X(cuStreamWaitEvent, 3020)                           \
  X(cuEventSynchronize, 2000)                          \
  X(cuEventElapsedTime, 12080)                         \
  X(cuEventDestroy, 4000)                              \
  X(cuStreamBeginCapture, 10010)                       \
  X(cuStreamEndCapture, 10000)                         \
  X(cuStreamIsCapturing, 10000)                        \
  X(cuGraphInstantiateWithFlags, 11040)                \
  X(cuGraphLaunch, 10000)                              \
  X(cuGraphExecDestroy, 10000)                         \
  X(cuGraphDestroy, 10000)                             \
  X(cuGraphCreate, 10000)                              \
  X(cuGraphAddKernelNode, 12000)                       \
  X(cuGraphAddDependencies, 12030)                     \
  X(cuGraphAddChildGraphNode, 10000)                   \
  X(cuStreamGetCaptureInfo, 12030)                     \
  X(cuStreamUpdateCaptureDependencies, 12030)          \
  X(cuThreadExchangeStreamCaptureMode, 10010)          \
  X(cuDeviceGetDevResource, 12040)                     \
  X(cuDevSmResourceSplitByCount, 12040)                \
  X(cuDevResourceGenerateDesc, 12040)                  \
  X(cuGreenCtxCreate, 12040)                           \
  X(cuGreenCtxDestroy, 12040)                          \
  X(cuCtxFromGreenCtx, 12040)                          \
  X(cuGreenCtxStreamCreate, 12050)

struct DriverApi {
#define MOEJIT_DECLARE_PFN(name, version) PFN_##name##_v##version name = nullptr;
  MOEJIT_DRIVER_FUNCTIONS(MOEJIT_DECLARE_PFN)
#undef MOEJIT_DECLARE_PFN
  int driver_version = 0;  // e.g. 13000
};

class DriverError : public std::runtime_error {
 public:
  DriverError(const std::string& what, CUresult code) : std::runtime_error(what), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

// No libcuda on this machine (or it failed to initialise). The message starts
// with "no CUDA driver found" and says why.
class NoDriverError : public DriverError {
 public:
  explicit NoDriverError(const std::string& why) : DriverError("no CUDA driver found: " + why, CUDA_ERROR_NO_DEVICE) {}
};

// The loaded driver, or nullptr when there is none; `why` receives the reason.
// Loading happens once per process and is thread-safe.
const DriverApi* try_driver(std::string* why = nullptr);

// The loaded driver; throws NoDriverError when there is none.
const DriverApi& driver();

// Throws DriverError "<call> failed: CUDA_ERROR_X (string)" unless r is CUDA_SUCCESS.
void check_cu(CUresult r, const char* call);

}  // namespace moejit::runtime

// MOEJIT_CU(cuMemAlloc, &ptr, bytes): call through the loaded table and check.
#define MOEJIT_CU(fn, ...) ::moejit::runtime::check_cu(::moejit::runtime::driver().fn(__VA_ARGS__), #fn)
