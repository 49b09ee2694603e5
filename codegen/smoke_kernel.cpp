#include "codegen/smoke_kernel.hpp"

#include <bit>
#include <cmath>

namespace moejit::codegen {

KernelSpec smoke_kernel_spec(Target target, int threads) {
  KernelSpec s;
  s.kernel = "smoke_mxfp4_dequant";
  s.template_file = "smoke_mxfp4_dequant.cuh";
  s.device_function = "moejit::smoke_mxfp4_dequant";
  s.target = target;
  s.constants = {{"kThreads", threads}};
  s.threads = threads;
  s.min_blocks_per_sm = 1;
  s.params = {
      {"payload", ParamType::ptr, "const moejit::u8* __restrict__"},
      {"scales", ParamType::ptr, "const moejit::u8* __restrict__"},
      {"out", ParamType::ptr, "moejit::u16* __restrict__"},
      {"n_blocks", ParamType::u32, "moejit::u32"},
  };
  return s;
}

namespace {
// Written from the OCP MX spec, independently of templates/mx_types.cuh.
float e2m1_value(unsigned code) {
  static const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = magnitude[code & 7];
  return (code & 8) ? -v : v;
}

std::uint16_t bf16_rne(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  const std::uint32_t lsb = (bits >> 16) & 1;
  return static_cast<std::uint16_t>((bits + 0x7FFF + lsb) >> 16);
}
}  // namespace

std::vector<std::uint16_t> smoke_reference(const std::vector<std::uint8_t>& payload,
                                           const std::vector<std::uint8_t>& scales) {
  std::vector<std::uint16_t> out(payload.size() * 2);
  for (size_t i = 0; i < payload.size(); ++i) {
    const std::uint8_t s = scales[i / 16];
    const float scale = s == 0xFF ? std::nanf("") : std::ldexp(1.0f, int(s) - 127);
    out[2 * i] = bf16_rne(e2m1_value(payload[i] & 0xF) * scale);
    out[2 * i + 1] = bf16_rne(e2m1_value(payload[i] >> 4) * scale);
  }
  return out;
}

}  // namespace moejit::codegen
