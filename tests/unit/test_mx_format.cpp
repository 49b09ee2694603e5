#include <doctest/doctest.h>

#include <cmath>

#include "oracle/mx_format.hpp"

using namespace moejit;

TEST_CASE("E4M3 and E2M1 encode every code back to itself") {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;  // NaN
    CAPTURE(b);
    const double v = mx::e4m3_value(static_cast<std::uint8_t>(b));
    CHECK(mx::e4m3_value(mx::e4m3_encode(v)) == v);
  }
  for (int c = 0; c < 16; ++c) CHECK(mx::e2m1_value(mx::e2m1_encode(mx::e2m1_value(c))) == mx::e2m1_value(c));
}

TEST_CASE("E4M3 rounds to nearest even and saturates at 448") {
  CHECK(mx::e4m3_value(mx::e4m3_encode(1.0625)) == 1.0);   // halfway between 1 and 1.125 -> even
  CHECK(mx::e4m3_value(mx::e4m3_encode(1.1875)) == 1.25);  // halfway between 1.125 and 1.25 -> even
  CHECK(mx::e4m3_value(mx::e4m3_encode(1000.0)) == 448.0);
  CHECK(mx::e4m3_value(mx::e4m3_encode(-1e30)) == -448.0);
  CHECK(mx::e4m3_value(mx::e4m3_encode(std::ldexp(1.0, -10))) == 0.0);  // half the smallest subnormal -> even (0)
  CHECK(mx::e4m3_value(mx::e4m3_encode(std::ldexp(3.0, -10))) == std::ldexp(1.0, -8));
  CHECK(mx::e2m1_value(mx::e2m1_encode(5.0)) == 4.0);  // halfway 4..6 -> even mantissa
  CHECK(mx::e2m1_value(mx::e2m1_encode(100.0)) == 6.0);
}

TEST_CASE("OCP block scale: 2^(floor(log2 amax) - emax), zero block -> 2^-127") {
  CHECK(mx::block_scale_code(448.0, 8) == 127);
  CHECK(mx::block_scale_code(256.0, 8) == 127);
  CHECK(mx::block_scale_code(255.9, 8) == 126);
  CHECK(mx::block_scale_code(6.0, 2) == 127);
  CHECK(mx::block_scale_code(0.0, 8) == 0);
  CHECK(mx::block_scale_code(1e-40, 8) == 0);    // clamped
  CHECK(mx::block_scale_code(1e38, 2) == 251);   // 2^126.2
  CHECK(mx::block_scale_code(1e300, 2) == 254);  // clamped
}

TEST_CASE("BF16 rounding is to nearest even, subnormals kept") {
  CHECK(mx::bf16_bits(1.0) == 0x3F80);
  CHECK(mx::bf16_bits(1.0 + std::ldexp(1.0, -8)) == 0x3F80);  // halfway -> even
  CHECK(mx::bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)) == 0x3F82);
  CHECK(mx::bf16_bits(std::ldexp(1.0, -133)) == 0x0001);
  CHECK(mx::bf16_bits(1e39) == 0x7F80);
  CHECK(std::isnan(mx::bf16_value(mx::bf16_bits(std::nan("")))));
}

TEST_CASE("MXFP8 quantization of a block follows the OCP rule") {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = 0.37f * (i - 16);
  const mx::MxMatrix q = mx::quantize_mxfp8(v, 1, 32);
  // amax = 5.92: floor(log2) = 2 -> scale 2^(2-8) = 2^-6 -> code 121.
  CHECK(q.scales[0] == 121);
  for (int i = 0; i < 32; ++i)
    CHECK(mx::e4m3_value(q.elements[i]) * std::ldexp(1.0, -6) ==
          doctest::Approx(v[i]).epsilon(1.0 / 16));  // E4M3 keeps 3 mantissa bits
}

TEST_CASE("e4m3_in_frame shifts a block's element to its row's largest scale: exact for normals, RNE below") {
  // Every code and shift: the value times 2^-delta, exactly where that is an E4M3 value (every normal result,
  // and each subnormal multiple of 2^-9), else the nearest one, ties to even.
  for (int byte = 0; byte < 256; ++byte) {
    const double v = mx::e4m3_value(static_cast<std::uint8_t>(byte));
    if (std::isnan(v)) continue;
    CHECK(mx::e4m3_in_frame(static_cast<std::uint8_t>(byte), 0) == byte);
    for (int delta = 1; delta <= 30; ++delta) {
      CAPTURE(byte);
      CAPTURE(delta);
      const std::uint8_t got = mx::e4m3_in_frame(static_cast<std::uint8_t>(byte), delta);
      const double want = std::ldexp(v, -delta), back = mx::e4m3_value(got);
      CHECK(std::signbit(back) == std::signbit(v));
      if (std::fabs(want) >= std::ldexp(1.0, -6) || std::fmod(std::fabs(want), std::ldexp(1.0, -9)) == 0.0)
        CHECK(back == want);
      else
        CHECK(std::fabs(back - want) <= std::ldexp(1.0, -10));  // half the subnormal step
    }
  }
  // A tie goes to the even step: 1.5 * 2^-9 (code 0x3C, 1.5, shifted 9 octaves) is 2^-8, code 2; 0.5 * 2^-9 is 0.
  CHECK(mx::e4m3_in_frame(0x3C, 9) == 0x02);
  CHECK(mx::e4m3_in_frame(0x30, 10) == 0x00);
  CHECK(mx::e4m3_in_frame(0x38, 9) == 0x01);  // 1.0 -> 2^-9, the smallest subnormal
}
