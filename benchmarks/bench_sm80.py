"""The Ampere-class path (cp.async + ldmatrix + mma.sync) forced on the current GPU
(CUTORCH_GEMM_ARCH=sm80), against PyTorch's own kernel for the same call in the same run:
fp16/bf16 (cuBLAS), tf32 (cuBLAS tf32), fp64 (cuBLAS dgemm), int8 (torch._int_mm), and split-K
on/off for a small output with a long K (TFLOP/s columns are TOPS for int8).

    python benchmarks/bench_sm80.py [--quick] [--out results]

On a Hopper GPU cuBLAS uses wgmma, which mma.sync cannot match; on an A100 this path is the
fast one. Times are ``bench_gemm.time_interleaved`` medians: an untimed settling run, then rounds
that alternate which side starts (until the thirty-third session each side was timed once, ours
first, right after its operands were drawn: the cold-clock slot). Writes results/bench_sm80.csv and
prints a table last.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_gemm import time_interleaved, write_csv  # noqa: E402

# (label, dtype, M, N, K, in quick mode)
CASES = [
    ("bf16", torch.bfloat16, 4096, 4096, 4096, True),
    ("fp16", torch.float16, 4096, 4096, 4096, True),
    ("bf16", torch.bfloat16, 8192, 14336, 4096, False),
    ("fp16", torch.float16, 8192, 14336, 4096, False),
    ("tf32", torch.float32, 4096, 4096, 4096, True),
    ("fp64", torch.float64, 4096, 4096, 4096, True),
    ("int8", torch.int8, 8192, 8192, 8192, True),
]
SPLIT_CASES = [("fp16", torch.float16, 512, 512, 16384), ("bf16", torch.bfloat16, 256, 1024, 16384),
               ("fp64", torch.float64, 256, 256, 16384)]
FIELDS = ["case", "dtype", "M", "N", "K", "ours_ms", "torch_ms", "ours_tflops", "torch_tflops", "ratio",
          "rel_err", "config"]


class _env:
    """Sets environment variables for the duration of a block (the binding reads them per call)."""

    def __init__(self, **kv):
        self.kv, self.old = kv, {}

    def __enter__(self):
        for k, v in self.kv.items():
            self.old[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _forced(fn, **env):
    """``fn`` run with ``env`` set (the binding reads the variables at every call)."""
    def call():
        with _env(**env):
            return fn()
    return call


def _operands(dtype, M, N, K):
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (M, K), device="cuda", dtype=dtype)
        w = torch.randint(-128, 128, (N, K), device="cuda", dtype=dtype)
        return a, w.t()
    a = torch.randn(M, K, device="cuda").to(dtype)
    w = torch.randn(N, K, device="cuda").to(dtype)
    return a, w.t()  # nn.Linear layout: b is a K-major view


def _rel(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30))


def run(quick: bool = False, out_dir: str = "results") -> list:
    if not torch.cuda.is_available():
        print("bench_sm80: no CUDA GPU here; nothing measured")
        return []
    import cutorch_gemm as cg

    rows = []
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for label, dtype, M, N, K, in_quick in CASES:
            if quick and not in_quick:
                continue
            torch.backends.cuda.matmul.allow_tf32 = label == "tf32"
            a, b = _operands(dtype, M, N, K)
            with _env(CUTORCH_GEMM_ARCH="sm80"):
                e = cg.explain("mm", a, b)
                out = cg.mm(a, b)
            torch_fn = torch._int_mm if dtype == torch.int8 else torch.mm  # int8: int32 result
            t = time_interleaved({"ours": _forced(lambda: cg.mm(a, b), CUTORCH_GEMM_ARCH="sm80"),
                                  "torch": lambda: torch_fn(a, b)})
            ours, theirs = t["ours"], t["torch"]
            flops = 2.0 * M * N * K
            rows.append(dict(case="dense", dtype=label, M=M, N=N, K=K, ours_ms=ours, torch_ms=theirs,
                             ours_tflops=flops / ours / 1e9, torch_tflops=flops / theirs / 1e9,
                             ratio=theirs / ours, rel_err=_rel(out, torch_fn(a, b)), config=e.config))
            del a, b, out
        torch.backends.cuda.matmul.allow_tf32 = False
        for label, dtype, M, N, K in SPLIT_CASES:
            a, b = _operands(dtype, M, N, K)
            with _env(CUTORCH_GEMM_ARCH="sm80"):
                e = cg.explain("mm", a, b)
                out = cg.mm(a, b)
            t = time_interleaved({"split": _forced(lambda: cg.mm(a, b), CUTORCH_GEMM_ARCH="sm80"),
                                  "nosplit": _forced(lambda: cg.mm(a, b), CUTORCH_GEMM_ARCH="sm80",
                                                     CUTORCH_GEMM_SPLIT_K="none"),
                                  "torch": lambda: torch.mm(a, b)})
            split, nosplit, theirs = t["split"], t["nosplit"], t["torch"]
            flops = 2.0 * M * N * K
            rows.append(dict(case="split-K vs none", dtype=label, M=M, N=N, K=K, ours_ms=split, torch_ms=nosplit,
                             ours_tflops=flops / split / 1e9, torch_tflops=flops / nosplit / 1e9,
                             ratio=nosplit / split, rel_err=_rel(out, torch.mm(a, b)),
                             config=f"{e.config} x{e.splits}"))
            rows.append(dict(case="split-K vs torch", dtype=label, M=M, N=N, K=K, ours_ms=split, torch_ms=theirs,
                             ours_tflops=flops / split / 1e9, torch_tflops=flops / theirs / 1e9,
                             ratio=theirs / split, rel_err=float("nan"), config=f"{e.config} x{e.splits}"))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    os.makedirs(out_dir, exist_ok=True)
    write_csv(rows, os.path.join(out_dir, "bench_sm80.csv"), fields=FIELDS)
    print(f"bench_sm80: {torch.cuda.get_device_name()}, torch {torch.__version__}; "
          "ratio = other / ours (>1: ours faster); 'other' is torch.mm, or sm80 without split-K")
    print(f"{'case':18s} {'dtype':5s} {'M':>6s} {'N':>6s} {'K':>6s} {'ours TF/s':>10s} {'other TF/s':>10s} "
          f"{'ratio':>6s} {'rel err':>8s}  config")
    for r in rows:
        print(f"{r['case']:18s} {r['dtype']:5s} {r['M']:6d} {r['N']:6d} {r['K']:6d} {r['ours_tflops']:10.1f} "
              f"{r['torch_tflops']:10.1f} {r['ratio']:6.3f} {r['rel_err']:8.1e}  {r['config']}")
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="results")
    args = p.parse_args(argv)
    run(args.quick, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
