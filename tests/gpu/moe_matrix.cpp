// The GPU matrix's runner (moe_matrix.hpp).
#include "moe_matrix.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "gpu_test_util.hpp"

namespace moejit::gpu_test {

int run_matrix(const Shape& shape, const std::vector<int>& batches, const std::vector<oracle::RoutingKind>& routings,
               const Matrix& m) {
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ std::hash<std::string>{}(shape.name);
  const oracle::RandomWeights weights =
      oracle::random_weights(oracle::problem_of(shape.config), seed, m.scales, shape.config.biases);
  std::vector<std::unique_ptr<runtime::MoeLayer>> layers;
  std::vector<runtime::MoeLayer*> ptrs;
  for (codegen::ComputePath path : m.paths) {
    runtime::MoeLayerOptions options;
    options.codegen.path = path;
    options.codegen.input_bf16 = m.input_bf16;
    options.codegen.schedule = m.schedule;
    options.codegen.consumer_groups = m.consumer_groups;
    options.codegen.paired_rows = m.paired_rows;
    layers.push_back(std::make_unique<runtime::MoeLayer>(shape.config, weights.device(), options));
    ptrs.push_back(layers.back().get());
    if (m.paired_rows && path == codegen::ComputePath::fast)
      for (int b : batches) CHECK(layers.back()->plan(b).paired_rows == *m.paired_rows);
    CHECK(layers.back()->plan(1).subnormal_weight_scales == (m.subnormal_scales && path == codegen::ComputePath::fast));
  }
  int failures = 0;
  std::uint64_t case_seed = seed;
  for (int b : batches)
    for (oracle::RoutingKind routing : routings)
      for (oracle::MoeCheckResult r : oracle::check_forward(ptrs, weights, b, routing, ++case_seed, m.x)) {
        r.dense_bar = m.dense_bar;
        fmt::print("{:<16} {} {}\n", shape.name,
                   shape.config.recipe == codegen::Recipe::w4a16 ? "w4a16  "
                   : m.input_bf16                                ? "bf16-x "
                                                                 : "mxfp8-x",
                   r.summary());
        CHECK_MESSAGE(r.passed(), std::string(shape.name) << " " << r.summary());
        failures += !r.passed();
      }
  return failures;
}

std::vector<int> model_batches() {
  const std::vector<int> all = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  const char* env = std::getenv("MOEJIT_GPU_BATCHES");
  if (!env || !*env) return all;
  std::vector<int> picked;
  for (const char* p = env; *p;) {
    char* end = nullptr;
    const long b = std::strtol(p, &end, 10);
    if (end == p) break;
    if (std::find(all.begin(), all.end(), b) != all.end()) picked.push_back(static_cast<int>(b));
    p = *end == ',' ? end + 1 : end;
  }
  MESSAGE("MOEJIT_GPU_BATCHES=" << env << ": the model matrices run " << picked.size() << " of 9 batch sizes");
  REQUIRE_MESSAGE(!picked.empty(),
                  "MOEJIT_GPU_BATCHES=" << env << " names none of 1, 2, 4, ..., 256: nothing would run");
  return picked;
}
Matrix w4a16_matrix() {
  Matrix m;
  m.input_bf16 = true;
  m.paths = {codegen::ComputePath::exact};
  return m;
}

}  // namespace moejit::gpu_test
