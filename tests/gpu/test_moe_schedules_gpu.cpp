// The fused MoE layer on the GPU under the schedules a plan can be forced to:
// the fused shared expert over both shapes' matrices, the unit schedule at
// B = 1-4 on two and on three warpgroups, and GEMM1's short segments paired
// in 16-column token tiles; each against the CPU references as the model
// matrix (moe_matrix.hpp: fresh random inputs, outputs poisoned, every forward
// twice and bit for bit).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "moe_matrix.hpp"

using namespace moejit;
using gpu_test::k_routings;
using gpu_test::Matrix;
using gpu_test::model_batches;
using gpu_test::run_matrix;
using gpu_test::w4a16_matrix;
using oracle::RoutingKind;

// The shared expert (expert E of the weights, MXFP4, every token at weight 1) joins the compute role's items;
// finalize adds its row after the routed ones. w4a8-mx on both paths, and W4A16. One test case a model, so a
// sharded run deals them to different processes (each is the longest case of the matrix).
namespace {
int run_shared_expert_matrix(const char* model) {
  codegen::MoeConfig config = codegen::builtin_model(model, /*shared_expert=*/true);
  const std::string name = std::string(model) + "+shared";
  int failures = run_matrix({name.c_str(), config}, model_batches(), k_routings);
  config.recipe = codegen::Recipe::w4a16;
  return failures + run_matrix({name.c_str(), config}, model_batches(), k_routings, w4a16_matrix());
}
}  // namespace

TEST_CASE("GLM5.2 with the fused shared expert, both recipes") {
  CHECK(run_shared_expert_matrix("glm5.2") == 0);
}

TEST_CASE("DSV4.1-Flash with the fused shared expert, both recipes") {
  CHECK(run_shared_expert_matrix("dsv4.1-flash") == 0);
}

namespace {
// gpt-oss's block (its activation, interleaved gate/up rows, biases) on a small model whose H and I pad inside.
codegen::MoeConfig gpt_oss_like_edge() {
  codegen::MoeConfig edge = gpu_test::small_config("custom", 16, 4, 544, 288);  // padded to 768 and 384
  edge.activation = codegen::Activation::gpt_oss;
  edge.alpha = 1.702f;
  edge.swiglu_clamp = 7.0f;
  edge.gate_up = codegen::GateUp::interleaved;
  edge.biases = true;
  return edge;
}

int run_unit_matrix(int consumer_groups) {
  Matrix m;
  m.paths = {codegen::ComputePath::fast};
  m.schedule = codegen::Schedule::units;
  m.consumer_groups = consumer_groups;
  const std::vector<int> batches = {1, 2, 3, 4};
  int failures = 0;
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    failures += run_matrix({model, codegen::builtin_model(model)}, batches, k_routings, m);
    const std::string shared = std::string(model) + "+shared";
    failures += run_matrix({shared.c_str(), codegen::builtin_model(model, /*shared_expert=*/true)}, {1, 4},
                           {RoutingKind::uniform, RoutingKind::one_expert}, m);
  }
  failures += run_matrix({"gpt-oss-120b", codegen::builtin_model("gpt-oss-120b")}, {1, 2, 4}, k_routings, m);
  const codegen::MoeConfig edge = gpt_oss_like_edge();
  failures += run_matrix({"gpt-oss-like", edge}, {1, 3, 4}, k_routings, m);
  Matrix bf16_in = m;
  bf16_in.input_bf16 = true;
  failures += run_matrix({"glm5.2", codegen::builtin_model("glm5.2")}, {1, 4}, {RoutingKind::uniform}, bf16_in);
  return failures;
}
}  // namespace

// Forced at every B it fits (contract::kUnitTokens), whatever the planner picks: whole (expert, K128 block of I)
// units, finalize adding each route's I/128 FP32 partial rows. The fast path only.
TEST_CASE(
    "the unit schedule at B = 1-4 on two warpgroups: both shapes, the fused shared expert, gpt-oss's block, "
    "padding") {
  CHECK(run_unit_matrix(2) == 0);
}
TEST_CASE("the unit schedule at B = 1-4 on three warpgroups (step owners): the same cases") {
  CHECK(run_unit_matrix(3) == 0);
}

// GEMM1's segments of at most 4 rows paired in the 16-column token tiles planned above B = 8 (paired_rows on: the
// planner's own pairing up to B = 64, and beyond),
// the wider ones on the 16- and 32-column split in the same kernel: uniform routing gives mostly short segments,
// zipf and one-expert ones the wide ones. gpt-oss's block carries biases (the expert id is read again after the
// K-loops there). The fast path only.
TEST_CASE(
    "GEMM1's short segments paired in 16-column token tiles (paired_rows on): both shapes, the fused shared "
    "expert, gpt-oss's block, padding") {
  Matrix m;
  m.paths = {codegen::ComputePath::fast};
  m.paired_rows = true;
  int failures = 0;
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    failures += run_matrix({model, codegen::builtin_model(model)}, {16, 128}, k_routings, m);
    const std::string shared = std::string(model) + "+shared";
    failures += run_matrix({shared.c_str(), codegen::builtin_model(model, /*shared_expert=*/true)}, {16},
                           {RoutingKind::uniform, RoutingKind::one_expert}, m);
  }
  const codegen::MoeConfig edge = gpt_oss_like_edge();
  failures += run_matrix({"gpt-oss-like", edge}, {16, 40}, k_routings, m);
  CHECK(failures == 0);
}
