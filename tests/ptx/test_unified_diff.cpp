// The unified diff that `moejit inspect` shows per pass.
#include <doctest/doctest.h>

#include <random>

#include "ptx_passes/unified_diff.hpp"

using moejit::ptx::unified_diff;

namespace {
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// Applies a unified diff to `before` the way `patch` would, checking every
// context and removed line against the text.
std::string apply(const std::string& before, const std::string& diff) {
  const std::vector<std::string> a = lines(before), d = lines(diff);
  std::string out;
  size_t next = 0;  // next line of `a` not yet copied
  for (size_t i = 2; i < d.size();) {
    REQUIRE(d[i].rfind("@@ -", 0) == 0);
    size_t start = std::stoul(d[i].substr(4));
    const size_t comma = d[i].find(',');
    const size_t space = d[i].find(' ', 4);
    const bool empty = comma != std::string::npos && comma < space && std::stoul(d[i].substr(comma + 1)) == 0;
    if (!empty) --start;  // 1-based, except for an empty range
    REQUIRE(start >= next);
    for (; next < start; ++next) out += a[next];
    for (++i; i < d.size() && d[i].rfind("@@", 0) != 0; ++i) {
      std::string body = d[i].substr(1);
      if (i + 1 < d.size() && d[i + 1] == "\\ No newline at end of file\n") body.pop_back();
      if (d[i][0] == '\\') continue;
      if (d[i][0] == '+') {
        out += body;
        continue;
      }
      REQUIRE(next < a.size());
      CHECK(a[next] == body);
      if (d[i][0] == ' ') out += body;
      ++next;
    }
  }
  for (; next < a.size(); ++next) out += a[next];
  return out;
}

size_t lcs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}
}  // namespace

TEST_CASE("unified diff: equal texts have no diff; one changed line has one hunk with context") {
  CHECK(unified_diff("a\nb\n", "a\nb\n", "x", "y").empty());
  const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  CHECK(unified_diff(before, after, "before", "after") ==
        "--- before\n+++ after\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST_CASE("unified diff: insertions at the edges, a missing final newline, separate and merged hunks") {
  CHECK(unified_diff("b\n", "a\nb\n", "x", "y", 0) == "--- x\n+++ y\n@@ -0,0 +1 @@\n+a\n");
  CHECK(unified_diff("a\n", "a\nb\n", "x", "y", 0) == "--- x\n+++ y\n@@ -1,0 +2 @@\n+b\n");
  CHECK(unified_diff("a\n", "a", "x", "y", 0) == "--- x\n+++ y\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
  std::string a, far, near;
  for (int i = 0; i < 20; ++i) a += std::to_string(i) + "\n";
  far = a, near = a;
  far.replace(far.find("2\n"), 2, "X\n");
  far.replace(far.find("17\n"), 3, "Y\n");
  near.replace(near.find("2\n"), 2, "X\n");
  near.replace(near.find("9\n"), 2, "Y\n");  // 6 unchanged lines between: one hunk
  CHECK(unified_diff(a, far, "x", "y").find("@@", 30) != std::string::npos);
  const std::string merged = unified_diff(a, near, "x", "y");
  CHECK(merged.find("@@ -1,13 +1,13 @@") != std::string::npos);
  CHECK(merged.find("@@", merged.find("@@") + 2 + 20) == std::string::npos);
}

TEST_CASE("unified diff: random edits give a minimal diff that patches before into after") {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    std::vector<std::string> a;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) a.push_back(std::string(1, char('a' + rng() % 4)) + "\n");
    std::vector<std::string> b = a;
    for (int e = static_cast<int>(rng() % 6); e > 0; --e) {
      const size_t at = b.empty() ? 0 : rng() % (b.size() + 1);
      if (rng() % 2 && at < b.size())
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
      else
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), std::string(1, char('a' + rng() % 5)) + "\n");
    }
    std::string before, after;
    for (const auto& l : a) before += l;
    for (const auto& l : b) after += l;
    if (rng() % 5 == 0 && !after.empty()) after.pop_back();  // sometimes no final newline
    const std::string diff = unified_diff(before, after, "x", "y", static_cast<int>(rng() % 4));
    CHECK(apply(before, diff) == after);
    size_t changed = 0;
    for (const std::string& l : lines(diff))
      if ((l[0] == '+' || l[0] == '-') && l.rfind("+++", 0) != 0 && l.rfind("---", 0) != 0) ++changed;
    const auto la = lines(before), lb = lines(after);
    CHECK(changed == la.size() + lb.size() - 2 * lcs(la, lb));
  }
}
