"""Our mm against torch.mm over a list of shapes, with the config and split the dispatcher picks.

    python benchmarks/experiments/shape_sweep.py 512x1024x4096,256x1536x8960,512x512x512

bf16, nn.Linear operands (x row-major, W.t()), the rotating input sets and do_bench timing of
benchmarks/bench_gemm.py, three interleaved rounds, medians. Set CUTORCH_GEMM_* variables to see
what a forced config or rule does (dense_ab.py compares several in one run).
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _make_sets, _rotating, time_ms  # noqa: E402


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
    for m, n, k in shapes:
        sets = _make_sets(m, n, k, torch.bfloat16, False)
        fns = {"torch": _rotating(torch.mm, sets), "ours": _rotating(cg.mm, sets)}
        times = {name: [] for name in fns}
        for r in range(3):
            for name in (["torch", "ours"] if r % 2 == 0 else ["ours", "torch"]):
                times[name].append(time_ms(fns[name], warmup_ms=10, rep_ms=30))
        e = cg.explain("mm", sets[0][0], sets[0][1])
        t_torch, t_ours = statistics.median(times["torch"]), statistics.median(times["ours"])
        print(f"{m}x{n}x{k}: torch {t_torch * 1e3:8.1f} us ours {t_ours * 1e3:8.1f} us ratio {t_torch / t_ours:.3f}  "
              f"{e.config} x{e.splits}", flush=True)
        del sets


if __name__ == "__main__":
    main()
