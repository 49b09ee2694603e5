#pragma once
// OCP microscaling formats on the host: E2M1 and E4M3 elements with UE8M0
// block scales. Written from the OCP MX specification, independently of the
// device templates, so the CPU reference checks the kernels rather than
// repeating them.

#include <cstdint>
#include <vector>

namespace moejit::mx {

double e2m1_value(std::uint8_t code);   // low 4 bits
double e4m3_value(std::uint8_t byte);   // NaN for S.1111.111
double ue8m0_value(std::uint8_t code);  // 2^(code-127); NaN for 0xFF

// Round to nearest even, saturating at the largest finite magnitude (448 / 6).
std::uint8_t e4m3_encode(double v);
std::uint8_t e2m1_encode(double v);

// The UE8M0 block scale code for a block with absolute maximum `amax` whose
// elements have largest exponent `elem_emax` (8 for E4M3, 2 for E2M1):
// 2^(floor(log2(amax)) - elem_emax), clamped to [0, 254]; amax 0 -> code 0.
std::uint8_t block_scale_code(double amax, int elem_emax);

// The token frame (codegen::MoeLaunchPlan::token_frame): an E4M3 element of a block whose scale code is
// `delta` below its row's largest, in that largest scale: e4m3_encode(e4m3_value(byte) * 2^-delta) (exact while
// the value stays an E4M3 normal, rounded to nearest even below).
std::uint8_t e4m3_in_frame(std::uint8_t byte, int delta);

std::uint16_t bf16_bits(double v);  // round to nearest even, from double directly
double bf16_value(std::uint16_t bits);
inline double round_bf16(double v) {
  return bf16_value(bf16_bits(v));
}

// A row-major [rows][cols] matrix quantized along cols in blocks of 32.
struct MxMatrix {
  int rows = 0, cols = 0;
  std::vector<std::uint8_t> elements;  // E4M3 bytes, or E2M1 nibbles packed low nibble first
  std::vector<std::uint8_t> scales;    // [rows][cols/32] UE8M0 codes
};

MxMatrix quantize_mxfp8(const std::vector<float>& values, int rows, int cols);
MxMatrix quantize_mxfp4(const std::vector<float>& values, int rows, int cols);

}  // namespace moejit::mx
