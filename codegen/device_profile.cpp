#include "codegen/device_profile.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "codegen/moe_config.hpp"

namespace moejit::codegen {
namespace {
constexpr int k_kib = 1024;
// The widest role (finalize on the unbatched path, §4.1 Table 1).
constexpr int k_widest_role_threads = 384;

DeviceProfile h200() {
  // H200 SXM: 132 SMs, 228 KiB SMEM per SM of which 227 KiB are a block's
  // opt-in maximum, 64 K registers, 2048 threads per SM.
  return {"h200",
          Target{Arch::sm_90a},
          132,
          228 * k_kib,
          227 * k_kib,
          65536,
          1024,
          2048,
          default_gc_granularity(Target{Arch::sm_90a})};
}

DeviceProfile h100() {
  // H100 SXM5: the numbers of the H200, which is the same GH100 die with more and faster HBM; the planner reads no
  // bandwidth, so the two plan the same kernels. (H100 PCIe has 114 SMs: its live device plans it.)
  DeviceProfile p = h200();
  p.name = "h100";
  return p;
}

DeviceProfile rtx_pro_5000() {
  // RTX PRO 5000 Blackwell (CC 12.0): 110 SMs, 100 KiB SMEM per SM, 99 KiB
  // per block, 64 K registers, 1536 threads per SM.
  return {"rtx-pro-5000",
          Target{Arch::sm_120a},
          110,
          100 * k_kib,
          99 * k_kib,
          65536,
          1024,
          1536,
          default_gc_granularity(Target{Arch::sm_120a})};
}

void positive(const char* key, int v) {
  if (v <= 0)
    throw ConfigError(fmt::format("device.{}", key), fmt::format("device.{} = {} is invalid: must be > 0", key, v));
}
}  // namespace

DeviceProfile builtin_profile(std::string_view name) {
  if (name == "h200") return h200();
  if (name == "h100") return h100();
  if (name == "rtx-pro-5000") return rtx_pro_5000();
  throw std::invalid_argument(fmt::format("unknown device profile '{}' (built-in profiles: {})", name,
                                          fmt::join(builtin_profile_names(), ", ")));
}

std::vector<std::string> builtin_profile_names() {
  return {"h200", "h100", "rtx-pro-5000"};
}

int default_gc_granularity(Target target) {
  return target.arch == Arch::sm_120a ? 2 : 8;
}

DeviceProfile from_live_device(const LiveDeviceNumbers& live) {
  DeviceProfile p{live.name,
                  live.target,
                  live.sm_count,
                  live.smem_per_sm,
                  live.smem_per_block_optin,
                  live.regs_per_sm,
                  live.max_threads_per_block,
                  live.max_threads_per_sm,
                  live.gc_granularity > 0 ? live.gc_granularity : default_gc_granularity(live.target)};
  validate(p);
  return p;
}

void validate(const DeviceProfile& p) {
  positive("sm_count", p.sm_count);
  positive("smem_per_sm", p.smem_per_sm);
  positive("smem_per_block", p.smem_per_block);
  positive("regs_per_sm", p.regs_per_sm);
  positive("max_threads_per_block", p.max_threads_per_block);
  positive("max_threads_per_sm", p.max_threads_per_sm);
  positive("gc_granularity", p.gc_granularity);
  if (p.smem_per_block > p.smem_per_sm)
    throw ConfigError("device.smem_per_block",
                      fmt::format("device.smem_per_block = {} is invalid: must not exceed device.smem_per_sm = {}",
                                  p.smem_per_block, p.smem_per_sm));
  if (p.max_threads_per_block < k_widest_role_threads)
    throw ConfigError("device.max_threads_per_block",
                      fmt::format("device.max_threads_per_block = {} is invalid: the finalize role needs {} threads",
                                  p.max_threads_per_block, k_widest_role_threads));
  if (p.max_threads_per_sm < p.max_threads_per_block)
    throw ConfigError("device.max_threads_per_sm",
                      fmt::format("device.max_threads_per_sm = {} is invalid: must be at least "
                                  "device.max_threads_per_block = {}",
                                  p.max_threads_per_sm, p.max_threads_per_block));
}

void to_json(nlohmann::json& j, const DeviceProfile& p) {
  j = {{"name", p.name},
       {"target", p.target.name()},
       {"sm_count", p.sm_count},
       {"smem_per_sm", p.smem_per_sm},
       {"smem_per_block", p.smem_per_block},
       {"regs_per_sm", p.regs_per_sm},
       {"max_threads_per_block", p.max_threads_per_block},
       {"max_threads_per_sm", p.max_threads_per_sm},
       {"gc_granularity", p.gc_granularity}};
}

void from_json(const nlohmann::json& j, DeviceProfile& p) {
  p.name = j.at("name").get<std::string>();
  auto target = parse_target(j.at("target").get<std::string>());
  if (!target)
    throw ConfigError("device.target", "device.target = " + j.at("target").dump() + " is not one of " + target_names());
  p.target = *target;
  p.sm_count = j.at("sm_count").get<int>();
  p.smem_per_sm = j.at("smem_per_sm").get<int>();
  p.smem_per_block = j.at("smem_per_block").get<int>();
  p.regs_per_sm = j.at("regs_per_sm").get<int>();
  p.max_threads_per_block = j.at("max_threads_per_block").get<int>();
  p.max_threads_per_sm = j.at("max_threads_per_sm").get<int>();
  p.gc_granularity = j.at("gc_granularity").get<int>();
}

}  // namespace moejit::codegen
