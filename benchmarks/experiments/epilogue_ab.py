"""Epilogue A/B: our bias / activation epilogues against our plain mm and torch._addmm_activation,
interleaved, with env-forced variants.

    SHAPES=8192x14336x4096,4096x4096x4096 ROUNDS=21 \
    VARS="none;gelu_tanh;none|CUTORCH_GEMM_SM90_BIAS_EARLY=off;gelu_tanh|CUTORCH_GEMM_SM90_BIAS_EARLY=off" \
        python benchmarks/experiments/epilogue_ab.py

bf16, nn.Linear operands with a bias (benchmarks/bench_gemm.py's rotating input sets). A variant is
"<activation>[|VAR=value[+VAR=value...]]": cg.gemm(x, w.t(), bias=bias, activation=<activation>) with those
variables set ("none": bias only); every variable a variant names is cleared before each call of the others.
Our plain cg.mm and torch._addmm_activation(bias, x, w.t(), use_gelu=True) run in every round. Each round
times every function once, in a rotated order; prints medians, the ratio to torch._addmm_activation and the
cost over our plain mm.
"""
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _make_sets, _rotating, time_interleaved, time_ms  # noqa: E402


def parse(variant):
    act, _, env = variant.partition("|")
    return act, dict(part.split("=", 1) for part in env.split("+") if "=" in part)


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in
              os.environ.get("SHAPES", "8192x14336x4096,4096x4096x4096,2048x11008x4096").split(",")]
    variants = os.environ.get("VARS", "none;gelu_tanh").split(";")
    rounds = int(os.environ.get("ROUNDS", "7"))
    keys = {k for v in variants for k in parse(v)[1]}

    def ours(act, env):
        def f(x, b, bias):
            for k in keys:
                os.environ.pop(k, None)
            os.environ.update(env)
            return cg.mm(x, b) if act is None else cg.gemm(x, b, bias=bias, activation=act)
        return f

    for m, n, k in shapes:
        sets = _make_sets(m, n, k, torch.bfloat16, True)
        fns = {"addmm_act": _rotating(lambda x, b, bias: torch._addmm_activation(bias, x, b, use_gelu=True), sets),
               "mm": _rotating(ours(None, {}), sets)}
        for v in variants:
            fns[v] = _rotating(ours(*parse(v)), sets)
        med = time_interleaved(fns, rounds, timer=lambda f: time_ms(f, warmup_ms=10, rep_ms=40))
        for key in keys:
            os.environ.pop(key, None)
        print(f"{m}x{n}x{k}: torch._addmm_activation {med['addmm_act'] * 1e3:.1f} us, our mm {med['mm'] * 1e3:.1f} us")
        for v in variants:
            print(f"   {v:60s} {med[v] * 1e3:8.1f} us  {med['addmm_act'] / med[v]:.3f}x addmm_act  "
                  f"{med[v] / med['mm'] - 1:+.1%} over our mm", flush=True)


if __name__ == "__main__":
    main()
