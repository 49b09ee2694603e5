#include "codegen/moe_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cache/printable.hpp"

namespace moejit::codegen {
namespace {
// Table 10 of the seed paper (appendix A).
constexpr int k_max_ranks = 32;
constexpr int k_max_top_k = 32;
constexpr int k_min_intermediate = 256, k_max_intermediate = 4096;
// One MX block. The kernels run 128-wide steps over zero-padded H and I
// (padded_hidden, padded_intermediate in moe_launch_plan.hpp), so any multiple of 32 works.
constexpr int k_dim_multiple = 32;
// Not in Table 10. The operator is a decode operator: its per-position route,
// relay and pull-cache arrays scale with R * Bcap * k. The large-token regime
// (4k tokens and up) is the split pipeline of the prime-flash-moe seed.
constexpr int k_max_token_capacity = 4096;
// eq. (5) requires S_dispatch > 1.
constexpr int k_min_dispatch_sms = 2;

[[noreturn]] void fail(const char* field, const std::string& label_and_value, const std::string& rule) {
  throw ConfigError(field, fmt::format("{} is invalid: {}", label_and_value, rule));
}

void check_dim(const char* field, const char* symbol, int v, int lo, int hi) {
  if (v < lo || v > hi || v % k_dim_multiple != 0)
    fail(field, fmt::format("{} {} = {}", field, symbol, v),
         fmt::format("must be a multiple of {} in [{}, {}]", k_dim_multiple, lo, hi));
}

struct BuiltinModel {
  std::string_view name;
  int hidden, intermediate, experts, top_k;
  int shared_k_group;  // the K-group of the model's shared expert (seed Table 4), 0: none
  bool gpt_oss;        // gpt-oss's MoE block: its activation (alpha 1.702, limit 7), interleaved W1 rows, biases
};
// Seed Table 4 (and DESIGN.md's reference shapes); gpt-oss from its published config (MXFP4 experts).
constexpr BuiltinModel k_models[] = {
    {"glm5.2", 6144, 2048, 256, 8, 128, false},
    {"dsv4.1-flash", 5120, 2304, 384, 6, 32, false},
    {"gpt-oss-120b", 2880, 2880, 128, 4, 0, true},
    {"gpt-oss-20b", 2880, 2880, 32, 4, 0, true},
};
}  // namespace

std::string_view recipe_name(Recipe r) {
  switch (r) {
    case Recipe::w4a8_mx: return "w4a8-mx";
    case Recipe::w4a16: return "w4a16";
  }
  return "?";
}

std::optional<Recipe> parse_recipe(std::string_view text) {
  return parse_name(text, k_recipes, recipe_name);
}

std::string_view activation_name(Activation a) {
  return a == Activation::gpt_oss ? "gpt-oss" : "swiglu";
}
std::optional<Activation> parse_activation(std::string_view text) {
  return parse_name(text, k_activations, activation_name);
}
std::string_view gate_up_name(GateUp g) {
  return g == GateUp::interleaved ? "interleaved" : "halves";
}
std::optional<GateUp> parse_gate_up(std::string_view text) {
  return parse_name(text, k_gate_ups, gate_up_name);
}

bool valid_config_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

std::string default_config_name(const std::string& file_stem) {
  return valid_config_name(file_stem) ? file_stem : std::string("custom");
}

void validate(const MoeConfig& c) {
  // The name is printed in tables and errors: no control bytes, no flood.
  if (!valid_config_name(c.name))
    fail("name", fmt::format("name = {}", cache::quote(c.name)), "must be 1 to 64 printable ASCII characters");
  if (c.ranks < 1 || c.ranks > k_max_ranks)
    fail("ranks", fmt::format("ranks R = {}", c.ranks), fmt::format("must be in [1, {}]", k_max_ranks));
  if (c.experts < c.ranks || c.experts % c.ranks != 0)
    fail("experts", fmt::format("experts E = {}", c.experts),
         fmt::format("must be a positive multiple of ranks R = {} (E mod R = 0, at least one local expert)", c.ranks));
  const int max_k = std::min(k_max_top_k, c.experts);
  if (c.top_k < 1 || c.top_k > max_k)
    fail("top_k", fmt::format("top_k k = {}", c.top_k),
         fmt::format("must be in [1, {}] (min(32, experts E = {}))", max_k, c.experts));
  check_dim("hidden", "H", c.hidden, k_min_hidden, k_max_hidden);
  check_dim("intermediate", "I", c.intermediate, k_min_intermediate, k_max_intermediate);
  if (c.swiglu_clamp && !(std::isfinite(*c.swiglu_clamp) && *c.swiglu_clamp > 0))
    fail("swiglu_clamp", fmt::format("swiglu_clamp = {}", *c.swiglu_clamp),
         "must be a finite number > 0 (or null for no clamp)");
  if (!(std::isfinite(c.alpha) && c.alpha > 0))
    fail("alpha", fmt::format("alpha = {}", c.alpha), "must be a finite number > 0 (gpt-oss: 1.702)");
  if (c.shared_expert && c.shared_expert->k_group != 32 && c.shared_expert->k_group != 128)
    fail("shared_expert.k_group", fmt::format("shared_expert.k_group = {}", c.shared_expert->k_group),
         "must be 32 or 128 (the shared FP8 weights' scale K-group)");
  if (c.dispatch_sms < k_min_dispatch_sms)
    fail("dispatch_sms", fmt::format("dispatch_sms = {}", c.dispatch_sms),
         fmt::format("must be at least {} (eq. 5 needs S_dispatch > 1)", k_min_dispatch_sms));
  if (c.token_capacity < 1 || c.token_capacity > k_max_token_capacity)
    fail("token_capacity", fmt::format("token_capacity Bcap = {}", c.token_capacity),
         fmt::format("must be in [1, {}]", k_max_token_capacity));
}

void validate_batch(const MoeConfig& c, int batch) {
  if (batch < 1 || batch > c.token_capacity)
    fail("batch", fmt::format("batch B = {}", batch),
         fmt::format("must be in [1, {}] (token_capacity Bcap)", c.token_capacity));
}

MoeConfig builtin_model(std::string_view name, bool shared_expert) {
  for (const BuiltinModel& m : k_models) {
    if (m.name != name) continue;
    MoeConfig c;
    c.name = std::string(m.name);
    c.experts = m.experts;
    c.top_k = m.top_k;
    c.hidden = m.hidden;
    c.intermediate = m.intermediate;
    if (m.gpt_oss) {
      c.activation = Activation::gpt_oss;
      c.alpha = 1.702f;
      c.swiglu_clamp = 7.0f;
      c.gate_up = GateUp::interleaved;
      c.biases = true;
    }
    if (shared_expert && m.shared_k_group == 0)
      throw std::invalid_argument(fmt::format("model '{}' has no shared expert", name));
    if (shared_expert) c.shared_expert = SharedExpert{m.shared_k_group};
    return c;
  }
  throw std::invalid_argument(
      fmt::format("unknown model '{}' (built-in models: {})", name, fmt::join(builtin_model_names(), ", ")));
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> out;
  for (const BuiltinModel& m : k_models) out.emplace_back(m.name);
  return out;
}

}  // namespace moejit::codegen
