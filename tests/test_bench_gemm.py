"""The GEMM benchmark's case logic on the CPU (benchmarks/bench_gemm.py with DEVICE = "cpu" and a
stub timer): the grouped (MoE) suites build a fixed skewed routing over every row and compare
grouped_mm with torch._grouped_mm; a row says which config ran."""
from __future__ import annotations

import statistics

import pytest
import torch

import benchmarks.bench_gemm as bg
import benchmarks.bench_timing as bt
import cutorch_gemm as cg

from conftest import requires_cuda


def test_table_shows_plain_ms_for_every_epilogue_suite():
    """The table's "plain ms" column (our mm without the epilogue) appears for any suite that timed it
    ("epilogue", "big_epilogue"), not only the one named "epilogue"."""
    def row(suite, plain):
        return dict(suite=suite, dtype="bfloat16", M=2560, N=4096, K=4096, ours_ms=0.14, torch_ms=0.142,
                    ours_tflops=613.0, torch_tflops=605.0, ratio=1.014, ours_plain_ms=plain, ok=True,
                    config="Sm90_128x320x64_Coop_S3", note="")
    table = bg.format_table([row("big_epilogue", 0.1301)])
    assert "plain ms" in table and "0.1301" in table
    assert "plain ms" not in bg.format_table([row("big", float("nan"))])


def test_expert_offsets_route_every_row_in_multiples_of_16(monkeypatch):
    monkeypatch.setattr(bg, "DEVICE", "cpu")
    offs = bg._expert_offsets(32768, 128)
    sizes = torch.diff(offs, prepend=torch.zeros(1, dtype=offs.dtype))
    assert offs.dtype == torch.int32 and int(offs[-1]) == 32768
    assert bool((sizes % 16 == 0).all()) and bool((sizes >= 0).all())
    assert int(sizes.max()) > 4 * int(sizes.min())  # skewed


def test_grouped_suite_case_on_cpu(monkeypatch):
    monkeypatch.setattr(bg, "DEVICE", "cpu")
    monkeypatch.setattr(bg, "_l2_bytes", lambda: 1 << 20)
    monkeypatch.setattr(bt, "time_ms", lambda fn, **kw: (fn(), 1.0)[1])  # (time_interleaved's)
    monkeypatch.setitem(bg.SUITES, "tiny_moe", bg.Suite(kind="grouped", experts=4, shapes=((256, 32, 48, True),)))
    row = bg.run_case(cg, "tiny_moe", "bfloat16", 256, 32, 48)
    assert row["ok"] and row["rel_err"] < 1e-2 and row["note"] == "", row
    assert row["config"] == "aten_fp32_accumulate"
    assert "moe128" in bg.DEFAULT_SUITES and "fp8" in bg.DEFAULT_SUITES


def test_decode_offsets_spread_rows_one_per_expert(monkeypatch):
    monkeypatch.setattr(bg, "DEVICE", "cpu")
    offs = bg._decode_offsets(8, 128)
    sizes = torch.diff(offs, prepend=torch.zeros(1, dtype=offs.dtype))
    assert offs.dtype == torch.int32 and int(offs[-1]) == 8 and int(sizes.max()) == 1
    assert int((sizes > 0).sum()) == 8                      # 8 experts hit, 120 empty
    sizes = torch.diff(bg._decode_offsets(300, 128), prepend=torch.zeros(1, dtype=torch.int32))
    assert int(sizes.sum()) == 300 and int(sizes.min()) >= 2 and int(sizes.max()) <= 3
    assert "moe_decode" not in bg.DEFAULT_SUITES and bg.SUITES["moe_decode"].decode
    assert "mid" not in bg.DEFAULT_SUITES and bg.SUITES["mid"].kind == "mm"  # (mid-size dense, on request)
    assert "mid_epilogue" not in bg.DEFAULT_SUITES and bg.SUITES["mid_epilogue"].kind == "epilogue"
    assert "big" not in bg.DEFAULT_SUITES and bg.SUITES["big"].kind == "mm"  # (the big tiles' shapes, on request)
    assert "tokens" not in bg.DEFAULT_SUITES and bg.SUITES["tokens"].kind == "mm"  # (the fit rules' token counts)
    assert bg.SUITES["big_epilogue"].kind == "epilogue" and bg.SUITES["big_epilogue"].shapes == bg.SUITES["big"].shapes


def test_grouped_decode_suite_case_on_cpu(monkeypatch):
    monkeypatch.setattr(bg, "DEVICE", "cpu")
    monkeypatch.setattr(bg, "_l2_bytes", lambda: 1 << 20)
    monkeypatch.setattr(bt, "time_ms", lambda fn, **kw: (fn(), 1.0)[1])  # (time_interleaved's)
    monkeypatch.setitem(bg.SUITES, "tiny_decode", bg.Suite(kind="grouped", experts=16, decode=True,
                                                           shapes=((3, 40, 24, True),)))
    row = bg.run_case(cg, "tiny_decode", "bfloat16", 3, 40, 24)
    assert row["ok"] and row["rel_err"] < 1e-2 and row["note"] == "", row


def test_time_interleaved_rotates_and_takes_medians():
    """Each round starts with a different callable, each starts equally often (3 rounds of two
    callables become 4), and each result is the median of its rounds."""
    calls = []
    clock = iter([5.0, 1.0, 2.0, 9.0, 3.0, 4.0, 8.0, 7.0])  # a, b | b, a | a, b | b, a

    def timer(fn):
        calls.append(fn())
        return next(clock)

    per_round = {}
    got = bg.time_interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=3, timer=timer, rounds_out=per_round)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert got == {"a": 6.0, "b": 3.0}  # a: 5, 9, 3, 7 -> 6; b: 1, 2, 4, 8 -> 3
    assert per_round == {"a": [5.0, 9.0, 3.0, 7.0], "b": [1.0, 2.0, 4.0, 8.0]}  # round order
    calls.clear()
    clock = iter(range(1, 10))
    got = bg.time_interleaved({"a": lambda: "a", "b": lambda: "b", "c": lambda: "c"}, rounds=2, timer=timer)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]  # 2 rounds of three callables become 3
    assert got == {"a": 6.0, "b": 4.0, "c": 5.0}  # a: 1, 6, 8; b: 2, 4, 9; c: 3, 5, 7


def test_settle_runs_the_callables_for_its_wall_time(monkeypatch):
    """The untimed settling run calls every callable in turn until its time is up (none at 0 ms)."""
    calls = []
    monkeypatch.setattr(bg.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bg.torch.cuda, "synchronize", lambda: None)
    bg._settle([lambda: calls.append("a"), lambda: calls.append("b")], 0.0)
    assert calls == []
    bg._settle([lambda: calls.append("a"), lambda: calls.append("b")], 5.0)
    assert len(calls) >= 2 and calls[:2] == ["a", "b"] and calls.count("a") == calls.count("b")


def test_time_alone_runs_each_side_twice_mirrored_and_takes_the_second_halves():
    """--timing alone: each callable runs alone in two passes, A B then B A; a pass reads the median of its run's
    second half of chunks (the clock its own power leaves), the result the mean of the two passes."""
    calls = []
    runs = iter([[9.0, 9.0, 2.0, 4.0], [9.0, 9.0, 1.0, 1.0],     # a, b (first pass)
                 [9.0, 9.0, 3.0, 3.0], [9.0, 9.0, 6.0, 8.0]])    # b, a (second pass)

    def chunk_timer(fn):
        calls.append(fn())
        return next(runs)

    got = bg.time_alone({"a": lambda: "a", "b": lambda: "b"}, chunk_timer=chunk_timer)
    assert calls == ["a", "b", "b", "a"]
    assert got == {"a": 5.0, "b": 2.0}  # a: median(2, 4) = 3, median(6, 8) = 7 -> 5; b: 1, 3 -> 2


def test_timing_flag(monkeypatch):
    """`python -m cutorch_gemm bench --timing alone` reaches run(); a wrong value is refused."""
    import argparse

    p = argparse.ArgumentParser()
    bg.add_arguments(p)
    assert p.parse_args([]).timing == "interleaved"
    args = p.parse_args(["--timing", "alone", "--suite", "dense", "--quick"])
    seen, real_run = {}, bg.run
    monkeypatch.setattr(bg, "run", lambda **kw: seen.update(kw) or [])
    bg.run_from_args(args)
    assert seen["timing"] == "alone" and seen["quick"] and seen["suites"] == ["dense"]
    try:
        real_run(timing="alone!")
    except ValueError as exc:
        assert "timing" in str(exc)
    else:
        raise AssertionError("run(timing='alone!') accepted")


@pytest.mark.gpu
@requires_cuda
def test_chunk_times_replays_a_graph_and_falls_back_when_capture_fails():
    """--timing alone replays the calls as a CUDA graph (eager launches from Python left short kernels waiting on the
    host); a callable that syncs the host cannot be captured and runs eagerly. Both give per-call times, and the graph
    of 1024^3 bf16 mm calls reads well under the eager host-bound time."""
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    assert bt._graph_of(lambda: torch.mm(a, b), 4) is not None
    assert bt._graph_of(lambda: torch.mm(a, b).sum().item(), 2) is None  # (.item() syncs: no capture)
    graphed = bt._chunk_times(lambda: cg.mm(a, b), 0.1, 5.0)
    eager = bt._chunk_times(lambda: torch.mm(a, b).sum().item(), 0.1, 5.0)
    assert len(graphed) >= 4 and len(eager) >= 4 and min(graphed) > 0 and min(eager) > 0
    assert statistics.median(graphed) < statistics.median(eager)


@pytest.mark.gpu
@requires_cuda
def test_failed_capture_leaves_torch_usable():
    """A callable that cannot be captured leaves torch as it found it: the current stream and the default generator
    (a failed capture left it in capture mode, and every later torch.randn on the GPU raised; fifty-fifth session).
    One callable syncs the host eagerly (the sync-debug probe refuses it); the other syncs only while captured (the
    capture itself fails and _graph_of puts the stream and generator state back)."""
    stream = torch.cuda.current_stream()
    a = torch.randn(64, 64, device="cuda")
    torch.cuda.manual_seed(1234)
    expected = torch.randn(8, device="cuda")

    def syncs_when_captured():
        y = a @ a
        if torch.cuda.is_current_stream_capturing():
            torch.cuda.synchronize()  # (illegal while capturing: invalidates the capture)
        return y

    for fn in (lambda: (a @ a).sum().item(), syncs_when_captured):
        torch.cuda.manual_seed(1234)
        assert bt._graph_of(fn, 2) is None
        assert torch.cuda.current_stream() == stream
        assert not torch.cuda.is_current_stream_capturing()
        torch.cuda.manual_seed(1234)
        assert torch.equal(torch.randn(8, device="cuda"), expected)
