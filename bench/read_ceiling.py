"""What one H200 reads per second when a kernel only streams HBM: the ceiling
beside the floor of moejit_bench_moe (which counts copy bandwidth, read+write).
CUDA events around repeated launches, warm-up first, median of 20; each buffer
is 4 GiB (far past the L2), rotated across 2 buffers.

  python3 bench/read_ceiling.py           # reads: torch sum over int64; copy: tensor.copy_
"""
import statistics

import torch


def timed(fn, iters=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times)


def main():
    n = 4 << 30
    bufs = [torch.randint(0, 1 << 62, (n // 8,), dtype=torch.int64, device="cuda") for _ in range(2)]
    dst = torch.empty_like(bufs[0])
    i = [0]

    def read():
        i[0] ^= 1
        return bufs[i[0]].sum()

    def copy():
        i[0] ^= 1
        dst.copy_(bufs[i[0]])

    print(f"device {torch.cuda.get_device_name()}")
    t = timed(read)
    print(f"read  (sum of 4 GiB int64): {t * 1e6:9.1f} us  {n / t / 1e9:7.1f} GB/s")
    t = timed(copy)
    print(f"copy  (4 GiB, read+write):  {t * 1e6:9.1f} us  {2 * n / t / 1e9:7.1f} GB/s (read+write)")


if __name__ == "__main__":
    main()
