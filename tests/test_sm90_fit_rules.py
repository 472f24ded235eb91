"""The dense fp16 / bf16 tile rules of device/sm90_fit_rules.h (choose_sm90_fit and the pair / 240-wide rules it
calls): pure C++ functions shared by the binding and `explain`, checked on the CPU against the measured rules
(benchmarks/RESULTS.md, thirty-first to thirty-eighth sessions)."""
from __future__ import annotations

import pytest

from cutorch_gemm import _C


STAGES = {80: 7, 96: 7, 112: 6, 128: 6, 144: 6, 160: 5, 176: 5, 192: 5, 208: 4, 224: 4}  # the fit widths' rings


@pytest.mark.parametrize("m,n,k,expected", [
    (1536, 1536, 4096, 144),   # 12 x 11 = 132 tiles of 128x144: one full round
    (768, 3072, 2048, 144),
    (1024, 2560, 4096, 160),   # 8 x 16 = 128
    (1024, 3072, 4096, 192),
    (2048, 2560, 4096, 160),   # two rounds
    (2560, 2560, 2560, 0),     # the best score is 80 wide, in five rounds (208 wide, two rounds: measured flat)
    (384, 6144, 4096, 144),
    (1536, 6144, 4096, 112),   # five rounds at K <= 4096 (measured 0.906 -> 0.942)
    (1536, 6144, 8192, 0),     # five rounds at K = 8192: the 128x256 tiles (with stream-K) keep the lead
    (3328, 4096, 3072, 208),   # four rounds (0.949 -> 1.026)
    (3072, 3072, 4096, 192),   # three rounds, 97% full, against 87% for 64x256 ping-pong tiles
    (1280, 7936, 2048, 208),   # three rounds, 96% against 94%
    (1024, 5376, 2048, 112),
    (6912, 1536, 2048, 0),     # three rounds of 224 fill 93.5%, the 64x256 ping-pong tiles 98%
    (3584, 1024, 4096, 0),     # three rounds of 80-wide tiles (measured 0.98 -> 0.71)
    (4352, 1024, 4096, 0),     # 96 wide
    (4096, 4096, 4096, 0),     # the 128x256 tiles fill their rounds
    (2048, 2048, 2048, 0),
    (8192, 14336, 4096, 0),
    (1024, 1024, 1024, 0),     # no width fills 90% of a round
    (128, 8192, 8192, 0),      # M < 256
    (1536, 1536, 256, 0),      # K < 512
    (1024, 1536, 8960, 96),    # 8 x 16 = 128
    (512, 2560, 2560, 80),
    (512, 4096, 4096, 144),    # one round at score 0.862 (kFitOneRound; 128 would fill better, skipped): 0.882 -> 0.925
    (1024, 2048, 2048, 144),   # one round at 0.842 (0.904 -> 0.887: the one held-out loss)
    (544, 4096, 7168, 160),    # one round at 0.824, rows past M (0.737 -> 0.906)
    (656, 4096, 7168, 192),    # 0.728 -> 0.900
    (352, 4096, 14336, 96),    # 0.855 -> 0.874
    (784, 4096, 7168, 0),      # two rounds of 112 at 0.849 keep kFitMin (forced: 0.842 -> 0.708)
    (1040, 4096, 14336, 0),    # two rounds of 144 at 0.875 (0.888 -> 0.784)
    (1024, 2048, 1024, 0),     # one round at 0.842 but K < kFitOneRoundK
    (1184, 4096, 7168, 160),   # two rounds at 0.897, from 160 wide and K >= 4096 (kFitTwoRounds: 0.879 -> 0.931)
    (1296, 4096, 14336, 176),  # 0.893 (0.834 -> 0.935)
    (576, 8192, 8192, 160),    # held out: 0.805 -> 0.880
    (1200, 3584, 8192, 0),     # two rounds of 144 at 0.884: narrower than kFitTwoRoundsWidth
    (2336, 2048, 2048, 0),     # two rounds of 160 at 0.885 but K < kFitTwoRoundsK
    (768, 2048, 4096, 96),
    (1024, 1024, 4096, 0),     # 80-wide tiles fill 78% of a round at best
])
def test_sm90_fit_rule(m, n, k, expected):
    """choose_sm90_fit: the width whose tiles fill one or two rounds of 132 SMs best (three, or five up to K = 4096,
    for widths from 112 that fill them better than the heuristic's tile; one round from a score of 0.8 where K >= 2048,
    0.9 otherwise; two rounds from 0.85 for widths from 160 where K >= 4096), where the 128x256 tiles do not; '' keeps the heuristic's config. Forced widths and "fit" act anywhere; other forced configs
    ("nofit" among them) keep the heuristic's."""
    name = _C.choose_sm90_fit(m, n, k, 132)
    assert name == (f"Sm90_128x{expected}x64_Coop_S{STAGES[expected]}" if expected else ""), name
    assert _C.choose_sm90_fit(m, n, k, 132, "nofit") == ""
    # rows not 128-byte multiples: the pair rule (test_sm90_pair_rule) in place of the fit widths
    assert _C.choose_sm90_fit(m, n, k, 132, "", False, "Sm90_128x256x64_Coop_S4") in ("", "Sm90_128x192x64_Coop_S5")
    assert _C.choose_sm90_fit(m, n, k, 132, "coop") == ""
    assert _C.choose_sm90_fit(m, n, k, 132, "coop176") == "Sm90_128x176x64_Coop_S5"
    assert _C.choose_sm90_fit(m, n, k, 132, "fit").startswith("Sm90_128x")


@pytest.mark.parametrize("m,n,k,expected", [
    (1024, 2560, 4096, 160),   # measured 0.724 -> 0.947 (b MN-major)
    (2048, 1280, 4096, 160),
    (3072, 3072, 4096, 192),
    (1536, 1536, 4096, 160),   # not 144 (0.769 -> 0.722): 160 fills 87% of one round, kFitMnOneRound (0.784 -> 0.885)
    (768, 3072, 4096, 160),    # 0.775 -> 0.925
    (1536, 1536, 1536, 160),   # 0.680 -> 0.827
    (3072, 1536, 4096, 0),     # two rounds 87% full (0.847 -> 0.720)
    (1024, 2048, 4096, 0),     # 78% of one round (0.910 -> 0.833)
    (1024, 1536, 8960, 0),     # 96 (0.860 -> 0.732)
    (512, 2560, 2560, 0),      # 80
])
def test_sm90_fit_rule_mn_b(m, n, k, expected):
    """An MN-major B (the backward's dX and dW forms) takes only widths from kFitMnMin (160) up, in one round from a
    fill of kFitMnOneRound (0.85); forced widths act anywhere."""
    name = _C.choose_sm90_fit(m, n, k, 132, mn_b=True)
    assert name == (f"Sm90_128x{expected}x64_Coop_S{STAGES[expected]}" if expected else ""), name
    assert _C.choose_sm90_fit(m, n, k, 132, "coop144", mn_b=True) == "Sm90_128x144x64_Coop_S6"


COOP, PP256, PP128 = "Sm90_128x256x64_Coop_S4", "Sm90_64x256x64_Pingpong_S5", "Sm90_64x128x64_Pingpong_S8"


@pytest.mark.parametrize("m,n,k,base,expected", [
    # ping-pong bases over more than one round: cooperative pairs, 192 wide where they fill 15% better
    (1536, 1536, 1000, PP128, "Sm90_128x192x64_Coop_S5"),   # measured 0.552 -> 0.838 (256 wide: 0.750)
    (2000, 3000, 1000, PP256, "Sm90_128x192x64_Coop_S5"),   # 0.617 -> 0.934
    (3000, 3000, 1000, PP256, "Sm90_128x192x64_Coop_S5"),
    (768, 3000, 1000, PP128, "Sm90_128x192x64_Coop_S5"),
    (1000, 3000, 2000, PP128, "Sm90_128x192x64_Coop_S5"),
    (2048, 5000, 3000, PP256, COOP),                        # equal fill: 0.482 -> 0.815 (192: 0.779)
    # one round of ping-pong tiles keeps them (1024x1024x1000: 0.800 against 0.474 / 0.675)
    (1024, 1024, 1000, PP128, ""),
    (1000, 1000, 4000, PP128, ""),
    (512, 4096, 1000, PP256, ""),
    (128, 8192, 1000, PP128, ""),                           # M < 256
    # 128x256 bases: 192 only for a 15% better fill (3000x5000x1000: 7% better, measured 5% slower)
    (3000, 5000, 1000, COOP, ""),
    (5000, 3000, 1000, COOP, ""),
    (1000, 8000, 1000, COOP, ""),
    (2048, 2048, 1000, COOP, ""),
    (4000, 4000, 1000, COOP, ""),
])
def test_sm90_pair_rule(m, n, k, base, expected):
    """choose_sm90_pairs, through choose_sm90_fit with rows that are not 128-byte multiples (the shapes and
    ratios of device/sm90_configs.h, thirty-fifth session); aligned rows never take it, forced configs keep theirs."""
    assert _C.choose_sm90_fit(m, n, k, 132, "", False, base) == expected
    assert _C.choose_sm90_fit(m, n, k, 132, "coop", False, base) == ""
    assert _C.choose_sm90_fit(m, n, k, 132, "coop192", False, base) == "Sm90_128x192x64_Coop_S5"
    aligned = _C.choose_sm90_fit(m, n, k, 132, "", True, base)
    assert aligned == "" or "x256x" not in aligned
    # launches the fit tiles do not take (an activation, C, an MN-major operand): 128x256 pairs where the rule
    # moves them off ping-pong tiles, nothing else; never on aligned rows or under a forced config
    other = _C.choose_sm90_fit(m, n, k, 132, "", False, base, False)
    assert other == (COOP if expected and base != COOP else ""), other
    assert _C.choose_sm90_fit(m, n, k, 132, "", True, base, False) == ""
    assert _C.choose_sm90_fit(m, n, k, 132, "coop192", False, base, False) == ""


P240 = "Sm90_128x240x64_Coop_S4"


@pytest.mark.parametrize("m,n,k,base,expected", [
    # launches that defer every tile's store: 240-wide pairs where they fill the rounds 5% better than 256-wide
    # ones (and 192-wide ones do not win)
    (3000, 5000, 1000, COOP, P240),                         # both four rounds; 240 fills 1.067x as well
    (5000, 3000, 1000, COOP, P240),
    (6000, 5000, 1000, COOP, P240),
    (2048, 5000, 3000, PP256, P240),
    (2000, 3000, 1000, PP256, "Sm90_128x192x64_Coop_S5"),   # 192 still first
    (1536, 1536, 1000, PP128, "Sm90_128x192x64_Coop_S5"),
    (1000, 8000, 1000, COOP, ""),                           # 240: three rounds where 256 takes two
    (4000, 4000, 1000, COOP, ""),
    (2048, 2048, 1000, COOP, ""),
    (1024, 1024, 1000, PP128, ""),                          # one round of ping-pong tiles stays
    (4000, 4000, 1000, PP256, COOP),                        # 240: five rounds where 256 takes four
])
def test_sm90_pair240_rule(m, n, k, base, expected):
    """choose_sm90_pairs with defer_ok: the 240-wide pairs; without defer_ok (an fp32 D, a D without TMA rows)
    never; aligned rows only when forced ("coop240"), and only where the launch defers."""
    assert _C.choose_sm90_fit(m, n, k, 132, "", False, base, True, True) == expected
    without = _C.choose_sm90_fit(m, n, k, 132, "", False, base, True, False)
    assert without != P240 and (without == expected or expected == P240), without
    assert _C.choose_sm90_fit(m, n, k, 132, "", False, base, False, False) in ("", COOP)
    assert _C.choose_sm90_fit(m, n, k, 132, "coop240", True, base, True, True) == P240
    assert _C.choose_sm90_fit(m, n, k, 132, "coop240", False, base, True, False) == ""
    assert _C.choose_sm90_fit(m, n, k, 132, "coop240", False, base, False, False) == ""
    # launches the fit tiles do not take that still defer every tile (bias + an activation): 240 or 256 pairs, never
    # 192 (where 192 would win, the rule goes on to 240)
    act = _C.choose_sm90_fit(m, n, k, 132, "", False, base, False, True)
    assert act in ("", COOP, P240) and (act == "") == (expected == ""), act
    assert _C.choose_sm90_fit(m, n, k, 132, "coop240", False, base, False, True) == P240


@pytest.mark.parametrize("m,n,k,expected", [
    (3072, 5120, 1024, P240),      # four rounds either way; measured 0.974 -> 1.003 (forced)
    (3000, 5000, 1024, P240),      # 0.953 -> 0.984
    (3072, 5120, 2048, P240),      # 0.965 -> 1.012
    (3072, 5120, 4096, P240),      # 0.962 -> 1.009
    (3072, 5120, 8192, P240),      # 0.940 -> 1.007
    (2048, 11008, 2048, P240),     # 0.959 -> 1.004
    (1536, 6144, 4096, "Sm90_128x112x64_Coop_S6"),  # 128x256 + stream-K 0.868 against 0.781 for 240; fit: 0.94
    (3072, 3072, 4096, "Sm90_128x192x64_Coop_S5"),  # (0.892 against 0.788 for 240); the fit widths' third round
    (2048, 11008, 4096, ""),
    (4096, 4096, 4096, ""),        # the 128x256 tiles fill their rounds
    (8192, 14336, 4096, ""),
    (2048, 2048, 2048, ""),
    (1536, 1536, 4096, "Sm90_128x144x64_Coop_S6"),  # the fit widths first
    (16384, 16384, 1024, ""),      # 8 rounds or more: the short-K pairs' territory
    (256, 2816, 8192, ""),         # one partial round: the 128x256 tiles' split-K
])
def test_sm90_wide240_aligned_rule(m, n, k, expected):
    """choose_sm90_wide: on rows that are 128-byte multiples, 128x240 tiles in place of the 128x256 ones where
    they fill the rounds 5% better, for launches that defer every tile and whose 128x256 tiles would not take
    stream-K; never without defer_ok."""
    sk = _C.sm90_coop_streamk(m, n, k, 132, True, "", "")
    if (m, n, k) in ((1536, 6144, 4096), (3072, 3072, 4096), (2048, 11008, 4096)):
        assert sk, "these keep 128x256 for its stream-K"
    if expected == P240:
        assert not sk
    assert _C.choose_sm90_fit(m, n, k, 132, "", True, COOP, True, True, sk) == expected
    fit = expected if expected not in ("", P240) else ""  # (the fit widths do not need defer_ok)
    assert _C.choose_sm90_fit(m, n, k, 132, "", True, COOP, True, False, sk) == fit
    assert _C.choose_sm90_fit(m, n, k, 132, "", True, PP256, True, True, sk) != P240  # (a ping-pong base keeps it)
    if expected == P240:  # the same problem with stream-K forced on its 128x256 tiles keeps them
        assert _C.choose_sm90_fit(m, n, k, 132, "", True, COOP, True, True, True) == ""


def test_sm90_fit_config_names():
    """The fit widths' names (each with the stages that fit beside the epilogue slots)."""
    for w, s in STAGES.items():
        assert _C.choose_sm90_fit(1536, 1536, 4096, 132, f"coop{w}") == f"Sm90_128x{w}x64_Coop_S{s}"


def test_sm90_mn_b_stages_note():
    """explain's note for a fit width with an MN-major B (Sm90MnB) names the padded B columns and the stages that fit
    (device/sm90_configs.h, sm90_mn_b_stages): 80-112 six, 144-176 five, 208-224 four; none for widths of whole
    64-column blocks or a K-major B."""
    from cutorch_gemm.explain import _mn_b_note
    expected = {80: (128, 6), 96: (128, 6), 112: (128, 6), 144: (192, 5), 160: (192, 5), 176: (192, 5),
                208: (256, 4), 224: (256, 4)}
    for w, s in STAGES.items():
        note = _mn_b_note(f"Sm90_128x{w}x64_Coop_S{s}", True)
        if w in expected:
            cols, stages = expected[w]
            assert f"({cols} columns a stage), {stages} stages" in note, (w, note)
        else:
            assert note == "", (w, note)
        assert _mn_b_note(f"Sm90_128x{w}x64_Coop_S{s}", False) == ""


COOP, PP = "Sm90_128x256x64_Coop_S4", "Sm90_64x256x64_Pingpong_S5"


# on: CUTORCH_GEMM_SM90_ACT_PINGPONG=on (the rule is opt-in). The ratios are header_ab's, which set the bounds; run
# alone, ping-pong lost at every shape (device/sm90_fit_rules.h).
@pytest.mark.parametrize("base,m,n,k,activation,rows_128b,k_major,forced,on,expected", [
    (COOP, 4096, 4096, 4096, True, True, True, "", True, PP),       # measured 0.963 (bias + GELU-tanh, header_ab)
    (COOP, 2048, 11008, 4096, True, True, True, "", True, PP),      # 0.877
    (COOP, 4096, 4096, 512, True, True, True, "", True, PP),
    (COOP, 16384, 14336, 1024, True, True, True, "", True, PP),     # 0.857: a short K keeps it on a large problem
    (COOP, 16384, 8192, 4096, True, True, True, "", True, PP),      # M*N*K = 2^39, the bound: 1.001
    (COOP, 4096, 4096, 4097, True, True, True, "", True, ""),       # K = 8192: cooperative kept the lead (1.015-1.032)
    (COOP, 4096, 4096, 8192, True, True, True, "", True, ""),
    (COOP, 12288, 14336, 4096, True, True, True, "", True, ""),     # past 2^39: ping-pong lost (1.088)
    (COOP, 16384, 14336, 4096, True, True, True, "", True, ""),     # 1.022-1.046
    (COOP, 4096, 4096, 4096, False, True, True, "", True, ""),      # no activation: nothing to hide
    (COOP, 4096, 4096, 4096, True, False, True, "", True, ""),      # rows not 128-byte multiples: the pair rule
    (COOP, 4096, 4096, 4096, True, True, False, "", True, ""),      # an MN-major operand: not measured
    (COOP, 4096, 4096, 4096, True, True, True, "coop", True, ""),   # a forced config stays
    (COOP, 4096, 4096, 4096, True, True, True, "nofit", True, ""),
    (COOP, 4096, 4096, 4096, True, True, True, "", False, ""),     # not opted in (the default)
    ("Sm90_128x240x64_Coop_S4", 4096, 4096, 4096, True, True, True, "", True, ""),    # the fit rules' tiles stay
    ("Sm90_128x208x64_Coop_S4", 4096, 4096, 4096, True, True, True, "", True, ""),
    (PP, 4096, 4096, 4096, True, True, True, "", True, ""),         # already ping-pong: '' (the heuristic's stays)
])
def test_sm90_act_rule(base, m, n, k, activation, rows_128b, k_major, forced, on, expected):
    assert _C.choose_sm90_act(base, m, n, k, activation, rows_128b, k_major, forced, on) == expected


def test_sm90_act_rule_bound():
    """The bounds explain's note names are the ones the rule applies (K, and M*N*K in 64-bit: no int overflow)."""
    max_k, max_mnk = _C.SM90_ACT_PINGPONG_MAX_K, 1 << _C.SM90_ACT_PINGPONG_MAX_MNK_LOG2
    assert _C.choose_sm90_act(COOP, 1024, 1024, max_k, True, True, True, "", True) == PP
    assert _C.choose_sm90_act(COOP, 1024, 1024, max_k + 1, True, True, True, "", True) == ""
    m = max_mnk // (4096 * max_k)
    assert m * 4096 * max_k == max_mnk
    assert _C.choose_sm90_act(COOP, m, 4096, max_k, True, True, True, "", True) == PP
    assert _C.choose_sm90_act(COOP, m + 1, 4096, max_k, True, True, True, "", True) == ""
    assert _C.choose_sm90_act(COOP, 1 << 20, 1 << 20, 64, True, True, True, "", True) == ""  # 2^46: not wrapped


C320, C192X192, FIT192 = "Sm90_128x320x64_Coop_S3", "Sm90_192x192x64_Coop_S4", "Sm90_128x192x64_Coop_S5"


# The big-tile rule (choose_sm90_big): the shapes measured alone (device/sm90_fit_rules.h) and its bounds. Arguments
# after the SMs: forced (CUTORCH_GEMM_SM90_CONFIG), forced_ok, ok (the launch: K-major on aligned rows, no C, no
# activation, D by TMA), on (CUTORCH_GEMM_SM90_BIG not off).
@pytest.mark.parametrize("base,m,n,k,forced,forced_ok,ok,on,expected", [
    (PP, 2560, 4096, 4096, "", True, True, True, C320),        # 260 tiles, 2 rounds, 97% (measured -6.1% alone)
    (PP, 4096, 3584, 4096, "", True, True, True, C320),        # 384 tiles, 3 rounds, 90.5% (-1.5%)
    (PP, 6144, 3072, 4096, "", True, True, True, C192X192),    # 256 pairs, 4 rounds, 97% (-4.2%); 320: 87%
    (FIT192, 3072, 3072, 3072, "", True, True, True, C192X192),  # 128 pairs, 2 rounds (-3.0%); 320: 87%
    (FIT192, 3072, 3072, 4096, "", True, True, True, C192X192),  # (-4.2%)
    (COOP, 8192, 14336, 4096, "", True, True, True, ""),       # the 128x256 tiles stay (320 measured even)
    ("Sm90_128x240x64_Coop_S4", 3072, 3072, 4096, "", True, True, True, ""),
    ("Sm90_64x128x64_Pingpong_S8", 3072, 3072, 4096, "", True, True, True, ""),
    (PP, 2560, 4096, 1024, "", True, True, True, ""),          # K below kBigMinK, above kBigMaxK
    (PP, 2560, 4096, 16384, "", True, True, True, ""),
    (PP, 8192, 8192, 4096, "", True, True, True, ""),          # more than four rounds of either
    (PP, 1024, 4096, 4096, "", True, True, True, ""),          # one round, 78% at best
    (PP, 2560, 4096, 4096, "", True, False, True, ""),         # a launch the rule does not take (C, activation ...)
    (PP, 2560, 4096, 4096, "", True, True, False, ""),         # CUTORCH_GEMM_SM90_BIG=off
    (PP, 2560, 4096, 4096, "nofit", True, True, True, ""),     # any other forced config keeps the base
    (COOP, 64, 64, 64, "coop320", True, False, True, C320),    # forced: wherever the launch allows
    (COOP, 64, 64, 64, "coop192x192", True, False, True, C192X192),
    (COOP, 64, 64, 64, "coop320", False, False, True, ""),
])
def test_sm90_big_rule(base, m, n, k, forced, forced_ok, ok, on, expected):
    assert _C.choose_sm90_big(base, m, n, k, 132, forced, forced_ok, ok, on) == expected


def test_sm90_big_rule_bounds():
    """The K bounds explain's note names are the ones the rule applies."""
    lo, hi = _C.SM90_BIG_MIN_K, _C.SM90_BIG_MAX_K
    assert _C.choose_sm90_big(PP, 2560, 4096, lo, 132) == C320
    assert _C.choose_sm90_big(PP, 2560, 4096, lo - 1, 132) == ""
    assert _C.choose_sm90_big(PP, 2560, 4096, hi, 132) == C320
    assert _C.choose_sm90_big(PP, 2560, 4096, hi + 1, 132) == ""


def test_sm90_big_square_tiles_pair():
    """choose_sm90_cluster: the 192x192 tiles run in 2x1 pairs wherever two tile rows allow (aligned rows too), unless
    forced off; 128-row tiles with the same arguments (one round, K = 4096) stay unclustered."""
    args = dict(cooperative=True, fixed_grid=True, swiglu=False, rows_128b=True, dense=True, k=4096, tiles=128,
                num_sms=132, block_n=192)
    assert _C.choose_sm90_cluster(tiles_m=16, block_m=192, **args) == 2
    assert _C.choose_sm90_cluster(tiles_m=3, block_m=192, **args) == 2      # (an odd count: the last pair half idle)
    assert _C.choose_sm90_cluster(tiles_m=1, block_m=192, **args) == 1
    assert _C.choose_sm90_cluster(tiles_m=16, block_m=192, forced="1", **args) == 1
    assert _C.choose_sm90_cluster(tiles_m=16, block_m=128, **args) == 1
