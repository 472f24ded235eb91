"""The DRAM floor of the small-M suite on this GPU: how fast can anything read the weight?

    python benchmarks/experiments/small_m_floor.py

The small-M suite (M <= 128, N and K 4096-14336; x (M, K) @ W.t(), W (N, K) bf16) is a stream of W from
DRAM: its time is W's bytes over the read bandwidth a kernel reaches after triton.testing.do_bench's L2
flush (which zeroes a 256 MB buffer before every call, so L2 is full of dirty lines). Issue 4 asks 1.2x
cuBLAS there. For each shape this times, with do_bench as benchmarks/bench_gemm.py does:
  - torch.mm (cuBLAS) and cutorch_gemm.mm;
  - the fastest of a Triton read kernel (persistent grid, 16-byte loads, a sum so nothing is dead code)
    swept over block size, warps, programs per SM and the L2 eviction policy;
and prints each time's effective bandwidth (W's bytes / time), what 1.2x cuBLAS would need, and the ratio
cuBLAS / fastest read (what a GEMM that only read W, as fast as that, would reach). Also a device copy of
1 GiB (the machine's streaming ceiling, read + write counted).
"""
import torch
import triton
import triton.language as tl

import cutorch_gemm as cg

SHAPES = [(16, 4096, 4096), (32, 14336, 4096), (64, 4096, 14336), (128, 8192, 8192), (1, 8192, 8192)]


@triton.jit
def _read_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, progs * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        if EVICT:
            v = tl.load(x_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_first")
        else:
            v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc += v.to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))


def ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def fastest_read(w: torch.Tensor):
    """The fastest read variant's time (ms) and its settings."""
    flat = w.reshape(-1)
    sms = torch.cuda.get_device_properties(w.device).multi_processor_count
    out = torch.empty(sms * 32, device=w.device, dtype=torch.float32)
    best = (float("inf"), None)
    for block in (4096, 8192, 16384):
        for warps in (4, 8):
            for per_sm in (4, 8, 16, 32):
                for evict in (False, True):
                    grid = (sms * per_sm,)
                    fn = lambda: _read_sum[grid](flat, out, flat.numel(), BLOCK=block, EVICT=evict,  # noqa: E731
                                                 num_warps=warps)
                    fn()
                    t = ms(fn)
                    if t < best[0]:
                        best = (t, f"block {block}, {warps} warps, {per_sm}/SM, evict_first={evict}")
    return best


def main():
    src = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    t_copy = ms(lambda: dst.copy_(src))
    print(f"{torch.cuda.get_device_name()}: 1 GiB device copy {2 * src.numel() * 2 / t_copy / 1e9:.2f} TB/s "
          "(read + write)")
    del src, dst
    print(f"{'M x N x K':>18} {'W MB':>6} | {'cuBLAS us':>9} {'TB/s':>5} | {'ours us':>7} {'TB/s':>5} | "
          f"{'read us':>7} {'TB/s':>5} | 1.2x cuBLAS needs | cuBLAS / read | fastest read")
    for m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        wb = w.numel() * 2
        t_torch = ms(lambda: torch.mm(x, w.t()))
        t_ours = ms(lambda: cg.mm(x, w.t()))
        t_read, how = fastest_read(w)
        bw = lambda t: wb / t / 1e9  # noqa: E731
        need = t_torch / 1.2
        print(f"{m:>5} x {n:>5} x {k:>5} {wb / 1e6:6.1f} | {t_torch * 1e3:9.1f} {bw(t_torch):5.2f} | "
              f"{t_ours * 1e3:7.1f} {bw(t_ours):5.2f} | {t_read * 1e3:7.1f} {bw(t_read):5.2f} | "
              f"{need * 1e3:6.1f} us = {bw(need):.2f} TB/s | {t_torch / t_read:13.3f} | {how}", flush=True)


if __name__ == "__main__":
    main()
