#pragma once
// Microscaling (OCP MX) element formats for moejit kernels.
// Self-contained on purpose: NVRTC 13 ships no headers, and builtin types plus
// inline PTX keep a cold compile in the tens of milliseconds.

namespace moejit {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;

// UE8M0 block scale: 2^(s - 127); 0xFF is NaN.
__device__ __forceinline__ float ue8m0_to_float(u32 s) {
  return s == 0xFFu ? __int_as_float(0x7FC00000)
                    : (s == 0u ? __int_as_float(0x00400000) : __int_as_float(int(s) << 23));
}

// E2M1 code (low 4 bits) to float: {0, 0.5, 1, 1.5, 2, 3, 4, 6} with a sign bit.
__device__ __forceinline__ float e2m1_to_float(u32 code) {
  const u32 mag = code & 7u;
  // Exponent/mantissa are 2+1 bits with bias 1; code 1 is the subnormal 0.5.
  const float v = mag < 2u ? 0.5f * float(mag) : __int_as_float(int(((mag >> 1) + 126u) << 23 | (mag & 1u) << 22));
  return (code & 8u) ? -v : v;
}

// FP32 to BF16 bits, round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ u16 float_to_bf16_rne(float f) {
  const u32 bits = __float_as_uint(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return u16((bits >> 16) | 0x0040u);
  const u32 rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return u16((bits + rounding) >> 16);
}

__device__ __forceinline__ float bf16_to_float(u32 bits16) {
  return __uint_as_float(bits16 << 16);
}

// 2^n for n in [-127, 127], exactly (2^-127 is an FP32 subnormal).
__device__ __forceinline__ float exact_pow2(int n) {
  return n >= -126 ? __int_as_float((n + 127) << 23) : __int_as_float(0x00400000);
}

// E4M3 (bias 7, no infinities, S.1111.111 is NaN) to float, exactly.
__device__ __forceinline__ float e4m3_to_float(u32 byte) {
  const u32 e = (byte >> 3) & 0xFu, m = byte & 7u;
  float v;
  if (e == 0u)
    v = float(m) * 0.001953125f;  // subnormal: m * 2^-9
  else if (e == 15u && m == 7u)
    v = __int_as_float(0x7FC00000);
  else
    v = __int_as_float(int(((e + 120u) << 23) | (m << 20)));
  return (byte & 0x80u) ? -v : v;
}

// floor(log2(x)) for finite x > 0, subnormals included.
__device__ __forceinline__ int floor_log2(float x) {
  const u32 bits = __float_as_uint(x);
  const int e = int((bits >> 23) & 0xFFu);
  return e ? e - 127 : -118 - int(__clz(bits & 0x7FFFFFu));
}

// OCP MX block scale for E4M3 elements: the UE8M0 code of
// 2^(floor(log2(amax)) - 8), clamped to [0, 254]; an all-zero block gets code 0
// (2^-127). The clamp only matters for blocks whose amax is below 2^-111.
__device__ __forceinline__ u32 mx_e4m3_scale_code(float amax) {
  if (!(amax > 0.0f)) return 0u;
  const int code = floor_log2(amax) - 8 + 127;
  return u32(code < 0 ? 0 : (code > 254 ? 254 : code));
}

// Two floats to two E4M3 bytes (RNE, saturating at +-448): lo -> byte 0, hi -> byte 1.
__device__ __forceinline__ u32 float2_to_e4m3x2(float lo, float hi) {
  u16 packed;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(hi), "f"(lo));
  return packed;
}

// The BF16 image of an MXFP8 element: e4m3 * 2^(code - 127), rounded to BF16
// (exact unless the value is below BF16's subnormal step).
__device__ __forceinline__ u16 mxfp8_to_bf16(u32 e4m3_byte, u32 scale_code) {
  return float_to_bf16_rne(e4m3_to_float(e4m3_byte) * exact_pow2(int(scale_code) - 127));
}

}  // namespace moejit
