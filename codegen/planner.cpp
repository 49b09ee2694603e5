#include "codegen/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "codegen/arch_rules.hpp"

namespace moejit::codegen {
namespace {
// Role thread counts (§4.1, Table 1).
constexpr int k_role1_threads = 256;
constexpr int k_role2_threads = 192;
constexpr int k_role3_threads_unbatched = 384;
constexpr int k_role3_threads_batched = 256;
// §4.4: the position-major relay arena must fit this budget.
constexpr std::int64_t k_relay_budget = std::int64_t{256} << 20;
// §4.4: batched returns need at least this many rows per local expert.
constexpr int k_batched_rows_per_expert = 32;
// §4.5: the tiny-batch direct scan.
constexpr int k_direct_scan_max_batch = 2;
// §4.4: dispatch CTAs per SM are capped at 4; finalize runs 2 CTAs per SM on
// the unbatched path (§5.1) and 4 on the batched, register-limited one.
constexpr int k_max_dispatch_blocks_per_sm = 4;
constexpr int k_finalize_blocks_unbatched = 2;
constexpr int k_finalize_blocks_batched = 4;

int isqrt(int v) {
  int s = 0;
  while ((s + 1) * (s + 1) <= v) ++s;
  return s;
}

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

const char* yes_no(bool b) {
  return b ? "yes" : "no";
}

class Planner {
 public:
  Planner(const MoeConfig& c, int batch, const DeviceProfile& d, const ArchRules& rules) : c_(c), d_(d), rules_(rules) {
    g_.model = c.name;
    g_.device = d.name;
    g_.target = std::string(d.target.name());
    g_.batch = batch;
    g_.ranks = c.ranks;
    g_.local_experts = c.local_experts();
    g_.top_k = c.top_k;
    g_.shared_expert = c.shared_expert.has_value();
  }

  Geometry run() {
    token_tile_and_mainloop();
    return_staging();
    dispatch_knobs();
    reservation_and_smem();
    partition_and_grids();
    return std::move(g_);
  }

 private:
  template <typename... Args>
  void note(fmt::format_string<Args...> f, Args&&... args) {
    g_.notes.push_back(fmt::format(f, std::forward<Args>(args)...));
  }
  [[noreturn]] void reject(const std::string& why) const {
    throw PlanError(
        fmt::format("{} R={} B={} on {} ({}): {}", c_.name, c_.ranks, g_.batch, d_.name, d_.target.name(), why));
  }

  void token_tile_and_mainloop() {
    const int B = g_.batch, k = c_.top_k, L = g_.local_experts;
    g_.rows_per_expert = rows_per_expert(B, k, L);
    const int r = g_.rows_per_expert;
    note("r = ceil(B k / L) = ceil({} x {} / {}) = {} (eq. 1)", B, k, L, r);
    g_.tile_n = token_tile(r);
    g_.tiles_per_expert = ceil_div(r, g_.tile_n);
    if (r < 16)
      note("tile_n = 16: r < 16 falls back to the 16 tile (eq. 8)");
    else if (r >= 64 && r < 96)
      note("tile_n = {}: 64 <= r < 96 and r + floor(sqrt r) = {} {} 80 (eq. 8)", g_.tile_n, r + isqrt(r),
           g_.tile_n == 80 ? "<=" : ">");
    else if (g_.tile_n == 64)
      note("tile_n = 64: r = {} is outside every tier, the 64 fallback ({} token tile(s) per expert; eq. 8)", r,
           g_.tiles_per_expert);
    else
      note("tile_n = {}: {} <= r < {} (eq. 8)", g_.tile_n, g_.tile_n == 32 ? 16 : 32, g_.tile_n);

    const bool compact_tier = g_.tile_n == 48 || g_.tile_n == 80 || g_.tile_n == 96;
    g_.compact_weights = rules_.always_compact_weights || compact_tier;
    if (rules_.always_compact_weights)
      note("compact weights: always on {} (no FP4-expanding TMA)", d_.target.name());
    else
      note("compact weights: {} (on for tile_n in {{48, 80, 96}}, where 4 KiB per stage decides co-residency)",
           yes_no(g_.compact_weights));

    g_.handoff = g_.tile_n >= 48   ? HandoffKind::shared_chunks
                 : g_.tile_n >= 32 ? HandoffKind::global
                                   : HandoffKind::smem;
    g_.handoff_slots = g_.handoff == HandoffKind::smem ? 1 : 2;
    note("handoff: {}, s = {} slot(s) ({})", handoff_name(g_.handoff), g_.handoff_slots,
         g_.handoff == HandoffKind::smem     ? "tile_n < 32 stays in SMEM"
         : g_.handoff == HandoffKind::global ? "global for tile_n >= 32"
                                             : "tile_n >= 48 replaces the global source tiles with 32-row chunks");
  }

  void return_staging() {
    const int B = g_.batch, k = c_.top_k, L = g_.local_experts, R = c_.ranks;
    const bool enough_rows = std::int64_t{B} * k >= std::int64_t{k_batched_rows_per_expert} * L;
    g_.batched_returns = enough_rows && c_.batched_routes;
    if (!c_.batched_routes)
      note("batched returns: no, the workspace carries no batched route array");
    else
      note("batched returns: {}, B k = {} {} 32 L = {}", yes_no(g_.batched_returns), B * k, enough_rows ? ">=" : "<",
           k_batched_rows_per_expert * L);

    g_.mirrored_metadata = k < R;
    note("mirrored metadata: {}, k = {} {} R = {}", yes_no(g_.mirrored_metadata), k,
         g_.mirrored_metadata ? "<" : ">=", R);

    const std::int64_t arena = std::int64_t{R} * c_.token_capacity * k * 2 * c_.hidden;
    const bool fits = arena <= k_relay_budget;
    const bool direct_suffices = g_.mirrored_metadata && !g_.shared_expert;
    g_.relay_staging = g_.batched_returns && fits && !direct_suffices;
    if (g_.relay_staging) g_.relay_arena_bytes = arena;
    if (!g_.batched_returns)
      note("relay copiers: no, returns are not batched");
    else if (!fits)
      note("relay copiers: no, the arena R Bcap k 2H = {} MiB exceeds the 256 MiB budget", arena >> 20);
    else if (direct_suffices)
      note(
          "relay copiers: no, mirrored metadata gives the direct path everything locally and no shared expert "
          "hides the copy");
    else
      note("relay copiers: yes, arena R Bcap k 2H = {} MiB <= 256 MiB{}", arena >> 20,
           g_.shared_expert ? ", and the shared expert hides the copy" : "");
  }

  void dispatch_knobs() {
    const int k = c_.top_k, R = c_.ranks, L = g_.local_experts;
    // The cache's 8 R Bcap bytes are laid out by the workspace whenever the
    // plan enables it, so "the arena must be large enough" holds by
    // construction; the tile condition is where the handoff arena is not
    // already taken by return staging.
    const bool free_tile = g_.tile_n == 80 || (g_.tile_n == 48 && g_.batched_returns);
    g_.pull_cache = k >= R && free_tile;
    if (g_.pull_cache) g_.pull_cache_bytes = std::int64_t{8} * R * c_.token_capacity;
    if (k < R)
      note("pull cache: no, k = {} < R = {} (a token rarely reaches two local experts)", k, R);
    else
      note("pull cache: {}, k >= R and tile_n = {}{}", yes_no(g_.pull_cache), g_.tile_n,
           free_tile ? " leaves the handoff arena free" : " uses the handoff arena for return staging");

    // "raised to" / "lowered to" are read as max / min on the running depth.
    int depth = L < 48 ? 8 : 1;
    if (g_.pull_cache) depth = std::max(depth, 4);
    if (g_.batched_returns && !g_.mirrored_metadata) depth = std::min(depth, 2);
    g_.pull_batch_depth = depth;
    note(
        "pull batch depth: {} (8 when L < 48 else 1, raised to 4 by the pull cache, lowered to 2 by batched "
        "returns without mirrored metadata; L = {})",
        depth, L);

    g_.direct_scan = g_.batch <= k_direct_scan_max_batch;
    note("direct scan: {} (B {} 2)", yes_no(g_.direct_scan), g_.direct_scan ? "<=" : ">");
  }

  void reservation_and_smem() {
    g_.l2_dedicated = l2_dedicated(g_.tile_n, g_.handoff, g_.batched_returns, g_.relay_staging, g_.shared_expert);
    note("l = {} reserved return CTA(s) (§4.4)", g_.l2_dedicated);

    SmemInputs shape;
    shape.tile_n = g_.tile_n;
    shape.compact_weights = g_.compact_weights;
    shape.activation_bytes = rules_.activation_bytes;
    shape.handoff = g_.handoff;
    shape.handoff_slots = g_.handoff_slots;
    shape.shared_tile_ns = g_.shared_expert ? shared_tile_ns(g_.batch) : 0;
    shape.relay = g_.relay_staging;
    const StageChoice choice = choose_stages(rules_, shape, d_);
    if (choice.stages == 0) reject(choice.reason);
    g_.stages = choice.stages;
    g_.smem = choice.smem;
    note("{}", choice.reason);
    const SmemModel& m = g_.smem;
    note("S_model = {} x ({} + {}) + {} + {} + {} + {} + {} = {} B; S_role2 = max({}, {}, {}) = {} B (eq. 9-12)",
         g_.stages, m.stage_weight_bytes, m.stage_activation_bytes, m.token_bytes, m.barrier_bytes, m.return_bytes,
         m.util_bytes, m.control_bytes, m.model_bytes, m.model_bytes, m.shared_term, m.relay_term, m.role2_bytes);

    g_.co_residency = co_residency(d_.smem_per_sm, m.role2_bytes);
    g_.register_cap = register_cap(g_.co_residency, d_.regs_per_sm, k_role2_threads);
    note("c = max(1, min(4, floor({} / {}))) = {}; Rcap = {} (eq. 4)", d_.smem_per_sm, m.role2_bytes, g_.co_residency,
         g_.register_cap ? std::to_string(g_.register_cap) : std::string("none, one CTA owns the register file"));
    g_.loads_in_flight_per_sm = g_.co_residency * (g_.stages - 1) * (m.stage_weight_bytes + m.stage_activation_bytes);
  }

  // The residency a role can have on this device: its intended CTAs per SM,
  // bounded by the thread and SMEM limits the driver's occupancy would apply.
  int resident_blocks(int intended, int threads, int smem) const {
    int fit = std::min(intended, d_.max_threads_per_sm / threads);
    if (smem > 0) fit = std::min(fit, d_.smem_per_sm / smem);
    return fit;
  }

  void check(const char* role, const RoleLaunch& r) const {
    if (r.threads > d_.max_threads_per_block)
      reject(fmt::format("{}: {} threads exceed the {} a block may have", role, r.threads, d_.max_threads_per_block));
    if (r.smem_bytes > d_.smem_per_block)
      reject(fmt::format("{}: {} B of SMEM exceed the {} B a block may use", role, r.smem_bytes, d_.smem_per_block));
    const Residency res =
        check_residency(role, r.grid, resident_blocks(r.blocks_per_sm, r.threads, r.smem_bytes), r.sms);
    if (!res.ok) reject(res.message);
  }

  void partition_and_grids() {
    g_.partition = split_partition(d_.sm_count, c_.dispatch_sms, d_.gc_granularity);
    const Partition& p = g_.partition;
    if (const std::string why = partition_problem(p, true); !why.empty()) reject(why);
    note("partition: {} dispatch + {} compute SMs ({} - {} requested, alignment {}; eq. 5)", p.dispatch, p.compute,
         p.sm_total, p.dispatch_requested, p.granularity);

    // Role 2. The direct scan clamps the expert CTAs (neither relaying nor
    // reserved) to the L local experts.
    const int c = g_.co_residency, full = c * p.compute;
    int grid = full;
    if (g_.direct_scan) {
      const int relay = g_.relay_staging ? std::min(c_.ranks, full - g_.l2_dedicated) : 0;
      grid = std::min(full, relay + g_.l2_dedicated + g_.local_experts);
    }
    g_.compute = {grid, k_role2_threads, g_.smem.role2_bytes, c, p.compute};
    if (grid < g_.l2_dedicated + 1)
      reject(fmt::format("the compute grid of {} CTAs cannot host l + 1 = {} (Table 10)", grid, g_.l2_dedicated + 1));
    const int relay_grid = g_.relay_staging ? std::min(c_.ranks, grid - g_.l2_dedicated) : 0;
    g_.relay = {relay_grid, k_role2_threads, g_.smem.role2_bytes, c, p.compute};
    note("compute grid {} = {}{} x {} threads; relay copiers G_relay = {} (eq. 13)", grid,
         g_.direct_scan && grid < full ? "l + G_relay + L, clamped by the direct scan, of c S = " : "c S = ", full,
         k_role2_threads, g_.relay_staging ? fmt::format("min(R, G - l) = {}", relay_grid) : std::string("0"));

    // Role 1: the bulk-pull engine stages two H-byte rows per warp (16H for
    // eight warps); the paper gives its footprint only. moejit's fallback keeps
    // the 512 + 64 bytes of scan and barrier state and batches in registers.
    const int engine_smem = 512 + 16 * c_.hidden + 64;
    g_.bulk_pull_engine = engine_smem <= d_.smem_per_block;
    g_.role1_smem = g_.bulk_pull_engine ? engine_smem : 512 + 64;
    const int c1 = std::min(k_max_dispatch_blocks_per_sm, d_.smem_per_sm / g_.role1_smem);
    g_.dispatch = {p.dispatch * c1, k_role1_threads, g_.role1_smem, c1, p.dispatch};
    note("dispatch grid {} = S_dispatch x min(4, floor({} / S_role1 = {})) x {} threads ({})", g_.dispatch.grid,
         d_.smem_per_sm, g_.role1_smem, k_role1_threads,
         g_.bulk_pull_engine ? "bulk-pull engine" : "engine exceeds the block limit: register-batched pull");

    // Role 3.
    const int bpf = g_.batched_returns ? k_finalize_blocks_batched : k_finalize_blocks_unbatched;
    const int fgrid = g_.batched_returns
                          ? std::min(c_.token_capacity, bpf * p.compute)
                          : std::min(bpf * p.compute, ceil_div(std::int64_t{g_.batch} * c_.hidden, 2048));
    g_.finalize = {fgrid, g_.batched_returns ? k_role3_threads_batched : k_role3_threads_unbatched, 0, bpf, p.compute};
    note("finalize grid {} = {} x {} threads", fgrid,
         g_.batched_returns ? "min(Bcap, 4 S_compute)" : "min(2 S_compute, ceil(B H / 2048))", g_.finalize.threads);

    check("role 1 (dispatch)", g_.dispatch);
    check("role 2 (compute)", g_.compute);
    check("role 3 (finalize)", g_.finalize);
  }

  const MoeConfig& c_;
  const DeviceProfile& d_;
  const ArchRules& rules_;
  Geometry g_;
};
}  // namespace

int rows_per_expert(int batch, int top_k, int local_experts) {
  return ceil_div(std::int64_t{batch} * top_k, local_experts);
}

int token_tile(int r) {
  if (r < 16) return 16;
  if (r < 32) return 32;
  if (r < 48) return 48;
  if (r >= 64 && r < 96) return r + isqrt(r) <= 80 ? 80 : 96;
  return 64;
}

int l2_dedicated(int tile_n, HandoffKind handoff, bool batched_returns, bool relay_staging, bool shared_expert) {
  if (batched_returns && !relay_staging && !shared_expert) return 3;
  if (tile_n == 80 && !batched_returns) return 6;
  if (tile_n >= 64 || handoff != HandoffKind::smem) return 4;
  return 1;
}

Geometry plan(const MoeConfig& config, int batch, const DeviceProfile& device) {
  validate(config);
  validate_batch(config, batch);
  validate(device);
  const ArchRules* rules = find_arch_rules(device.target);
  if (!rules)
    throw PlanError(fmt::format("{}: the planner has no rule set for {} (it plans sm_90a and sm_120a)", device.name,
                                device.target.name()));
  return Planner(config, batch, device, *rules).run();
}

}  // namespace moejit::codegen
