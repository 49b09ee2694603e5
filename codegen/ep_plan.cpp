// Expert parallelism's Table 2 decisions as the role kernels run them
// (contract::EpMode; docs/expert-parallelism.md). Each bit changes the code of
// the kernels that launch; with one rank there are none.
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "codegen/moe_launch_plan.hpp"
#include "templates/moe_contract.cuh"

namespace moejit::codegen {
namespace {
// GC-MoE §4.4: the relay arena R Bcap k 2H must fit this budget.
constexpr std::int64_t k_relay_budget = std::int64_t{256} << 20;
// §4.5: tiny batches scan the peers from one CTA.
constexpr int k_direct_scan_max_batch = 2;

// Each bit's name, for printing (`moejit plan`) and parsing (--ep-mode) alike.
struct ModeName {
  int bit;
  std::string_view name;
};
constexpr ModeName k_mode_names[] = {{contract::kEpMirror, "mirror"},
                                     {contract::kEpPull, "pull"},
                                     {contract::kEpStagedReturns, "staged-returns"},
                                     {contract::kEpDirectScan, "direct-scan"}};

std::string mode_names(int mode) {
  std::string out;
  for (const ModeName& m : k_mode_names)
    if (mode & m.bit) {
      if (!out.empty()) out += '+';
      out += m.name;
    }
  return out.empty() ? "none" : out;
}

// The range is validate(MoeCodegenOptions)'s; these are the combinations a plan cannot take.
void validate_mode(int mode, int ranks) {
  if (mode != 0 && ranks == 1)
    throw ConfigError("ep_mode", fmt::format("ep_mode = {} ({}) is invalid with ranks R = 1: the modes are expert "
                                             "parallelism's",
                                             mode, mode_names(mode)));
  if ((mode & contract::kEpMirror) && (mode & contract::kEpPull))
    throw ConfigError("ep_mode", fmt::format("ep_mode = {} ({}) is invalid: mirror and pull are alternatives (both "
                                             "bring the route metadata to the compute role)",
                                             mode, mode_names(mode)));
  if ((mode & contract::kEpPull) && (mode & contract::kEpDirectScan))
    throw ConfigError("ep_mode", fmt::format("ep_mode = {} ({}) is invalid: with pull the compute role already waits "
                                             "on its own workspace, so a direct scan would change nothing",
                                             mode, mode_names(mode)));
}

// The split: the option, else MOEJIT_DISPATCH_SMS, else none.
int dispatch_sms(const MoeConfig& config, int sm_count, const MoeCodegenOptions& options,
                 std::vector<std::string>& notes) {
  std::string field = "dispatch_sms";
  std::optional<int> value = options.dispatch_sms;
  if (!value) {
    const char* env = std::getenv("MOEJIT_DISPATCH_SMS");
    if (!env || !*env) return 0;
    field = "MOEJIT_DISPATCH_SMS";
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v >= sm_count)
      throw ConfigError(field, fmt::format("MOEJIT_DISPATCH_SMS = '{}' is invalid: must be an integer in [0, {}] (the "
                                           "SMs of {} kept from the compute grid for the dispatch role)",
                                           env, sm_count - 1, sm_count));
    if (config.ranks == 1) {
      notes.push_back("dispatch SMs: MOEJIT_DISPATCH_SMS is ignored with one rank (no split to make)");
      return 0;
    }
    value = static_cast<int>(v);
  }
  if (*value < 0 || *value >= sm_count)
    throw ConfigError(field, fmt::format("{} = {} is outside the allowed range [0, {}] (SMs of {})", field, *value,
                                         sm_count - 1, sm_count));
  if (*value != 0 && config.ranks == 1)
    throw ConfigError(
        field, fmt::format("{} = {} is invalid with ranks R = 1: the split is expert parallelism's", field, *value));
  return *value;
}
}  // namespace

EpPlan plan_ep(const MoeConfig& config, int batch, int sm_count, const MoeCodegenOptions& options,
               std::vector<std::string>& notes) {
  EpPlan ep;
  const int R = config.ranks, k = config.top_k;
  ep.dispatch_sms = dispatch_sms(config, sm_count, options, notes);
  if (options.ep_mode) validate_mode(*options.ep_mode, R);
  if (R == 1) return ep;
  auto note = [&](std::string s) { notes.push_back(std::move(s)); };
  if (options.ep_mode) {
    ep.mode = *options.ep_mode;
    note(fmt::format("EP modes: {} (set by the options)", mode_names(ep.mode)));
  } else {
    // §4.5: at k >= R a token reaches several of a rank's experts, so its row is fetched once for all of them;
    // below, the senders mirror the metadata instead and the rows are read where they are.
    if (k >= R) {
      ep.mode |= contract::kEpPull;
      note(
          fmt::format("EP pull: yes, k = {} >= R = {}: this rank's dispatch pulls every rank's routes, and each peer "
                      "token's rows once however many of its experts read them",
                      k, R));
    } else {
      ep.mode |= contract::kEpMirror;
      note(
          fmt::format("EP mirrored metadata: yes, k = {} < R = {}: each dispatch pushes its routes, weights and x "
                      "scales into every rank's mirror; rows are read from their owner",
                      k, R));
    }
    // §4.4/§4.6: returns are staged where they are computed (the relay arena) unless mirrored metadata already
    // gives the direct path what it needs, and only while the arena fits the budget.
    const std::int64_t arena = std::int64_t{2} * R * config.token_capacity * k * padded_hidden(config);
    if (ep.has(contract::kEpMirror))
      note("EP staged returns: no, with mirrored metadata the GEMM2 epilogue writes the owner's arena directly");
    else if (arena > k_relay_budget)
      note(fmt::format("EP staged returns: no, the relay arena R Bcap k 2H = {} MiB exceeds {} MiB", arena >> 20,
                       k_relay_budget >> 20));
    else {
      ep.mode |= contract::kEpStagedReturns;
      note(
          fmt::format("EP staged returns: yes, output rows stay in the computing rank's relay arena (R Bcap k 2H = "
                      "{} MiB) and each owner's finalize reads its k rows from there",
                      arena >> 20));
    }
    if (batch <= k_direct_scan_max_batch && !ep.has(contract::kEpPull)) {
      ep.mode |= contract::kEpDirectScan;
      note(fmt::format("EP direct scan: yes, B = {} <= {}: one compute CTA polls the peers and opens a local gate",
                       batch, k_direct_scan_max_batch));
    } else {
      note(ep.has(contract::kEpPull) ? "EP direct scan: no, the compute role waits on the pull, in its own workspace"
                                     : fmt::format("EP direct scan: no, B = {} > {}", batch, k_direct_scan_max_batch));
    }
  }
  note(ep.dispatch_sms ? fmt::format("dispatch SMs: {} of {} kept out of the compute grid ({})", ep.dispatch_sms,
                                     sm_count, options.dispatch_sms ? "set by the options" : "MOEJIT_DISPATCH_SMS")
                       : "dispatch SMs: none kept: the dispatch role runs on the compute role's SMs, ahead of it "
                         "(the compute role cannot start before the routes arrive); MOEJIT_DISPATCH_SMS sets a split");
  return ep;
}

std::string ep_mode_names(int mode) {
  return mode_names(mode);
}

std::optional<int> parse_ep_mode(std::string_view text) {
  if (text == "none") return 0;
  int mode = 0;
  while (!text.empty()) {
    const std::size_t plus = text.find('+');
    const std::string_view name = text.substr(0, plus);
    int bit = 0;
    for (const ModeName& m : k_mode_names)
      if (name == m.name) bit = m.bit;
    if (bit == 0 || (mode & bit)) return std::nullopt;
    mode |= bit;
    if (plus == std::string_view::npos) break;
    text.remove_prefix(plus + 1);
    if (text.empty()) return std::nullopt;
  }
  return mode ? std::optional<int>(mode) : std::nullopt;
}

}  // namespace moejit::codegen
