"""MoE decode on the Hopper family: grouped_mm with a few rows over many experts (most groups
empty). The config rule counts at most one group per row, so such launches take the 64x128
ping-pong config where 64x256 tiles would fill under half the SMs. Correct against the float64
reference either way (CUTORCH_GEMM_SM90_GROUPED_NARROW=off keeps 64x256). Skipped off sm_90."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import check, make, offs_from_sizes, poison, ref_grouped_mm

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9
                       or not cg._C.sm90_available(), reason="needs an sm_90 GPU and sm_90a kernels"),
]

WIDE, NARROW = "Sm90_64x256x64_Pingpong_S5", "Sm90_64x128x64_Pingpong_S8"


@pytest.mark.parametrize("narrow", ["", "off"])
@pytest.mark.parametrize("weight_major", ["mn", "k"])
@pytest.mark.parametrize("rows, experts, k, n", [(2, 8, 1032, 4096), (8, 128, 264, 1544), (1, 8, 136, 2056),
                                                 (24, 16, 520, 1000)])
def test_sm90_grouped_decode(rows, experts, k, n, weight_major, narrow, monkeypatch):
    """MoE decode: a few rows over many experts (most groups empty). At most `rows` groups have
    tiles, so their 64x256 tiles would fill a few SMs: the 64x128 config (unless
    CUTORCH_GEMM_SM90_GROUPED_NARROW=off). Bias + activation, partial column tiles, rows past
    offs[-1], poisoned output."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GROUPED_NARROW", narrow)
    dt = torch.bfloat16
    gen = torch.Generator().manual_seed(rows * 1000 + experts)
    hit = torch.randint(0, experts, (rows,), generator=gen)
    sizes = torch.bincount(hit, minlength=experts).tolist()
    offs = offs_from_sizes(sizes, "cuda")
    x = make((rows + 1, k), dt, "cuda")   # a row past offs[-1]
    w = make((experts, k, n), dt, "cuda", "row" if weight_major == "mn" else "col")
    bias = make((experts, n), dt, "cuda")
    e = cg.explain("grouped_mm", x, w, offs)
    wide_tiles = min(x.size(0), experts) * -(-n // 256)   # the rule sees min(rows of x, experts) groups
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    want = WIDE if narrow == "off" or 2 * wide_tiles >= sms else NARROW
    assert e.kernel == "sm90" and e.config == want, str(e)
    ref = ref_grouped_mm(x, w, offs, bias, "gelu")
    poison(ref.numel() * 2)
    out = cg.grouped_mm(x, w, offs, bias=bias, activation="gelu")
    check(out, ref, dt, what=f"sm90 grouped decode {rows}x{experts} w={weight_major} narrow={narrow or 'on'}")
    assert torch.all(out[rows:] == 0)
