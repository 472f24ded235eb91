"""MoE decode on the Hopper family: grouped_mm with a few rows over many experts (most groups
empty). Up to 32 rows with K-contiguous operands the grouped skinny kernel takes it (each non-empty
group's D^T = W_g x_g^T, device/sm90_skinny.h); otherwise the tile kernels, whose config rule counts
at most one group per row, so such launches take the 64x128 ping-pong config where 64x256 tiles would
fill under half the SMs. Correct against the float64 reference on every path
(CUTORCH_GEMM_SKINNY=off: the tiles; CUTORCH_GEMM_SM90_GROUPED_NARROW=off keeps 64x256). Skipped off
sm_90."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import check, gpu, make, offs_from_sizes, poison, ref_grouped_mm, requires_sm90

pytestmark = [gpu, requires_sm90]

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
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "off")  # the tile kernels (the grouped skinny: below)
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


def _decode_case(rows, experts, k, n, dt, seed, extra_rows=1, weight_major="k"):
    gen = torch.Generator().manual_seed(seed)
    hit = torch.randint(0, experts, (rows,), generator=gen)
    sizes = torch.bincount(hit, minlength=experts).tolist()
    x = make((rows + extra_rows, k), dt, "cuda")   # rows past offs[-1]
    # "k": W_e^T views of an (E, N, K) weight (K contiguous); "mn": an (E, K, N) weight
    w = make((experts, k, n), dt, "cuda", "col" if weight_major == "k" else "row")
    return x, w, offs_from_sizes(sizes, "cuda"), sizes


def _check_skinny_case(x, w, offs, rows, act, config, what):
    """explain names `config` on the sm90 family; grouped_mm with a (G, N) bias and `act` matches the
    float64 reference into a poisoned output, and the rows from `rows` on (past offs[-1]) are zero."""
    bias = make((w.size(0), w.size(-1)), x.dtype, "cuda")
    e = cg.explain("grouped_mm", x, w, offs)
    assert e.kernel == "sm90" and e.config == config, str(e)
    ref = ref_grouped_mm(x, w, offs, bias, act)
    poison(ref.numel() * 2)
    out = cg.grouped_mm(x, w, offs, bias=bias, activation=act)
    check(out, ref, x.dtype, what=what)
    assert torch.all(out[rows:] == 0)


@pytest.mark.parametrize("weight_major", ["k", "mn"])
@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("rows, experts, k, n", [(1, 8, 1032, 4096), (2, 8, 136, 1000), (7, 128, 264, 1544),
                                                 (15, 16, 520, 72), (16, 4, 4104, 200), (31, 64, 256, 136),
                                                 (20, 1, 72, 8)])
def test_sm90_grouped_skinny(rows, experts, k, n, dt, weight_major):
    """M <= 32 rows over K- or N-contiguous expert weights: the grouped skinny kernel. Bias +
    activation, partial 64-row W boxes, K not a multiple of 64, a row past offs[-1], poisoned output."""
    x, w, offs, _ = _decode_case(rows, experts, k, n, dt, rows * 100 + experts, weight_major=weight_major)
    _check_skinny_case(x, w, offs, rows, "gelu", f"Sm90_Skinny_64xT{16 if rows + 1 <= 16 else 32}",
                       f"grouped skinny {rows}x{experts} k={k} n={n} w={weight_major}")


@pytest.mark.parametrize("weight_major", ["k", "mn"])
@pytest.mark.parametrize("slots, splits", [("1", ""), ("2", ""), ("", "2"), ("3", "4")])
def test_sm90_grouped_skinny_slots_and_splits(slots, splits, weight_major, monkeypatch):
    """Fewer slots than groups with rows (a smaller grid: CTAs run several items in turn, their
    ring's phases carried over), K split over clusters, fp32 out; empty first and last groups."""
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SLOTS", slots)
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SPLITS", splits)
    dt = torch.bfloat16
    sizes = [0, 3, 1, 0, 5, 2, 0, 1, 4, 0]
    x = make((sum(sizes), 1032), dt, "cuda")
    w = make((len(sizes), 1032, 520), dt, "cuda", "col" if weight_major == "k" else "row")
    offs = offs_from_sizes(sizes, "cuda")
    e = cg.explain("grouped_mm", x, w, offs)
    assert e.config == "Sm90_Skinny_64xT16" and (not splits or e.splits == int(splits)), str(e)
    assert f"at most {int(slots or 10)} groups with rows" in e.reason, str(e)
    assert ("persistent grid" in e.reason) == (e.splits == 1), str(e)
    ref = ref_grouped_mm(x, w, offs)
    poison(ref.numel() * 4)
    out = cg.grouped_mm(x, w, offs, out_dtype=torch.float32)
    check(out, ref, dt, torch.float32, what=f"grouped skinny slots={slots or 'auto'} splits={splits or 'auto'}")
    torch.cuda.synchronize()


def test_sm90_grouped_skinny_graph_replay_and_bad_offsets():
    """A captured graph replays with new offsets (the groups are found on the device); offsets
    that decrease or pass M give clamped groups and no fault."""
    dt = torch.bfloat16
    x, w, offs, _ = _decode_case(8, 32, 512, 768, dt, 7, extra_rows=0)
    out = cg.grouped_mm(x, w, offs)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = cg.grouped_mm(x, w, offs)
    for seed in (1, 2):
        sizes = torch.bincount(torch.randint(0, 32, (8,), generator=torch.Generator().manual_seed(seed)),
                               minlength=32).tolist()
        offs.copy_(offs_from_sizes(sizes, "cuda"))
        g.replay()
        check(out.clone(), ref_grouped_mm(x, w, offs), dt, what=f"graph replay, routing {seed}")
    bad = torch.tensor([3, 1, 6, 100] + [2] * 28, dtype=torch.int32, device="cuda")
    got = cg.grouped_mm(x, w, bad)
    torch.cuda.synchronize()
    # groups 0..3 are [0, 3), [3, 3), [1, 6), [6, 8): rows 0 and 6..7 have one writer each
    ref = ref_grouped_mm(x, w, torch.tensor([3, 3, 3, 8] + [8] * 28, dtype=torch.int32, device="cuda"))
    check(got[6:], ref[6:], dt, what="bad offsets, rows of group 3")
    check(got[:1], ref[:1], dt, what="bad offsets, row 0 (group 0)")
    # rows past offs[-1] = 2 that group 0 covers keep its values; the rest are zeros (the kernel
    # stores them itself, as if zeroed before the groups)
    dec = torch.tensor([4, 2] + [2] * 30, dtype=torch.int32, device="cuda")
    poison(x.size(0) * w.size(-1) * 2)
    got = cg.grouped_mm(x, w, dec)
    ref = ref_grouped_mm(x, w, torch.tensor([4] * 32, dtype=torch.int32, device="cuda"))
    check(got[:4], ref[:4], dt, what="decreasing offsets, group 0's rows")
    assert torch.all(got[4:] == 0)


@pytest.mark.parametrize("weight_major", ["k", "mn"])
@pytest.mark.parametrize("rows, extra", [(40, 1), (63, 1), (20, 44)])
def test_sm90_grouped_skinny_forced_64_rows(rows, extra, weight_major, monkeypatch):
    """CUTORCH_GEMM_SKINNY=sm90 takes up to 64 rows (the 64-token config); 44 rows past offs[-1]
    span both halves of the kernel's tail mask."""
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm90")
    dt = torch.bfloat16
    x, w, offs, _ = _decode_case(rows, 16, 264, 200, dt, rows, extra_rows=extra, weight_major=weight_major)
    _check_skinny_case(x, w, offs, rows, "relu", "Sm90_Skinny_64xT64", f"grouped skinny T64 {rows}+{extra} w={weight_major}")


@pytest.mark.parametrize("weight_major", ["k", "mn"])
@pytest.mark.parametrize("rows, experts, k, f", [(1, 8, 1032, 768), (8, 128, 264, 200), (17, 4, 520, 72),
                                                 (31, 16, 136, 8)])
def test_sm90_grouped_skinny_swiglu(rows, experts, k, f, weight_major):
    """grouped_mm's fused SwiGLU at decode sizes on the grouped skinny kernel: 32 output columns per
    item, their gate and up W rows in one box. Bias, fp32 out, F not a multiple of 32, rows past
    offs[-1], poisoned output."""
    from test_swiglu import ref_swiglu_grouped
    dt = torch.bfloat16
    x, w, offs, _ = _decode_case(rows, experts, k, 2 * f, dt, rows * 7 + f, weight_major=weight_major)
    bias = make((experts, 2 * f), dt, "cuda")
    e = cg.explain("grouped_mm", x, w, offs, bias=bias, activation="swiglu")
    assert e.config.startswith("Sm90_Skinny_64xT") and "swiglu fused: an item is 32" in e.reason, str(e)
    ref = ref_swiglu_grouped(x, w, offs, bias)
    for out_dtype in (None, torch.float32):
        poison(x.size(0) * f * 4)
        out = cg.grouped_mm(x, w, offs, bias=bias, activation="swiglu", out_dtype=out_dtype)
        assert out.shape == (x.size(0), f)
        check(out, ref, dt, out_dtype, what=f"grouped skinny swiglu {rows}x{experts} F={f} w={weight_major}")
        assert torch.all(out[rows:] == 0)


def test_sm90_grouped_skinny_swiglu_odd_f():
    """K-contiguous weights take any F; N-contiguous ones need F in 16-byte units (the 4-D view's
    stride), else the launch goes elsewhere, correct either way."""
    from test_swiglu import ref_swiglu_grouped
    dt = torch.float16
    for weight_major, f, taken in (("k", 67, True), ("mn", 20, False)):
        x, w, offs, _ = _decode_case(6, 8, 200, 2 * f, dt, f, weight_major=weight_major)
        e = cg.explain("grouped_mm", x, w, offs, activation="swiglu")
        assert e.config.startswith("Sm90_Skinny_") == taken, str(e)
        check(cg.grouped_mm(x, w, offs, activation="swiglu"), ref_swiglu_grouped(x, w, offs, None), dt,
              what=f"swiglu F={f} w={weight_major}")
