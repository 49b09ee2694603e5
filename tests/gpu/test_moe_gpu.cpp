// The fused MoE layer on the GPU against the CPU references: both model
// shapes x B = 1..256 x four routings, the Table 10 edges, and BF16 input.
// Fresh random inputs every run (the seed is printed); outputs poisoned
// before each run; every forward runs twice and must repeat bit for bit.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include "gpu_test_util.hpp"
#include "runtime/moe_check.hpp"
#include "runtime/weight_pack.hpp"

using namespace moejit;
using runtime::RoutingKind;

namespace {
struct Shape {
  const char* name;
  codegen::MoeConfig config;
};

int run_matrix(const Shape& shape, const std::vector<int>& batches, bool input_bf16,
               const std::vector<RoutingKind>& routings) {
  runtime::ScopedContext ctx(0);
  const std::uint64_t seed = gpu_test::seed() ^ std::hash<std::string>{}(shape.name);
  const runtime::RandomWeights weights = runtime::random_weights(runtime::problem_of(shape.config), seed);
  runtime::MoeLayerOptions options;
  options.input_bf16 = input_bf16;
  runtime::MoeLayer layer(shape.config, weights.device(), options);
  int failures = 0;
  std::uint64_t case_seed = seed;
  for (int b : batches)
    for (RoutingKind routing : routings) {
      const runtime::MoeCheckResult r = runtime::check_forward(layer, weights, b, routing, ++case_seed);
      fmt::print("{:<14} {} {}\n", shape.name, input_bf16 ? "bf16-x" : "mxfp8-x", r.summary());
      CHECK_MESSAGE(r.passed(), shape.name << " " << r.summary());
      failures += !r.passed();
    }
  return failures;
}

// MOEJIT_GPU_BATCHES (e.g. "128,256") runs the model matrices on those batch
// sizes only, so the whole matrix can be split across runs; the CPU
// references dominate at large B.
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
  return picked;
}
const std::vector<RoutingKind> k_routings(std::begin(runtime::k_all_routings), std::end(runtime::k_all_routings));
}  // namespace

TEST_CASE("seed") {
  MESSAGE("MOEJIT_TEST_SEED=" << gpu_test::seed());
}

TEST_CASE("weight transform matches its CPU twin") {
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 512, 256);
  const reference::MoeProblem p = runtime::problem_of(config);
  const runtime::RandomWeights w = runtime::random_weights(p, gpu_test::seed());
  runtime::MoeLayer layer(config, w.device());
  const auto packed = layer.packed_weights();
  struct Proj {
    const std::vector<std::uint8_t>& payload;
    const std::vector<std::uint8_t>& scales;
    int rows, k;
    bool interleave;
    CUdeviceptr d_payload, d_scales;
  };
  for (const Proj& pr : {Proj{w.host.w1, w.host.s1, 2 * p.intermediate, p.hidden, true, packed.w1, packed.s1},
                         Proj{w.host.w2, w.host.s2, p.hidden, p.intermediate, false, packed.w2, packed.s2}}) {
    const runtime::PackedProjection want =
        runtime::pack_projection(pr.payload, pr.scales, p.experts, pr.rows, pr.k, pr.interleave);
    std::vector<std::uint32_t> payload(want.payload.size()), scales(want.scales.size());
    MOEJIT_CU(cuMemcpyDtoH, payload.data(), pr.d_payload, payload.size() * 4);
    MOEJIT_CU(cuMemcpyDtoH, scales.data(), pr.d_scales, scales.size() * 4);
    CHECK(payload == want.payload);
    CHECK(scales == want.scales);
  }
}

TEST_CASE("Table 10 edges") {
  int failures = 0;
  failures +=
      run_matrix({"edge-H512-k1", gpu_test::small_config("custom", 8, 1, 512, 256)}, {1, 7, 256}, false, k_routings);
  failures +=
      run_matrix({"edge-H512-k32", gpu_test::small_config("custom", 32, 32, 512, 256)}, {1, 5, 64}, false, k_routings);
  failures += run_matrix({"edge-H8192-I4096", gpu_test::small_config("custom", 4, 4, 8192, 4096)}, {1, 3, 32}, false,
                         k_routings);
  CHECK(failures == 0);
}

TEST_CASE("BF16 input is quantized by the dispatch role exactly as the CPU twin") {
  CHECK(run_matrix({"glm5.2", codegen::builtin_model("glm5.2")}, {1, 8, 64}, true, {RoutingKind::uniform}) == 0);
}

TEST_CASE("GLM5.2 matrix") {
  CHECK(run_matrix({"glm5.2", codegen::builtin_model("glm5.2")}, model_batches(), false, k_routings) == 0);
}

TEST_CASE("DSV4.1-Flash matrix") {
  CHECK(run_matrix({"dsv4.1-flash", codegen::builtin_model("dsv4.1-flash")}, model_batches(), false, k_routings) == 0);
}
