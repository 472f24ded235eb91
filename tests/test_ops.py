"""Correctness of every op against float64 references: dtypes x operand layouts x awkward
sizes (0, 1, 7, 65, 129, 257, 1000) x every epilogue, on every available device."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, DEVICES, DTYPES, HALF_DTYPES, LAYOUTS, check, dtype_id,
                      make, offs_from_sizes, ref_bmm, ref_gemm, ref_grouped_gemm,
                      ref_grouped_mm, ref_mm, sample_inputs, call_sample, ref_sample, term_sizes_sample)

pytestmark = pytest.mark.parametrize("device", DEVICES)
dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)

# (M, N, K): every dimension takes 0, 1 and awkward values; when one is large the others
# stay small so the CPU suite stays fast.
SIZES = [
    (0, 7, 5), (7, 0, 5), (7, 5, 0), (0, 0, 0), (1, 1, 1), (1, 7, 65), (7, 65, 1),
    (65, 129, 7), (129, 7, 257), (257, 65, 33), (1000, 7, 65), (7, 1000, 13),
    (13, 17, 1000), (129, 257, 65),
]
size_ids = [f"{m}x{n}x{k}" for m, n, k in SIZES]


def _same_or_f32(dtype, which):
    """``which``: None | "same" | "f32" (f32 only legal for 16-bit inputs)."""
    if which is None:
        return None
    if which == "same":
        return dtype
    return torch.float32


# --------------------------------------------------------------------------------------
# samples (the same ones the autograd and opcheck tests use)
# --------------------------------------------------------------------------------------

@dtypes
def test_samples(device, dtype):
    for s in sample_inputs(device, dtype=dtype):
        out = call_sample(s)
        ref = ref_sample(s)
        # Small sums that cancel (a 1x1 output of a 6-term dot product) are bounded by the size
        # of their terms (summed in the accumulator type), not of their result.
        sizes = term_sizes_sample(s)
        u_acc = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps / 2
        if isinstance(ref, list):
            assert isinstance(out, (list, tuple)) and len(out) == len(ref), s.name
            for i, (o, r, z) in enumerate(zip(out, ref, sizes)):
                check(o, r, dtype, what=f"{s.name}[{i}]", scale=z, scale_u=u_acc)
        else:
            check(out, ref, dtype, what=s.name, scale=sizes, scale_u=u_acc)


# --------------------------------------------------------------------------------------
# mm
# --------------------------------------------------------------------------------------

@dtypes
@pytest.mark.parametrize("mnk", SIZES, ids=size_ids)
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_mm(device, dtype, mnk, la, lb):
    m, n, k = mnk
    a = make((m, k), dtype, device, la)
    b = make((k, n), dtype, device, lb)
    out = cg.mm(a, b)
    check(out, ref_mm(a, b), dtype, what=f"mm {mnk} {la}/{lb}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", [(65, 129, 7), (7, 5, 0), (13, 17, 1000)], ids=str)
def test_mm_out_fp32(device, dtype, mnk):
    m, n, k = mnk
    a = make((m, k), dtype, device, "col")
    b = make((k, n), dtype, device, "row")
    out = cg.mm(a, b, out_dtype=torch.float32)
    check(out, ref_mm(a, b), dtype, torch.float32, what="mm out fp32")


@dtypes
def test_mm_out_same_dtype(device, dtype):
    a = make((33, 65), dtype, device)
    b = make((65, 7), dtype, device, "padded")
    check(cg.mm(a, b, out_dtype=dtype), ref_mm(a, b), dtype, dtype)


# --------------------------------------------------------------------------------------
# gemm: every epilogue
# --------------------------------------------------------------------------------------

# name: (bias?, c layout or None, alpha, beta, out_dtype kind)
EPILOGUES = {
    "plain": (False, None, 1.0, 0.0, None),
    "bias": (True, None, 1.0, 0.0, None),
    "alpha": (False, None, -1.5, 0.0, None),
    "alpha0_c_bias": (True, "row", 0.0, 0.75, None),
    "c_row_beta": (False, "row", 1.0, 0.5, None),
    "c_col_bias_alpha_beta": (True, "col", 0.75, -1.25, None),
    "c_padded_bias_beta1": (True, "padded", 1.0, 1.0, "same"),
    "c_beta0": (True, "row", 1.0, 0.0, None),
    "out_f32": (True, "col", -0.5, 2.0, "f32"),
}


def _gemm_case(device, dtype, m, n, k, epi, activation, lay_a="row", lay_b="col"):
    has_bias, c_layout, alpha, beta, out_kind = EPILOGUES[epi]
    if out_kind == "f32" and dtype not in HALF_DTYPES:
        out_kind = "same"
    out_dtype = _same_or_f32(dtype, out_kind)
    a = make((m, k), dtype, device, lay_a)
    b = make((k, n), dtype, device, lay_b)
    bias = make((n,), dtype, device) if has_bias else None
    c = make((m, n), dtype, device, c_layout) if c_layout else None
    out = cg.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=activation,
                  out_dtype=out_dtype)
    ref = ref_gemm(a, b, bias, c, alpha, beta, activation)
    check(out, ref, dtype, out_dtype, what=f"gemm {m}x{n}x{k} {epi} {activation}")


@dtypes
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("epi", list(EPILOGUES))
@pytest.mark.parametrize("mnk", [(65, 33, 129), (1, 257, 7)], ids=str)
def test_gemm_epilogues(device, dtype, activation, epi, mnk):
    _gemm_case(device, dtype, *mnk, epi, activation)


@dtypes
@pytest.mark.parametrize("mnk", SIZES, ids=size_ids)
def test_gemm_sizes(device, dtype, mnk):
    """Awkward sizes with the full epilogue (alpha, beta*c, bias, silu)."""
    _gemm_case(device, dtype, *mnk, "c_col_bias_alpha_beta", "silu", "padded", "row")


@dtypes
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_gemm_layouts(device, dtype, la, lb):
    _gemm_case(device, dtype, 129, 65, 33, "c_padded_bias_beta1", "gelu", la, lb)


def test_activation_none_means_none(device):
    """activation=None is accepted wherever activation="none" is (the keyword default of
    nn.Linear-style code), by gemm, grouped_mm and grouped_gemm."""
    dtype = torch.float32
    a, b, bias = make((9, 17), dtype, device), make((17, 5), dtype, device, "col"), make((5,), dtype, device)
    check(cg.gemm(a, b, bias=bias, activation=None), ref_gemm(a, b, bias), dtype, what="gemm activation=None")
    offs = torch.tensor([4, 9], dtype=torch.int32, device=device)
    w = make((2, 17, 5), dtype, device)
    torch.testing.assert_close(cg.grouped_mm(a, w, offs, activation=None), cg.grouped_mm(a, w, offs))
    (out,) = cg.grouped_gemm([a], [b], activation=None)
    check(out, ref_mm(a, b), dtype, what="grouped_gemm activation=None")


@dtypes
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gemm_k0(device, dtype, activation):
    """K = 0: D = act(beta * c + bias) (and act(0) = 0 without c and bias)."""
    a = make((7, 0), dtype, device)
    b = make((0, 65), dtype, device)
    bias = make((65,), dtype, device)
    c = make((7, 65), dtype, device, "col")
    out = cg.gemm(a, b, bias=bias, c=c, alpha=1.5, beta=-0.75, activation=activation)
    check(out, ref_gemm(a, b, bias, c, 1.5, -0.75, activation), dtype, what="k0 c+bias")
    out = cg.gemm(a, b, activation=activation)
    assert out.shape == (7, 65) and out.dtype == dtype
    assert torch.equal(out.cpu(), torch.zeros(7, 65, dtype=dtype)), "K=0 without c/bias"
    out = cg.mm(a, b)
    assert torch.equal(out.cpu(), torch.zeros(7, 65, dtype=dtype)), "mm with K=0"


@dtypes
@pytest.mark.parametrize("poison", ["nan", "inf"])
def test_gemm_beta0_does_not_read_c(device, dtype, poison):
    """BLAS convention: with beta == 0, NaN/Inf in c do not propagate."""
    a = make((9, 17), dtype, device)
    b = make((17, 5), dtype, device)
    bias = make((5,), dtype, device)
    c = torch.full((9, 5), float(poison), dtype=dtype, device=device)
    out = cg.gemm(a, b, bias=bias, c=c, beta=0.0, activation="gelu")
    assert torch.isfinite(out).all()
    check(out, ref_gemm(a, b, bias, None, 1.0, 0.0, "gelu"), dtype)


_BCAST_C = {  # c as a stride-0 view, as torch.addmm users broadcast it: (stride of M, stride of N)
    "rows": lambda m, n, dt, dev: make((1, n), dt, dev).expand(m, n),     # (0, 1): one row for every row
    "cols": lambda m, n, dt, dev: make((m, 1), dt, dev).expand(m, n),     # (1, 0): one value per row
    "scalar": lambda m, n, dt, dev: make((1, 1), dt, dev).expand(m, n),   # (0, 0)
}


@dtypes
@pytest.mark.parametrize("c_kind", list(_BCAST_C))
@pytest.mark.parametrize("mnk", [(7, 65, 33), (129, 257, 65), (8, 4096, 1024), (40, 4096, 512), (384, 1024, 256)],
                         ids=str)
def test_gemm_broadcast_c(device, dtype, c_kind, mnk):
    """An expanded (stride-0) c reads the same element for every broadcast row / column on each path the shape
    takes. On an H200 (sixty-seventh session, bf16, `cg.explain`): sm80 tiles (K of 33 / 65: rows not 16-byte
    aligned), the mma.sync skinny kernel (M = 8), the Hopper skinny kernel (M = 40, 2 K splits) and sm90 ping-pong
    (384x1024x256; C read as column pairs or element-wise, never by the TMA C load, which needs a positive row
    stride)."""
    m, n, k = mnk
    a = make((m, k), dtype, device)
    b = make((k, n), dtype, device, "col")
    bias = make((n,), dtype, device)
    c = _BCAST_C[c_kind](m, n, dtype, device)
    out = cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=-1.25, activation="relu")
    check(out, ref_gemm(a, b, bias, c, 0.5, -1.25, "relu"), dtype, what=f"gemm {mnk} c {c_kind}")


# --------------------------------------------------------------------------------------
# bmm
# --------------------------------------------------------------------------------------

BMM_SIZES = [(3, 7, 5, 65), (0, 4, 5, 6), (2, 0, 5, 6), (2, 4, 0, 6), (2, 4, 5, 0),
             (5, 65, 33, 17), (1, 129, 7, 257), (4, 1, 1, 1)]


def _bmm_operand(shape, dtype, device, layout):
    B = shape[0]
    if layout == "expand":  # batch stride 0
        return make((1,) + tuple(shape[1:]), dtype, device).expand(*shape)
    if layout == "batch_strided":  # every other matrix of a bigger batch
        return make((2 * B,) + tuple(shape[1:]), dtype, device)[::2]
    return make(shape, dtype, device, layout)


BMM_LAYOUTS = [("row", "row"), ("col", "col"), ("padded", "col"), ("row", "padded"),
               ("expand", "row"), ("col", "expand"), ("expand", "expand"),
               ("batch_strided", "batch_strided")]


@dtypes
@pytest.mark.parametrize("bmnk", BMM_SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", BMM_LAYOUTS, ids=lambda l: f"{l[0]}-{l[1]}")
def test_bmm(device, dtype, bmnk, layouts):
    B, m, n, k = bmnk
    a = _bmm_operand((B, m, k), dtype, device, layouts[0])
    b = _bmm_operand((B, k, n), dtype, device, layouts[1])
    out = cg.bmm(a, b)
    check(out, ref_bmm(a, b), dtype, what=f"bmm {bmnk} {layouts}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_bmm_out_fp32(device, dtype):
    a = _bmm_operand((3, 65, 33), dtype, device, "expand")
    b = _bmm_operand((3, 33, 7), dtype, device, "col")
    check(cg.bmm(a, b, out_dtype=torch.float32), ref_bmm(a, b), dtype, torch.float32)


# --------------------------------------------------------------------------------------
# grouped_mm
# --------------------------------------------------------------------------------------

# group sizes along the grouped extent and the extent T (T > sum: rows/cols past the end)
SCENARIOS = {
    "odd": ([7, 1, 13, 3], 24),
    "empty_groups": ([0, 9, 0, 0, 6], 15),
    "tail_past_end": ([4, 0, 5], 13),
    "single": ([17], 17),
    "all_empty": ([0, 0, 0], 5),
    "large": ([129, 65, 1, 62], 257),
}
K_, N_, M_ = 19, 23, 11  # fixed non-grouped extents


def _grouped_inputs(layout, dtype, device, sizes, T, has_bias, la="row", lb="row"):
    """Inputs of one grouped_mm layout; returns (a, b, offs, bias, end) where ``end`` is the
    last offset (the grouped extent that is computed)."""
    G = len(sizes)
    offs = offs_from_sizes(sizes, device)
    end = sum(sizes)
    if layout == "2d3d":
        a = make((T, K_), dtype, device, la)
        b = make((G, K_, N_), dtype, device, lb)
        bias = make((G, N_), dtype, device) if has_bias else None
    elif layout == "3d2d":
        a = make((G, M_, K_), dtype, device, la)
        b = make((K_, T), dtype, device, lb)
        bias = make((T,), dtype, device) if has_bias else None
    elif layout == "2d2d":
        a = make((M_, T), dtype, device, la)
        b = make((T, N_), dtype, device, lb)
        bias = make((G, N_), dtype, device) if has_bias else None
    elif layout == "3d3d":
        a = make((G, M_, K_), dtype, device, la)
        b = make((G, K_, N_), dtype, device, lb)
        bias = make((G, N_), dtype, device) if has_bias else None
        offs, end = None, None
    else:
        raise AssertionError(layout)
    return a, b, offs, bias, end


def _check_tail_zero(layout, out, end):
    """Rows (2D x 3D) / columns (3D x 2D) at or past offs[-1] are exactly zero."""
    if layout == "2d3d":
        tail = out[end:]
    elif layout == "3d2d":
        tail = out[:, end:]
    else:
        return
    assert torch.all(tail == 0), f"{layout}: output past offs[-1]={end} is not zero"


# name: (bias?, activation, out_dtype kind)
GROUPED_EPIS = {
    "plain": (False, "none", None),
    "bias_gelu_tanh": (True, "gelu_tanh", None),
    "bias_relu_out": (True, "relu", "f32"),
}


@dtypes
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("epi", list(GROUPED_EPIS))
def test_grouped_mm(device, dtype, layout, scenario, epi):
    sizes, T = SCENARIOS[scenario]
    has_bias, activation, out_kind = GROUPED_EPIS[epi]
    if out_kind == "f32" and dtype not in HALF_DTYPES:
        out_kind = "same"
    out_dtype = _same_or_f32(dtype, out_kind)
    a, b, offs, bias, end = _grouped_inputs(layout, dtype, device, sizes, T, has_bias)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation=activation, out_dtype=out_dtype)
    ref = ref_grouped_mm(a, b, offs, bias, activation)
    check(out, ref, dtype, out_dtype, what=f"grouped_mm {layout} {scenario} {epi}")
    _check_tail_zero(layout, out, end)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_grouped_mm_activations(device, dtype, layout, activation):
    sizes, T = SCENARIOS["empty_groups"]
    a, b, offs, bias, end = _grouped_inputs(layout, dtype, device, sizes, T, True)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation=activation)
    check(out, ref_grouped_mm(a, b, offs, bias, activation), dtype,
          what=f"grouped_mm {layout} {activation}")
    _check_tail_zero(layout, out, end)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_grouped_mm_operand_layouts(device, dtype, layout, la, lb):
    sizes, T = SCENARIOS["tail_past_end"]
    a, b, offs, bias, end = _grouped_inputs(layout, dtype, device, sizes, T, True, la, lb)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="silu")
    check(out, ref_grouped_mm(a, b, offs, bias, "silu"), dtype,
          what=f"grouped_mm {layout} {la}/{lb}")
    _check_tail_zero(layout, out, end)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("gmnk", [(3, 7, 5, 65), (0, 4, 5, 6), (2, 0, 5, 6), (2, 4, 0, 6),
                                  (2, 4, 5, 0), (5, 65, 33, 17), (1, 1, 1, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_grouped_mm_3d3d(device, dtype, gmnk):
    G, m, n, k = gmnk
    a = make((G, m, k), dtype, device, "col")
    b = make((G, k, n), dtype, device, "padded")
    bias = make((G, n), dtype, device)
    out = cg.grouped_mm(a, b, bias=bias, activation="gelu")
    check(out, ref_grouped_mm(a, b, None, bias, "gelu"), dtype, what=f"3d3d {gmnk}")
    out = cg.grouped_mm(a, b, None)
    check(out, ref_grouped_mm(a, b), dtype, what=f"3d3d plain {gmnk}")
    if dtype in HALF_DTYPES:
        out = cg.grouped_mm(a, b, bias=bias, activation="relu", out_dtype=torch.float32)
        check(out, ref_grouped_mm(a, b, None, bias, "relu"), dtype, torch.float32,
              what=f"3d3d out fp32 {gmnk}")


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_grouped_mm_2d2d_empty_group_is_act_bias(device, dtype):
    """2D x 2D: an empty group gives act(bias[g]) broadcast over M (zero without bias)."""
    a = make((M_, 12), dtype, device)
    b = make((12, N_), dtype, device)
    offs = offs_from_sizes([5, 0, 7], device)
    bias = make((3, N_), dtype, device)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="silu")
    check(out, ref_grouped_mm(a, b, offs, bias, "silu"), dtype)
    out = cg.grouped_mm(a, b, offs)
    assert torch.all(out[1] == 0)
    check(out, ref_grouped_mm(a, b, offs), dtype)


# --------------------------------------------------------------------------------------
# grouped_gemm
# --------------------------------------------------------------------------------------

GG_SHAPES = [(3, 4, 5), (65, 1, 7), (0, 3, 2), (2, 0, 3), (5, 6, 0), (129, 7, 33),
             (1, 257, 13), (7, 7, 1000)]


@dtypes
@pytest.mark.parametrize("epi", list(GROUPED_EPIS) + ["bias_silu"])
def test_grouped_gemm(device, dtype, epi):
    has_bias, activation, out_kind = GROUPED_EPIS.get(epi, (True, "silu", None))
    if out_kind == "f32" and dtype not in HALF_DTYPES:
        out_kind = "same"
    out_dtype = _same_or_f32(dtype, out_kind)
    layouts = ["row", "col", "padded"]
    a = [make((m, k), dtype, device, layouts[i % 3]) for i, (m, n, k) in enumerate(GG_SHAPES)]
    b = [make((k, n), dtype, device, layouts[(i + 1) % 3])
         for i, (m, n, k) in enumerate(GG_SHAPES)]
    bias = [make((n,), dtype, device) for (m, n, k) in GG_SHAPES] if has_bias else None
    out = cg.grouped_gemm(a, b, bias=bias, activation=activation, out_dtype=out_dtype)
    ref = ref_grouped_gemm(a, b, bias, activation)
    assert isinstance(out, list) and len(out) == len(ref)
    for i, (o, r) in enumerate(zip(out, ref)):
        check(o, r, dtype, out_dtype, what=f"grouped_gemm[{i}] {GG_SHAPES[i]} {epi}")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_grouped_gemm_activations(device, activation):
    dtype = torch.float32
    shapes = [(9, 5, 3), (1, 17, 8), (33, 2, 65)]
    a = [make((m, k), dtype, device) for m, n, k in shapes]
    b = [make((k, n), dtype, device, "col") for m, n, k in shapes]
    bias = [make((n,), dtype, device) for m, n, k in shapes]
    out = cg.grouped_gemm(a, b, bias=bias, activation=activation)
    for o, r in zip(out, ref_grouped_gemm(a, b, bias, activation)):
        check(o, r, dtype)


def test_grouped_gemm_single_problem(device):
    a, b = make((7, 5), torch.float64, device), make((5, 3), torch.float64, device)
    (out,) = cg.grouped_gemm([a], [b])
    check(out, ref_mm(a, b), torch.float64)


def test_grouped_gemm_no_problems(device):
    """Empty lists: no problems, an empty list back (the raw op cannot dispatch without a tensor)."""
    assert cg.grouped_gemm([], []) == []
    assert cg.grouped_gemm((), (), bias=[]) == []
    with pytest.raises(ValueError, match="same length"):
        cg.grouped_gemm([], [make((3, 2), torch.float32, device)])


# --------------------------------------------------------------------------------------
# inputs are not modified; the result is a new tensor
# --------------------------------------------------------------------------------------

def test_inputs_untouched(device):
    a = make((13, 9), torch.float32, device, "col")
    b = make((9, 6), torch.float32, device, "padded")
    bias = make((6,), torch.float32, device)
    c = make((13, 6), torch.float32, device)
    snap = [t.clone() for t in (a, b, bias, c)]
    out = cg.gemm(a, b, bias=bias, c=c, beta=1.0, activation="relu")
    for t, s in zip((a, b, bias, c), snap):
        assert torch.equal(t, s)
    for t in (a, b, bias, c):
        assert out.data_ptr() != t.data_ptr()
