"""Dense mm A/B: the default launch against env-forced variants, interleaved with torch.mm.

    SHAPES=4096x4096x512,8192x14336x4096 VARS="def;CUTORCH_GEMM_SM90_DEFER=off" \
        python benchmarks/experiments/dense_ab.py

bf16, nn.Linear operands (x row-major, W.t()), rotating input sets as benchmarks/bench_gemm.py
times them. A variant is "def" (no variable set) or VAR=value[+VAR=value...]; every variable a
variant names is cleared before each call of the others. ROUNDS rounds (default 5), each timing
every function once in a rotated order; prints the median ratio to torch.mm of each variant and its
per-round range.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _make_sets, _rotating, time_ms  # noqa: E402


def env_of(variant):
    """The variables a variant sets ("def": none)."""
    return dict(part.split("=", 1) for part in variant.split("+") if "=" in part)


def main():
    shapes = [tuple(map(int, s.split("x")))
              for s in os.environ.get("SHAPES", "4096x4096x512,8192x14336x4096,4096x4096x4096").split(",")]
    variants = os.environ.get("VARS", "def;CUTORCH_GEMM_SM90_DEFER=off").split(";")
    rounds = int(os.environ.get("ROUNDS", "5"))
    keys = {k for v in variants for k in env_of(v)}

    def ours(variant):
        env = env_of(variant)

        def f(x, b):
            for k in keys:
                os.environ.pop(k, None)
            os.environ.update(env)
            return cg.mm(x, b)
        return f

    for m, n, k in shapes:
        sets = _make_sets(m, n, k, torch.bfloat16, False)
        fns = {"torch": _rotating(torch.mm, sets)}
        for v in variants:
            fns[v] = _rotating(ours(v), sets)
        names = list(fns)
        times = {name: [] for name in names}
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(r + i) % len(names)]
                times[name].append(time_ms(fns[name], warmup_ms=10, rep_ms=30))
        gflop = 2 * m * n * k / 1e9
        t_torch = statistics.median(times["torch"])
        line = f"{m}x{n}x{k}: torch {gflop / t_torch:.0f} TF/s"
        for v in variants:
            per_round = [a / b for a, b in zip(times["torch"], times[v])]
            line += (f" | {v[-12:]} {t_torch / statistics.median(times[v]):.3f}"
                     f" ({min(per_round):.3f}-{max(per_round):.3f})")
        print(line, flush=True)
        for key in keys:
            os.environ.pop(key, None)
        del sets


if __name__ == "__main__":
    main()
