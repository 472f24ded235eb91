"""torch.utils.flop_counter.FlopCounterMode counts our ops (it counted them as zero FLOPs before
cutorch_gemm/_flops.py): 2 * M * N * K per product, forward and backward, as it counts aten.mm."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import cutorch_gemm as cg
from cutorch_gemm import dropin
from conftest import DEVICES, offs_from_sizes



def _count(fn) -> int:
    with FlopCounterMode(display=False) as mode:
        fn()
    return mode.get_total_flops()


@pytest.mark.parametrize("device", DEVICES)
def test_each_op(device):
    f32 = dict(dtype=torch.float32, device=device)
    a, b = torch.randn(7, 11, **f32), torch.randn(11, 5, **f32)
    assert _count(lambda: cg.mm(a, b)) == 2 * 7 * 11 * 5
    assert _count(lambda: cg.gemm(a, b, bias=torch.randn(5, **f32), activation="gelu")) == 2 * 7 * 11 * 5
    assert _count(lambda: cg.bmm(torch.randn(3, 7, 11, **f32), torch.randn(3, 11, 5, **f32))) == 3 * 2 * 7 * 11 * 5
    offs = offs_from_sizes([4, 0, 6], device)  # 10 rows / columns / reduction steps in 3 groups
    assert _count(lambda: cg.grouped_mm(torch.randn(10, 11, **f32), torch.randn(3, 11, 5, **f32), offs)) == 2 * 10 * 11 * 5
    assert _count(lambda: cg.grouped_mm(torch.randn(3, 7, 11, **f32), torch.randn(11, 10, **f32), offs)) == 2 * 7 * 11 * 10
    assert _count(lambda: cg.grouped_mm(torch.randn(7, 10, **f32), torch.randn(10, 5, **f32), offs)) == 2 * 7 * 10 * 5
    assert _count(lambda: cg.grouped_mm(torch.randn(3, 7, 11, **f32), torch.randn(3, 11, 5, **f32))) == 3 * 2 * 7 * 11 * 5
    assert _count(lambda: cg.grouped_gemm([a, a[:2]], [b, b[:, :3]])) == 2 * 7 * 11 * 5 + 2 * 2 * 11 * 3
    a8 = torch.randn(7, 16, device=device).to(torch.float8_e4m3fn)
    b8 = torch.randn(5, 16, device=device).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=device)
    assert _count(lambda: cg.scaled_mm(a8, b8, one, one)) == 2 * 7 * 16 * 5


@pytest.mark.parametrize("device", DEVICES)
def test_training_step_counts_like_torch(device, monkeypatch):
    """A Linear's forward and backward (three GEMMs) and a gated MLP's: the same count as the
    same modules on torch ops."""
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    x = torch.randn(6, 16, device=device, requires_grad=True)
    lin = cg.nn.Linear(16, 24, device=device)
    ref = torch.nn.Linear(16, 24, device=device)
    assert _count(lambda: lin(x).sum().backward()) == _count(lambda: ref(x).sum().backward()) == 3 * 2 * 6 * 16 * 24
    mlp = cg.nn.GatedMLP(16, 32, device=device)
    ours = _count(lambda: mlp(x).sum().backward())
    assert ours == 3 * 3 * 2 * 6 * 16 * 32  # gate, up and down: forward, dx and dW each


@pytest.mark.parametrize("flop_counter_first", [True, False])
def test_registered_in_either_import_order(flop_counter_first):
    """The formulas are registered when torch.utils.flop_counter is imported, before or after
    cutorch_gemm (importing it eagerly cost `import cutorch_gemm` 70 ms)."""
    imports = ["import torch.utils.flop_counter", "import cutorch_gemm as cg"]
    lines = (imports if flop_counter_first else imports[::-1]) + [
        "import torch",
        "from torch.utils.flop_counter import FlopCounterMode",
        "with FlopCounterMode(display=False) as m:",
        "    cg.mm(torch.randn(3, 4), torch.randn(4, 5))",
        "print(m.get_total_flops())",
    ]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, env=env, cwd=root,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == str(2 * 3 * 4 * 5)


def test_import_does_not_load_flop_counter():
    """`import cutorch_gemm` leaves torch.utils.flop_counter unimported (unless torch imported it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = ("import sys, torch; before = 'torch.utils.flop_counter' in sys.modules; import cutorch_gemm; "
            "print(before, 'torch.utils.flop_counter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = out.stdout.split()[-2:]
    assert after == before, "import cutorch_gemm imported torch.utils.flop_counter"
