"""The stream schedule's balance under a step-cost table, on the host (no GPU): how far the slowest compute CTA
runs past the mean when the shares are cut by one table of step costs (AtomSm90Fp8::kStepCost) and the steps
take the time of another (the K-loops' SASS instructions a step, tests/sass). Uniform routing, B tokens of k
distinct experts each; token tiles of tile_n rows (class 0: <= 8 rows, class 1: 9-16); items of 6 64-row tiles
weighted (tiles + 3) as PhaseShape::w_full / w_last; each phase cut on its own, as moe_schedule.cuh does.

  python3 step_cost_model.py     # GLM5.2 and DSV4.1-Flash at B = 16-256, main's table and the SASS's
"""
import random
import statistics


def finish_times(batch, experts, top_k, hidden, inter, share_cost, true_cost, seed, grid=132, tile_n=16):
    rnd = random.Random(seed)
    count = [0] * experts
    for _ in range(batch):
        for e in rnd.sample(range(experts), top_k):
            count[e] += 1
    classes = []  # a class per token tile, in expert order (the step list's order)
    for n in count:
        while n > 0:
            rows = min(n, tile_n)
            classes.append(0 if rows <= 8 else 1)
            n -= rows
    total = [0.0] * grid
    for phase in (0, 1):
        rows64 = 2 * inter // 64 if phase == 0 else hidden // 64
        kb = hidden // 128 if phase == 0 else inter // 128
        items = -(-rows64 // 6)
        rest = rows64 - 6 * (items - 1)
        steps = [(share_cost[phase][c] * w, true_cost[phase][c] * w)
                 for c in classes for item in range(items) for w in [(6 if item < items - 1 else rest) + 3]
                 for _ in range(kb)]
        whole = sum(s for s, _ in steps)
        at = 0
        for share, true in steps:  # CTA b takes the steps whose cost prefix starts in [C b / G, C (b + 1) / G)
            total[min(grid - 1, at * grid // whole)] += true
            at += share
    return total


SASS = ((265, 333), (270, 333))  # instructions a K128 step: GEMM1 split N = 8 / 16 in the token frame; GEMM2
TABLES = {"main (24:32, 20:26)": ((24, 32), (20, 26)), "SASS (20:25, 17:21)": ((20, 25), (17, 21))}
MODELS = {"glm5.2": (256, 8, 6144, 2048), "dsv4.1-flash": (384, 6, 5120, 2304)}

if __name__ == "__main__":
    for model, dims in MODELS.items():
        for batch in (16, 32, 64, 128, 256):
            for name, table in TABLES.items():
                ratios = []
                for seed in range(4):
                    t = finish_times(batch, *dims, table, SASS, seed)
                    ratios.append(max(t) / statistics.mean(t))
                print(f"{model:13} B = {batch:3}  shares by {name}: slowest CTA / mean {min(ratios):.3f}-{max(ratios):.3f}")
