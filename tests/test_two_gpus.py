"""Two GPUs: every kernel path with per-device state runs on the tensors' device, whichever is current.

The binding keeps state per device: the device properties (SMs, shared memory), each kernel's allowed dynamic
shared memory (`launch_util.h`), the split-K and stream-K workspaces, the sm80 arrival counters (per device and
stream), and TMA descriptors encoded for the operands' addresses. Each case runs on cuda:1 while cuda:0 is current,
then on cuda:0, then on cuda:1 again (so that state first set up for one device is found, not reused, for the other),
and checks the result against float64, its device, and that the current device did not change. Skipped with fewer
than two GPUs (the device tool's nvidia-h200-x2 machine has two).
"""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (TF32_BOUND, check, make, offs_from_sizes, ref_bmm, ref_gemm, ref_grouped_gemm, ref_grouped_mm,
                      ref_mm, rel_err)
from test_gated_mlp import ref_swiglu
from test_scaled_mm import E4, check_scaled, fp8, scale

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")]

BF16 = torch.bfloat16

# Each case's run(device) launches the op on that device and returns (its output, verify(what)), verify asserting the
# output against float64 with the bound that op's own tests use.


def _mm(m, n, k, dtype=BF16):
    def run(dev):
        a, b = make((m, k), dtype, dev), make((k, n), dtype, dev, "col")
        out = cg.mm(a, b)
        return out, lambda what: check(out, ref_mm(a, b), dtype, what=what)
    return run


def _gemm_gelu(dev):
    a, b = make((257, 129), BF16, dev), make((129, 65), BF16, dev, "col")
    bias = make((65,), BF16, dev)
    out = cg.gemm(a, b, bias=bias, activation="gelu")
    return out, lambda what: check(out, ref_gemm(a, b, bias, activation="gelu"), BF16, what=what)


def _bmm(dev):
    a, b = make((3, 65, 33), BF16, dev), make((3, 33, 17), BF16, dev, "col")
    out = cg.bmm(a, b)
    return out, lambda what: check(out, ref_bmm(a, b), BF16, what=what)


def _grouped_mm(dev):
    x, w = make((300, 64), BF16, dev), make((3, 64, 48), BF16, dev)
    offs = offs_from_sizes([100, 0, 150], dev)
    out = cg.grouped_mm(x, w, offs)
    return out, lambda what: check(out, ref_grouped_mm(x, w, offs), BF16, what=what)


def _grouped_gemm(dev):
    shapes = [(130, 264, 72), (1, 64, 64), (65, 72, 136)]
    a = [make((m, k), BF16, dev) for m, _, k in shapes]
    b = [make((k, n), BF16, dev, "col") for _, n, k in shapes]
    outs = cg.grouped_gemm(a, b)

    def verify(what):
        for i, (o, r) in enumerate(zip(outs, ref_grouped_gemm(a, b))):
            check(o, r, BF16, what=f"{what} problem {i}")
    return outs[0], verify


def _scaled_mm(dev):
    m, n, k = 200, 264, 256
    a, b = fp8(m, k, E4, dev), fp8(n, k, E4, dev).t()
    sa, sb = scale("vector", m, dev, True), scale("vector", n, dev, False)
    out = cg.scaled_mm(a, b, sa, sb)
    return out, lambda what: check_scaled(out, a, b, sa, sb, None, BF16, what)


def _tf32(dev):
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        a, b = make((300, 256), torch.float32, dev), make((256, 520), torch.float32, dev, "col")
        out = cg.mm(a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed

    def verify(what):  # (the tf32 tests' bound, 10 mantissa bits per input: norm-wise, and per element as check does)
        assert out.dtype == torch.float32 and torch.isfinite(out).all(), what
        ref = ref_mm(a, b).cpu()
        err = rel_err(out, ref)
        assert err < TF32_BOUND, f"{what}: rel err {err:.2e}"
        excess = (out.cpu().double() - ref).abs() - TF32_BOUND * (ref.abs() + ref.pow(2).mean().sqrt())
        assert excess.max() <= 0, f"{what}: {int((excess > 0).sum())} elements past the bound"
    return out, verify


def _swiglu(dev):
    z = make((37, 2 * 96), BF16, dev)
    out = cg.swiglu(z)
    return out, lambda what: check(out, ref_swiglu(z.double()), BF16, what=what)


SM90_COOP = {"CUTORCH_GEMM_SM90_CONFIG": "coop"}
CASES = [
    # (name, environment, run)
    ("sm90 coop bias + gelu", SM90_COOP, _gemm_gelu),
    ("sm90 coop 2x1 pairs (rows of 400 bytes)", SM90_COOP, _mm(300, 520, 200)),
    ("sm90 stream-K", {**SM90_COOP, "CUTORCH_GEMM_SM90_STREAMK": "on", "CUTORCH_GEMM_SM90_GRID": "5",
                       "CUTORCH_GEMM_SM90_CLUSTER": "1", "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
     _mm(1000, 1000, 1000)),
    ("sm90 split-K (workspace + sum)", {"CUTORCH_GEMM_SKINNY": "off"}, _mm(16, 1024, 4096)),
    ("sm90 skinny (cluster K split)", {"CUTORCH_GEMM_SKINNY": "sm90"}, _mm(32, 4096, 4096)),
    ("mma.sync skinny", {"CUTORCH_GEMM_SKINNY": "w8"}, _mm(8, 4096, 1024)),
    ("sm80 parallel split-K", {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SPLIT_K": "parallel:4"}, _mm(64, 256, 8192)),
    ("sm80 serial split-K", {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SPLIT_K": "serial:4"}, _mm(64, 256, 8192)),
    ("sm90 bmm", {}, _bmm),
    ("sm90 grouped_mm", {}, _grouped_mm),
    ("sm90 pointer-array grouped_gemm", {}, _grouped_gemm),
    ("sm90 fp8 scaled_mm", {}, _scaled_mm),
    ("sm90 tf32", {}, _tf32),
    ("swiglu", {}, _swiglu),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_paths_on_either_device(monkeypatch, case):
    name, env, run = case
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    torch.cuda.set_device(0)
    for dev in ("cuda:1", "cuda:0", "cuda:1"):
        out, verify = run(dev)
        assert out.device == torch.device(dev), f"{name}: result on {out.device}, inputs on {dev}"
        assert torch.cuda.current_device() == 0, f"{name} on {dev}: the current device changed"
        verify(f"{name} on {dev}")
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


def test_explain_reads_the_tensors_device():
    """explain() on cuda:1 tensors while cuda:0 is current names the same kernel as on cuda:0 (same GPU model)."""
    torch.cuda.set_device(0)
    if torch.cuda.get_device_properties(0).name != torch.cuda.get_device_properties(1).name:
        pytest.skip("two different GPU models")
    picks = []
    for dev in ("cuda:0", "cuda:1"):
        a, b = make((4096, 4096), BF16, dev), make((4096, 4096), BF16, dev, "col")
        e = cg.explain("mm", a, b)
        picks.append((e.kernel, e.config, e.splits))
    assert picks[0] == picks[1], picks
    assert torch.cuda.current_device() == 0
