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

void check_cu(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (const DriverApi* api = try_driver()) {
    api->cuGetErrorName(r, &name);
    api->cuGetErrorString(r, &text);
  }
  throw DriverError(fmt::format("{} failed: {} ({})", call, name ? name : fmt::format("CUresult {}", int(r)),
                                text ? text : "no description"),
                    r);
}

}  // namespace moejit::runtime
