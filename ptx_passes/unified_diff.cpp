#include "ptx_passes/unified_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace moejit::ptx {
namespace {
// Lines keep their '\n', so a last line without one differs from the same
// line with one, as in `diff`.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

enum class Op { keep, remove, add };
struct Edit {
  Op op;
  size_t a, b;  // line indices in before/after (the one that applies to the op)
};

constexpr long k_max_edit_distance = 4096;

// Myers' O(ND) shortest edit script between a[lo_a, hi_a) and b[lo_b, hi_b).
std::vector<Edit> myers(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, size_t lo_a,
                        size_t hi_a, size_t lo_b, size_t hi_b) {
  const long n = static_cast<long>(hi_a - lo_a), m = static_cast<long>(hi_b - lo_b);
  auto eq = [&](long x, long y) { return a[lo_a + x] == b[lo_b + y]; };
  std::vector<std::vector<long>> trace;  // trace[d][k + d]: furthest x on diagonal k after d edits
  long found = -1;
  for (long d = 0; d <= std::min(n + m, k_max_edit_distance) && found < 0; ++d) {
    std::vector<long> v(static_cast<size_t>(2 * d + 1));
    const std::vector<long>* prev = d ? &trace.back() : nullptr;
    auto at = [&](long k) { return (*prev)[static_cast<size_t>(k + d - 1)]; };
    for (long k = -d; k <= d; k += 2) {
      long x = d == 0 ? 0 : (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      long y = x - k;
      while (x < n && y < m && eq(x, y)) ++x, ++y;
      v[static_cast<size_t>(k + d)] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.push_back(std::move(v));
  }
  std::vector<Edit> out;
  if (found < 0) {  // too different for a minimal script: replace the middle
    for (long i = 0; i < n; ++i) out.push_back({Op::remove, lo_a + i, lo_b});
    for (long j = 0; j < m; ++j) out.push_back({Op::add, hi_a, lo_b + j});
    return out;
  }
  long x = n, y = m;
  for (long d = found; d > 0; --d) {
    const std::vector<long>& prev = trace[static_cast<size_t>(d - 1)];
    auto at = [&](long k) { return prev[static_cast<size_t>(k + d - 1)]; };
    const long k = x - y;
    const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
    const long pk = down ? k + 1 : k - 1;
    const long px = at(pk), py = px - pk;
    while (x > px && y > py) --x, --y, out.push_back({Op::keep, lo_a + x, lo_b + y});
    if (down)
      out.push_back({Op::add, lo_a + px, lo_b + py});
    else
      out.push_back({Op::remove, lo_a + px, lo_b + py});
    x = px, y = py;
  }
  while (x > 0 && y > 0) --x, --y, out.push_back({Op::keep, lo_a + x, lo_b + y});
  std::reverse(out.begin(), out.end());
  return out;
}

std::string range(size_t start, size_t len) {
  if (len == 1) return fmt::format("{}", start + 1);
  return fmt::format("{},{}", len == 0 ? start : start + 1, len);
}

void put_line(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}
}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, std::string_view label_before,
                         std::string_view label_after, int context) {
  if (before == after) return {};
  const std::vector<std::string_view> a = lines_of(before), b = lines_of(after);
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;

  std::vector<Edit> edits;
  for (size_t i = 0; i < prefix; ++i) edits.push_back({Op::keep, i, i});
  for (const Edit& e : myers(a, b, prefix, a.size() - suffix, prefix, b.size() - suffix)) edits.push_back(e);
  for (size_t i = suffix; i > 0; --i) edits.push_back({Op::keep, a.size() - i, b.size() - i});

  std::string out = fmt::format("--- {}\n+++ {}\n", label_before, label_after);
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  for (size_t i = 0; i < edits.size();) {
    if (edits[i].op == Op::keep) {
      ++i;
      continue;
    }
    // A hunk: from `ctx` lines before this change to `ctx` lines after the
    // last change that is within 2*ctx unchanged lines of the previous one.
    const size_t first = i >= ctx ? i - ctx : 0;
    size_t last = i;  // one past the last change
    for (size_t j = i; j < edits.size(); ++j) {
      if (edits[j].op != Op::keep) {
        last = j + 1;
      } else if (j - last >= 2 * ctx) {
        break;
      }
    }
    const size_t end = std::min(edits.size(), last + ctx);
    size_t a_start = 0, b_start = 0, a_len = 0, b_len = 0;
    bool a_set = false, b_set = false;
    for (size_t j = first; j < end; ++j) {
      const Edit& e = edits[j];
      if (e.op != Op::add) a_len++, a_start = a_set ? a_start : e.a, a_set = true;
      if (e.op != Op::remove) b_len++, b_start = b_set ? b_start : e.b, b_set = true;
    }
    if (!a_set) a_start = edits[first].a;
    if (!b_set) b_start = edits[first].b;
    out += fmt::format("@@ -{} +{} @@\n", range(a_start, a_len), range(b_start, b_len));
    for (size_t j = first; j < end; ++j) {
      const Edit& e = edits[j];
      if (e.op == Op::keep) put_line(out, ' ', a[e.a]);
      if (e.op == Op::remove) put_line(out, '-', a[e.a]);
      if (e.op == Op::add) put_line(out, '+', b[e.b]);
    }
    i = end;
  }
  return out;
}

}  // namespace moejit::ptx
