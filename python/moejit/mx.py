"""MX formats in torch: what an engine needs to feed a moejit layer, and to
check one. Needs torch (imported on first use of this module).

- quantize_mxfp8(x): BF16/FP32 [B, H] -> (E4M3 [B, H], int32 scale words
  [B, H/128], or bytes [B, H/32] where H is not a multiple of 128): per 32
  along H, the UE8M0 code is floor(log2(amax)) - 8 + 127
  (OCP MX: the block's largest magnitude lands in E4M3's top binade),
  clamped to [0, 254]; elements round to nearest even and saturate at 448.
  Byte j of a scale word is the code of K32 block j (little-endian).
- dequantize_mxfp4(payload, scales): checkpoint MXFP4 -> float64 (low nibble first).
"""

from __future__ import annotations

from typing import Tuple

import torch

_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _ilogb(a: torch.Tensor) -> torch.Tensor:
    """floor(log2(a)) for a > 0, exactly (frexp: a = m * 2^e with m in [0.5, 1))."""
    return torch.frexp(a)[1] - 1


def block_scale_codes(amax: torch.Tensor, elem_emax: int) -> torch.Tensor:
    """UE8M0 codes (int64) of blocks with these maxima; 0 for an all-zero block."""
    codes = _ilogb(torch.where(amax > 0, amax, torch.ones_like(amax))) - elem_emax + 127
    return torch.where(amax > 0, codes.clamp(0, 254), torch.zeros_like(codes))


def to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """Round to E4M3 (nearest even), saturating at +-448."""
    return v.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


def quantize_mxfp8(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """x [B, H] -> (E4M3 [B, H], scales), the layer's MXFP8 input: the UE8M0 codes as int32 words
    [B, H/128] where H is a multiple of 128, else as bytes [B, H/32]."""
    b, h = x.shape
    # float32 is exact here: a BF16/FP32 block's amax is below 2^128, so codes lie in [0, 246] and the
    # scale 2^(127 - code) is a normal float32, built from its exponent bits (no exp2, whose
    # compiled form may approximate); the product is exact wherever E4M3 can hold it.
    # (float64 would be exact too, but Triton cannot round float64 to E4M3 under torch.compile.)
    blocks = x.to(torch.float32).reshape(b, h // 32, 32)
    codes = block_scale_codes(blocks.abs().amax(dim=2), 8)
    scale = ((254 - codes).to(torch.int32) << 23).view(torch.float32)
    q = to_e4m3(blocks * scale.unsqueeze(2)).reshape(b, h)
    codes = codes.to(torch.uint8).contiguous()
    return q, codes.view(torch.int32) if h % 128 == 0 else codes


def dequantize_mxfp8(x_q: torch.Tensor, x_scales: torch.Tensor) -> torch.Tensor:
    """The float64 values of an MXFP8 [B, H] tensor with its scales (int32 words or bytes)."""
    b, h = x_q.shape
    codes = x_scales.contiguous().view(torch.uint8).reshape(b, h // 32).to(torch.float64)
    return (x_q.to(torch.float64).reshape(b, h // 32, 32) * torch.exp2(codes - 127).unsqueeze(2)).reshape(b, h)


def dequantize_mxfp4(payload: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Checkpoint MXFP4 [..., K/2] bytes + [..., K/32] UE8M0 codes -> float64 [..., K]."""
    lut = torch.tensor(_E2M1, dtype=torch.float64, device=payload.device)
    lo, hi = (payload & 0xF).long(), (payload >> 4).long()
    values = torch.stack((lut[lo], lut[hi]), dim=-1).flatten(-2)  # low nibble first
    k = values.shape[-1]
    blocks = values.reshape(*values.shape[:-1], k // 32, 32)
    return (blocks * torch.exp2(scales.to(torch.float64) - 127).unsqueeze(-1)).reshape(values.shape)
