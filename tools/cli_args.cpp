#include "tools/cli_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "cache/printable.hpp"

namespace moejit::tools {

Args::Args(const std::vector<OptionSpec>& options, int argc, char** argv, int first) {
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const OptionSpec& o : options)
      if (o.name == name) return &o;
    return nullptr;
  };
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" && find("help")) arg = "--help";  // the short form users try first
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* spec = find(name);
    if (!spec) throw UsageError(fmt::format("unknown option '--{}' (see --help)", excerpt(name)));
    if (spec->takes_value) {
      if (!value) {
        if (i + 1 >= argc) throw UsageError(fmt::format("option '--{}' needs a {}", name, spec->value_name));
        value = argv[++i];
      }
    } else if (value) {
      throw UsageError(fmt::format("option '--{}' takes no value", name));
    }
    // Taking the last of two silently would hide a typo in a long command line.
    if (!spec->repeatable && values_.count(name))
      throw UsageError(fmt::format("option '--{}' given twice ('{}' and '{}'); give it once", name,
                                   excerpt(values_[name]), excerpt(value.value_or(""))));
    values_[name] = value.value_or("");
    all_values_[name].push_back(value.value_or(""));
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

long long Args::get_int(const std::string& name, long long fallback, long long lo, long long hi) const {
  auto text = get(name);
  if (!text) return fallback;
  long long v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec == std::errc::result_out_of_range && end == text->data() + text->size())
    throw UsageError(fmt::format("--{}: {} is outside the allowed range [{}, {}]", name, excerpt(*text), lo, hi));
  if (ec != std::errc() || end != text->data() + text->size())
    throw UsageError(fmt::format("--{}: '{}' is not an integer", name, excerpt(*text)));
  if (v < lo || v > hi)
    throw UsageError(fmt::format("--{}: {} is outside the allowed range [{}, {}]", name, v, lo, hi));
  return v;
}

void Args::no_positional() const {
  if (!positional_.empty())
    throw UsageError(fmt::format("unexpected argument '{}' (see --help)", excerpt(positional_.front())));
}

std::string excerpt(std::string_view value) {
  return cache::printable(value, 64);
}

std::string format_options(const std::vector<OptionSpec>& options) {
  size_t width = 0;
  auto head = [](const OptionSpec& o) {
    return "--" + o.name + (o.takes_value ? " " + o.value_name : "") + (o.repeatable ? " ..." : "");
  };
  for (const OptionSpec& o : options) width = std::max(width, head(o).size());
  std::string out;
  for (const OptionSpec& o : options) out += fmt::format("  {:<{}}  {}\n", head(o), width, o.help);
  return out;
}

}  // namespace moejit::tools
