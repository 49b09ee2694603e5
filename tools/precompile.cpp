#include "tools/precompile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "tools/cli_args.hpp"

namespace moejit::tools {
namespace {
constexpr int k_max_batch = 65536;

// A size (or a range's end) above k_max_batch is refused here, before anything is expanded: at INT_MAX the
// expansion's counter overflowed and never stopped.
int parse_positive(std::string_view text, std::string_view whole) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw UsageError(fmt::format("--batches: '{}' in '{}' is not a positive integer", excerpt(text), excerpt(whole)));
  if (v > k_max_batch)
    throw UsageError(fmt::format("--batches: {} is outside the allowed range [1, {}]", v, k_max_batch));
  return v;
}

}  // namespace

std::vector<int> parse_batches(std::string_view text) {
  // Ranges are merged before they are expanded: a long argument of repeated ranges ("1-65536,1-65536,...")
  // expanded to gigabytes before the duplicates went.
  std::vector<std::pair<int, int>> ranges;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    if (const size_t dash = part.find('-'); dash != std::string_view::npos) {
      const int lo = parse_positive(part.substr(0, dash), text), hi = parse_positive(part.substr(dash + 1), text);
      if (lo > hi) throw UsageError(fmt::format("--batches: range '{}' is empty", excerpt(part)));
      ranges.emplace_back(lo, hi);
    } else {
      const int b = parse_positive(part, text);
      ranges.emplace_back(b, b);
    }
    pos = comma + 1;
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<int> out;
  for (auto [lo, hi] : ranges)
    for (int b = std::max(lo, out.empty() ? lo : out.back() + 1); b <= hi; ++b) out.push_back(b);
  return out;
}

std::vector<codegen::Target> parse_targets(std::string_view text) {
  std::vector<codegen::Target> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view name = text.substr(pos, comma - pos);
    auto t = codegen::parse_target(name);
    if (!t) throw UsageError(fmt::format("--targets: '{}' is not one of {}", excerpt(name), codegen::target_names()));
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
    pos = comma + 1;
  }
  return out;
}

}  // namespace moejit::tools
