"""grouped_gemm's list API on large expert problems: one launch per problem against one pointer-array launch.

    python benchmarks/experiments/list_launch_ab.py

bench_grouped.py's list cases (the same skewed row counts, replayed from its generator) whose problems fill the
GPU, so the size rule (sm90_ptr_array_pays) gives one launch each. Times, interleaved (bench_timing):
  - loop:  a loop of torch.mm (cuBLAS), the bench's reference;
  - each:  grouped_gemm with CUTORCH_GEMM_GROUPED_PTR=off (one launch per problem, the rule's choice here);
  - ptr:   grouped_gemm with CUTORCH_GEMM_GROUPED_PTR=on (one persistent pointer-array launch);
  - offs:  grouped_mm over the same rows as one 2D x 3D call (what a single grouped launch reaches).
Then each problem alone: our mm against torch.mm (the per-problem launches' ratios).
"""
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_grouped import CASES, ROUTINGS, expert_lists, group_sizes  # noqa: E402
from benchmarks.bench_timing import time_interleaved  # noqa: E402


def replayed_sizes() -> dict:
    """The list cases' row counts as bench_grouped.run draws them (one draw per fwd / dW / swiglu case first)."""
    gen = torch.Generator().manual_seed(0)
    for _, E, T, _, _, _ in CASES:
        for routing in ROUTINGS:
            for _ in range(3):
                group_sizes(E, T, routing, gen)
    return {name: group_sizes(E, T, "skewed", gen) for name, E, T, _, _, _ in CASES}


def with_knob(value, fn):
    def call():
        os.environ["CUTORCH_GEMM_GROUPED_PTR"] = value
        try:
            return fn()
        finally:
            os.environ.pop("CUTORCH_GEMM_GROUPED_PTR", None)
    return call


def main():
    sizes_of = replayed_sizes()
    only = os.environ.get("CASES", "mixtral_up,mixtral_down,deepseek_v3_rank_up").split(",")
    for name, E, T, K, N, _ in CASES:
        if name not in only:
            continue
        sizes = sizes_of[name]
        x, w, a, b = expert_lists(sizes, E, T, K, N)
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        fns = {
            "loop": lambda: [torch.mm(ai, bi) for ai, bi in zip(a, b)],
            "each": with_knob("off", lambda: cg.grouped_gemm(a, b)),
            "ptr": with_knob("on", lambda: cg.grouped_gemm(a, b)),
            "offs": lambda: cg.grouped_mm(x, w.transpose(1, 2), offs),
        }
        ref = fns["loop"]()
        for key in ("each", "ptr"):
            got = fns[key]()
            err = max(float((g.float() - r.float()).norm() / r.float().norm()) for g, r in zip(got, ref))
            assert err < 1e-2, f"{name} {key}: relative error {err}"
        t = time_interleaved(fns)
        flops = 2 * T * K * N
        cells = "  ".join(f"{k} {v * 1e3:8.1f} us ({flops / v / 1e9:5.1f} TF/s, x{t['loop'] / v:.3f})"
                          for k, v in t.items())
        print(f"{name} E={E} N={N} K={K} rows={sizes}\n  {cells}", flush=True)
        per = []
        for ai, bi in zip(a, b):
            tt = time_interleaved({"torch": lambda: torch.mm(ai, bi), "ours": lambda: cg.mm(ai, bi)})
            per.append(f"{ai.shape[0]}:{tt['torch'] / tt['ours']:.3f}({cg.explain('mm', ai, bi).config[5:]})")
        print("  per problem, ours / torch.mm speed: " + " ".join(per), flush=True)


if __name__ == "__main__":
    main()
