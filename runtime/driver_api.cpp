#include "runtime/driver_api.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace moejit::runtime {
namespace {
struct LoadedDriver {
  DriverApi api;
  bool ok = false;
  std::string why;
};

LoadedDriver load() {
  LoadedDriver d;
  // MOEJIT_FORCE_NO_DRIVER lets tests exercise the no-GPU path on a GPU machine.
  if (const char* off = std::getenv("MOEJIT_FORCE_NO_DRIVER"); off && *off && *off != '0') {
    d.why = "MOEJIT_FORCE_NO_DRIVER is set";
    return d;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    d.why = fmt::format("cannot load libcuda.so.1 ({})", err ? err : "unknown error");
    return d;
  }
  // cuGetProcAddress_v2 (CUDA 12+) reports whether the symbol was found.
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    d.why = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return d;
  }
#define MOEJIT_LOAD_PFN(name, version)                                                        \
  {                                                                                           \
    void* fn = nullptr;                                                                       \
    CUdriverProcAddressQueryResult found{};                                                   \
    if (get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || \
        found != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {                                        \
      d.why = fmt::format("the driver does not provide {} (ABI {})", #name, version);         \
      return d;                                                                               \
    }                                                                                         \
    d.api.name = reinterpret_cast<PFN_##name##_v##version>(fn);                               \
  }
  MOEJIT_DRIVER_FUNCTIONS(MOEJIT_LOAD_PFN)
#undef MOEJIT_LOAD_PFN
  if (CUresult r = d.api.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.api.cuGetErrorName(r, &name);
    d.why = fmt::format("cuInit failed: {}", name ? name : "unknown error");
    return d;
  }
  d.api.cuDriverGetVersion(&d.api.driver_version);
  d.ok = true;
  return d;
}

const LoadedDriver& loaded() {
  static const LoadedDriver d = load();
  return d;
}
}  // namespace

const DriverApi* try_driver(std::string* why) {
  const LoadedDriver& d = loaded();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.api : nullptr;
}

const DriverApi& driver() {
  const LoadedDriver& d = loaded();
  if (!d.ok) throw NoDriverError(d.why);
  return d.api;
}

namespace {
// The errors a faulting kernel leaves on its context: every later call on it returns one, whichever call it is.
bool sticky_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return true;
    default: return false;
  }
}
}  // namespace

void check_cu(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (const DriverApi* api = try_driver()) {
    api->cuGetErrorName(r, &name);
    api->cuGetErrorString(r, &text);
  }
  // A trap or fault surfaces at the next call that checks, often not a launch: say so, or the message blames it.
  throw DriverError(fmt::format("{} failed: {} ({}){}", call, name ? name : fmt::format("CUresult {}", int(r)),
                                text ? text : "no description",
                                sticky_error(r) ? "; a kernel launched earlier on this context faulted, and the "
                                                  "context is unusable from here: run the step under "
                                                  "`compute-sanitizer` to name the kernel"
                                                : ""),
                    r);
}

}  // namespace moejit::runtime
