// The fused MoE layer on the GPU against the CPU references, on both compute
// paths: the built-in models x B = 1..256 x four routings (gpt-oss with its
// biases, and under W4A16), the Table 10 edges, H and I that need padding,
// BF16 input, weight scale codes over the whole UE8M0 range and E4M3
// subnormal activations, and the refusals of a layer's bad weights. Fresh
// random inputs every run (the seed is printed); outputs poisoned before each
// run; every forward runs twice and must repeat bit for bit. Each case's
// inputs go through a layer of each path, so the CPU references are computed
// once (moe_matrix.hpp). The fused shared expert and the forced schedules:
// test_moe_schedules_gpu.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "moe_matrix.hpp"
#include "oracle/moe_check.hpp"
#include "runtime/weight_packing.hpp"

using namespace moejit;
using gpu_test::k_routings;
using gpu_test::Matrix;
using gpu_test::model_batches;
using gpu_test::run_matrix;
using gpu_test::w4a16_matrix;
using oracle::RoutingKind;

TEST_CASE("seed") {
  MESSAGE("MOEJIT_TEST_SEED=" << gpu_test::seed());
}

TEST_CASE("weight transform matches its CPU twin, on both paths") {
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 512, 256);
  const reference::MoeProblem p = oracle::problem_of(config);
  const oracle::RandomWeights w = oracle::random_weights(p, gpu_test::seed());
  for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact}) {
    CAPTURE(codegen::path_name(path));
    runtime::MoeLayerOptions options;
    options.codegen.path = path;
    runtime::MoeLayer layer(config, w.device(), options);
    const auto packed = layer.packed_weights();
    struct Proj {
      const std::vector<std::uint8_t>& payload;
      const std::vector<std::uint8_t>& scales;
      codegen::Projection which;
      CUdeviceptr device;
    };
    for (const Proj& pr : {Proj{w.host.w1, w.host.s1, codegen::Projection::w1, packed.w1},
                           Proj{w.host.w2, w.host.s2, codegen::Projection::w2, packed.w2}}) {
      const std::vector<std::uint8_t> want = runtime::pack_projection(
          pr.payload, pr.scales, p.experts, codegen::projection_shape(config, pr.which), layer.atom().weight_layout);
      std::vector<std::uint8_t> got(want.size());
      MOEJIT_CU(cuMemcpyDtoH, got.data(), pr.device, got.size());
      CHECK(got == want);
    }
  }
}

TEST_CASE("weight scale codes the exact path cannot apply are refused when the layer is built, naming the code") {
  runtime::ScopedContext ctx(0);
  const codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 512, 256);
  oracle::WeightScales scales;
  scales.w2_lo = scales.w2_hi = 200;
  const oracle::RandomWeights w = oracle::random_weights(oracle::problem_of(config), gpu_test::seed(), scales);
  runtime::MoeLayerOptions exact;
  exact.codegen.path = codegen::ComputePath::exact;
  CHECK_THROWS_WITH_AS(runtime::MoeLayer(config, w.device(), exact),
                       "weight scales: a UE8M0 code of 200 was found; the exact path (sm90-bf16-mma) supports codes "
                       "[0, 128]; --path fast takes every code to 254",
                       runtime::InvalidInput);
  runtime::MoeLayerOptions fast;
  fast.codegen.path = codegen::ComputePath::fast;
  CHECK_NOTHROW(runtime::MoeLayer(config, w.device(), fast));  // the fast path takes it
}

TEST_CASE("Table 10 edges") {
  int failures = 0;
  failures += run_matrix({"edge-H512-k1", gpu_test::small_config("custom", 8, 1, 512, 256)}, {1, 7, 256}, k_routings);
  failures += run_matrix({"edge-H512-k32", gpu_test::small_config("custom", 32, 32, 512, 256)}, {1, 5, 64}, k_routings);
  failures +=
      run_matrix({"edge-H8192-I4096", gpu_test::small_config("custom", 4, 4, 8192, 4096)}, {1, 3, 32}, k_routings);
  CHECK(failures == 0);
}

TEST_CASE("H and I multiples of 32, not of 64: padded inside, both paths, both inputs, both recipes") {
  // H = 544 and I = 288 run as 768 and 384 (zero weights and activations past the model's); y keeps H columns.
  const codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 544, 288);
  int failures = run_matrix({"edge-H544-I288", config}, {1, 7, 64}, k_routings);
  Matrix bf16_in;
  bf16_in.input_bf16 = true;
  failures += run_matrix({"edge-H544-I288", config}, {1, 7, 64}, {RoutingKind::uniform}, bf16_in);
  codegen::MoeConfig w4a16 = config;
  w4a16.recipe = codegen::Recipe::w4a16;
  bf16_in.paths = {codegen::ComputePath::exact};
  failures += run_matrix({"edge-H544-I288", w4a16}, {1, 7, 64}, {RoutingKind::uniform, RoutingKind::zipf}, bf16_in);
  CHECK(failures == 0);
}

TEST_CASE("gpt-oss's block: its activation (alpha, limit), interleaved gate/up rows, biases, padded, both recipes") {
  // The shape of gpt-oss scaled down (H = I = 2880 is 22.5 x 128: here 544 and 288), its checkpoint's W1 row
  // order (gate i at row 2i, up i at 2i + 1), g' sigmoid(1.702 g') (u' + 1) with limit 7, random non-zero biases.
  codegen::MoeConfig config = gpu_test::small_config("custom", 16, 4, 544, 288);
  config.activation = codegen::Activation::gpt_oss;
  config.alpha = 1.702f;
  config.swiglu_clamp = 7.0f;
  config.gate_up = codegen::GateUp::interleaved;
  config.biases = true;
  int failures = run_matrix({"gpt-oss-like", config}, {1, 8, 64, 256}, k_routings);
  config.recipe = codegen::Recipe::w4a16;
  const Matrix w4a16 = w4a16_matrix();
  failures += run_matrix({"gpt-oss-like", config}, {1, 8, 64, 256}, k_routings, w4a16);
  CHECK(failures == 0);
}

TEST_CASE("BF16 input is quantized by the dispatch role exactly as the CPU twin") {
  Matrix m;
  m.input_bf16 = true;
  CHECK(run_matrix({"glm5.2", codegen::builtin_model("glm5.2")}, {1, 8, 64}, {RoutingKind::uniform}, m) == 0);
}

TEST_CASE("W4A16 recipe: BF16 x straight into GEMM1, a BF16 intermediate, against its CPU reference") {
  // The exact atom's mainloop on the caller's BF16 rows (no dispatch role), both shapes and a Table 10 edge.
  const Matrix m = w4a16_matrix();
  int failures = 0;
  for (const char* model : {"glm5.2", "dsv4.1-flash"}) {
    codegen::MoeConfig config = codegen::builtin_model(model);
    config.recipe = codegen::Recipe::w4a16;
    failures += run_matrix({model, config}, {1, 8, 64, 256}, {RoutingKind::uniform, RoutingKind::one_expert}, m);
  }
  codegen::MoeConfig edge = gpu_test::small_config("custom", 8, 1, 512, 256);
  edge.recipe = codegen::Recipe::w4a16;
  failures += run_matrix({"edge-H512-k1", edge}, {1, 7, 256}, k_routings, m);
  CHECK(failures == 0);
}

TEST_CASE("weight scale codes over the whole range each path applies") {
  // W1's K32 block kb carries code c_kb in every expert and row, c_kb spread over the path's range, and x's
  // block kb is scaled by 2^(127 - c_kb) so every block contributes alike; W2's codes spread over [60, 190].
  const codegen::MoeConfig config = gpu_test::small_config("custom", 16, 4, 1024, 512);
  for (codegen::ComputePath path : {codegen::ComputePath::fast, codegen::ComputePath::exact}) {
    const int top = path == codegen::ComputePath::fast ? 254 : 128;
    Matrix m;
    m.paths = {path};
    for (int kb = 0; kb < config.hidden / 32; ++kb) {
      const int code = kb * top / (config.hidden / 32 - 1);
      m.scales.w1_block_code.push_back(code);
      m.x.block_shift.push_back(std::clamp(127 - code, -120, 120));
    }
    m.scales.w2_lo = path == codegen::ComputePath::fast ? 60 : 60;
    m.scales.w2_hi = path == codegen::ComputePath::fast ? 190 : 128;
    // W2 codes 60..190 let a few hidden rows dominate each output, so the distance to the unquantized
    // reference is the quantization error of a handful of elements (measured 0.969-0.99); the quantized
    // reference, which these cases are about, must still agree to the path's bar.
    m.dense_bar = 0.95;
    m.subnormal_scales = true;  // W1's block 0 has code 0 and random codes
    const std::string name = fmt::format("codes-0-{}", top);
    CHECK(run_matrix({name.c_str(), config}, {1, 8, 64}, {RoutingKind::uniform, RoutingKind::zipf}, m) == 0);
  }
}

TEST_CASE("E4M3 subnormal activations") {
  // Element magnitudes over 2^-24..2^0 inside every block: most blocks quantize to E4M3 subnormals and zeros.
  Matrix m;
  m.x.wide = true;
  CHECK(run_matrix({"glm5.2-wide-x", codegen::builtin_model("glm5.2")}, {1, 16, 128}, {RoutingKind::uniform}, m) == 0);
}

TEST_CASE("pre-quantized x with an all-zero block of a large scale code: the token frame leaves it out") {
  // Every token's first block holds zeros (+0 and -0) under code 200, ~80 octaves over the others: were it the frame,
  // every other block would shift to zeros. MXFP8 x, B from the token frame's range and below it.
  Matrix m;
  m.x.zero_block_code = 200;
  for (const char* model : {"glm5.2", "dsv4.1-flash"})
    CHECK(run_matrix({model, codegen::builtin_model(model)}, {4, 16, 128}, {RoutingKind::uniform}, m) == 0);
}

TEST_CASE("GLM5.2 matrix") {
  CHECK(run_matrix({"glm5.2", codegen::builtin_model("glm5.2")}, model_batches(), k_routings) == 0);
}

TEST_CASE("DSV4.1-Flash matrix") {
  CHECK(run_matrix({"dsv4.1-flash", codegen::builtin_model("dsv4.1-flash")}, model_batches(), k_routings) == 0);
}

TEST_CASE("gpt-oss-120b and gpt-oss-20b matrix, both recipes") {
  // The published blocks as built in (H = I = 2880, padded inside; alpha 1.702, limit 7, interleaved W1 rows),
  // with random non-zero biases: w4a8-mx on both paths, and W4A16 (BF16 x, the exact atom).
  const Matrix w4a16 = w4a16_matrix();
  int failures = 0;
  for (const char* model : {"gpt-oss-120b", "gpt-oss-20b"}) {
    codegen::MoeConfig config = codegen::builtin_model(model);
    failures += run_matrix({model, config}, model_batches(), k_routings);
    config.recipe = codegen::Recipe::w4a16;
    failures += run_matrix({model, config}, model_batches(), k_routings, w4a16);
  }
  CHECK(failures == 0);
}
TEST_CASE("checkpoint arrays of E experts are refused by a layer with a shared expert, naming the array") {
  runtime::ScopedContext ctx(0);
  codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 512, 256);
  const oracle::RandomWeights routed_only = oracle::random_weights(oracle::problem_of(config), gpu_test::seed());
  config.shared_expert = codegen::SharedExpert{128};
  // E + 1 = 9 experts' bytes are needed; 8 are there. Refused before the weight transform reads past them.
  CHECK_THROWS_WITH_AS(runtime::MoeLayer(config, routed_only.device(), {}), doctest::Contains("weights.w1 = 0x"),
                       runtime::InvalidInput);
  CHECK_THROWS_WITH_AS(runtime::MoeLayer(config, routed_only.device(), {}),
                       doctest::Contains("B of [9 (E + 1: the shared expert last)][512][256] MXFP4 codes"),
                       runtime::InvalidInput);
}

TEST_CASE("NaN and infinite biases are refused when the layer is built, naming the element") {
  runtime::ScopedContext ctx(0);
  codegen::MoeConfig config = gpu_test::small_config("custom", 8, 2, 512, 256);
  config.biases = true;
  oracle::RandomWeights w = oracle::random_weights(oracle::problem_of(config), gpu_test::seed(), {}, true);
  CHECK_NOTHROW(runtime::MoeLayer(config, w.device(), {}));
  // b1[3][17] = NaN (0x7fc0); then b1 restored and b2[5][300] = -Inf (0xff80).
  std::vector<std::uint16_t> b1 = w.host.b1;
  b1[3 * 2 * 256 + 17] = 0x7fc0;
  w.b1.upload(b1);
  CHECK_THROWS_WITH_AS(runtime::MoeLayer(config, w.device(), {}),
                       "weights.b1[3][17] = nan (BF16 0x7fc0) is invalid: biases must be finite",
                       runtime::InvalidInput);
  w.b1.upload(w.host.b1);
  std::vector<std::uint16_t> b2 = w.host.b2;
  b2[5 * 512 + 300] = 0xff80;
  w.b2.upload(b2);
  CHECK_THROWS_WITH_AS(runtime::MoeLayer(config, w.device(), {}),
                       "weights.b2[5][300] = -inf (BF16 0xff80) is invalid: biases must be finite",
                       runtime::InvalidInput);
}
