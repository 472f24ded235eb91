"""Small-M GEMMs after an L2 flush that leaves L2 dirty (do_bench's memset) or clean.

    python benchmarks/experiments/small_m_flush.py [MxNxK ...]
    VARS="def;CUTORCH_GEMM_L2_HINT=off;CUTORCH_GEMM_SKINNY=sm80" python benchmarks/experiments/small_m_flush.py

triton.testing.do_bench flushes L2 before each call by zeroing a 256 MB buffer, so the weight that a
small-M GEMM streams from DRAM evicts dirty lines, whose write-backs compete with it for DRAM
bandwidth. This times each call (CUDA events, median of REPS single calls) after either flush:
  dirty: the 256 MB memset alone (as do_bench);
  clean: the memset, then a sum over another 256 MB buffer (the zeros are written back during the
         flush, and L2 is left holding clean lines).
Rows: cuBLAS (torch.mm), our variants (VARS: "def" or VAR=value[+VAR=value]), and a one-pass Triton
read of W without and with the L2 evict-first policy. ROUNDS interleaved rounds; medians.
"""
import os
import statistics
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402


@triton.jit
def _read(w_ptr, out_ptr, n_elem, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid * BLOCK, n_elem, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(w_ptr + offs, mask=offs < n_elem, other=0.0, eviction_policy=EVICT).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))


SHAPES = [(16, 4096, 4096), (32, 14336, 4096), (64, 4096, 14336), (128, 8192, 8192), (1, 8192, 8192)]
REPS = int(os.environ.get("REPS", "40"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]] or SHAPES
    variants = os.environ.get("VARS", "def;CUTORCH_GEMM_L2_HINT=off").split(";")
    env_of = lambda v: dict(p.split("=", 1) for p in v.split("+") if "=" in p)  # noqa: E731
    keys = {k for v in variants for k in env_of(v)}
    scratch = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")  # 256 MB
    clean = torch.ones_like(scratch)
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    part = torch.empty(4 * sms, device="cuda")

    def timed(fn, mode):
        for _ in range(3):
            fn()
        ts = []
        for _ in range(REPS):
            scratch.zero_()
            if mode == "clean":
                sink.copy_(clean.sum())
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) * 1e3)
        return statistics.median(ts)

    def ours(v, x, w):
        def f():
            for k in keys:
                os.environ.pop(k, None)
            os.environ.update(env_of(v))
            return cg.mm(x, w.t())
        return f

    print(f"{torch.cuda.get_device_name()}; us per call; ratio = cuBLAS / ours")
    for m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        fns = {"cuBLAS": lambda: torch.mm(x, w.t())}
        fns.update({v: ours(v, x, w) for v in variants})
        fns["read"] = lambda: _read[(4 * sms,)](w, part, w.numel(), BLOCK=4096, EVICT="", num_warps=8)
        fns["read_ef"] = lambda: _read[(4 * sms,)](w, part, w.numel(), BLOCK=4096, EVICT="evict_first", num_warps=8)
        for mode in ("dirty", "clean"):
            t = {name: [] for name in fns}
            for r in range(ROUNDS):
                names = list(fns)
                for i in range(len(names)):
                    name = names[(r + i) % len(names)]
                    t[name].append(timed(fns[name], mode))
            for kk in keys:
                os.environ.pop(kk, None)
            med = {name: statistics.median(v) for name, v in t.items()}
            cells = [f"cuBLAS {med['cuBLAS']:.1f}"] + [f"{v} {med[v]:.1f} ({med['cuBLAS'] / med[v]:.3f})"
                                                         for v in variants]
            cells += [f"read {med['read']:.1f}", f"read_ef {med['read_ef']:.1f}"]
            print(f"{m}x{n}x{k} {w.numel() * 2 / 1e6:.0f} MB {mode}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
