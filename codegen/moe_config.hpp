#pragma once
// MoeConfig: the model half of a launch shape (the other halves are the batch
// B and the DeviceProfile), and its validation against the operator's
// supported range (seed paper, Table 10 of appendix A). Invalid input is
// refused with a ConfigError that names the field, its value and the range,
// before anything is planned or launched.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace moejit::codegen {

// The arithmetic recipe of the routed experts (docs/numerics.md).
enum class Recipe {
  w4a8_mx,  // MXFP8 activations x MXFP4 weights (UE8M0 scales per 32 along K), MXFP8 intermediate
  w4a16,    // BF16 activations x MXFP4 weights, BF16 intermediate (how Hopper engines run MXFP4 models)
};
std::string_view recipe_name(Recipe r);  // "w4a8-mx", "w4a16"
std::optional<Recipe> parse_recipe(std::string_view text);

// The gated activation on W1's gate g and up u (c = swiglu_clamp; DESIGN.md):
//   swiglu  (the seeds'): g' = min(g, c), u' = clamp(u, -c, c), act = g' sigmoid(g') u'
//   gpt_oss (gpt-oss's):  the same clamps (c: its limit, 7), act = g' sigmoid(alpha g') (u' + 1)
enum class Activation { swiglu, gpt_oss };
std::string_view activation_name(Activation a);  // "swiglu", "gpt-oss"
std::optional<Activation> parse_activation(std::string_view text);

// W1's gate and up rows in the checkpoint: halves (gate rows 0..I-1, then up
// rows I..2I-1) or interleaved (gpt-oss: gate i at row 2i, up i at row 2i+1).
enum class GateUp { halves, interleaved };
std::string_view gate_up_name(GateUp g);  // "halves", "interleaved"
std::optional<GateUp> parse_gate_up(std::string_view text);

inline constexpr Recipe k_recipes[] = {Recipe::w4a8_mx, Recipe::w4a16};
inline constexpr Activation k_activations[] = {Activation::swiglu, Activation::gpt_oss};
inline constexpr GateUp k_gate_ups[] = {GateUp::halves, GateUp::interleaved};
// An enum's names joined for a message: names_of(k_recipes, recipe_name) is "w4a8-mx or w4a16".
template <class E, std::size_t N>
std::string names_of(const E (&all)[N], std::string_view (*name)(E), std::string_view quote = "",
                     std::string_view sep = " or ") {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i) out += sep;
    out += quote;
    out += name(all[i]);
    out += quote;
  }
  return out;
}

// The value of `all` whose name is `text`.
template <class E, std::size_t N>
std::optional<E> parse_name(std::string_view text, const E (&all)[N], std::string_view (*name)(E)) {
  for (E e : all)
    if (name(e) == text) return e;
  return std::nullopt;
}

// One shared expert fused into the compute role (paper §4.7). The paper's are
// FP8 weights with a K-group of 32 or 128 for their UE8M0 scales, which the
// planner's Table 2 model (planner.cpp) uses. moejit's layer takes it in MXFP4
// as expert E of the weight arrays (weight_experts()): the routed atoms, the
// weight transform and the numerical contract then serve it unchanged, and it
// streams half the bytes of FP8.  Every token reaches it with weight 1.
struct SharedExpert {
  int k_group = 128;

  friend bool operator==(const SharedExpert&, const SharedExpert&) = default;
};

struct MoeConfig {
  std::string name = "custom";
  int ranks = 1;         // R: expert-parallel ranks
  int experts = 0;       // E: routed experts over all ranks
  int top_k = 0;         // k
  int hidden = 0;        // H
  int intermediate = 0;  // I
  Recipe recipe = Recipe::w4a8_mx;
  // SwiGLU clamp c (g' = min(g, c), u' = clamp(u, -c, c)); nullopt = no clamp.
  // 10 is the paper's evaluation setting (Table 3).
  std::optional<float> swiglu_clamp = 10.0f;
  Activation activation = Activation::swiglu;
  float alpha = 1.702f;  // gpt_oss: the sigmoid's slope
  GateUp gate_up = GateUp::halves;
  // Per-expert BF16 biases on both projections (gpt-oss): b1 per W1 row, b2 per output row.
  bool biases = false;
  std::optional<SharedExpert> shared_expert;
  int dispatch_sms = 6;      // S_dispatch requested for role 1 (eq. 5; GC_MOE_SM120_DISPATCH_SMS)
  int token_capacity = 256;  // Bcap: the most tokens per rank the workspace holds
  // Whether the workspace carries the batched route arrays (§4.5). Batched
  // returns need them (§4.4); without them the operator keeps per-slot route
  // words, which is the path the l = 6 rule of §4.4 exists for.
  bool batched_routes = true;

  int local_experts() const { return experts / ranks; }  // L = E / R
  // The experts the weight arrays hold: the L local routed ones, then the
  // fused shared expert (MXFP4 like them, the last).
  int weight_experts() const { return local_experts() + (shared_expert ? 1 : 0); }

  friend bool operator==(const MoeConfig&, const MoeConfig&) = default;
};

// The hidden sizes a config takes (Table 10 of the seed paper, appendix A): the planner sizes roles by the largest.
inline constexpr int k_min_hidden = 512, k_max_hidden = 8192;

// A field outside its allowed range. what() reads e.g.
// "hidden H = 520 is invalid: must be a multiple of 32 in [512, 8192]";
// field() is the JSON key ("hidden", "shared_expert.k_group", "batch", ...).
class ConfigError : public std::invalid_argument {
 public:
  ConfigError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// Every Table 10 range (and the fields moejit adds, and a name of 1 to 64
// printable ASCII characters). Throws ConfigError.
void validate(const MoeConfig& config);
bool valid_config_name(std::string_view name);
// A file's stem as a config name when it is a valid one, else "custom".
std::string default_config_name(const std::string& file_stem);
// 1 <= B <= token_capacity. Throws ConfigError (field "batch").
void validate_batch(const MoeConfig& config, int batch);

// Built-in models (seed Table 4) with ranks = 1. `shared_expert` fuses the
// model's one shared expert (K-group 128 for glm5.2, 32 for dsv4.1-flash).
// Throws std::invalid_argument naming the known models.
MoeConfig builtin_model(std::string_view name, bool shared_expert = false);
std::vector<std::string> builtin_model_names();

// JSON form: {"name", "ranks", "experts", "top_k", "hidden", "intermediate",
// "recipe", "swiglu_clamp" (number or null), "shared_expert" (null or
// {"k_group"}), "dispatch_sms", "token_capacity", "batched_routes"}.
// from_json is strict: an unknown key, a wrong type or a missing required key
// ("experts", "top_k", "hidden", "intermediate") is a ConfigError naming the
// field; optional keys keep MoeConfig's defaults. It does not range-check:
// call validate() (load_moe_config does).
void to_json(nlohmann::json& j, const MoeConfig& c);
void from_json(const nlohmann::json& j, MoeConfig& c);

// Reads a JSON config file (at most 1 MiB, nested at most 16 deep, no key
// twice), parses it strictly and validates it; without a "name" the config
// is named after the file's stem. Errors are ConfigError prefixed with the
// path (field() is still the bare key); unreadable or malformed JSON is a
// std::runtime_error naming the path.
MoeConfig load_moe_config(const std::string& path);
// The same for JSON text from outside (an engine's dict): at most 1 MiB,
// 16 levels, no repeated key, strict and validated. Throws ConfigError
// (field "config" for text that is not such JSON).
MoeConfig parse_moe_config(std::string_view text);

}  // namespace moejit::codegen
