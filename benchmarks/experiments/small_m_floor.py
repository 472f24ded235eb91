"""The DRAM floor of the small-M suite on this GPU: how fast can anything read the weight?

    python benchmarks/experiments/small_m_floor.py

For each small-M shape of ANCHORS.md (x (M, K) @ W.t(), W (N, K) bf16) it times, with
triton.testing.do_bench (L2 flushed before each call, as the suite does):
  - torch.mm (cuBLAS) and cutorch_gemm.mm;
  - W.sum(dtype=float32), a plain one-pass read of the same bytes;
  - a device-to-device copy of 1 GiB (the machine's streaming ceiling, read + write counted).
It prints each time's effective bandwidth (W's bytes / time) and what issue 4's 1.2x-cuBLAS
small-M target would need, as a share of the copy ceiling.
"""
import torch
import triton

import cutorch_gemm as cg

SHAPES = [(16, 4096, 4096), (32, 14336, 4096), (64, 4096, 14336), (128, 8192, 8192), (1, 8192, 8192)]


def ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main():
    src = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    t_copy = ms(lambda: dst.copy_(src))
    copy_bw = 2 * src.numel() * 2 / t_copy / 1e9  # TB/s, read + write
    print(f"{torch.cuda.get_device_name()}: 1 GiB device copy {copy_bw:.2f} TB/s (read + write)")
    del src, dst
    print(f"{'M x N x K':>18} {'W MB':>6} | {'cuBLAS us':>9} {'TB/s':>5} | {'ours us':>7} {'TB/s':>5} | "
          f"{'W.sum us':>8} {'TB/s':>5} | 1.2x cuBLAS needs")
    for m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        wb = w.numel() * 2
        t_torch = ms(lambda: torch.mm(x, w.t()))
        t_ours = ms(lambda: cg.mm(x, w.t()))
        t_sum = ms(lambda: w.sum(dtype=torch.float32))
        need = wb / (t_torch / 1.2) / 1e9
        bw = lambda t: wb / t / 1e9
        print(f"{m:>5} x {n:>5} x {k:>5} {wb / 1e6:6.1f} | {t_torch * 1e3:9.1f} {bw(t_torch):5.2f} | "
              f"{t_ours * 1e3:7.1f} {bw(t_ours):5.2f} | {t_sum * 1e3:8.1f} {bw(t_sum):5.2f} | "
              f"{need:.2f} TB/s = {100 * need / copy_bw:.0f}% of the copy ceiling")


if __name__ == "__main__":
    main()
