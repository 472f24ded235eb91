"""When the launchers ask for programmatic dependent launch (device/sm90_pdl_rule.h, device/sm80_skinny.h), on the
CPU through the bindings. The cases are the measured shapes of benchmarks/RESULTS.md (H200, 132 SMs; fifty-sixth and
fifty-seventh sessions): the rule must keep PDL where it saved time and off where it cost it, above all on grids
between half and 7/8 of the SMs (64x9216x2048, 72 CTAs: 24% slower with it). tests/test_sm90_pdl.py runs the
launches themselves on a GPU."""
from __future__ import annotations

import pytest

_C = pytest.importorskip("cutorch_gemm._C")

SMS = 132


# (what, items, units, item_k, ctas, want): one-tile-per-CTA launches unless noted
@pytest.mark.parametrize("what,items,units,item_k,ctas,want", [
    ("1024^3 64x128 (+12%)", 128, 128, 1024, 128, True),
    ("1024x1024x2048 (+2.6%)", 128, 128, 2048, 128, True),
    ("1024x1024x4096 (-1%)", 128, 128, 4096, 128, False),
    ("256x4096x4096 (-7.6%)", 128, 128, 4096, 128, False),
    ("2048x2048x512 128x256 (+8%)", 64, 64, 512, 64, True),
    ("64x16896x4096 64x256 (+2.5%)", 66, 66, 4096, 66, True),
    ("64x8192x4096 (+2.5%)", 64, 64, 4096, 64, True),
    ("64x8192x16384 (0)", 64, 64, 16384, 64, True),
    ("64x9216x1024 (-13%)", 72, 72, 1024, 72, False),
    ("64x9216x2048 (-24%)", 72, 72, 2048, 72, False),
    ("64x9216x4096 (-39%)", 72, 72, 4096, 72, False),
    ("64x10240x2048 (-18%)", 80, 80, 2048, 80, False),
    ("1024x1056x4096 64x256 (-24%)", 80, 80, 4096, 80, False),
    ("64x14336x4096 (-5%)", 112, 112, 4096, 112, False),
    ("64x14336x1024 (+1.5..2.9%, in the middle)", 112, 112, 1024, 112, False),
    ("7/8 of 132 is 115.5: 116 CTAs", 116, 116, 1024, 116, True),
    ("115 CTAs", 115, 115, 1024, 115, False),
    ("persistent, 4 tiles of K 512 per CTA", 528, 132, 512, 132, True),
    ("persistent, 4 tiles of K 1024 per CTA", 528, 132, 1024, 132, False),
    ("2x1 clusters: 128 tiles over 64 pairs, K 2048", 128, 64, 2048, 128, False),  # (a pair shares its items)
    ("2x1 clusters: 64 pairs, 128 CTAs, K 2048", 64, 64, 2048, 128, True),
])
def test_tile_rule(what, items, units, item_k, ctas, want):
    assert _C.sm90_pdl_wanted(items, units, item_k, ctas, SMS) is want, what


def test_tile_rule_scales_with_the_sms():
    # an H100 PCIe (114 SMs): half is 57 CTAs, 7/8 is 99.75
    assert _C.sm90_pdl_wanted(57, 57, 8192, 57, 114)
    assert not _C.sm90_pdl_wanted(58, 58, 1024, 58, 114)
    assert not _C.sm90_pdl_wanted(99, 99, 1024, 99, 114)
    assert _C.sm90_pdl_wanted(100, 100, 1024, 100, 114)


@pytest.mark.parametrize("ctas,cta_k,want", [
    (32, 1024, True),     # 32x2048x1024 (+6.8%)
    (64, 2048, True),     # 32x4096x2048 (+2.2%)
    (64, 4096, False),    # longer K: not measured
    (66, 2048, True),
    (67, 2048, False),
    (128, 2048, False),   # 16x8192x2048 (+0.6%): above half the SMs
    (144, 1024, False),   # 32x9216x1024 (-17%)
    (144, 2048, False),   # 32x9216x2048 (-21%)
])
def test_skinny_rule(ctas, cta_k, want):
    assert _C.sm90_skinny_pdl_wanted(ctas, cta_k, SMS) is want


@pytest.mark.parametrize("k,want", [(1024, True), (2048, True), (4096, True), (4097, False), (8192, False)])
def test_mma_sync_skinny_rule(k, want):
    # 16x4096x1024 +12%, 1x4096x4096 +5.2%, 16x4096x8192 +0.5% (not worth leaving the measured range)
    assert _C.skinny_pdl_wanted(k) is want


@pytest.mark.parametrize("forced,want", [("on", True), ("off", False)])
def test_forced(forced, want):
    # CUTORCH_GEMM_SM90_PDL overrides every rule, both ways
    assert _C.sm90_pdl_wanted(72, 72, 4096, 72, SMS, forced) is want
    assert _C.sm90_pdl_wanted(64, 64, 512, 64, SMS, forced) is want
    assert _C.sm90_skinny_pdl_wanted(144, 2048, SMS, forced) is want
    assert _C.sm90_skinny_pdl_wanted(32, 1024, SMS, forced) is want
    assert _C.skinny_pdl_wanted(1024, forced) is want
    assert _C.skinny_pdl_wanted(8192, forced) is want


def test_other_values_leave_it_to_the_rule():
    for v in ("", "1", "ON", "auto"):
        assert _C.sm90_pdl_wanted(128, 128, 1024, 128, SMS, v)
        assert not _C.sm90_pdl_wanted(72, 72, 2048, 72, SMS, v)
