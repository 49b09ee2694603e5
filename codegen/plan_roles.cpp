// The streaming roles' launches around the compute role, decided per B for plan_launch (moe_launch_plan.cpp):
// dispatch (whether it runs, and what it makes of x) and finalize (the combine, or the unit schedule's sums of
// partial rows).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/moe_config.hpp"
#include "codegen/plan_steps.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {
namespace {
constexpr int k_dispatch_threads = 256;
// The token frame's dispatch holds a row's MX blocks one a thread across its barrier (moe_frame_rows asserts it
// for the H it is compiled for); here for every H a config takes.
static_assert(k_max_hidden / 32 <= k_dispatch_threads, "one MX block a dispatch thread at the largest hidden size");
constexpr int k_finalize_threads = 256;
// The streaming roles run grid-stride loops: at most two CTAs per SM, each
// with several 16-byte loads in flight per thread, move their few MB at the
// copy rate; more CTAs only add launch work.
constexpr int k_streaming_ctas_per_sm = 2;
}  // namespace

// Dispatch: only when the compute role cannot read the caller's x as it is.
void plan_dispatch(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device,
                   const MoeCodegenOptions& options) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const int H = padded_hidden(config);
  const bool image = !contract::path_fp8_rows(p.contract_path);
  const bool split = contract::path_split_rows(p.contract_path);
  const bool padded = H != config.hidden;
  const std::string pad_note = padded ? fmt::format(", padding H = {} to {}", config.hidden, H) : "";
  // Expert parallelism: the other ranks read this rank's x rows and routes from its workspace, where only the
  // dispatch role puts them.
  const bool ep = config.ranks > 1;
  const std::string ep_note =
      ep ? fmt::format(", and publishes them with the routes to the other {} rank(s){}", config.ranks - 1,
                       p.ep.has(contract::kEpPull)     ? ", then pulls theirs"
                       : p.ep.has(contract::kEpMirror) ? ", mirroring routes, weights and scales into theirs"
                                                       : "")
         : "";
  // With a split, the dispatch role's CTAs fill its SMs only.
  const int dispatch_sms = p.ep.dispatch_sms ? p.ep.dispatch_sms : device.sm_count;
  if (config.recipe == Recipe::w4a16 && !padded && !ep) {
    note("dispatch: not launched (W4A16: the compute role reads the caller's BF16 x and routes by itself)");
  } else if (config.recipe == Recipe::w4a16) {
    p.dispatch = {
        true,
        std::min(ceil_div(std::int64_t{batch} * H / 8, k_dispatch_threads), k_streaming_ctas_per_sm * dispatch_sms),
        k_dispatch_threads,
        0,
        1,
        0};
    note(fmt::format("dispatch: copies the BF16 x{}{} ({} threads x {} CTAs)", pad_note, ep_note, k_dispatch_threads,
                     p.dispatch.grid));
  } else if (options.input_bf16 || image || split || padded || ep) {
    // A thread per 32-element block (16 for the image); the token frame's CTA per token, its maximum first.
    const int ctas = p.token_frame ? batch : ceil_div(std::int64_t{batch} * H / (image ? 16 : 32), k_dispatch_threads);
    p.dispatch = {true, std::min(ctas, k_streaming_ctas_per_sm * dispatch_sms), k_dispatch_threads, 0, 1, 0};
    const char* what = options.input_bf16 ? "quantizes the BF16 x to MXFP8"
                       : image            ? "writes the BF16 image of x"
                       : split            ? "splits the MXFP8 x"
                                          : "copies the MXFP8 x";
    note(fmt::format("dispatch: {}{}{}{}{} ({} threads x {} CTAs)", what,
                     p.token_frame ? ", shifts each token's blocks to its largest scale (a CTA a token)" : "",
                     split ? " into its large and small elements (exact FP8 sums of GEMM1's large products)" : "",
                     pad_note, ep_note, k_dispatch_threads, p.dispatch.grid));
  } else {
    note("dispatch: not launched (the compute role reads the caller's MXFP8 x and routes by itself)");
  }
}

void plan_finalize(MoeLaunchPlan& p, const MoeConfig& config, int batch, const DeviceProfile& device) {
  auto note = [&p](std::string s) { p.notes.push_back(std::move(s)); };
  const int I = padded_intermediate(config);
  if (p.schedule == Schedule::units) {
    // A block per 128 columns of a token's y, a warp per route: each lane adds I/128 partial rows of 4 columns.
    p.finalize = {true,
                  static_cast<int>(batch * ceil_div(config.hidden, 128)),
                  32 * (config.top_k + (config.shared_expert ? 1 : 0)),
                  0,
                  1,
                  0};
    note(
        fmt::format("finalize: {} blocks (128 columns of a token's y) x {} threads (a warp per route adds its {} "
                    "partial rows)",
                    p.finalize.grid, p.finalize.threads, I / 128));
  } else {
    p.finalize = {true,
                  std::min(ceil_div(std::int64_t{batch} * config.hidden / 8, k_finalize_threads),
                           k_streaming_ctas_per_sm * device.sm_count),
                  k_finalize_threads,
                  0,
                  1,
                  0};
  }
}

}  // namespace moejit::codegen
