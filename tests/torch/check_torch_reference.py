"""The example's torch reference (examples/torch_moe_block.py) and moejit.mx
against the C++ oracle, on the CPU: the GPU tests hold moejit to that torch
reference, so it must be the operator's semantics, bit for bit.

    python3 tests/torch/check_torch_reference.py ORACLE_DUMP SCRATCH_DIR

Exit 77 (skipped) without torch or the moejit package.
"""

import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import moejit
    from moejit.mx import quantize_mxfp8
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import torch_moe_block as ex  # noqa: E402

oracle, scratch = sys.argv[1], sys.argv[2]
os.makedirs(scratch, exist_ok=True)
failures = 0
for seed, (e, k, h, i, b) in enumerate([(8, 2, 512, 256, 7), (16, 4, 1024, 512, 33), (4, 4, 512, 768, 64)]):
    cfg = moejit.config({"name": "xcheck", "experts": e, "top_k": k, "hidden": h, "intermediate": i})
    w = ex.random_checkpoint(cfg, seed, device="cpu")
    g = torch.Generator().manual_seed(100 + seed)
    hidden = (torch.randn(b, h, generator=g) * 2.0).to(torch.bfloat16)
    x_q, x_s = quantize_mxfp8(hidden)
    ids = torch.randint(0, e, (b, k), generator=g, dtype=torch.int32)
    tw = torch.rand(b, k, generator=g, dtype=torch.float32)
    # x over 40 octaves, for the quantizer.
    wide = torch.randn(b, h, generator=g, dtype=torch.float64) * torch.exp2(
        torch.randint(-20, 20, (b, h), generator=g).double())
    wide = wide.to(torch.bfloat16).float()
    files = {"dims": np.array([e, k, h, i, b], np.int32), "xq": x_q.view(torch.uint8).numpy(),
             "xs": x_s.contiguous().view(torch.uint8).numpy(), "ids": ids.numpy(), "tw": tw.numpy(),
             "x": wide.numpy().astype(np.float32)}
    files.update({n: w[n].numpy() for n in ("w1", "s1", "w2", "s2")})
    for name, array in files.items():
        array.tofile(os.path.join(scratch, f"{name}.bin"))
    subprocess.run([oracle, scratch], check=True)
    y_oracle = torch.from_numpy(np.fromfile(os.path.join(scratch, "y.bin"), np.uint16).astype(np.int16))
    y_torch = ex.reference_experts(cfg, w, x_q, x_s, ids, tw).view(torch.int16).flatten()
    differ = int((y_oracle != y_torch).sum())
    q, s = quantize_mxfp8(wide)
    q_ok = bool((q.view(torch.uint8).numpy().ravel() == np.fromfile(os.path.join(scratch, "xq_oracle.bin"),
                                                                    np.uint8)).all())
    s_ok = bool((s.contiguous().view(torch.uint8).numpy().ravel() == np.fromfile(
        os.path.join(scratch, "xs_oracle.bin"), np.uint8)).all())
    print(f"E={e} k={k} H={h} I={i} B={b}: reference_experts differs from the oracle in {differ} of "
          f"{y_torch.numel()} outputs; quantize_mxfp8 elements {'equal' if q_ok else 'DIFFER'}, "
          f"scales {'equal' if s_ok else 'DIFFER'}")
    failures += differ != 0 or not q_ok or not s_ok
sys.exit(1 if failures else 0)
