#pragma once
// What the plan tests read from the kernels a plan emits.
#include <cstddef>
#include <string>

#include "codegen/moe_kernels.hpp"

namespace moejit::testing {
// A kernel spec's template constant by name (-1: absent).
inline long long constant_of(const codegen::KernelSpec& spec, const std::string& name) {
  for (const auto& [n, v] : spec.constants)
    if (n == name) return v;
  return -1;
}
// How many times `needle` occurs in `text`.
inline int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace moejit::testing
