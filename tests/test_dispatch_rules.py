"""The family and sm90-config choices are pure functions in C++ (device/sm90_configs.h),
shared by the binding and `explain`; checked here on the CPU against the documented rules."""
from __future__ import annotations

import pytest

from cutorch_gemm import _C

OK = dict(major=9, dtype="bfloat16", a_k_major=True, b_k_major=True, tma_ok=True, dense=True,
          k_positive=True, sm90_built=True, forced="")


def family(**over):
    args = {**OK, **over}
    return _C.choose_family(args["major"], args["dtype"], args["a_k_major"], args["b_k_major"],
                            args["tma_ok"], args["dense"], args["k_positive"], args["sm90_built"],
                            args["forced"])


def test_sm90_when_everything_fits():
    assert family()["family"] == "sm90"
    assert family(dtype="float16")["family"] == "sm90"
    assert family(forced="auto")["family"] == "sm90"


@pytest.mark.parametrize("over, word", [
    (dict(forced="simt"), "simt"), (dict(major=8), "sm_90"), (dict(sm90_built=False), "sm_90a"),
    (dict(dtype="float32"), "fp16/bf16"), (dict(dtype="float64"), "fp16/bf16"),
    (dict(dense=False), "batched"), (dict(k_positive=False), "K = 0"),
    (dict(a_k_major=False), "K-major"), (dict(b_k_major=False), "K-major"), (dict(tma_ok=False), "16-byte"),
])
def test_each_condition_falls_back_to_simt_with_a_reason(over, word):
    choice = family(**over)
    assert choice["family"] == "simt"
    assert word in choice["reason"]


@pytest.mark.parametrize("m, n, expected", [
    (8192, 8192, "Sm90_128x256x64_Coop_S4"),      # fills 132 SMs with 128x256 tiles
    (4096, 4096, "Sm90_128x256x64_Coop_S4"),
    (128, 8192, "Sm90_64x256x64_Pingpong_S5"),    # small M
    (1, 8192, "Sm90_64x256x64_Pingpong_S5"),
    (1024, 1024, "Sm90_64x256x64_Pingpong_S5"),   # 32 cooperative tiles < 132 SMs
])
def test_sm90_config_heuristic(m, n, expected):
    assert _C.choose_sm90_config(m, n, 4096, 132, "") == expected


def test_sm90_config_override():
    assert _C.choose_sm90_config(8192, 8192, 4096, 132, "pingpong") == "Sm90_64x256x64_Pingpong_S5"
    assert _C.choose_sm90_config(16, 256, 64, 132, "coop") == "Sm90_128x256x64_Coop_S4"
