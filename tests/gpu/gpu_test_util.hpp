#pragma once
// What the GPU tests share: the run's seed and small layer configurations.
#include <cstdint>
#include <cstdlib>
#include <random>

#include "codegen/moe_config.hpp"

namespace moejit::gpu_test {

// One seed per process, printed by the tests; MOEJIT_TEST_SEED repeats a run.
inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("MOEJIT_TEST_SEED");
    return env ? std::strtoull(env, nullptr, 10) : std::uint64_t{std::random_device{}()};
  }();
  return s;
}

inline codegen::MoeConfig small_config(const char* name, int experts, int top_k, int hidden, int intermediate) {
  codegen::MoeConfig c;
  c.name = name;
  c.experts = experts;
  c.top_k = top_k;
  c.hidden = hidden;
  c.intermediate = intermediate;
  return c;
}

}  // namespace moejit::gpu_test
