"""benchmarks/bench_model.py (``python -m cutorch_gemm bench --model``) on the CPU: the no-GPU
exit, the exit codes, row and table helpers on fake rows, and the real cases at tiny sizes
(DEVICE = "cpu", a wall-clock timer, our CPU reference ops through dropin.ROUTE_CPU)."""
from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
import time

import pytest
import torch

import cutorch_gemm as cg
from cutorch_gemm import cli, dropin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bm = cli._import_bench("bench_model")   # benchmarks/ is not a package of the install
NAN = float("nan")


def test_no_gpu_prints_a_note_and_exits_0(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "-m", "cutorch_gemm", "bench", "--model", "--quick",
                        "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no CUDA GPU" in lines[0], r.stdout
    assert "bench_gemm" not in r.stdout + r.stderr, "--model alone must not run the GEMM suites"


@pytest.mark.parametrize("rows,gpu,code", [
    ([], False, 0),                                    # no GPU: not an error
    ([], True, 4),                                     # a GPU, nothing measured
    ([{"ok": True}, {"ok": True}], True, 0),
    ([{"ok": True}, {"ok": False}], True, 3),          # a mismatch row
])
def test_exit_codes(monkeypatch, rows, gpu, code):
    seen = {}

    def fake_run(args):
        seen["args"] = args
        return rows
    monkeypatch.setattr(bm, "run_from_args", fake_run)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert cli.main(["bench", "--model", "--quick", "--dtype", "fp16"]) == code
    assert seen["args"].model and seen["args"].quick and seen["args"].dtype == ["fp16"]


def test_model_and_suite_run_both(monkeypatch):
    bench = cli._import_bench()
    order = []
    monkeypatch.setattr(bench, "run_from_args", lambda a: order.append("gemm") or [{"ok": True}])
    monkeypatch.setattr(bm, "run_from_args", lambda a: order.append("model") or [{"ok": False}])
    assert cli.main(["bench", "--model", "--suite", "dense"]) == 3
    assert order == ["gemm", "model"]
    order.clear()
    assert cli.main(["bench", "--suite", "dense"]) == 0 and order == ["gemm"]


def test_make_row_and_table():
    mlp = bm.make_row("llama_swiglu_mlp", "bfloat16", "4096->14336", 8192, 8.66e12,
                      "torch module", stock_ms=20.0, ours_ms=16.0, enable_ms=25.0, rel_err=4e-3)
    moe = bm.make_row("mixtral_moe", "bfloat16", "E8 top2 4096->14336", 4096, 4.3e12,
                      "per-expert loop", stock_ms=40.0, ours_ms=10.0, grouped_mm_ms=9.0,
                      rel_err=0.05)
    failed = bm._failed_row("moe", bm.MOE_CASES[0], "float16", 4096, RuntimeError("out of memory"))
    assert mlp["ok"] and mlp["ratio"] == 1.25 and mlp["ratio_enable"] == 0.8
    assert math.isnan(mlp["ratio_grouped_mm"]) and mlp["ours_tflops"] == pytest.approx(541.25)
    assert not moe["ok"] and "rel_err" in moe["note"] and moe["ratio_grouped_mm"] == 0.9
    assert not failed["ok"] and "out of memory" in failed["note"] and math.isnan(failed["ratio"])
    table = bm.format_table([mlp, moe, failed]).splitlines()
    head = table[0].split()
    assert head[:5] == ["case", "dtype", "tokens", "stock", "ms"] and head[-1] == "ok"
    assert table[2].split()[-1] == "ok" and table[3].split()[-1] == "WARN"
    assert "1.250" in table[2] and "0.900" in table[3] and " - " in table[2]
    assert any("out of memory" in ln for ln in table) and any("warnings:" in ln for ln in table)


def test_csv(tmp_path):
    row = bm.make_row("gpt_gelu_mlp", "float16", "4096->16384", 2048, 1e12, "torch module",
                      stock_ms=2.0, ours_ms=NAN, note="ours failed")
    path = tmp_path / "bench_model.csv"
    bm.write_csv([row], str(path), fields=bm.CSV_FIELDS)
    with open(path) as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == list(bm.CSV_FIELDS)
    assert got[0]["ours_ms"] == "" and got[0]["stock_ms"] == "2" and got[0]["ok"] == "False"


@pytest.fixture
def on_cpu(monkeypatch):
    """The benchmark's cases on the CPU: reference ops for our side, a wall-clock timer."""
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    monkeypatch.setattr(bm, "DEVICE", "cpu")

    def timer(fn):
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    monkeypatch.setattr(bm, "TIMER", timer)
    monkeypatch.setattr(bm, "MLP_CASES", tuple(
        bm.MlpCase(c.name, c.build, c.gemms, 32, 48, 24, 16) for c in bm.MLP_CASES))
    monkeypatch.setattr(bm, "MOE_CASES", (("tiny_moe", 6, 2, 16, 24, 20),
                                          ("tiny_moe_top1", 3, 1, 16, 8, 12)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_cases_run_and_match_on_cpu(on_cpu, tmp_path, capsys, dtype):
    rows = bm.run(quick=False, out_dir=str(tmp_path), dtype=dtype, progress=False)
    assert [r["case"] for r in rows] == ["llama_swiglu_mlp", "gpt_gelu_mlp", "tiny_moe", "tiny_moe_top1"]
    for r in rows:
        assert r["ok"] and not r["note"], r
        assert r["stock_ms"] > 0 and r["ours_ms"] > 0
    assert all(rows[i]["enable_ms"] > 0 for i in (0, 1)) and all(rows[i]["grouped_mm_ms"] > 0 for i in (2, 3))
    assert rows[0]["tokens"] == 24 and rows[2]["shape"] == "E6 top2 16->24"
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("rel err") and "llama_swiglu_mlp" in out
    assert (tmp_path / "bench_model.csv").exists() and (tmp_path / "bench_model.txt").exists()
    assert len(bm.run(quick=True, out_dir=str(tmp_path), dtype=dtype, progress=False)) == 3


def test_a_wrong_result_is_flagged(on_cpu, monkeypatch):
    real = cg.nn.GroupedExperts.forward
    monkeypatch.setattr(cg.nn.GroupedExperts, "forward", lambda self, *a: real(self, *a) * 1.1)
    row = bm.run_moe_case(cg, *bm.MOE_CASES[0][:6], "float32", torch.Generator().manual_seed(0))
    assert not row["ok"] and row["rel_err"] > 0.05 and "rel_err" in row["note"]


def test_a_failing_variant_is_noted(on_cpu, monkeypatch):
    monkeypatch.setattr(bm.bench_grouped, "torch_layer_forward",
                        lambda *a: (_ for _ in ()).throw(RuntimeError("no grouped_mm here")))
    row = bm.run_moe_case(cg, *bm.MOE_CASES[0][:6], "float32", torch.Generator().manual_seed(0))
    assert row["ok"] and math.isnan(row["grouped_mm_ms"]) and "no grouped_mm here" in row["note"]
