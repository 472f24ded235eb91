"""How the benchmarks time a callable (benchmarks/bench_gemm.py and the others; METHOD.md in the device tool
library): ``time_ms`` (``triton.testing.do_bench`` medians, a CUDA-event loop without Triton), ``time_interleaved``
(both sides in alternating rounds after an untimed settling run: the default) and ``time_alone`` (each side back to
back after an idle gap, timed at the clock its own power leaves: ``--timing alone``)."""
from __future__ import annotations

import math
import statistics
import time
import warnings
from typing import Callable, Optional, Sequence

import torch


def _triton_do_bench():
    try:
        from triton.testing import do_bench
    except Exception:  # ImportError, or a Triton that cannot find its driver
        return None
    return do_bench


def _event_bench(fn: Callable[[], object], warmup_ms: float = 25, rep_ms: float = 100) -> float:
    """Median milliseconds of ``fn`` timed with CUDA events, one event pair per call."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate))):
        fn()
    n = min(10000, max(5, int(rep_ms / estimate)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def time_ms(fn: Callable[[], object], warmup_ms: float = 25, rep_ms: float = 100) -> float:
    """Median time of one call of ``fn`` in milliseconds."""
    do_bench = _triton_do_bench()
    if do_bench is None:
        return _event_bench(fn, warmup_ms, rep_ms)
    try:
        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    except TypeError:  # an older Triton without return_mode
        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.5]))


INTERLEAVE_ROUNDS = 4   # raised to a multiple of the number of callables: each starts equally often
SETTLE_MS = 250.0       # wall time the callables run in turn, untimed, before the first round


def _settle(fns: Sequence[Callable[[], object]], ms: float) -> None:
    """Run ``fns`` in turn for ``ms`` milliseconds of wall time, untimed.

    Why: before a case the GPU idles (input sets drawn, the correctness check), and its clock
    then starts high and settles under the power cap over ~200 ms of heavy kernels. Timed from
    cold, the first rounds ran fast: with three rounds, a case's first callable (torch) took the
    fast slot twice and ours once, and an A/A control (our mm against itself, H200,
    8192x14336x4096) read 0.955 (``benchmarks/experiments/order_bias.py``; RESULTS.md,
    thirty-third session).
    """
    if ms <= 0 or not torch.cuda.is_available():
        return
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        for fn in fns:
            fn()
        torch.cuda.synchronize()


def time_interleaved(fns: dict, rounds: int = INTERLEAVE_ROUNDS, timer: Optional[Callable] = None,
                     settle_ms: Optional[float] = None, rounds_out: Optional[dict] = None) -> dict:
    """Median milliseconds of each callable in ``fns``, timed in interleaved rounds.

    The callables first run in turn, untimed, for ``settle_ms`` (default ``SETTLE_MS``; none
    with a ``timer``): see ``_settle``. Then each round times every callable once (a
    ``rounds``-th of ``time_ms``'s repeat time), starting with a different one each round;
    ``rounds`` is raised to a multiple of the number of callables so that each starts equally
    often. The result is the median over rounds. Why interleave: the GPU's clock follows
    its power draw over tens of milliseconds, so two back-to-back ``time_ms`` calls of equal
    kernels differed by up to 14% depending on which ran first (H100, 8192x14336x4096 bf16,
    torch.mm then ours vs ours then torch.mm). Interleaving exposes both sides to the same drift.
    ``timer(fn) -> ms`` replaces the per-round ``time_ms`` (tests, other units). ``rounds_out``,
    when given, receives each callable's times in round order (per-round ratios, their spread).
    """
    names = list(fns)
    rounds = len(names) * math.ceil(rounds / len(names))
    _settle([fns[n] for n in names], (0.0 if timer else SETTLE_MS) if settle_ms is None else settle_ms)
    times = {n: [] for n in names}
    for r in range(rounds):
        for i in range(len(names)):
            n = names[(r + i) % len(names)]
            times[n].append(timer(fns[n]) if timer else time_ms(fns[n], warmup_ms=10, rep_ms=100 / rounds))
    if rounds_out is not None:
        rounds_out.update(times)
    return {n: statistics.median(v) for n, v in times.items()}


ALONE_RUN_S = 0.6      # time_alone: each callable's sustained run, seconds
ALONE_IDLE_S = 0.3     # ... the idle gap before it
ALONE_CHUNK_MS = 20.0  # ... the work between two events


ALONE_GRAPH_MAX_CALLS = 2000  # _chunk_times: calls captured in one CUDA graph (or made eagerly per chunk), at most


def _syncs_host(fn: Callable[[], object]) -> bool:
    """Whether ``fn`` synchronizes with the host (``.item()``, a copy to the CPU, ``nonzero``): run once with
    torch's sync debug mode set to raise. Such a call cannot be captured, and a capture that fails leaves torch's
    state half in capture (below), so _graph_of does not try one."""
    prev = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():  # (torch warns that the mode is a prototype on every set)
        warnings.simplefilter("ignore", UserWarning)
        torch.cuda.set_sync_debug_mode("error")
        try:
            fn()
            return False
        except RuntimeError:
            return True
        finally:
            torch.cuda.set_sync_debug_mode(prev)


def _graph_of(fn: Callable[[], object], calls: int):
    """A CUDA graph of ``calls`` back-to-back calls of ``fn``, or None where capture fails (an op that syncs).

    A failed capture (torch 2.11-2.14) leaves the default CUDA generator in capture mode (every later torch.randn on
    the GPU raises "Offset increment outside graph capture encountered unexpectedly") and the capture's side stream
    current, since torch.cuda.graph's exit skips both once capture_end raises. So: callables that sync the host are
    not captured at all (_syncs_host), and after any other failure the stream and the generator's state (a clone
    taken before) are put back."""
    if _syncs_host(fn):
        return None
    stream = torch.cuda.current_stream()
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    saved = gen.clone_state() if hasattr(gen, "clone_state") else None
    try:
        # warm-up on a side stream first (as torch.cuda.graphs asks: cuBLAS sets up a handle and workspace per stream)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        return graph
    except Exception:  # (capture errors surface as RuntimeError or torch.AcceleratorError)
        torch.cuda.set_stream(stream)
        if saved is not None:
            gen.graphsafe_set_state(saved)
        torch.cuda.synchronize()
        return None


def _chunk_times(fn: Callable[[], object], run_s: float, chunk_ms: float) -> list:
    """Milliseconds per call of ``fn`` run back to back for about ``run_s`` seconds, one value per chunk of
    about ``chunk_ms`` (an event pair around each chunk's calls; the queue stays full).

    The calls are captured in a CUDA graph and replayed. Why: launched one by one from Python, short
    calls are bound by the host (fifty-second session, H200: 1024^3 bf16 read 27 us a call for torch.mm and 33 us for
    ours, ~8x the kernels' time), so the GPU idled between them and the table timed the two launch paths. Replayed,
    the kernels run back to back as in a captured model step. Falls back to eager launches where capture fails."""
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    calls = min(max(1, int(chunk_ms / max(start.elapsed_time(end), 1e-3))), ALONE_GRAPH_MAX_CALLS)
    g = _graph_of(fn, calls)
    replays = 1  # (graph replays per chunk; eager: the chunk's calls one by one)
    if g is not None:
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        replays = max(1, int(round(chunk_ms / max(start.elapsed_time(end), 1e-3))))
    chunks = max(4, int(run_s * 1e3 / chunk_ms))
    events = [torch.cuda.Event(enable_timing=True) for _ in range(chunks + 1)]
    events[0].record()
    for c in range(chunks):
        if g is not None:
            for _ in range(replays):
                g.replay()
        else:
            for _ in range(calls):
                fn()
        events[c + 1].record()
    torch.cuda.synchronize()
    return [events[c].elapsed_time(events[c + 1]) / (calls * replays) for c in range(chunks)]


def time_alone(fns: dict, run_s: float = ALONE_RUN_S, idle_s: float = ALONE_IDLE_S,
               chunk_ms: float = ALONE_CHUNK_MS, chunk_timer: Optional[Callable] = None) -> dict:
    """Milliseconds per call of each callable in ``fns``, each run alone (``--timing alone``).

    Each runs back to back for ``run_s`` seconds after ``idle_s`` of idle; its time is the median
    over the run's second half; two passes in mirrored order (A B C, then C B A), their mean. Why:
    large GEMMs hold an H200 at its power cap (~560 W), and the clock follows the board's power
    over tens of milliseconds. Interleaved (``time_interleaved``), every side runs at the clock of
    the mix, so a kernel that draws more power is not charged for it; alone, each is timed at
    the clock its own power leaves, as in a model's sustained run (RESULTS.md, fiftieth and
    fifty-first sessions). ``chunk_timer(fn) -> [ms per call, chunk by chunk]`` replaces the GPU
    run (tests; then no idle gaps).
    """
    names = list(fns)
    times = {n: [] for n in names}
    for n in names + names[::-1]:
        if chunk_timer is None:
            time.sleep(idle_s)
        per = chunk_timer(fns[n]) if chunk_timer else _chunk_times(fns[n], run_s, chunk_ms)
        times[n].append(statistics.median(per[len(per) // 2:]))
    return {n: statistics.mean(v) for n, v in times.items()}


TIMINGS = ("interleaved", "alone")
