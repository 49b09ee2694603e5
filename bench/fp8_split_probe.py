# How much does splitting a K32 block's E4M3 activations by magnitude reduce the FP8 tensor-core sum error?
# cuBLAS FP8 GEMM with fast accumulation (no FP32 promotion) at K = 32: one wgmma k32 per output.
import torch
torch.manual_seed(0)
dev = "cuda"
M, N, K = 8192, 256, 32
vals = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float64)
one = torch.tensor(1.0, device=dev)
def mm(a, b):  # a [M, K] e4m3, b [N, K] e4m3 -> [M, N] fp32 sums, as float64 on the host
    return torch._scaled_mm(a.to(dev), b.to(dev).T, one, one, out_dtype=torch.float32, use_fast_accum=True).double().cpu()
def run(spread, label):
    w = vals[torch.randint(0, 8, (N, K))] * (torch.randint(0, 2, (N, K)) * 2 - 1)
    x = torch.randn(M, K, dtype=torch.float64) * torch.exp2(torch.randn(M, K, dtype=torch.float64) * spread)
    amax = x.abs().amax(dim=1, keepdim=True)
    e = torch.floor(torch.log2(amax)) - 8
    xq = (x / torch.exp2(e)).clamp(-448, 448).to(torch.float32).to(torch.float8_e4m3fn)
    wq = w.to(torch.float32).to(torch.float8_e4m3fn)
    exact = xq.double() @ wq.double().T
    rms = (exact ** 2).mean().sqrt().item()
    def err(got):
        d = got - exact
        return (f"rms_err/rms={((d**2).mean().sqrt().item())/rms:.3e} max_err/rms={d.abs().max().item()/rms:.3e} "
                f"frac_inexact={(d != 0).double().mean().item():.4f} nan={torch.isnan(got).sum().item()}")
    print(f"[{label}] single: {err(mm(xq, wq))}", flush=True)
    codes = xq.view(torch.uint8).to(torch.int32) & 0x7F
    xf = xq.float()
    for octaves in (3, 4, 5):
        big = codes >= (0x78 - 8 * octaves)
        xb = torch.where(big, xf, torch.zeros_like(xf)).to(torch.float8_e4m3fn)
        xs = torch.where(big, torch.zeros_like(xf), xf).to(torch.float8_e4m3fn)
        print(f"[{label}] split {octaves} oct, separate sums: {err(mm(xb, wq) + mm(xs, wq))}", flush=True)
        # small first, then large accumulating onto it inside the tensor core (K = 64, [small | large])
        u8 = torch.uint8; f8 = torch.float8_e4m3fn
        chained = mm(torch.cat([xs.view(u8), xb.view(u8)], dim=1).view(f8), torch.cat([wq.view(u8), wq.view(u8)], dim=1).view(f8))
        print(f"[{label}] split {octaves} oct, small then large chained: {err(chained)}", flush=True)
for spread in (0.0, 1.0, 2.0, 4.0):
    run(spread, f"spread {spread}")
