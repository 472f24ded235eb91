"""torch.library.opcheck on every op (schema, autograd registration, fake tensor, AOT
dispatch with dynamic shapes), with plain and requires_grad samples, on every device."""
from __future__ import annotations

import pytest
import torch

from conftest import DEVICES, dtype_id, sample_inputs

OP_NAMES = ["mm", "gemm", "bmm", "grouped_mm", "grouped_gemm"]


def _sample_names():
    return [s.name for s in sample_inputs("cpu")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "grad"])
@pytest.mark.parametrize("name", _sample_names())
def test_opcheck(device, requires_grad, name):
    (s,) = [s for s in sample_inputs(device, requires_grad=requires_grad) if s.name == name]
    torch.library.opcheck(s.op, s.args, s.kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=dtype_id)
def test_opcheck_other_dtypes(device, dtype):
    for s in sample_inputs(device, dtype=dtype, requires_grad=True):
        if s.name.endswith(("-row", "-bias_gelu", "-2d3d_empty_group_tail", "-3d2d",
                            "-2d2d", "-lists_bias_act")):
            torch.library.opcheck(s.op, s.args, s.kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_out_dtype(device):
    """out_dtype=float32 from bf16 inputs: the fake kernel must agree on the dtype."""
    from conftest import make, offs_from_sizes
    d = torch.bfloat16
    ops = torch.ops.gemm
    a, b = make((5, 6), d, device), make((6, 4), d, device, "col")
    torch.library.opcheck(ops.mm.default, (a, b), {"out_dtype": torch.float32})
    torch.library.opcheck(ops.gemm.default, (a, b),
                          {"bias": make((4,), d, device), "activation": "relu",
                           "out_dtype": torch.float32})
    torch.library.opcheck(ops.grouped_mm.default,
                          (make((9, 6), d, device), make((2, 6, 4), d, device),
                           offs_from_sizes([4, 3], device)), {"out_dtype": torch.float32})


def test_every_op_is_sampled():
    names = {s.name.split("-")[0] for s in sample_inputs("cpu")}
    assert names == set(OP_NAMES)
    for op in OP_NAMES:
        assert hasattr(torch.ops.gemm, op), f"torch.ops.gemm.{op} is not registered"
