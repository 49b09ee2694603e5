#include "codegen/occupancy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace moejit::codegen {
namespace {
constexpr int k_max_co_residency = 4;
constexpr int k_reg_granularity = 16;
constexpr int k_min_compute_sms = 32;
}  // namespace

int co_residency(int smem_per_sm, int role2_smem) {
  const int fit = role2_smem > 0 ? smem_per_sm / role2_smem : k_max_co_residency;
  return std::max(1, std::min(k_max_co_residency, fit));
}

int register_cap(int c, int regs_per_sm, int threads) {
  if (c <= 1) return 0;
  return k_reg_granularity * (regs_per_sm / (threads * c * k_reg_granularity));
}

Partition split_partition(int sm_total, int dispatch_requested, int granularity) {
  Partition p;
  p.sm_total = sm_total;
  p.dispatch_requested = dispatch_requested;
  p.granularity = granularity;
  const int left = std::max(0, sm_total - dispatch_requested);
  p.compute = granularity > 0 ? granularity * (left / granularity) : 0;
  p.dispatch = sm_total - p.compute;
  return p;
}

std::string partition_problem(const Partition& p, bool require_even) {
  const std::string split = fmt::format("{} SMs - {} dispatch, alignment {} -> {} compute + {} dispatch (eq. 5)",
                                        p.sm_total, p.dispatch_requested, p.granularity, p.compute, p.dispatch);
  if (p.compute < k_min_compute_sms)
    return fmt::format("compute partition of {} SMs is below the minimum of {} ({})", p.compute, k_min_compute_sms,
                       split);
  if (require_even && p.compute % 2 != 0)
    return fmt::format("compute partition of {} SMs is odd; it must be even ({})", p.compute, split);
  if (p.dispatch <= 1) return fmt::format("dispatch partition of {} SMs must exceed 1 ({})", p.dispatch, split);
  if (p.compute + p.dispatch != p.sm_total)
    return fmt::format("partitions do not sum to the device's {} SMs ({})", p.sm_total, split);
  return "";
}

Residency check_residency(std::string_view role, int grid, int blocks_per_sm, int sms) {
  Residency r;
  r.capacity = std::int64_t{std::max(0, blocks_per_sm)} * std::max(0, sms);
  r.ok = grid >= 1 && grid <= r.capacity;
  if (grid < 1)
    r.message = fmt::format("{}: grid {} is empty", role, grid);
  else if (!r.ok)
    r.message = fmt::format("{}: grid {} exceeds its resident capacity {} = {} blocks/SM x {} SMs (eq. 6)", role, grid,
                            r.capacity, blocks_per_sm, sms);
  return r;
}

void to_json(nlohmann::json& j, const Partition& p) {
  j = {{"sm_total", p.sm_total},
       {"dispatch_requested", p.dispatch_requested},
       {"granularity", p.granularity},
       {"compute", p.compute},
       {"dispatch", p.dispatch}};
}

void from_json(const nlohmann::json& j, Partition& p) {
  p.sm_total = j.at("sm_total").get<int>();
  p.dispatch_requested = j.at("dispatch_requested").get<int>();
  p.granularity = j.at("granularity").get<int>();
  p.compute = j.at("compute").get<int>();
  p.dispatch = j.at("dispatch").get<int>();
}

}  // namespace moejit::codegen
