#include "ptx_passes/ptx_isa.hpp"

#include <fmt/format.h>

#include <charconv>

namespace moejit::ptx {

std::optional<PtxVersion> PtxVersion::parse(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
  PtxVersion v;
  auto read = [](std::string_view s, int& out) {
    if (s.empty() || s[0] < '0' || s[0] > '9') return false;  // from_chars takes a sign: "9.-1" read as 9.(-1)
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && s.size() <= 4;
  };
  if (!read(text.substr(0, dot), v.major) || !read(text.substr(dot + 1), v.minor)) return std::nullopt;
  return v;
}

std::string PtxVersion::str() const {
  return fmt::format("{}.{}", major, minor);
}

std::optional<PtxVersion> ptx_isa_for_cuda(int cuda_major, int cuda_minor) {
  // From the release notes of the PTX ISA manual. 12.6 shipped no new ISA and
  // 12.7 was never released, so the mapping is not arithmetic. CUDA 13.x ships
  // PTX ISA 9.x (13.1: 9.1 ... 13.5: 9.5); an nvJitLink newer than this table
  // leaves the version pass without a cap (jit::default_version_policy, which a
  // CPU test pins for the toolkit CI builds with).
  struct Row {
    int cuda_major, cuda_minor;
    PtxVersion ptx;
  };
  static constexpr Row k_rows[] = {
      {11, 0, {7, 0}}, {11, 1, {7, 1}}, {11, 2, {7, 2}}, {11, 3, {7, 3}}, {11, 4, {7, 4}}, {11, 5, {7, 5}},
      {11, 6, {7, 6}}, {11, 7, {7, 7}}, {11, 8, {7, 8}}, {12, 0, {8, 0}}, {12, 1, {8, 1}}, {12, 2, {8, 2}},
      {12, 3, {8, 3}}, {12, 4, {8, 4}}, {12, 5, {8, 5}}, {12, 6, {8, 5}}, {12, 8, {8, 7}}, {12, 9, {8, 8}},
      {13, 0, {9, 0}}, {13, 1, {9, 1}}, {13, 2, {9, 2}}, {13, 3, {9, 3}}, {13, 4, {9, 4}}, {13, 5, {9, 5}},
  };
  for (const Row& r : k_rows)
    if (r.cuda_major == cuda_major && r.cuda_minor == cuda_minor) return r.ptx;
  return std::nullopt;
}

}  // namespace moejit::ptx
