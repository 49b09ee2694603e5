// MoeConfig <-> JSON, strict: a config file is user input, so a typo in a key
// or a quoted number must fail with the field's name, never fall back to a
// default. Errors quote a bad value as a short, escaped excerpt.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "cache/bounded_json.hpp"
#include "cache/printable.hpp"
#include "codegen/moe_config.hpp"

namespace moejit::codegen {
namespace {
// A configuration is a few hundred bytes. The bound keeps `--config
// /dev/zero` from reading until memory runs out.
constexpr std::size_t k_max_config_bytes = 1 << 20;

constexpr const char* k_known_keys[] = {
    "name",       "ranks", "experts", "top_k",  "hidden",        "intermediate", "recipe",         "swiglu_clamp",
    "activation", "alpha", "gate_up", "biases", "shared_expert", "dispatch_sms", "token_capacity", "batched_routes"};

[[noreturn]] void type_error(const std::string& field, const char* expected, const nlohmann::json& v) {
  throw ConfigError(field, fmt::format("{} must be {}, got {}", field, expected, cache::json_excerpt(v)));
}

int get_int(const nlohmann::json& obj, const std::string& key, const std::string& field) {
  const nlohmann::json& v = obj.at(key);
  if (!v.is_number_integer()) type_error(field, "an integer", v);
  // Read as unsigned when it is one: 2^63 and above would wrap negative as a long long.
  const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<int>::max())
                                           : v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                                 v.get<std::int64_t>() <= std::numeric_limits<int>::max();
  if (!fits)
    throw ConfigError(field, fmt::format("{} = {} is invalid: does not fit a 32-bit integer", field, v.dump()));
  return static_cast<int>(v.get<std::int64_t>());
}

// A string field naming one of an enum's values; `parse` maps a name to the value.
template <class Enum, std::size_t N, class Parse>
void read_name(const nlohmann::json& j, const char* key, Enum& out, Parse parse, const Enum (&all)[N],
               std::string_view (*name)(Enum)) {
  if (!j.contains(key)) return;
  const nlohmann::json& v = j.at(key);
  if (!v.is_string()) type_error(key, "a string", v);
  if (auto parsed = parse(v.get<std::string>())) {
    out = *parsed;
    return;
  }
  throw ConfigError(
      key, fmt::format("{} = {} is invalid: must be {}", key, cache::json_excerpt(v), names_of(all, name, "\"")));
}

void read_int(const nlohmann::json& j, const char* key, int& out, bool required) {
  if (j.contains(key))
    out = get_int(j, key, key);
  else if (required)
    throw ConfigError(key, fmt::format("{} is missing (a required field)", key));
}
}  // namespace

void to_json(nlohmann::json& j, const MoeConfig& c) {
  j = {{"name", c.name},
       {"ranks", c.ranks},
       {"experts", c.experts},
       {"top_k", c.top_k},
       {"hidden", c.hidden},
       {"intermediate", c.intermediate},
       {"recipe", recipe_name(c.recipe)},
       {"swiglu_clamp", c.swiglu_clamp ? nlohmann::json(*c.swiglu_clamp) : nlohmann::json(nullptr)},
       {"activation", activation_name(c.activation)},
       {"alpha", c.alpha},
       {"gate_up", gate_up_name(c.gate_up)},
       {"biases", c.biases},
       {"shared_expert",
        c.shared_expert ? nlohmann::json{{"k_group", c.shared_expert->k_group}} : nlohmann::json(nullptr)},
       {"dispatch_sms", c.dispatch_sms},
       {"token_capacity", c.token_capacity},
       {"batched_routes", c.batched_routes}};
}

void from_json(const nlohmann::json& j, MoeConfig& c) {
  if (!j.is_object()) type_error("config", "a JSON object", j);
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : k_known_keys) known = known || key == k;
    if (!known)
      throw ConfigError(key, fmt::format("unknown field '{}' (known fields: {})", cache::printable(key),
                                         fmt::join(k_known_keys, ", ")));
  }
  MoeConfig out;
  if (j.contains("name")) {
    if (!j.at("name").is_string()) type_error("name", "a string", j.at("name"));
    out.name = j.at("name").get<std::string>();
  }
  read_int(j, "ranks", out.ranks, false);
  read_int(j, "experts", out.experts, true);
  read_int(j, "top_k", out.top_k, true);
  read_int(j, "hidden", out.hidden, true);
  read_int(j, "intermediate", out.intermediate, true);
  read_name(j, "recipe", out.recipe, parse_recipe, k_recipes, recipe_name);
  read_name(j, "activation", out.activation, parse_activation, k_activations, activation_name);
  read_name(j, "gate_up", out.gate_up, parse_gate_up, k_gate_ups, gate_up_name);
  if (j.contains("alpha")) {
    if (!j.at("alpha").is_number()) type_error("alpha", "a number", j.at("alpha"));
    out.alpha = j.at("alpha").get<float>();
  }
  if (j.contains("swiglu_clamp")) {
    const nlohmann::json& v = j.at("swiglu_clamp");
    if (v.is_null())
      out.swiglu_clamp.reset();
    else if (v.is_number())
      out.swiglu_clamp = v.get<float>();
    else
      type_error("swiglu_clamp", "a number or null", v);
  }
  if (j.contains("shared_expert")) {
    const nlohmann::json& v = j.at("shared_expert");
    if (v.is_object()) {
      for (const auto& [key, value] : v.items())
        if (key != "k_group")
          throw ConfigError(
              "shared_expert." + key,
              fmt::format("unknown field 'shared_expert.{}' (known fields: k_group)", cache::printable(key)));
      if (!v.contains("k_group"))
        throw ConfigError("shared_expert.k_group", "shared_expert.k_group is missing (32 or 128)");
      out.shared_expert = SharedExpert{get_int(v, "k_group", "shared_expert.k_group")};
    } else if (!v.is_null()) {
      type_error("shared_expert", "an object {\"k_group\": 32|128} or null", v);
    }
  }
  read_int(j, "dispatch_sms", out.dispatch_sms, false);
  read_int(j, "token_capacity", out.token_capacity, false);
  if (j.contains("biases")) {
    if (!j.at("biases").is_boolean()) type_error("biases", "true or false", j.at("biases"));
    out.biases = j.at("biases").get<bool>();
  }
  if (j.contains("batched_routes")) {
    if (!j.at("batched_routes").is_boolean()) type_error("batched_routes", "true or false", j.at("batched_routes"));
    out.batched_routes = j.at("batched_routes").get<bool>();
  }
  c = std::move(out);
}

namespace {
// At most k_max_config_bytes of `path` (a pipe such as `<(...)` is fine: it ends).
std::string read_config_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot read config file '{}': {}", path, std::strerror(errno)));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot read config file '{}': {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > k_max_config_bytes) {
      ::close(fd);
      throw std::runtime_error(
          fmt::format("{}: larger than {} bytes; a model configuration is a few hundred", path, k_max_config_bytes));
    }
  }
  ::close(fd);
  return text;
}
}  // namespace

MoeConfig parse_moe_config(std::string_view text) {
  nlohmann::json j;
  try {
    j = cache::parse_json(text, {k_max_config_bytes, cache::k_max_json_depth});
  } catch (const cache::JsonInputError& e) {
    throw ConfigError("config", fmt::format("the config is not valid: {}", e.what()));
  }
  MoeConfig c = j.get<MoeConfig>();
  validate(c);
  return c;
}

MoeConfig load_moe_config(const std::string& path) {
  const std::string text = read_config_file(path);
  nlohmann::json j;
  try {
    j = cache::parse_json(text, {k_max_config_bytes, cache::k_max_json_depth});
  } catch (const cache::JsonInputError& e) {
    // Every JSON error (1e400 overflowing a double too) names the file.
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
  try {
    MoeConfig c = j.get<MoeConfig>();
    if (!j.contains("name")) c.name = default_config_name(std::filesystem::path(path).stem().string());
    validate(c);
    return c;
  } catch (const ConfigError& e) {
    throw ConfigError(e.field(), fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace moejit::codegen
