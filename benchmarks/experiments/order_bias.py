"""Does a callable's position in an interleaved round change its time? (A/A and A/B controls)

    SHAPES=8192x14336x4096,4096x4096x4096 ROUNDS=8 python benchmarks/experiments/order_bias.py

For each shape (bf16, nn.Linear operands, rotating sets as bench_gemm times them) three pairs are
timed in ROUNDS rounds the way ``bench_gemm.time_interleaved`` does (each round times both, the
first one alternating): torch.mm against itself, our mm against itself, and torch.mm against ours.
Printed per pair: the median time of each side in the rounds it went first and in the rounds it
went second, the A/A ratio (1.0 unless the position matters), and the A/B ratio three ways: the
suite's 3-round median, the median over all rounds, and the median of per-round ratios.
CHECK=n: instead, n calls of ``bench_gemm.time_interleaved`` itself (settling run, balanced rounds) per pair,
printing each call's A/A and A/B ratios (the A/A ones should read 1.00 within the run-to-run spread).
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _make_sets, _rotating, time_interleaved, time_ms  # noqa: E402


def rounds_of(fa, fb, rounds):
    """Per round: (time of a, time of b, a went first)."""
    out = []
    for r in range(rounds):
        first_a = r % 2 == 0
        if first_a:
            ta = time_ms(fa, warmup_ms=10, rep_ms=100 / 3)
            tb = time_ms(fb, warmup_ms=10, rep_ms=100 / 3)
        else:
            tb = time_ms(fb, warmup_ms=10, rep_ms=100 / 3)
            ta = time_ms(fa, warmup_ms=10, rep_ms=100 / 3)
        out.append((ta, tb, first_a))
    return out


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in os.environ.get(
        "SHAPES", "8192x14336x4096,16384x8192x8192,4096x28672x8192,8192x4096x4096,4096x4096x4096").split(",")]
    rounds = int(os.environ.get("ROUNDS", "8"))
    check = int(os.environ.get("CHECK", "0"))
    med = statistics.median
    for m, n, k in shapes:
        sets = _make_sets(m, n, k, torch.bfloat16, False)
        t = _rotating(torch.mm, sets)
        t2 = _rotating(torch.mm, sets)
        o = _rotating(cg.mm, sets)
        o2 = _rotating(cg.mm, sets)
        print(f"== {m}x{n}x{k}")
        if check:
            for name, fa, fb in (("torch/torch", t, t2), ("ours/ours", o, o2), ("torch/ours", t, o)):
                r = [time_interleaved({"a": fa, "b": fb}) for _ in range(check)]
                ratios = " ".join(f"{x['a'] / x['b']:.3f}" for x in r)
                print(f"  {name:12s} time_interleaved a/b: {ratios}", flush=True)
            del sets, t, t2, o, o2
            torch.cuda.empty_cache()
            continue
        for name, fa, fb in (("torch/torch", t, t2), ("ours/ours", o, o2), ("torch/ours", t, o)):
            rs = rounds_of(fa, fb, rounds)
            a1 = med([a for a, b, f in rs if f]); a2 = med([a for a, b, f in rs if not f])
            b1 = med([b for a, b, f in rs if not f]); b2 = med([b for a, b, f in rs if f])
            suite3 = med([a for a, _, _ in rs[:3]]) / med([b for _, b, _ in rs[:3]])
            allr = med([a for a, _, _ in rs]) / med([b for _, b, _ in rs])
            perr = med([a / b for a, b, _ in rs])
            print(f"  {name:12s} a first {a1:.4f} second {a2:.4f} | b first {b1:.4f} second {b2:.4f} ms"
                  f" | ratio a/b: 3-round {suite3:.3f} all {allr:.3f} per-round {perr:.3f}"
                  f" | per round {' '.join(f'{a / b:.3f}' for a, b, _ in rs)}", flush=True)
        del sets, t, t2, o, o2
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
