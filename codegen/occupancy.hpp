#pragma once
// The occupancy equations of the seed paper, as pure functions over numbers:
// co-residency and register cap (eq. 4), the green-context split (eq. 5) and
// the residency check (eq. 6). The planner calls them with its own model; the
// runtime calls check_residency() again with the driver's occupancy figures.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace moejit::codegen {

// eq. (4): c = max(1, min(4, floor(S_sm / S_role2))). Four is the ceiling the
// 192-thread role can keep registers for (Rcap = 80 at c = 4).
int co_residency(int smem_per_sm, int role2_smem);

// eq. (4): Rcap = 16 * floor(regs / (threads * c * 16)): the per-thread
// register budget that lets c CTAs share the register file, rounded down to
// the allocator's 16-register granularity. 0 means no cap (c = 1: a single
// CTA owns the register file, so ptxas may use what it needs).
int register_cap(int c, int regs_per_sm, int threads);

// eq. (5): S_compute = a * floor((S_total - S_dispatch) / a). The SMs that the
// rounding frees stay with the dispatch partition (the split's remainder), so
// the two parts always sum to the device count.
struct Partition {
  int sm_total = 0;
  int dispatch_requested = 0;
  int granularity = 0;  // a
  int compute = 0;      // S_compute
  int dispatch = 0;     // S_total - S_compute

  friend bool operator==(const Partition&, const Partition&) = default;
};
Partition split_partition(int sm_total, int dispatch_requested, int granularity);

// §4.2's usability check of a split: S_compute >= 32, S_compute even when
// `require_even`, S_dispatch > 1, and the parts sum to the device count.
// Returns "" when usable, else the reason.
std::string partition_problem(const Partition& p, bool require_even);

// eq. (6): a role whose grid exceeds c_role * S_role cannot be co-resident, and
// its grid-wide rendezvous would deadlock.
struct Residency {
  bool ok = false;
  std::int64_t capacity = 0;  // blocks_per_sm * sms
  std::string message;        // empty when ok
};
// e.g. "role 2 (compute): grid 209 exceeds its resident capacity 208 = 2 blocks/SM x 104 SMs (eq. 6)".
Residency check_residency(std::string_view role, int grid, int blocks_per_sm, int sms);

void to_json(nlohmann::json& j, const Partition& p);
void from_json(const nlohmann::json& j, Partition& p);

}  // namespace moejit::codegen
