"""scaled_mm (e4m3, per-tensor scales, bf16 out) against torch._scaled_mm, interleaved (5 rounds per
shape, median), with optional variants of ours: a config name (CUTORCH_GEMM_SM90_CONFIG) or VAR=value.

    python benchmarks/experiments/fp8_interleaved.py [coop192,CUTORCH_GEMM_SM90_EPILOGUE=general]

ROUNDS_OUTER=n repeats the whole table; SHAPES=MxNxK,... replaces the shape list; ROWWISE=1 takes
per-row scale_a and per-column scale_b (fp32 vectors) instead of per-tensor scales. Prints TFLOP/s and,
in parentheses, the ratio to torch.
"""
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import time_interleaved  # noqa: E402

E4 = torch.float8_e4m3fn
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096), (16384, 8192, 8192), (3072, 5120, 1024),
          (64, 8192, 8192)]
ENV = ("CUTORCH_GEMM_SM90_CONFIG", "CUTORCH_GEMM_SM90_EPILOGUE", "CUTORCH_GEMM_SM90_SPLIT_FILL")


def with_env(fn, variant):
    """fn run with the variant's environment (None: the defaults)."""
    def go():
        for v in ENV:
            os.environ.pop(v, None)
        if variant is not None:
            key, val = variant.split("=", 1) if "=" in variant else ("CUTORCH_GEMM_SM90_CONFIG", variant)
            os.environ[key] = val
        return fn()
    return go


def main():
    variants = [v for v in (sys.argv[1].split(",") if len(sys.argv) > 1 else []) if v]
    shapes = SHAPES
    if os.environ.get("SHAPES"):
        shapes = [tuple(int(v) for v in s.split("x")) for s in os.environ["SHAPES"].split(",")]
    for rnd in range(int(os.environ.get("ROUNDS_OUTER", "1"))):
        for m, n, k in shapes:
            x = torch.randn(m, k, device="cuda").to(E4)
            w = torch.randn(n, k, device="cuda").to(E4)
            if os.environ.get("ROWWISE") == "1":
                sa, sb = torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5
            else:
                sa, sb = torch.ones((), device="cuda"), torch.ones((), device="cuda")
            ours = lambda: cg.scaled_mm(x, w.t(), sa, sb, out_dtype=torch.bfloat16)  # noqa: E731
            fns = {"ours": with_env(ours, None)}
            for v in variants:
                fns[v.split("=")[-1]] = with_env(ours, v)
            fns["torch"] = lambda: torch._scaled_mm(x, w.t(), sa, sb, out_dtype=torch.bfloat16)  # noqa: E731
            t = time_interleaved(fns, rounds=5)
            flop = 2 * m * n * k
            print(f"r{rnd} {m}x{n}x{k}: " + "  ".join(f"{name} {flop / ms / 1e9:7.1f} TF/s ({t['torch'] / ms:.3f})"
                                                       for name, ms in t.items()), flush=True)


if __name__ == "__main__":
    main()
