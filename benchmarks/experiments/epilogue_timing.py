"""The fused epilogue's cost over our plain mm under three timings, to tell what the torch-level excess is.

    SHAPES=4096x4096x4096,8192x14336x4096 ROUNDS=9 REP_MS=40 python benchmarks/experiments/epilogue_timing.py

Why: graph-timed `header_ab` read bias + GELU-tanh at +1.2% over the plain kernel at 4096^3, while
`epilogue_ab.py` and the epilogue suite (do_bench, which flushes L2 before every call) read +5.5% to +9.3%
(benchmarks/RESULTS.md, forty-ninth session). The timings here, on the same callables and input sets:
  flush   do_bench: L2 flushed (a memset of its cache buffer) before each call, one event pair per call;
  events  one event pair per call, back to back, no flush (the L2 keeps what the last call left);
  graph   one CUDA graph of GRAPH_LAUNCHES calls, its replay timed as a whole, per call.
If the excess shows under flush only, the flushed L2 (or the clock after the memset) is its cause; if under
events as well, the per-call start; if under all three, the kernels themselves.
A fourth candidate is the power cap: the activation's MUFU and FP32 work draws power, and the clock follows the
power of the last tens of milliseconds, so a timing window long enough for the clock to settle on the fused kernel
alone charges it that clock. REP_MS (default 40) sets the window of flush and events; run it at 10 and at 200: an
excess that grows with the window is the clock's.
bf16, nn.Linear operands with a bias (bench_gemm's rotating input sets); ACT (default gelu_tanh).
Each round times every (timing, callable) pair once, in a rotated order; medians over the rounds.
First run in the fiftieth session (benchmarks/RESULTS.md): the excess grew with the window; epilogue_power.py
follows it up.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _event_bench, _make_sets, _rotating, time_ms  # noqa: E402
from benchmarks.bench_timing import _graph_of  # noqa: E402

GRAPH_LAUNCHES = int(os.environ.get("GRAPH_LAUNCHES", "20"))


def graph_timer(fn):
    """Per-call milliseconds of fn captured GRAPH_LAUNCHES times in one CUDA graph (median of 5 replays)."""
    graph = _graph_of(fn, GRAPH_LAUNCHES)  # (warm-up on a side stream, then the capture)
    if graph is None:
        raise RuntimeError("graph_timer: the call could not be captured in a CUDA graph")
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / GRAPH_LAUNCHES)
    return statistics.median(times)


REP_MS = float(os.environ.get("REP_MS", "40"))
TIMERS = {
    "flush": lambda f: time_ms(f, warmup_ms=10, rep_ms=REP_MS),
    "events": lambda f: _event_bench(f, warmup_ms=10, rep_ms=REP_MS),
    "graph": graph_timer,
}


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in
              os.environ.get("SHAPES", "4096x4096x4096,8192x14336x4096").split(",")]
    rounds = int(os.environ.get("ROUNDS", "9"))
    act = os.environ.get("ACT", "gelu_tanh")
    for m, n, k in shapes:
        sets = _make_sets(m, n, k, torch.bfloat16, True)
        fns = {"plain": _rotating(lambda x, b, bias: cg.mm(x, b), sets),
               "fused": _rotating(lambda x, b, bias: cg.gemm(x, b, bias=bias, activation=act), sets)}
        pairs = [(t, f) for t in TIMERS for f in fns]
        times = {p: [] for p in pairs}
        for r in range(rounds):
            for i in range(len(pairs)):
                t, f = pairs[(r + i) % len(pairs)]
                times[(t, f)].append(TIMERS[t](fns[f]))
        e = cg.explain("gemm", *sets[0][:2], bias=sets[0][2], activation=act)
        print(f"{m}x{n}x{k} ({len(sets)} input sets, windows of {REP_MS:g} ms; fused: {e.config}, plain: "
              f"{cg.explain('mm', *sets[0][:2]).config})")
        for t in TIMERS:
            plain, fused = (statistics.median(times[(t, f)]) for f in fns)
            print(f"   {t:6s}  plain {plain * 1e3:8.1f} us  fused {fused * 1e3:8.1f} us  "
                  f"fused over plain {fused / plain - 1:+.1%}", flush=True)
        del sets, fns
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
