"""Host time of a warm forward through the Python package (issue 13,
acceptance 5), beside the C++ figure of moejit_bench_runtime.

    python3 bench/python_overhead.py [--calls 5000] [--json]

Per call: time.perf_counter around `layer(...)` (the direct call, with out=
given) and around `torch.ops.moejit.moe` (the custom op, which allocates its
output), after warm-up, on torch's current stream; the GPU work is queued, not
waited for (a sync every 256 calls keeps the queue short). Prints p50 and p99.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

import moejit
from moejit import torch_ops
from moejit.mx import quantize_mxfp8


def percentiles(samples):
    s = sorted(samples)
    return {"p50_us": 1e6 * s[len(s) // 2], "p99_us": 1e6 * s[int(len(s) * 0.99)], "mean_us": 1e6 * statistics.mean(s)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    config = moejit.config({"name": "overhead", "experts": 16, "top_k": 4, "hidden": 1024, "intermediate": 512})
    w = {n: (torch.randint(0, 256, s, dtype=torch.uint8) if n.startswith("w")
             else torch.randint(118, 123, s, dtype=torch.uint8)).cuda()
         for n, s in moejit.weight_shapes(config).items()}
    layer = moejit.MoeLayer(config, **w)
    b, h, k = args.batch, config["hidden"], config["top_k"]
    x_q, x_s = quantize_mxfp8(torch.randn(b, h, device="cuda").to(torch.bfloat16))
    ids = torch.randint(0, config["experts"], (b, k), dtype=torch.int32, device="cuda")
    tw = torch.full((b, k), 1.0 / k, dtype=torch.float32, device="cuda")
    y = torch.empty(b, h, dtype=torch.bfloat16, device="cuda")
    handle = torch_ops.register(layer)
    results = {}
    for name, call in (("direct", lambda: layer(x_q, ids, tw, y, x_scales=x_s)),
                       ("torch.ops.moejit.moe", lambda: torch.ops.moejit.moe(handle, x_q, x_s, ids, tw))):
        for _ in range(200):
            call()
        torch.cuda.synchronize()
        samples = []
        for i in range(args.calls):
            t0 = time.perf_counter()
            call()
            samples.append(time.perf_counter() - t0)
            if i % 256 == 255:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        results[name] = percentiles(samples)
    results["device"] = torch.cuda.get_device_name()
    results["calls"] = args.calls
    results["torch"] = torch.__version__
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name in ("direct", "torch.ops.moejit.moe"):
            r = results[name]
            print(f"{name:22s} host time per warm forward: p50 {r['p50_us']:.1f} us, p99 {r['p99_us']:.1f} us "
                  f"(mean {r['mean_us']:.1f} us, {args.calls} calls, B = {b})")


if __name__ == "__main__":
    main()
