#include "oracle/mx_format.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace moejit::mx {
namespace {
// Round |v| to a format with `mantissa_bits`, minimum normal exponent `emin`,
// and largest finite value `max_finite`, to nearest even, saturating.
double round_minifloat(double v, int mantissa_bits, int emin, double max_finite) {
  if (std::isnan(v)) return v;
  const double a = std::fabs(v);
  if (a == 0) return v;
  int e = std::ilogb(a);
  if (e < emin) e = emin;  // subnormal spacing
  const double quantum = std::ldexp(1.0, e - mantissa_bits);
  double r = std::nearbyint(a / quantum) * quantum;  // nearbyint: ties to even under the default mode
  r = std::min(r, max_finite);
  return std::copysign(r, v);
}
}  // namespace

double e2m1_value(std::uint8_t code) {
  static constexpr double magnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double v = magnitude[code & 7];
  return (code & 8) ? -v : v;
}

double e4m3_value(std::uint8_t byte) {
  const int e = (byte >> 3) & 0xF, m = byte & 7;
  double v;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0)
    v = std::ldexp(m, -9);
  else
    v = std::ldexp(1.0 + m / 8.0, e - 7);
  return (byte & 0x80) ? -v : v;
}

double ue8m0_value(std::uint8_t code) {
  return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int(code) - 127);
}

std::uint8_t e4m3_encode(double v) {
  if (std::isnan(v)) return 0x7F;
  const double r = round_minifloat(v, 3, -6, 448.0);
  const std::uint8_t sign = std::signbit(r) ? 0x80 : 0;
  const double a = std::fabs(r);
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < -6) return static_cast<std::uint8_t>(sign | static_cast<int>(a / std::ldexp(1.0, -9)));
  const int m = static_cast<int>((a / std::ldexp(1.0, e) - 1.0) * 8.0);
  return static_cast<std::uint8_t>(sign | ((e + 7) << 3) | m);
}

std::uint8_t e4m3_in_frame(std::uint8_t byte, int delta) {
  return delta == 0 ? byte : e4m3_encode(e4m3_value(byte) * std::ldexp(1.0, -delta));
}

std::uint8_t e2m1_encode(double v) {
  const double r = round_minifloat(v, 1, 0, 6.0);
  const std::uint8_t sign = std::signbit(r) ? 8 : 0;
  const double a = std::fabs(r);
  for (std::uint8_t c = 0; c < 8; ++c)
    if (e2m1_value(c) == a) return static_cast<std::uint8_t>(sign | c);
  return sign;  // unreachable for finite input: every rounded magnitude is a code
}

std::uint8_t block_scale_code(double amax, int elem_emax) {
  if (!(amax > 0)) return 0;
  const int code = std::ilogb(amax) - elem_emax + 127;
  return static_cast<std::uint8_t>(std::clamp(code, 0, 254));
}

std::uint16_t bf16_bits(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0 : 0x7FC0;
  const double r = round_minifloat(v, 7, -126, std::numeric_limits<double>::infinity());
  // r is exactly representable in BF16, hence in FP32: take its top half.
  const float f = static_cast<float>(r);
  if (std::isinf(r) || std::fabs(r) > 0x1.FEp127) return std::signbit(v) ? 0xFF80 : 0x7F80;
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);
}

double bf16_value(std::uint16_t bits) {
  return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16));
}

namespace {
template <typename Encode>
MxMatrix quantize(const std::vector<float>& values, int rows, int cols, int elem_emax, bool nibbles, Encode encode) {
  MxMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.elements.assign(nibbles ? size_t(rows) * cols / 2 : size_t(rows) * cols, 0);
  m.scales.resize(size_t(rows) * cols / 32);
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < cols / 32; ++b) {
      const float* block = values.data() + size_t(r) * cols + 32 * b;
      double amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(double(block[i])));
      const std::uint8_t code = block_scale_code(amax, elem_emax);
      m.scales[size_t(r) * (cols / 32) + b] = code;
      const double inv = std::ldexp(1.0, 127 - int(code));
      for (int i = 0; i < 32; ++i) {
        const std::uint8_t q = encode(double(block[i]) * inv);
        const size_t idx = size_t(r) * cols + 32 * b + i;
        if (nibbles)
          m.elements[idx / 2] |= static_cast<std::uint8_t>((q & 0xF) << (4 * (idx % 2)));
        else
          m.elements[idx] = q;
      }
    }
  }
  return m;
}
}  // namespace

MxMatrix quantize_mxfp8(const std::vector<float>& values, int rows, int cols) {
  return quantize(values, rows, cols, 8, false, e4m3_encode);
}

MxMatrix quantize_mxfp4(const std::vector<float>& values, int rows, int cols) {
  return quantize(values, rows, cols, 2, true, e2m1_encode);
}

}  // namespace moejit::mx
