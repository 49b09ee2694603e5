"""moejit in a PyTorch MoE block, the way an engine drops it in:

    hidden [B, H] -> router -> softmax -> top-k -> renormalize
                  -> moejit (MXFP4 experts, MXFP8 activations) -> y [B, H]

beside a plain torch implementation of the same block with the operator's
exact semantics (reference_experts), and a check of one against the other.

    python3 examples/torch_moe_block.py [--batch 8] [--experts 16 --top-k 4 --hidden 1024 --intermediate 512]

Needs a Hopper GPU (sm_90a), torch and the moejit package (pip install .).
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict

import torch

import moejit
from moejit import torch_ops  # registers torch.ops.moejit.moe
from moejit.mx import block_scale_codes, dequantize_mxfp4, dequantize_mxfp8, quantize_mxfp8, to_e4m3


def random_checkpoint(config: Dict, seed: int, device: str = "cuda") -> Dict[str, torch.Tensor]:
    """MXFP4 expert weights as a checkpoint holds them: random E2M1 nibbles and
    UE8M0 codes around 2^-6 (so that the layer's activations stay O(1))."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    shapes = moejit.weight_shapes(config)
    out = {}
    for name, shape in shapes.items():
        if name.startswith("w"):
            out[name] = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
        else:
            out[name] = torch.randint(118, 124, shape, generator=g, dtype=torch.uint8)
    return {k: v.to(device) for k, v in out.items()}


def bf16(v: torch.Tensor) -> torch.Tensor:
    """float64 rounded once to BF16's grid, to nearest even (a cast through float32 would round twice)."""
    a = v.abs()
    e = (torch.frexp(torch.where(a > 0, a, torch.ones_like(a)))[1] - 1).clamp(min=-126)
    quantum = torch.exp2((e - 7).to(torch.float64))
    return torch.where(a > 0, torch.round(v / quantum) * quantum, v)


def reference_experts(config: Dict, w: Dict[str, torch.Tensor], x_q: torch.Tensor, x_scales: torch.Tensor,
                      topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    """The layer's semantics in float64 torch, written from README/DESIGN, not from moejit's code:
    g, u = W1_gate/up(e) x; g' = bf16(min(g, c)), u' = bf16(clamp(u, -c, c));
    a = w_tj g' sigmoid(g') u'; a_q = bf16 image of MXFP8(a) per 32 along I;
    slot = bf16(W2(e) a_q); y = bf16(sum_j slot_j in fp32)."""
    b, k = topk_ids.shape
    h, i_dim = config["hidden"], config["intermediate"]
    clamp = config["swiglu_clamp"]
    c = float("inf") if clamp is None else float(torch.tensor(clamp).to(torch.bfloat16))
    x = dequantize_mxfp8(x_q, x_scales)
    slots = torch.zeros((b, k, h), dtype=torch.float64, device=x.device)
    for e in torch.unique(topk_ids).tolist():
        tok, j = (topk_ids == e).nonzero(as_tuple=True)
        w1 = dequantize_mxfp4(w["w1"][e], w["s1"][e])  # [2I, H]
        gu = x[tok] @ w1.T
        g = bf16(gu[:, :i_dim].clamp(max=c))
        u = bf16(gu[:, i_dim:].clamp(-c, c))
        a = topk_weights[tok, j].to(torch.float64).unsqueeze(1) * (g * torch.sigmoid(g) * u)
        blocks = a.reshape(-1, i_dim // 32, 32)
        codes = block_scale_codes(blocks.abs().amax(dim=2), 8).to(torch.float64).unsqueeze(2)
        a_q = bf16(to_e4m3(blocks * torch.exp2(127 - codes)).to(torch.float64) * torch.exp2(codes - 127))
        w2 = dequantize_mxfp4(w["w2"][e], w["s2"][e])  # [H, I]
        slots[tok, j] = bf16(a_q.reshape(-1, i_dim) @ w2.T)
    y = torch.zeros((b, h), dtype=torch.float32, device=x.device)
    for j in range(k):  # fp32, in slot order
        y = y + slots[:, j].to(torch.float32)
    return y.to(torch.bfloat16)


class MoeBlock(torch.nn.Module):
    """Router + top-k + moejit experts."""

    def __init__(self, config: Dict, weights: Dict[str, torch.Tensor], seed: int, **options) -> None:
        super().__init__()
        self.config = config
        self.top_k = config["top_k"]
        g = torch.Generator(device="cpu").manual_seed(seed ^ 0x5EED)
        router = torch.randn(config["experts"], config["hidden"], generator=g) * config["hidden"] ** -0.5
        self.router = torch.nn.Parameter(router.to(torch.bfloat16).cuda(), requires_grad=False)
        self.experts = moejit.MoeLayer(config, weights["w1"], weights["s1"], weights["w2"], weights["s2"], **options)
        self.handle = torch_ops.register(self.experts)  # an int the compiled graph carries

    def route(self, hidden: torch.Tensor):
        logits = hidden @ self.router.T
        weights, ids = torch.topk(torch.softmax(logits.float(), dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return ids.to(torch.int32), weights.to(torch.float32)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        ids, weights = self.route(hidden)
        x_q, x_scales = quantize_mxfp8(hidden)
        return torch.ops.moejit.moe(self.handle, x_q, x_scales, ids, weights)


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.to(torch.float64).flatten(), b.to(torch.float64).flatten()
    return float((a @ b) / (a.norm() * b.norm()))


def check(config: Dict, batch: int, seed: int = 1) -> float:
    """The block's output against reference_experts on the same routing; returns the cosine."""
    weights = random_checkpoint(config, seed)
    block = MoeBlock(config, weights, seed)
    hidden = torch.randn(batch, config["hidden"], generator=torch.Generator().manual_seed(seed + 1)).to(
        torch.bfloat16).cuda()
    y = block(hidden)
    ids, topk_weights = block.route(hidden)
    x_q, x_scales = quantize_mxfp8(hidden)
    want = reference_experts(block.config, weights, x_q, x_scales, ids, topk_weights)
    torch.cuda.synchronize()
    if not torch.isfinite(y.float()).all():
        raise SystemExit("moejit's output holds NaN or Inf")
    return cosine(y, want)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--experts", type=int, default=16)
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--intermediate", type=int, default=512)
    args = ap.parse_args()
    config = moejit.config({"name": "example", "experts": args.experts, "top_k": args.top_k, "hidden": args.hidden,
                            "intermediate": args.intermediate})
    c = check(config, args.batch)
    print(f"moejit block vs torch reference, B = {args.batch}: cosine {c:.7f} (bar 0.99999)")
    return 0 if c >= 0.99999 else 1


if __name__ == "__main__":
    sys.exit(main())
