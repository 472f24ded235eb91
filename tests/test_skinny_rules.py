"""The skinny kernels' rules are pure functions in C++ (device/sm80_skinny.h, device/sm90_skinny.h),
shared by the binding and `explain`; checked here on the CPU against the documented rules (the
tile families' rules: test_dispatch_rules.py)."""
from __future__ import annotations

import pytest

from cutorch_gemm import _C


# The skinny kernel's rule (device/sm80_skinny.h): x (M x K, K contiguous) times W.t() of an
# nn.Linear weight W (N x K, K contiguous), strides as set_2d reports them.
SKINNY = dict(major=9, sm80_built=True, dtype="bfloat16", batch=1, m=16, n=4096, k=4096, a_sm=4096, a_sk=1,
              b_sk=1, b_sn=4096, a_aligned=True, b_aligned=True, forced="", knob="")


def skinny(**over):
    return _C.skinny_plan(**{**SKINNY, **over})


@pytest.mark.parametrize("m, config", [(1, "T8"), (8, "T8"), (9, "T16"), (16, "T16"), (17, "T32"), (32, "T32")])
def test_skinny_takes_decode_shapes(m, config):
    p = skinny(m=m)
    assert p["taken"] and p["reason"] == "" and f"_32x{config}_" in p["config"], p
    assert skinny(m=m, major=8, dtype="float16")["taken"]  # Ampere too (mma.sync is native there)


def test_skinny_takes_small_problems_up_to_16_tokens():
    for n, k in ((128, 128), (512, 512), (256, 4096), (14336, 4096), (28672, 8192)):
        assert skinny(m=16, n=n, k=k, a_sm=k, b_sn=k)["taken"], (n, k)
    assert skinny(m=32, n=4224)["taken"] and not skinny(m=32, n=4225)["taken"]


def test_skinny_config_warps_and_tokens():
    # 16 warps when the 32-row CTAs are at most one per SM, else 8; "w8" / "w16" pick them.
    assert skinny(n=4096, num_sms=132)["config"] == "Sm80_Skinny_32xT16_W16"
    assert skinny(n=4224, num_sms=132)["config"] == "Sm80_Skinny_32xT16_W16"
    assert skinny(n=4225, num_sms=132)["config"] == "Sm80_Skinny_32xT16_W8"
    assert skinny(n=8192, num_sms=132)["config"] == "Sm80_Skinny_32xT16_W8"
    assert skinny(n=8192, num_sms=132, knob="w16")["config"] == "Sm80_Skinny_32xT16_W16"
    assert skinny(n=4096, num_sms=132, knob="w8")["config"] == "Sm80_Skinny_32xT16_W8"
    # M 33..64: only when forced, one config (8 warps)
    for m in (33, 64):
        assert not skinny(m=m)["taken"]
        p = skinny(m=m, knob="force")
        assert p["taken"] and p["config"] == "Sm80_Skinny_32xT64_W8", p


@pytest.mark.parametrize("over, word", [
    (dict(m=65), "M outside"), (dict(m=0), "M outside"), (dict(m=33), "M > 32"), (dict(dtype="float32"), "fp16 / bf16"),
    (dict(dtype="int8"), "fp16 / bf16"), (dict(batch=2), "one dense problem"), (dict(major=7), "sm_80+"),
    (dict(sm80_built=False), "sm_80+"), (dict(a_sk=4096, a_sm=1), "K-contiguous"), (dict(b_sk=4096, b_sn=1), "K-contiguous"),
    (dict(k=4100, a_sm=4100, b_sn=4100), "16-byte"), (dict(a_sm=4099), "16-byte"), (dict(b_sn=4100), "16-byte"),
    (dict(a_aligned=False), "16-byte"), (dict(b_aligned=False), "16-byte"),
    (dict(m=17, n=4225), "N / 32 > SMs"), (dict(m=32, n=14336), "N / 32 > SMs"),
    (dict(forced="sm90"), "CUTORCH_GEMM_ARCH"), (dict(forced="sm80"), "CUTORCH_GEMM_ARCH"), (dict(knob="off"), "=off"),
])
def test_skinny_refusals_say_why(over, word):
    p = skinny(**over)
    assert not p["taken"] and word in p["reason"], p


def test_skinny_force_knob_skips_only_the_size_rule():
    assert skinny(n=7, k=8, a_sm=8, b_sn=8, knob="force")["taken"]
    assert skinny(forced="auto", knob="force")["taken"]
    assert skinny(n=7, k=8, a_sm=8, b_sn=8, knob="w16")["taken"]
    assert not skinny(n=7, k=12, a_sm=16, b_sn=16, knob="force")["taken"]  # K % 8: loads need 16 bytes
    assert not skinny(m=65, knob="force")["taken"]


# The Hopper skinny kernel's rule (device/sm90_skinny.h), checked before the mma.sync one's.
SKINNY90 = dict(major=9, sm90_built=True, dtype="bfloat16", batch=1, m=32, n=4096, k=4096, a_sm=4096, a_sk=1,
                b_sk=1, b_sn=4096, a_aligned=True, b_aligned=True, forced="", knob="", num_sms=132)


def skinny90(**over):
    return _C.sm90_skinny_plan(**{**SKINNY90, **over})


@pytest.mark.parametrize("m, config", [(17, "64xT32"), (32, "64xT32"), (33, "64xT64"), (64, "64xT64")])
def test_sm90_skinny_takes_17_to_64_tokens(m, config):
    p = skinny90(m=m)
    assert p["taken"] and p["reason"] == "" and p["config"] == f"Sm90_Skinny_{config}", p
    assert skinny90(m=m, dtype="float16")["taken"]


@pytest.mark.parametrize("over, word", [
    (dict(m=16), "mma.sync skinny"), (dict(m=1), "mma.sync skinny"), (dict(m=65), "M > 64"),
    (dict(m=129, knob="sm90"), "M outside"), (dict(m=0), "M outside"), (dict(major=8), "sm_90"),
    (dict(major=10), "sm_90"), (dict(sm90_built=False), "sm_90"), (dict(dtype="float32"), "fp16 / bf16"),
    (dict(batch=2), "one dense problem"), (dict(a_sk=4096, a_sm=1), "K-contiguous"), (dict(b_sn=4100), "16-byte"),
    (dict(a_aligned=False), "16-byte"), (dict(forced="sm90"), "CUTORCH_GEMM_ARCH"), (dict(knob="off"), "=off"),
    (dict(knob="sm80"), "mma.sync"), (dict(knob="force"), "mma.sync"), (dict(knob="w16"), "mma.sync"),
    (dict(n=65535 * 64 + 1, knob="sm90"), "65535"),
])
def test_sm90_skinny_refusals_say_why(over, word):
    p = skinny90(**over)
    assert not p["taken"] and word in p["reason"], p


# The grouped (MoE decode) Hopper skinny rule (device/sm90_skinny.h), checked before the tile kernels'.
GSKINNY = dict(major=9, sm90_built=True, dtype="bfloat16", groups=8, m=2, n=4096, k=14336, a_sm=14336, a_sk=1,
               b_sk=1, b_sn=14336, b_sb=4096 * 14336, a_aligned=True, b_aligned=True, forced="", knob="",
               num_sms=132)


def gskinny(**over):
    return _C.sm90_grouped_skinny_plan(**{**GSKINNY, **over})


@pytest.mark.parametrize("m, groups, config, slots", [(1, 8, "64xT16", 1), (2, 8, "64xT16", 2),
                                                      (16, 128, "64xT16", 16), (17, 128, "64xT32", 17),
                                                      (32, 8, "64xT32", 8), (32, 1, "64xT32", 1)])
def test_grouped_skinny_takes_up_to_32_rows_one_slot_per_possible_group(m, groups, config, slots):
    p = gskinny(m=m, groups=groups)
    assert p["taken"] and p["reason"] == "" and p["config"] == f"Sm90_Skinny_{config}", p
    assert p["slots"] == slots, p
    assert gskinny(m=m, groups=groups, forced_slots=1)["slots"] == 1
    assert gskinny(m=m, groups=groups, forced_slots=1000)["slots"] == slots


def test_grouped_skinny_swiglu_needs_f_in_16_byte_units_for_n_contiguous_weights():
    assert gskinny(swiglu=True)["taken"]
    assert gskinny(swiglu=True, n=2 * 67, k=14336)["taken"]                 # K-contiguous: any F
    assert gskinny(swiglu=True, b_sk=2 * 72, b_sn=1, n=2 * 72)["taken"]
    p = gskinny(swiglu=True, b_sk=2 * 20, b_sn=1, n=2 * 20)
    assert not p["taken"] and "F = N / 2 in 16-byte units" in p["reason"], p


def test_grouped_skinny_forced_takes_up_to_64_rows():
    p = gskinny(m=64, knob="sm90")
    assert p["taken"] and p["config"] == "Sm90_Skinny_64xT64", p
    assert "M outside 1..64" in gskinny(m=65, knob="sm90")["reason"]
    assert "M outside 1..32" in gskinny(m=33)["reason"]


def test_grouped_skinny_takes_n_contiguous_weights():
    """(G, K, N) weights (GroupedExperts' layout): wgmma reads the W box transposed."""
    assert gskinny(b_sk=4096, b_sn=1)["taken"]
    assert gskinny(n=1, b_sk=1, b_sn=14336)["taken"]   # (one column: set_2d reports it K-major)


def test_grouped_skinny_splits_k_only_where_the_slots_leave_sms_idle():
    # the dense rule over every slot's row tiles
    assert gskinny(m=1)["splits"] == 2                      # Mixtral down, one row: 64 row tiles
    assert gskinny(m=2)["splits"] == 1                      # two rows (two slots): 128
    assert gskinny(m=1, n=1024, k=4096)["splits"] == 4      # 16 row tiles, clusters of 4 fill half the SMs
    assert gskinny(m=8, n=1024, k=4096)["splits"] == 1      # 8 slots x 16 row tiles
    assert gskinny(m=1, n=2048, k=8192)["splits"] == 2      # 32 row tiles: clusters of 4 only within 3/4 of the SMs
    assert gskinny(m=1, n=1024, k=4096, forced_splits=4)["splits"] == 4


@pytest.mark.parametrize("over, word", [
    (dict(m=33), "M outside"), (dict(m=0), "M outside"), (dict(major=8), "sm_90"), (dict(sm90_built=False), "sm_90"),
    (dict(dtype="float32"), "fp16 / bf16"), (dict(groups=0), "no groups"), (dict(n=0), "empty"), (dict(k=0), "empty"),
    (dict(b_sk=4096, b_sn=2), "K- or N-contiguous"), (dict(a_sk=2, a_sm=1), "K-contiguous a"),
    (dict(b_sb=4096 * 14336 + 4), "16-byte"), (dict(b_sk=4100, b_sn=1), "16-byte"),
    (dict(k=14332, a_sm=14332, b_sn=14332), "16-byte"), (dict(b_aligned=False), "16-byte"),
    (dict(forced="sm80"), "CUTORCH_GEMM_ARCH"), (dict(knob="off"), "=off"), (dict(n=65535 * 64 + 1), "65535"),
])
def test_grouped_skinny_refusals_say_why(over, word):
    p = gskinny(**over)
    assert not p["taken"] and word in p["reason"], p


@pytest.mark.parametrize("m, n, k, taken", [
    (16, 8192, 4096, True),    # 128 row tiles of 64: one K split fills the SMs
    (1, 8192, 8192, True),
    (8, 14336, 4096, True),
    (16, 4096, 4096, False),   # 64 row tiles: a K split; the mma.sync kernel's shorter ramp wins
    (1, 4096, 14336, False),
    (16, 64 * 66, 4096, False),  # 66 row tiles = half the SMs
    (16, 64 * 67, 4096, True),
])
def test_sm90_skinny_takes_up_to_16_tokens_where_one_split_fills_the_sms(m, n, k, taken):
    p = skinny90(m=m, n=n, k=k)
    assert p["taken"] == taken, p
    if not taken:
        assert "mma.sync skinny" in p["reason"], p


@pytest.mark.parametrize("m, n, k, taken", [
    (16, 1024, 8192, True),    # 16 row tiles x 4 splits: the K split streams W faster than 32 mma.sync CTAs
    (9, 1024, 8192, True),
    (16, 1536, 8960, True),    # 24 row tiles: 96 CTAs <= 3/4 of 132
    (16, 512, 4096, True),
    (16, 1600, 8192, False),   # 25 row tiles: 100 CTAs > 99
    (8, 1024, 8192, False),    # 8 tokens: the mma.sync kernel's 8-token config keeps enough in flight
    (16, 1024, 2048, False),   # short K: the mma.sync kernel's shorter ramp
    (16, 2048, 8192, False),   # 32 row tiles
])
def test_sm90_skinny_takes_9_to_16_tokens_against_a_narrow_deep_w(m, n, k, taken):
    p = skinny90(m=m, n=n, k=k, a_sm=k, b_sn=k)
    assert p["taken"] == taken, p
    if not taken:
        assert "mma.sync skinny" in p["reason"], p
    assert not skinny90(m=m, n=n, k=k, a_sm=k, b_sn=k, num_sms=0)["taken"]  # (no SM count: the old rule)


def test_sm90_skinny_takes_n_up_to_the_grid_limit():
    assert skinny90(n=65535 * 64, knob="sm90")["taken"]
    assert not skinny90(n=65535 * 64)["taken"]  # one split and the tiles fill the SMs: the tile kernels


@pytest.mark.parametrize("m, n, k, taken", [
    (32, 14336, 4096, False),  # one split, 112 tiles of 128 columns fill 3/4 of 132 SMs
    (32, 8192, 8192, True),    # one split, 64 tiles do not
    (24, 8192, 8192, True),
    (17, 12288, 4096, True),   # one split, 96 tiles: 4 * 96 = 384 < 3 * 132
    (17, 13312, 4096, False),  # 104 tiles: 416 >= 396
    (33, 8192, 8192, False),   # one split and more than 32 tokens
    (64, 14336, 4096, False),
    (64, 4096, 14336, True),   # two splits
    (32, 4096, 4096, True),
    (48, 1024, 256, True),     # one split for want of K blocks, not of SMs: 16 row tiles
    (64, 4096, 64, True),
])
def test_sm90_skinny_leaves_one_split_launches_to_the_tiles(m, n, k, taken):
    p = skinny90(m=m, n=n, k=k)
    assert p["taken"] == taken, p
    if not taken:
        assert "one K split" in p["reason"] and "tile kernels" in p["reason"], p
        assert skinny90(m=m, n=n, k=k, knob="sm90")["taken"]  # the knob still sends it there


def test_sm90_skinny_knob_takes_1_to_128_tokens():
    for m, config in ((1, "64xT16"), (16, "64xT16"), (65, "64xT128"), (128, "64xT128")):
        p = skinny90(m=m, knob="sm90")
        assert p["taken"] and p["config"] == f"Sm90_Skinny_{config}", p


def test_sm90_skinny_deep_ring_only_for_64_tokens_long_k_and_at_most_2_splits():
    # sm90_skinny_deep_ring: 12 stages where each CTA streams more than 32 K blocks (K past 2048 per CTA)
    assert skinny90(m=64, n=4096, k=14336)["stages"] == 12   # 2 splits, 112 blocks each
    assert skinny90(m=33, n=4096, k=4160)["stages"] == 12    # 2 splits, 33 blocks each
    assert skinny90(m=48, n=4096, k=4096)["stages"] == 6     # 2 splits, 32 blocks each
    assert skinny90(m=64, n=8192, k=2112)["stages"] == 12    # 1 split, 33 blocks
    assert skinny90(m=64, n=8192, k=2048)["stages"] == 6
    assert skinny90(m=64, n=1024, k=8192)["stages"] == 6     # 8 splits: two CTAs per SM need the short ring
    assert skinny90(m=32, n=4096, k=14336)["stages"] == 8    # 32 tokens: their own ring
    assert skinny90(m=16, n=8192, k=8192, knob="sm90")["stages"] == 10
    assert skinny90(m=100, n=4096, k=14336, knob="sm90")["stages"] == 4
    # CUTORCH_GEMM_SKINNY_RING: "short" never, "deep" whatever K (still 64 tokens and at most 2 splits)
    assert skinny90(m=64, n=4096, k=14336, ring="short")["stages"] == 6
    assert skinny90(m=64, n=4096, k=1024, ring="deep")["stages"] == 12
    assert skinny90(m=64, n=1024, k=8192, ring="deep")["stages"] == 6
    assert skinny90(m=32, n=4096, k=14336, ring="deep")["stages"] == 8


def test_sm90_skinny_splits_keep_the_ctas_within_their_bounds():
    # 64-row CTAs times splits stay within the SMs (clusters of 2), 13/8 of them (clusters of 4) or 5/4 (clusters of
    # 8); each split keeps >= 4 K blocks, at most 8.
    assert skinny90(n=4096, k=4096)["splits"] == 2          # 64 row tiles
    assert skinny90(n=8192, k=8192)["splits"] == 1          # 128
    assert skinny90(n=14336, k=4096)["splits"] == 1         # 224: more than the SMs already
    assert skinny90(n=1024, k=8192)["splits"] == 8          # 16: 128 CTAs in clusters of 8 (two CTAs per SM)
    assert skinny90(n=768, k=14336)["splits"] == 8          # 12: 96
    assert skinny90(n=1280, k=8192)["splits"] == 8          # 20: 160 CTAs, within 5/4 of the SMs
    assert skinny90(n=1344, k=8192)["splits"] == 4          # 21: 168 > 165
    assert skinny90(n=1024, k=2048)["splits"] == 8          # 32 K blocks: 8 splits of 4
    assert skinny90(n=1024, k=1984)["splits"] == 4          # 31: 8 splits would leave 3 per CTA
    assert skinny90(n=1536, k=8960)["splits"] == 4          # 24: 96 CTAs in clusters of 4
    assert skinny90(n=2048, k=8192)["splits"] == 4          # 32: 128 CTAs in clusters of 4, within the SMs
    assert skinny90(n=2176, k=8192)["splits"] == 4          # 34: 136 CTAs, past the SMs (two CTAs per SM)
    assert skinny90(n=3328, k=8192)["splits"] == 4          # 52: 208 CTAs, within 13/8 of the SMs (214)
    assert skinny90(n=3392, k=8192)["splits"] == 4          # 53: 212
    assert skinny90(n=2048, k=8192, num_sms=79)["splits"] == 4  # 128 CTAs: the bound 13 * 79 / 8 = 128
    assert skinny90(n=2048, k=8192, num_sms=78)["splits"] == 2  # 126
    assert skinny90(n=3456, k=8192)["splits"] == 2          # 54: 216 > 214 (measured no faster than 2 splits)
    assert skinny90(n=2560, k=256)["splits"] == 1           # 4 K blocks: no split keeps 4 per CTA
    assert skinny90(n=512, k=8192)["splits"] == 8           # 8 row tiles
    assert skinny90(n=1024, k=512)["splits"] == 2           # 8 K blocks: two splits of 4
    assert skinny90(n=64, k=64)["splits"] == 1
    assert skinny90(n=4096, k=4096, num_sms=264)["splits"] == 4  # 8 splits: 512 CTAs > 5/4 of the SMs
    assert skinny90(n=4096, k=4096, num_sms=408)["splits"] == 4  # 510 bound
    assert skinny90(n=4096, k=4096, num_sms=410)["splits"] == 8  # 512 bound
    assert skinny90(m=128, n=8192, k=8192, knob="sm90")["splits"] == 1
    # forced: clamped to 1..8 and to the K blocks
    assert skinny90(n=4096, k=4096, forced_splits=3)["splits"] == 3
    assert skinny90(n=4096, k=4096, forced_splits=20)["splits"] == 8
    assert skinny90(n=4096, k=128, forced_splits=8)["splits"] == 2
