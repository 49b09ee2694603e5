#include "bench/ep_nccl/nvlink_counters.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "runtime/driver_api.hpp"

namespace moejit::bench {
namespace {
// NVML's C ABI, the part used here (nvml.h: nvmlFieldValue_t; NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX are field
// ids 138/139, cumulative KiB; scopeId a link, or UINT_MAX for the sum over the links).
struct FieldValue {
  std::uint32_t field_id;
  std::uint32_t scope_id;
  std::int64_t timestamp;
  std::int64_t latency_usec;
  std::uint32_t value_type;
  std::uint32_t nvml_return;
  std::uint64_t value;  // a union of 8 bytes; these fields are unsigned long long
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
constexpr std::uint32_t kDataTx = 138, kDataRx = 139;
constexpr int kMaxLinks = 18;  // an H100 / H200 has 18
constexpr std::uint32_t kAllLinks = 0xFFFFFFFFu;

struct Nvml {
  int (*init)() = nullptr;
  int (*by_bus_id)(const char*, void**) = nullptr;
  int (*field_values)(void*, int, FieldValue*) = nullptr;
  std::string why;
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      n.why = fmt::format("cannot load libnvidia-ml.so.1 ({})", e ? e : "unknown error");
      return n;
    }
    n.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    n.by_bus_id = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.field_values = reinterpret_cast<int (*)(void*, int, FieldValue*)>(dlsym(lib, "nvmlDeviceGetFieldValues"));
    if (!n.init || !n.by_bus_id || !n.field_values) {
      n.why = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetFieldValues";
      n.init = nullptr;
      return n;
    }
    if (const int rc = n.init(); rc != 0) {
      n.why = fmt::format("nvmlInit_v2 failed (NVML error {})", rc);
      n.init = nullptr;
    }
    return n;
  }();
  return loaded;
}

// links > 0: links 0..links-1; links == 0: the sum over every link (scope UINT_MAX).
std::vector<FieldValue> query(void* device, int links) {
  std::vector<FieldValue> v;
  for (int l = 0; l < std::max(links, 1); ++l)
    for (const std::uint32_t f : {kDataTx, kDataRx})
      v.push_back(FieldValue{f, links ? std::uint32_t(l) : kAllLinks, 0, 0, 0, 0, 0});
  if (const int rc = nvml().field_values(device, int(v.size()), v.data()); rc != 0)
    throw std::runtime_error(fmt::format("nvmlDeviceGetFieldValues failed (NVML error {})", rc));
  return v;
}
}  // namespace

std::optional<NvlinkCounters> NvlinkCounters::open(CUdevice device, std::string* why) {
  const Nvml& n = nvml();
  if (!n.init) {
    if (why) *why = n.why;
    return std::nullopt;
  }
  char bus[32] = {};
  MOEJIT_CU(cuDeviceGetPCIBusId, bus, int(sizeof bus), device);
  NvlinkCounters c;
  if (const int rc = n.by_bus_id(bus, &c.handle_); rc != 0) {
    if (why) *why = fmt::format("NVML has no device at PCI bus id {} (NVML error {})", bus, rc);
    return std::nullopt;
  }
  // The sum over the links where NVML gives it (links_ 0), else link by link: the first that does not read ends
  // them.
  try {
    bool all = true;
    for (const FieldValue& f : query(c.handle_, 0)) all = all && f.nvml_return == 0;
    if (all) return c;
    for (const FieldValue& f : query(c.handle_, kMaxLinks)) {
      if (f.nvml_return != 0) break;
      if (f.field_id == kDataRx) c.links_ = int(f.scope_id) + 1;
    }
  } catch (const std::exception& e) {  // the counters are a column of the bench, not a reason to stop it
    if (why) *why = e.what();
    return std::nullopt;
  }
  if (c.links_ == 0) {
    if (why) *why = fmt::format("GPU {} has no readable NVLink throughput counter", bus);
    return std::nullopt;
  }
  return c;
}

NvlinkCounters::Bytes NvlinkCounters::read() const {
  Bytes b;
  for (const FieldValue& f : query(handle_, links_)) {
    if (f.nvml_return != 0)
      throw std::runtime_error(
          fmt::format("NVLink counter {} of link {}: NVML error {}", f.field_id, f.scope_id, f.nvml_return));
    (f.field_id == kDataTx ? b.tx : b.rx) += double(f.value) * 1024.0;
  }
  return b;
}

}  // namespace moejit::bench
