"""The family and sm90-config choices are pure functions in C++ (device/sm90_configs.h),
shared by the binding and `explain`; checked here on the CPU against the documented rules."""
from __future__ import annotations

import pytest

from cutorch_gemm import _C

K_MAJOR = (True, False)
MN_MAJOR = (True, True)
OK = dict(major=9, dtype="bfloat16", a=K_MAJOR, b=K_MAJOR, mode="none", k_positive=True, sm90_built=True,
          forced="")


def family(**over):
    args = {**OK, **over}
    return _C.choose_family(args["major"], args["dtype"], args["a"], args["b"], args["mode"],
                            args["k_positive"], args["sm90_built"], args["forced"])


def test_sm90_when_everything_fits():
    assert family()["family"] == "sm90"
    assert family(dtype="float16")["family"] == "sm90"
    assert family(forced="auto")["family"] == "sm90"
    mn = family(a=MN_MAJOR, b=MN_MAJOR)
    assert mn["family"] == "sm90" and "a MN-major, b MN-major" in mn["reason"]
    # MoE forms: x @ W[g] (grouped M, any b), dW = x^T dY (grouped K, both MN-major)
    assert family(mode="m", b=MN_MAJOR)["family"] == "sm90"
    assert family(mode="k", a=MN_MAJOR, b=MN_MAJOR)["family"] == "sm90"
    assert family(mode="n", a=MN_MAJOR)["family"] == "sm90"


@pytest.mark.parametrize("over, word", [
    (dict(forced="simt"), "simt"), (dict(major=8), "sm_90"), (dict(sm90_built=False), "sm_90a"),
    (dict(dtype="float32"), "fp16/bf16"), (dict(dtype="float64"), "fp16/bf16"),
    (dict(k_positive=False), "K = 0"),
    (dict(a=(False, False)), "a: TMA"), (dict(b=(False, True)), "b: TMA"),
    # the grouped dimension may not be an operand's contiguous one (TMA box starts)
    (dict(mode="m", a=MN_MAJOR), "K-major a"), (dict(mode="n", b=MN_MAJOR), "K-major b"),
    (dict(mode="k", a=MN_MAJOR), "MN-major a and b"), (dict(mode="k", b=MN_MAJOR), "MN-major a and b"),
])
def test_each_condition_falls_back_to_simt_with_a_reason(over, word):
    choice = family(**over)
    assert choice["family"] == "simt"
    assert word in choice["reason"]


@pytest.mark.parametrize("k_stride, mn_stride, batch_stride, aligned, ok, mn_major", [
    (1, 4096, 0, True, True, False),        # K-major, 8192-byte rows
    (4096, 1, 0, True, True, True),         # MN-major (a weight read as (K, N) row-major)
    (1, 1000, 0, True, True, False),        # 2000-byte rows: a multiple of 16
    (1, 1001, 0, True, False, False),       # rows 2002 bytes apart: TMA cannot stride that
    (1, 4096, 0, False, False, False),      # base not 16-byte aligned
    (2, 4096, 0, True, False, False),       # neither dimension contiguous
    (1, 64, 64 * 100 + 4, True, False, False),  # batch stride not a 16-byte multiple
    (1, 64, 64 * 100, True, True, False),
])
def test_sm90_operand(k_stride, mn_stride, batch_stride, aligned, ok, mn_major):
    got = _C.sm90_operand(k_stride, mn_stride, batch_stride, aligned, 2)
    assert got[0] == ok
    if ok:
        assert got[1] == mn_major


@pytest.mark.parametrize("m, n, problems, expected", [
    (8192, 8192, 1, "Sm90_128x256x64_Coop_S4"),      # fills 132 SMs with 128x256 tiles
    (4096, 4096, 1, "Sm90_128x256x64_Coop_S4"),
    (128, 8192, 1, "Sm90_64x256x64_Pingpong_S5"),    # small M
    (1, 8192, 1, "Sm90_64x256x64_Pingpong_S5"),
    (1024, 1024, 1, "Sm90_64x256x64_Pingpong_S5"),   # 32 cooperative tiles < 132 SMs
    (1024, 1024, 8, "Sm90_128x256x64_Coop_S4"),      # 8 problems: 256 tiles
    (96, 4096, 64, "Sm90_64x256x64_Pingpong_S5"),    # MoE groups of ~96 rows
])
def test_sm90_config_heuristic(m, n, problems, expected):
    assert _C.choose_sm90_config(m, n, 4096, problems, 132, "") == expected


def test_sm90_config_override():
    assert _C.choose_sm90_config(8192, 8192, 4096, 1, 132, "pingpong") == "Sm90_64x256x64_Pingpong_S5"
    assert _C.choose_sm90_config(16, 256, 64, 1, 132, "coop") == "Sm90_128x256x64_Coop_S4"
