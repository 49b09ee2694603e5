// The MoE kernels without a GPU: they compile and assemble for every shape
// the layer can choose, and the packed weight layout decodes (with the
// kernel's own bit recipe, emulated here) to the checkpoint values.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>

#include "codegen/moe_kernels.hpp"
#include "runtime/kernel_builder.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/mx_format.hpp"
#include "runtime/weight_pack.hpp"

using namespace moejit;

namespace {
std::uint32_t rotr(std::uint32_t x, int n) {
  return std::rotr(x, n);
}

// The sm_90a atom's dequantization of one fragment word (moe_atom_sm90.cuh),
// in exact arithmetic: BF16 bit patterns times 2^(s-1).
void dequant_word(std::uint32_t q, int code, double (&out)[8]) {
  constexpr std::uint32_t kPair = 0x81C081C0u;
  const std::uint32_t pairs[4] = {q & kPair, rotr(q, 4) & kPair, rotr(q, 10) & kPair,
                                  (rotr(q, 6) & 0x81808180u) | (rotr(q, 14) & 0x00400040u)};
  for (int p = 0; p < 4; ++p) {
    out[2 * p] = mx::bf16_value(pairs[p] & 0xFFFF) * std::ldexp(1.0, code - 1);
    out[2 * p + 1] = mx::bf16_value(pairs[p] >> 16) * std::ldexp(1.0, code - 1);
  }
}
}  // namespace

TEST_CASE("packed fragments decode to the checkpoint's values with the kernel's recipe") {
  const int experts = 2, rows = 128, k = 256;
  std::mt19937 rng(std::random_device{}());
  std::vector<std::uint8_t> payload(std::size_t(experts) * rows * k / 2), scales(std::size_t(experts) * rows * k / 32);
  for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
  for (auto& s : scales) s = static_cast<std::uint8_t>(rng() % 129);  // every code the sm_90a path accepts
  for (bool interleave : {false, true}) {
    const runtime::PackedProjection packed = runtime::pack_projection(payload, scales, experts, rows, k, interleave);
    int mismatches = 0;
    for (int e = 0; e < experts; ++e)
      for (int kb = 0; kb < k / 128; ++kb)
        for (int n = 0; n < rows; ++n) {
          // Which checkpoint row sits at packed row n.
          int src = n;
          if (interleave) {
            const int i = (n / 64) * 32 + ((n % 64) / 16) * 8 + n % 8;
            src = (n % 16) < 8 ? i : rows / 2 + i;
          }
          const std::uint32_t scale_word = packed.scales[(std::size_t(e) * (k / 128) + kb) * rows + n];
          for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) {
              double got[8];
              const int code = (scale_word >> (8 * j)) & 0xFF;
              dequant_word(packed.payload[((std::size_t(e) * (k / 128) + kb) * rows + n) * 16 + 4 * t + j], code, got);
              const int pair_k[4] = {32 * j + 2 * t, 32 * j + 2 * t + 8, 32 * j + 16 + 2 * t, 32 * j + 24 + 2 * t};
              for (int p = 0; p < 4; ++p)
                for (int h = 0; h < 2; ++h) {
                  const int kk = kb * 128 + pair_k[p] + h;
                  const std::uint8_t byte = payload[(std::size_t(e) * rows + src) * (k / 2) + kk / 2];
                  const double want = mx::e2m1_value(kk % 2 ? byte >> 4 : byte & 0xF) *
                                      mx::ue8m0_value(scales[(std::size_t(e) * rows + src) * (k / 32) + kk / 32]);
                  mismatches += got[2 * p + h] != want;
                }
            }
        }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("every MoE kernel compiles and assembles for sm_90a at every tile width and depth") {
  const codegen::Target target{codegen::Arch::sm_90a};
  for (int tile_n : {16, 32, 48, 64}) {
    codegen::MoeKernelShape shape{256, 8, 6144, 2048, tile_n, 2};
    shape.stages = tile_n <= 32 ? 8 : 4;
    CAPTURE(tile_n);
    for (const codegen::KernelSpec& spec :
         {codegen::moe_compute_spec(shape, target), codegen::moe_dispatch_spec(shape, target)}) {
      const runtime::BuildArtifacts built = runtime::build_kernel(spec);
      const codegen::KernelResources* res = built.resources.find(spec.entry_name());
      REQUIRE(res);
      CHECK(res->spill_store_bytes == 0);
      CHECK(res->local_bytes == 0);
      for (const std::string& instr : spec.required_instructions)
        CHECK(built.final_ptx.find(instr) != std::string::npos);
    }
  }
  const runtime::BuildArtifacts fin = runtime::build_kernel(codegen::moe_finalize_spec({256, 8, 6144, 2048}, target));
  CHECK(!fin.cubin.empty());
  CHECK(!runtime::build_kernel(codegen::moe_weight_transform_spec(256, 4096, 6144, true, target)).cubin.empty());
}

TEST_CASE("sm_120a: every MoE kernel variant compiles, assembles and keeps the native block-scaled MMA") {
  const codegen::Target target{codegen::Arch::sm_120a};
  // Every tile width the planner can choose on sm_120a (eq. 8 tiers and fallbacks), at its depths.
  for (int tile_n : {16, 32, 48, 64, 80, 96}) {
    CAPTURE(tile_n);
    codegen::MoeKernelShape shape{256, 8, 6144, 2048, tile_n, tile_n == 16 ? 4 : 2};
    const codegen::KernelSpec spec = codegen::moe_compute_spec(shape, target);
    CHECK(spec.device_function == "moejit::moe_compute_sm120_entry");
    const runtime::BuildArtifacts built = runtime::build_kernel(spec);
    CHECK(built.final_ptx.find("mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e2m1."
                               "e4m3.f32.ue8m0") != std::string::npos);
    CHECK(built.final_ptx.find("cp.async.bulk.tensor") != std::string::npos);
    CHECK(built.final_ptx.find("mma.sync.aligned.m16n8k16") == std::string::npos);  // no BF16 fallback
    const codegen::KernelResources* res = built.resources.find(spec.entry_name());
    REQUIRE(res);
    CHECK(res->spill_store_bytes == 0);
    CHECK(codegen::compute_smem_bytes(shape, target) <= 99 * 1024);
  }
  codegen::MoeKernelShape shape{256, 8, 6144, 2048, 16, 4};
  for (const codegen::KernelSpec& spec :
       {codegen::moe_dispatch_spec(shape, target), codegen::moe_finalize_spec(shape, target),
        codegen::moe_weight_transform_spec(256, 4096, 6144, true, target)})
    CHECK(!runtime::build_kernel(spec).cubin.empty());
}

TEST_CASE("bad input is refused before any launch, naming the field, value and range") {
  // Every Table 10 field of the config has its own test with the planner
  // (test_planner_config.cpp); these are the layer's own limits and the
  // forward arguments.
  using runtime::InvalidInput;
  const codegen::MoeConfig glm = codegen::builtin_model("glm5.2");
  auto config_error = [&](auto mutate) {
    codegen::MoeConfig c = glm;
    mutate(c);
    try {
      runtime::validate_layer_config(c);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(config_error([](auto&) {}) == "accepted");
  CHECK(config_error([](auto& c) { c.hidden = 520; }) ==
        "hidden | hidden H = 520 is invalid: must be a multiple of 128 in [512, 8192]");
  CHECK(config_error([](auto& c) { c.ranks = 8; }) ==
        "ranks | ranks R = 8 is not supported yet: MoeLayer runs one GPU (R = 1)");
  CHECK(config_error([](auto& c) { c.experts = 4096; }) ==
        "experts | experts E = 4096 is outside the range this version supports [1, 2048]");
  CHECK(config_error([](auto& c) { c.shared_expert = codegen::SharedExpert{128}; }).rfind("shared_expert |", 0) == 0);

  const runtime::MoeLayerOptions opts;
  const runtime::MoeForwardArgs ok{0x1000, 0x2000, 0, 0x3000, 0x4000, 0x5000, 8};
  auto args_error = [&](auto mutate) {
    runtime::MoeForwardArgs a = ok;
    mutate(a);
    try {
      runtime::validate_forward_args(glm, opts, a);
    } catch (const InvalidInput& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(args_error([](auto&) {}) == "accepted");
  CHECK(args_error([](auto& a) { a.tokens = 0; }) ==
        "tokens | tokens B = 0 is outside the allowed range [1, 256] (token capacity)");
  CHECK(args_error([](auto& a) { a.tokens = 257; }).rfind("tokens |", 0) == 0);
  CHECK(args_error([](auto& a) { a.x_q = 0; }) ==
        "x_q | x_q = 0x0 is invalid: must be a non-null 16-byte aligned device pointer");
  CHECK(args_error([](auto& a) { a.x_q = 0x1008; }).rfind("x_q |", 0) == 0);
  CHECK(args_error([](auto& a) { a.x_scales = 0x2002; }).rfind("x_scales |", 0) == 0);
  CHECK(args_error([](auto& a) { a.topk_ids = 0; }).rfind("topk_ids |", 0) == 0);
  CHECK(args_error([](auto& a) { a.topk_weights = 0x4001; }).rfind("topk_weights |", 0) == 0);
  CHECK(args_error([](auto& a) { a.y = 0x5004; }).rfind("y |", 0) == 0);
  runtime::MoeLayerOptions bf16 = opts;
  bf16.input_bf16 = true;
  CHECK_THROWS_WITH_AS(runtime::validate_forward_args(glm, bf16, ok),
                       "x_bf16 = 0x0 is invalid: must be a non-null 16-byte aligned device pointer", InvalidInput);

  CHECK_NOTHROW(runtime::validate_route_ids(glm, {0, 255, 3}));
  CHECK_THROWS_WITH_AS(runtime::validate_route_ids(glm, {0, 1, 2, 3, 4, 5, 6, 7, 8, 256}),
                       "topk_ids[1][1] = 256 is outside the allowed range [0, 256)", InvalidInput);
  CHECK_THROWS_WITH_AS(runtime::validate_route_ids(glm, {-1}),
                       "topk_ids[0][0] = -1 is outside the allowed range [0, 256)", InvalidInput);
}

TEST_CASE("sm_120a packed fragments expand to the m16n8k32 A registers") {
  // The atom's expand_e2m1_word, emulated: nibbles 0..3 -> a0 (k = 4t..4t+3 of the K32
  // block), nibbles 4..7 -> a2 (k = 16+4t..), each code at bits 5..2 of its byte.
  const int experts = 1, rows = 64, k = 256;
  std::mt19937 rng(std::random_device{}());
  std::vector<std::uint8_t> payload(std::size_t(experts) * rows * k / 2), scales(std::size_t(experts) * rows * k / 32);
  for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
  for (auto& s : scales) s = static_cast<std::uint8_t>(rng());
  const runtime::PackedProjection packed =
      runtime::pack_projection(payload, scales, experts, rows, k, false, runtime::FragmentOrder::sm120_nibbles);
  int mismatches = 0;
  for (int kb = 0; kb < k / 128; ++kb)
    for (int n = 0; n < rows; ++n)
      for (int t = 0; t < 4; ++t)
        for (int j = 0; j < 4; ++j) {
          const std::uint32_t q = packed.payload[(std::size_t(kb) * rows + n) * 16 + 4 * t + j];
          for (int reg = 0; reg < 2; ++reg)
            for (int byte = 0; byte < 4; ++byte) {
              const std::uint32_t container = ((q >> (4 * (4 * reg + byte))) & 0xF) << 2;
              const int kk = kb * 128 + 32 * j + 16 * reg + 4 * t + byte;
              const std::uint8_t src = payload[std::size_t(n) * (k / 2) + kk / 2];
              mismatches += (container >> 2) != std::uint32_t(kk % 2 ? src >> 4 : src & 0xF);
            }
        }
  CHECK(mismatches == 0);
  // The scale words are the same for both targets: byte j = K32 block j.
  CHECK(packed.scales == runtime::pack_projection(payload, scales, experts, rows, k, false).scales);
}
