"""The family, sm90-config and sm80-plan choices are pure functions in C++ (device/family.h,
device/sm90_configs.h, device/sm80_configs.h),
shared by the binding and `explain`; checked here on the CPU against the documented rules (the Hopper launch rules:
test_sm90_rules.py; the dense fit-width, pair and 240-wide rules of device/sm90_fit_rules.h: test_sm90_fit_rules.py)."""
from __future__ import annotations

import pytest

from cutorch_gemm import _C

K_MAJOR = (True, False)
MN_MAJOR = (True, True)
OK = dict(major=9, dtype="bfloat16", a=K_MAJOR, b=K_MAJOR, mode="none", k_positive=True, sm90_built=True,
          sm80_built=True, tf32_allowed=True, forced="")


def family(**over):
    args = {**OK, **over}
    return _C.choose_family(**args)


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
    (dict(major=8), "mma.sync"), (dict(major=10), "not an sm_90"), (dict(sm90_built=False), "sm_90a"),
    (dict(dtype="float64"), "fp64 DMMA"),
    (dict(k_positive=False), "K = 0"),
    (dict(a=(False, False)), "a: TMA"), (dict(b=(False, True)), "b: TMA"),
    # the grouped dimension may not be an operand's contiguous one (TMA box starts)
    (dict(mode="m", a=MN_MAJOR), "K-major a"), (dict(mode="n", b=MN_MAJOR), "K-major b"),
    (dict(mode="k", a=MN_MAJOR), "MN-major a and b"), (dict(mode="k", b=MN_MAJOR), "MN-major a and b"),
    (dict(forced="sm80"), "forces the sm80"),
])
def test_what_sm90_cannot_take_runs_on_sm80_with_a_reason(over, word):
    choice = family(**over)
    assert choice["family"] == "sm80", choice
    assert word in choice["reason"]


@pytest.mark.parametrize("over, word", [
    (dict(forced="simt"), "simt"), (dict(major=7), "below sm_80"),
    (dict(major=8, sm80_built=False), "no sm_80"), (dict(major=7, forced="sm80"), "below sm_80"),
    (dict(dtype="float32", tf32_allowed=False), "tf32 not allowed"),
    (dict(dtype="float32", tf32_allowed=False, forced="sm80"), "tf32 not allowed"),
])
def test_simt_with_a_reason(over, word):
    choice = family(**over)
    assert choice["family"] == "simt", choice
    assert word in choice["reason"]


def _plan(dtype="bfloat16", m=4096, n=4096, k=4096, batch=1, sms=132, smem=227 * 1024, grouped=False,
          config="", split="", mn_major=False):
    return _C.choose_sm80_plan(dtype, m, n, k, batch, sms, smem, grouped, config, split, mn_major)


@pytest.mark.parametrize("args, config", [
    (dict(), "Sm80_128x256x64_S3"),                        # fills the GPU
    (dict(smem=99 * 1024), "Sm80_128x128x64_S3"),          # sm_86/89: 144 KB ring does not fit
    (dict(m=64), "Sm80_64x128x64_S4"),                     # narrow M
    (dict(m=512, n=512), "Sm80_64x64x64_S5"),              # few tiles
    (dict(dtype="float32"), "Sm80_128x256x32_S4"),                   # 64x64 warp tiles
    (dict(dtype="float32", mn_major=True), "Sm80_128x128x32_S3"),    # 128x256x32 is K-major only
    (dict(dtype="float32", smem=99 * 1024), "Sm80_128x128x32_S3"),   # its 192 KB ring does not fit
    (dict(dtype="float32", m=256, n=256), "Sm80_64x64x32_S5"),
    (dict(dtype="float64"), "Sm80_128x64x16_S4"),
    (dict(dtype="float64", m=128, n=128), "Sm80_64x64x16_S4"),
])
def test_sm80_config_heuristic(args, config):
    plan = _plan(**{"k": 192, **args})  # short K: no split-K, the plain config choice
    assert plan["config"] == config, plan
    assert plan["smem_bytes"] <= args.get("smem", 227 * 1024)


def test_sm80_split_k_for_small_outputs_with_long_k():
    p = _plan(m=512, n=512, k=16384)         # 64 tiles of 64x64 on 132 SMs, 256 k-tiles
    # the split launch uses sliced-K 128x128 tiles (16, one 192 KB CTA per SM) and slices for at
    # most one wave of 132 CTAs
    assert (p["config"], p["splits"], p["split_mode"]) == ("Sm80_128x128x64_S3_K2", 8, "parallel"), p
    assert p["smem_bytes"] == 192 * 1024, p
    # where 192 KB do not fit (A100: 163 KB), plain 128x128 tiles, one 96 KB CTA per SM there
    p = _plan(m=512, n=512, k=16384, smem=163 * 1024)
    assert (p["config"], p["splits"], p["split_mode"]) == ("Sm80_128x128x64_S3", 8, "parallel"), p
    p = _plan(m=512, n=512, k=4096, smem=163 * 1024)  # 64 k-tiles: at most 8 slices of 8
    assert p["splits"] == 8, p
    assert _plan(m=512, n=512, k=768)["splits"] == 1             # too little K per slice
    assert _plan(m=128, n=128, k=16384, grouped=True)["splits"] == 1  # grouped launches never split
    assert _plan(m=8192, n=8192, k=16384)["splits"] == 1          # the GPU is already full
    assert _plan(m=512, n=512, k=16384, smem=99 * 1024)["splits"] == 8  # sm_86: one 128x128 CTA per SM
    # parallel partials above 64 MB: serial split-K (one partial tile per output tile)
    p = _plan(dtype="float32", m=4096, n=4096, k=1 << 16, sms=10000)  # (a hypothetical 10000-SM GPU)
    assert p["split_mode"] == "serial" and p["splits"] == 9, p  # at most one wave: 10000 // 1024
    p = _plan(dtype="float64", m=256, n=256, k=16384)
    assert p["split_mode"] == "parallel" and p["config"] == "Sm80_128x64x16_S4", p


def test_sm80_overrides():
    assert _plan(config="64x64x64")["config"] == "Sm80_64x64x64_S5"
    p = _plan(config="128x256x64", m=7, n=65, k=1000 * 16)  # split-K keeps a forced config
    assert p["config"] == "Sm80_128x256x64_S3" and p["splits"] > 1, p
    assert _plan(config="Sm80_128x128x64_S3")["config"] == "Sm80_128x128x64_S3"
    assert _plan(config="sm80_64x128x64_s4")["config"] == "Sm80_64x128x64_S4"  # the env value, lowercased
    assert _plan(config="128x256x64")["config"] == "Sm80_128x256x64_S3"          # a tile: its first config
    p = _plan(split="serial:3")
    assert (p["split_mode"], p["splits"]) == ("serial", 3)
    p = _plan(split="parallel:5", m=64)
    assert (p["split_mode"], p["splits"]) == ("parallel", 5)
    assert _plan(m=128, n=128, k=16384, split="none")["splits"] == 1
    # a K-major-only config forced on an MN-major operand gives way to the heuristic's choice
    p = _plan(dtype="float32", config="128x256x32", mn_major=True)
    assert p["config"] == "Sm80_128x128x32_S3" and "K-major operands only" in p["reason"], p
    assert _plan(dtype="float32", config="128x256x32")["config"] == "Sm80_128x256x32_S4"
    p = _plan(dtype="float32", m=512, n=512, k=16384)  # tf32 split-K slices 128x128 tiles, like 16-bit
    assert p["config"] == "Sm80_128x128x32_S3" and p["splits"] > 1, p
    p = _plan(dtype="float32", m=1, n=65, k=1000, config="128x256x32", mn_major=True)  # the note survives split-K
    assert p["splits"] > 1 and "K-major operands only" in p["reason"], p
    for bad in (dict(config="64x64x32"), dict(config="nonsense"), dict(split="serial"), dict(split="parallel:99"),
                dict(split="fast:2"), dict(config="128x256x64", smem=99 * 1024)):
        with pytest.raises(ValueError, match="CUTORCH_GEMM_SM80_CONFIG"):
            _plan(**bad)


def test_sm90_tf32_k_major_only():
    """tf32 wgmma has no transpose bits: K-major a and b only; fp32 without tf32 stays on SIMT."""
    on = family(dtype="float32")
    assert on["family"] == "sm90" and "tf32" in on["reason"]
    for a, b in ((MN_MAJOR, K_MAJOR), (K_MAJOR, MN_MAJOR)):
        mn = family(dtype="float32", a=a, b=b)
        assert mn["family"] == "sm80" and "K-major operands only" in mn["reason"]
    assert family(dtype="float32", tf32_allowed=False)["family"] == "simt"
