#include "tools/batch_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "tools/cli_args.hpp"

namespace moejit::tools {
namespace {
long long parse_number(const std::string& flag, const std::string& item, const std::string& text) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw UsageError(
        fmt::format("--{}: '{}' is not a batch size or range (expected e.g. 8, 1,3,8 or 1-256)", flag, excerpt(item)));
  return v;
}

void check_range(const std::string& flag, long long v, int lo, int hi) {
  if (v < lo || v > hi)
    throw UsageError(fmt::format("--{}: {} is outside the allowed range [{}, {}]", flag, v, lo, hi));
}
}  // namespace

std::vector<int> parse_batch_list(const std::string& flag, const std::string& text, int lo, int hi) {
  std::vector<int> out;
  auto add = [&](int v) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t dash = item.find('-');
    if (dash == std::string::npos) {
      const long long v = parse_number(flag, item, item);
      check_range(flag, v, lo, hi);
      add(static_cast<int>(v));
      continue;
    }
    const long long a = parse_number(flag, item, item.substr(0, dash));
    const long long b = parse_number(flag, item, item.substr(dash + 1));
    check_range(flag, a, lo, hi);
    check_range(flag, b, lo, hi);
    if (a > b)
      throw UsageError(fmt::format("--{}: range '{}' is empty (its start exceeds its end)", flag, excerpt(item)));
    bool any = false;
    for (long long p = 1; p <= b; p *= 2)
      if (p >= a) add(static_cast<int>(p)), any = true;
    if (!any) throw UsageError(fmt::format("--{}: range '{}' holds no power of two", flag, excerpt(item)));
  }
  return out;
}

}  // namespace moejit::tools
