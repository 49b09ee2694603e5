#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/emit.hpp"
#include "codegen/smoke_kernel.hpp"

using namespace moejit::codegen;

TEST_CASE("kernel spec JSON round trip") {
  const KernelSpec spec = smoke_kernel_spec(Target{Arch::sm_120a}, 128);
  const nlohmann::json j = spec;
  CHECK(j.get<KernelSpec>() == spec);
  CHECK(spec.summary() == "smoke_mxfp4_dequant<kThreads=128> threads=128 min_blocks=1 @ sm_120a");
  CHECK(spec.constant("kThreads") == 128);
  CHECK_THROWS(spec.constant("kNope"));
}

TEST_CASE("emitted source defines the ABI entry and carries its template closure") {
  const EmittedSource src = emit_source(smoke_kernel_spec(Target{}, 256));
  CHECK(src.text.find("extern \"C\" __global__ void __launch_bounds__(256, 1)") != std::string::npos);
  CHECK(src.text.find("moejit_smoke_mxfp4_dequant(") != std::string::npos);
  CHECK(src.text.find("moejit::smoke_mxfp4_dequant<kThreads/*kThreads*/256>") == std::string::npos);
  CHECK(src.text.find("moejit::smoke_mxfp4_dequant</*kThreads*/256>(payload, scales, out, n_blocks)") !=
        std::string::npos);
  REQUIRE(src.headers.size() == 2);
  CHECK(src.headers[0].first == "mx_types.cuh");
  CHECK(src.headers[1].first == "smoke_mxfp4_dequant.cuh");
}

TEST_CASE("the smoke CPU twin decodes E2M1 and UE8M0 exactly") {
  // byte 0x71: low nibble 1 (0.5), high nibble 7 (6.0); scale 2^(128-127) = 2.
  std::vector<std::uint8_t> payload(16, 0x00), scales = {128};
  payload[0] = 0x71;
  payload[1] = 0x8F;  // low nibble 0xF = -6, high nibble 0x8 = -0
  const auto out = smoke_reference(payload, scales);
  REQUIRE(out.size() == 32);
  CHECK(out[0] == 0x3F80);  // 1.0
  CHECK(out[1] == 0x4140);  // 12.0
  CHECK(out[2] == 0xC140);  // -12.0
  CHECK(out[3] == 0x8000);  // -0.0
  // Scale 0 is 2^-127: 0.5 * 2^-127 = 2^-128, a subnormal that BF16 keeps.
  scales[0] = 0;
  CHECK(smoke_reference(payload, scales)[0] == 0x0020);
}
