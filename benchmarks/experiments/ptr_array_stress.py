"""Repeated pointer-array grouped_gemm calls: the ping-pong kernel's intermittent launch failure (fixed by the
release gate in collective/sm90_pingpong_turns.cuh; CUTORCH_GEMM_SM90_PP_GATE=off brings it back).

    ITERS=5000 python benchmarks/experiments/ptr_array_stress.py
    CUTORCH_GEMM_SM90_PP_GATE=off ITERS=3000 python benchmarks/experiments/ptr_array_stress.py   (the fault)

64 problems of N = K = 1024 (bf16) whose rows (0-752, the split that bench_grouped.py's small_64x1024 list
case drew, 4096 in all) slice one x, each b = w[e].t(); called ITERS times (do_bench's L2 flush before
each call unless FLUSH=0), synchronized every SYNC_EVERY calls (default 50; 1: after every call), then
the last outputs are compared with torch.mm's. NOEMPTY=1 gives the empty problems 16 rows (taken from the
largest). CONFIG sets CUTORCH_GEMM_SM90_CONFIG (unset: the size rule's pick, the ping-pong kernel here;
"coop" / "pingpong" force one); other CUTORCH_GEMM_* variables (e.g. CUTORCH_GEMM_SM90_PRODUCERS=1 or 4)
pass through. Prints the call by which a fault showed, or "N calls ok" with the largest difference.
H200, thirty-third session: ping-pong faulted by call 65-400 in every run (also with NOEMPTY=1, SYNC_EVERY=1
or CUDA_LAUNCH_BLOCKING=1); cooperative 2000 calls clean; compute-sanitizer memcheck over 1500 ping-pong
calls clean. Thirty-fourth: clean with one producer warp; with the release gate 3000-5000 calls clean per run
over 1-4 producer warps, and gate off faults by call 18-49 (benchmarks/RESULTS.md).
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
if os.environ.get("CONFIG"):
    os.environ["CUTORCH_GEMM_SM90_CONFIG"] = os.environ["CONFIG"]
import cutorch_gemm as cg  # noqa: E402

ROWS = [32, 0, 80, 0, 0, 48, 144, 16, 96, 144, 128, 16, 32, 16, 0, 48, 128, 144, 48, 64, 16, 128, 16, 0, 64, 112,
        0, 160, 80, 0, 32, 144, 0, 16, 80, 0, 112, 96, 112, 0, 176, 0, 752, 0, 0, 112, 48, 48, 16, 16, 16, 0, 48, 64,
        48, 80, 160, 64, 16, 16, 0, 0, 32, 32]


def main():
    iters = int(os.environ.get("ITERS", "2000"))
    flush = os.environ.get("FLUSH", "1") != "0"
    sync_every = max(1, int(os.environ.get("SYNC_EVERY", "50")))
    rows = list(ROWS)
    if os.environ.get("NOEMPTY") == "1":
        rows = [r if r else 16 for r in rows]
        rows[rows.index(max(rows))] -= sum(rows) - sum(ROWS)
    E, K, N = len(rows), 1024, 1024
    x = torch.randn(sum(rows), K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(E, N, K, device="cuda", dtype=torch.bfloat16) * K ** -0.5
    starts = [sum(rows[:e]) for e in range(E)]
    a = [x[s:s + r] for s, r in zip(starts, rows)]
    b = [w[e].t() for e in range(E)]
    print(cg.explain("grouped_gemm", a, b).config, flush=True)
    cache = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    ref = [torch.mm(ai, bi) for ai, bi in zip(a, b)]
    t0 = time.time()
    outs = []
    for it in range(iters):
        try:
            if flush:
                cache.zero_()
            outs = cg.grouped_gemm(a, b)
            if (it + 1) % sync_every == 0 or it == iters - 1:
                torch.cuda.synchronize()
        except Exception as exc:  # (a fault poisons the context: report and stop)
            print(f"FAULT by call {it}: {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
            return 1
    diff = max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, ref) if o.numel())
    print(f"{iters} calls ok in {time.time() - t0:.1f} s; largest difference to torch.mm {diff:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
