"""`python -m cutorch_gemm info` and `check` on the CPU: they run, say what they checked, and
`check` covers the newer ops (scaled_mm, grouped_mm's swiglu)."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "cutorch_gemm", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def test_info_names_families():
    r = run("info")
    assert r.returncode == 0, r.stderr
    assert "kernel families:" in r.stdout and "sm90" in r.stdout and "sm80" in r.stdout
    assert "fp8 scaled_mm" in r.stdout and "simt" in r.stdout


def test_check_scaled_mm_and_grouped_swiglu_on_cpu():
    r = run("check", "--device", "cpu", "--op", "scaled_mm", "--op", "grouped_mm")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS  scaled_mm" in r.stdout and "PASS  grouped_mm" in r.stdout
