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

}  // namespace moejit
