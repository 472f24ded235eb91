"""Tensors of more than 2^31 elements (every extent M, N, K below 2^31, but M * N, M * K, K * N or a
batch / group offset past it): the element offsets the kernels form must be 64-bit (index_t) all the
way, or the last rows land somewhere else (or nowhere) and stay poisoned.

Each case allocates a few GB (skipped when torch.cuda.mem_get_info() shows too little free memory),
poisons the output's memory first (NaN for floats, an impossible value for int32: conftest.poison),
checks that every element was written, and compares sampled rows and columns with float64 references
(conftest.check): always the first and last ones, the rows around flat element 2^31, group and batch
boundaries, and a few random ones. Forced families (CUTORCH_GEMM_ARCH=sm80 / simt, the skinny knobs)
put the same shapes through the non-TMA loads and epilogues too. GPU only: 33 cases of a few hundred
milliseconds each on an H100 / H200 (4-19 GB each)."""
from __future__ import annotations

import bisect
import gc
import math
import random

import pytest
import torch

import cutorch_gemm as cg
from conftest import HAS_CUDA, check, gpu, poison, ref_gemm, ref_grouped_mm, ref_mm, rel_err, requires_cuda

pytestmark = [gpu, requires_cuda]

DEV = "cuda"
E31 = 2**31
GIB = 2**30
HEADROOM = 3 * GIB  # references, chunked checks and the allocator's rounding on top of what a case holds

# D = M x N past 2^31 elements with a short K (the GEMM itself takes a few milliseconds). N odd: no
# aligned row pairs (element-wise stores); N % 8 == 2: aligned pairs but rows not 16-byte multiples (the
# register epilogue); N % 8 == 0: TMA / vector stores; N % 4 == 0 for an fp32 D's 16-byte rows.
M_BIG = 16384 + 7
N_ODD, N_PAIRS, N_ROWS16, N_ALIGNED = 131072 + 5, 131072 + 2, 131072 + 4, 131072 + 8
K_SHORT = 64
ARCHS = ["auto", "sm80", "simt"]


def _free():
    gc.collect()
    if HAS_CUDA:
        torch.cuda.empty_cache()


@pytest.fixture(autouse=True)
def _release_memory():
    _free()
    yield
    _free()


def nbytes(shape, dtype) -> int:
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


def need(total_bytes: int, what: str):
    """Skip unless the GPU has `total_bytes` (+ HEADROOM) free."""
    _free()
    free, _ = torch.cuda.mem_get_info()
    want = total_bytes + HEADROOM
    if free < want:
        pytest.skip(f"{what}: needs ~{want / GIB:.1f} GiB of free GPU memory, {free / GIB:.1f} GiB free")


def use_arch(monkeypatch, arch: str):
    """CUTORCH_GEMM_ARCH for this case ("auto": the default dispatch); skips a family this GPU lacks."""
    if arch == "sm80" and (torch.cuda.get_device_capability()[0] < 8 or not cg._C.sm80_available()):
        pytest.skip("the sm80 family needs an sm_80+ GPU and sm_80-family kernels")
    if arch == "auto":
        monkeypatch.delenv("CUTORCH_GEMM_ARCH", raising=False)
    else:
        monkeypatch.setenv("CUTORCH_GEMM_ARCH", arch)


def kernel_of(op, *args, **kwargs) -> str:
    """explain()'s kernel and config, for failure messages."""
    try:
        e = cg.explain(op, *args, **kwargs)
        return f"{e.kernel}/{e.config}" + (f" split-K x{e.splits}" if e.splits > 1 else "")
    except Exception as exc:  # (only a message)
        return f"explain failed: {exc}"


def rand(shape, dtype) -> torch.Tensor:
    """Random values made in `dtype` directly (no fp32 copy of a multi-GB tensor)."""
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, dtype=torch.int8, device=DEV)
    return torch.randn(shape, dtype=dtype, device=DEV)


def weight_t(*shape_nk, dtype) -> torch.Tensor:
    """b = W^T (..., K, N) of a contiguous W (..., N, K): the K-major nn.Linear layout."""
    return rand(shape_nk, dtype).transpose(-1, -2)


def row_of_2_31(rows: int, cols: int, base: int = 0):
    """The row of a row-major (rows, cols) block at flat element `base` that holds flat element 2^31."""
    off = E31 - base
    return off // cols if 0 <= off < rows * cols else None


def picks(n: int, *around, edge: int = 3, extra: int = 4) -> list:
    """Sorted indices in [0, n): the first and last `edge`, each of `around` with its neighbours, `extra`
    random ones."""
    s = set(range(min(edge, n))) | set(range(max(0, n - edge), n))
    for c in around:
        if c is not None:
            s |= {i for i in (c - 1, c, c + 1) if 0 <= i < n}
    s |= {random.randrange(n) for _ in range(extra)} if n > 0 else set()
    return sorted(s)


def windows(n: int, *around, width: int = 1024, stride: int = 2039) -> list:
    """Wide row / column sets for narrow outputs: the first and last `width`, `width` around each of
    `around`, every `stride`-th index."""
    s = set(range(min(width, n))) | set(range(max(0, n - width), n)) | set(range(0, n, stride))
    for c in around:
        if c is not None:
            s |= set(range(max(0, c - width // 2), min(n, c + width // 2)))
    return sorted(s)


def idx(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=DEV)


def poison_int32(count: int):
    """conftest.poison's trick with 0x7F bytes: int32 2139062143, far above any int8 x int8 sum here."""
    torch.full((count * 4,), 0x7F, dtype=torch.uint8, device=DEV)


INT32_POISON = 0x7F7F7F7F


def assert_all_written(out: torch.Tensor, what: str, poison_value=None):
    """No element of the (poisoned) output is non-finite (floats) or still `poison_value` (ints);
    chunked, so no tensor of out's size is made."""
    bad = torch.zeros((), dtype=torch.int64, device=out.device)
    for part in out.reshape(-1).split(1 << 28):
        bad += (~torch.isfinite(part)).sum() if poison_value is None else (part == poison_value).sum()
    bad = int(bad)
    assert bad == 0, f"{what}: {bad} of {out.numel()} elements unwritten (poison) or non-finite"


def check_dense(out, a, b, dtype, out_dtype=None, *, rows, cols, bias=None, c=None, beta=0.0,
                activation="none", what=""):
    """Rows `rows` (all columns) and columns `cols` (all rows) of out = act(a @ b + beta * c + bias)
    against float64 references; None skips one (where a or b in float64 would not fit)."""
    if rows is not None:
        r = idx(rows)
        ref = ref_gemm(a[r], b, bias, None if c is None else c[r], 1.0, beta, activation)
        check(out[r], ref, dtype, out_dtype, what=f"{what}: rows {rows[:8]}...{rows[-4:]}")
        del ref
    if cols is not None:
        k = idx(cols)
        ref = ref_gemm(a, b[:, k], None if bias is None else bias[k], None if c is None else c[:, k], 1.0, beta,
                       activation)
        check(out[:, k], ref, dtype, out_dtype, what=f"{what}: columns {cols}")


# --------------------------------------------------------------------------------------
# mm / gemm: D past 2^31 elements
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch, n", [("auto", N_ODD), ("sm80", N_ODD), ("simt", N_ODD), ("auto", N_ALIGNED)],
                         ids=lambda v: str(v))
def test_mm_output_past_2_31(monkeypatch, arch, n):
    """bf16 (16391 x N) = (16391 x 64) @ (64 x N), N about 131K: D has 2.15e9 elements, its last 8 rows
    past 2^31. Default dispatch (odd N: element-wise stores; aligned N: TMA stores) and the sm80 and
    SIMT families forced."""
    dtype, m, k = torch.bfloat16, M_BIG, K_SHORT
    need(nbytes((m, n), dtype) + nbytes((n, k), torch.float64), "mm past 2^31")
    use_arch(monkeypatch, arch)
    a, b = rand((m, k), dtype), weight_t(n, k, dtype=dtype)
    what = f"mm {m}x{n}x{k} {arch} ({kernel_of('mm', a, b)})"
    poison(nbytes((m, n), dtype))
    out = cg.mm(a, b)
    assert out.shape == (m, n) and out.numel() > E31
    assert_all_written(out, what)
    check_dense(out, a, b, dtype, rows=picks(m, row_of_2_31(m, n)), cols=picks(n), what=what)


GEMM_CASES = {
    "bias": dict(n=N_PAIRS, bias=True),                                    # register epilogue, + bias
    "bias_out_fp32": dict(n=N_ODD, bias=True, out_dtype=torch.float32),   # staged, fp32 D of 8.6 GB
    "bias_silu": dict(n=N_ALIGNED, bias=True, activation="silu"),         # TMA store of bias + activation
    "beta_c": dict(n=N_ODD, c=True, beta=0.5),                            # C read element by element
}


@pytest.mark.parametrize("case", list(GEMM_CASES))
def test_gemm_epilogues_past_2_31(case):
    """gemm with bias (and an activation, an fp32 D, or beta * C of 2.15e9 elements) where D passes 2^31."""
    p = GEMM_CASES[case]
    dtype, m, n, k = torch.bfloat16, M_BIG, p["n"], K_SHORT
    out_dtype = p.get("out_dtype")
    d_bytes = nbytes((m, n), out_dtype or dtype)
    need(d_bytes + (nbytes((m, n), dtype) if p.get("c") else 0), f"gemm {case}")
    a, b = rand((m, k), dtype), weight_t(n, k, dtype=dtype)
    bias = rand((n,), dtype) if p.get("bias") else None
    c = rand((m, n), dtype) if p.get("c") else None
    kw = dict(bias=bias, c=c, beta=p.get("beta", 0.0), activation=p.get("activation", "none"), out_dtype=out_dtype)
    what = f"gemm {case} {m}x{n}x{k} ({kernel_of('gemm', a, b, **kw)})"
    poison(d_bytes)
    out = cg.gemm(a, b, **kw)
    assert out.numel() > E31 and out.dtype == (out_dtype or dtype)
    assert_all_written(out, what)
    check_dense(out, a, b, dtype, out_dtype, rows=picks(m, row_of_2_31(m, n)), cols=picks(n), bias=bias, c=c,
                beta=kw["beta"], activation=kw["activation"], what=what)


def test_lm_head_logits_past_2_31():
    """The LM head of the audit's example: x (16384, 4096) @ W^T, W (152064, 4096) bf16; the logits have
    2.49e9 elements (rows from 14123 on lie past 2^31). Default dispatch."""
    dtype, m, n, k = torch.bfloat16, 16384, 152064, 4096
    need(nbytes((m, n), dtype) + nbytes((n, k), dtype) + 2 * nbytes((n, k), torch.float64), "LM head")
    x, w_t = rand((m, k), dtype), weight_t(n, k, dtype=dtype)
    what = f"LM head {m}x{n}x{k} ({kernel_of('mm', x, w_t)})"
    poison(nbytes((m, n), dtype))
    out = cg.mm(x, w_t)
    assert out.numel() > E31
    assert_all_written(out, what)
    check_dense(out, x, w_t, dtype, rows=picks(m, row_of_2_31(m, n), edge=2, extra=2), cols=picks(n), what=what)


@pytest.mark.parametrize("tf32, n", [(False, N_ODD), (True, N_ROWS16)], ids=["simt_fp32", "tf32"])
def test_fp32_output_past_2_31(tf32, n):
    """fp32 inputs, D of 2.15e9 fp32 elements (8.6 GB): SIMT fp32 without tf32 (odd N: scalar stores), the
    tensor cores with it (16-byte rows: TMA / vector stores)."""
    m, k = M_BIG, K_SHORT
    need(nbytes((m, n), torch.float32), "fp32 mm past 2^31")
    torch.backends.cuda.matmul.allow_tf32 = tf32  # (conftest's fixture restores it)
    a, b = rand((m, k), torch.float32), weight_t(n, k, dtype=torch.float32)
    what = f"fp32 mm {m}x{n}x{k} tf32={tf32} ({kernel_of('mm', a, b)})"
    poison(nbytes((m, n), torch.float32))
    out = cg.mm(a, b)
    assert out.numel() > E31
    assert_all_written(out, what)
    rows, cols = picks(m, row_of_2_31(m, n)), picks(n)
    if not tf32:
        check_dense(out, a, b, torch.float32, rows=rows, cols=cols, what=what)
        return
    # tf32 keeps 10 mantissa bits: the norm-wise bound of tests/test_sm80.py
    for got, ref, part in ((out[idx(rows)], ref_mm(a[idx(rows)], b), f"rows {rows}"),
                           (out[:, idx(cols)], ref_mm(a, b[:, idx(cols)]), f"columns {cols}")):
        err = rel_err(got, ref)
        assert err < 4e-3, f"{what}: {part}: rel err {err:.2e}"


def test_int8_mm_output_past_2_31():
    """int8 x int8 -> int32 (the sm80 family's IMMA kernels): D of 2.15e9 int32 elements (8.6 GB),
    exact."""
    if torch.cuda.get_device_capability()[0] < 8 or not cg._C.sm80_available():
        pytest.skip("int8 runs on the sm80 family's tensor cores")
    m, n, k = M_BIG, N_ODD, 128
    need(nbytes((m, n), torch.int32), "int8 mm past 2^31")
    a, b = rand((m, k), torch.int8), weight_t(n, k, dtype=torch.int8)
    what = f"int8 mm {m}x{n}x{k} ({kernel_of('mm', a, b)})"
    poison_int32(m * n)
    out = cg.mm(a, b)
    assert out.dtype == torch.int32 and out.numel() > E31
    assert_all_written(out, what, poison_value=INT32_POISON)
    rows, cols = idx(picks(m, row_of_2_31(m, n))), idx(picks(n))
    # int8 products summed over K = 128 are integers far below 2^53: float64 is exact
    assert torch.equal(out[rows].double(), a[rows].double() @ b.double()), f"{what}: sampled rows"
    assert torch.equal(out[:, cols].double(), a.double() @ b[:, cols].double()), f"{what}: sampled columns"


# --------------------------------------------------------------------------------------
# mm: an operand past 2^31 elements
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_mm_a_past_2_31(monkeypatch, arch):
    """A (2^22 + 3, 640) bf16 has 2.68e9 elements (rows from 3355443 on start past 2^31) times a small B."""
    dtype, m, n, k = torch.bfloat16, 2**22 + 3, 72, 640
    need(nbytes((m, k), dtype) + nbytes((m, n), dtype), "A past 2^31")
    use_arch(monkeypatch, arch)
    a, b = rand((m, k), dtype), weight_t(n, k, dtype=dtype)
    what = f"mm {m}x{n}x{k} {arch} ({kernel_of('mm', a, b)})"
    poison(nbytes((m, n), dtype))
    out = cg.mm(a, b)
    assert_all_written(out, what)
    # (a in float64 would take 21 GB: wide row windows instead of whole columns)
    check_dense(out, a, b, dtype, rows=windows(m, row_of_2_31(m, k)), cols=None, what=what)


SKINNY_CASES = [(8, ""), (8, "sm80"), (48, "sm90"), (8, "off")]


@pytest.mark.parametrize("m, knob", SKINNY_CASES, ids=lambda v: str(v) or "auto")
def test_decode_weight_past_2_31(monkeypatch, m, knob):
    """Decode against a weight of 2.15e9 elements: W (2^21 + 4099, 1024) bf16, its last 4099 rows past
    2^31 (the last D columns). The skinny kernels (Hopper TMA, mma.sync) and the tiles (knob off)."""
    dtype, n, k = torch.bfloat16, 2**21 + 4099, 1024
    need(nbytes((n, k), dtype) + nbytes((m, n), dtype), "W past 2^31")
    monkeypatch.delenv("CUTORCH_GEMM_ARCH", raising=False)
    if knob:
        monkeypatch.setenv("CUTORCH_GEMM_SKINNY", knob)
    else:
        monkeypatch.delenv("CUTORCH_GEMM_SKINNY", raising=False)
    x, w_t = rand((m, k), dtype), weight_t(n, k, dtype=dtype)
    what = f"decode {m}x{n}x{k} skinny={knob or 'auto'} ({kernel_of('mm', x, w_t)})"
    poison(nbytes((m, n), dtype))
    out = cg.mm(x, w_t)
    assert_all_written(out, what)
    # (every row of D, through column windows: W in float64 would take 17 GB)
    check_dense(out, x, w_t, dtype, rows=None, cols=windows(n, row_of_2_31(n, k), width=512, stride=4099), what=what)


# --------------------------------------------------------------------------------------
# bmm: batch offsets past 2^31
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch, n", [("auto", 65541), ("sm80", 65541), ("simt", 65541), ("auto", 65544)],
                         ids=lambda v: str(v))
def test_bmm_output_batch_offset_past_2_31(monkeypatch, arch, n):
    """fp16 bmm (16, 2053, 64) @ (16, 64, N): D has 2.15e9 elements, batch 15 starts at 2.02e9 and its
    rows from 1970 on lie past 2^31."""
    dtype, batch, m, k = torch.float16, 16, 2053, K_SHORT
    need(nbytes((batch, m, n), dtype), "bmm D past 2^31")
    use_arch(monkeypatch, arch)
    a, b = rand((batch, m, k), dtype), weight_t(batch, n, k, dtype=dtype)
    what = f"bmm {batch}x{m}x{n}x{k} {arch} ({kernel_of('bmm', a, b)})"
    poison(nbytes((batch, m, n), dtype))
    out = cg.bmm(a, b)
    assert out.shape == (batch, m, n) and out.numel() > E31
    assert_all_written(out, what)
    for z in sorted({0, random.randrange(1, batch - 1), batch - 1}):
        check_dense(out[z], a[z], b[z], dtype, rows=picks(m, row_of_2_31(m, n, z * m * n)), cols=picks(n),
                    what=f"{what} batch {z}")


@pytest.mark.parametrize("arch", ARCHS)
def test_bmm_a_batch_offset_past_2_31(monkeypatch, arch):
    """fp16 bmm (16, 2053, 65544) @ (16, 65544, 72): A has 2.15e9 elements, its last batch entry starts
    at 2.02e9 (rows from 1969 on past 2^31)."""
    dtype, batch, m, n, k = torch.float16, 16, 2053, 72, 65544
    need(nbytes((batch, m, k), dtype) + 2 * nbytes((m, k), torch.float64), "bmm A past 2^31")
    use_arch(monkeypatch, arch)
    a, b = rand((batch, m, k), dtype), weight_t(batch, n, k, dtype=dtype)
    what = f"bmm {batch}x{m}x{n}x{k} {arch} ({kernel_of('bmm', a, b)})"
    poison(nbytes((batch, m, n), dtype))
    out = cg.bmm(a, b)
    assert_all_written(out, what)
    for z in sorted({0, random.randrange(1, batch - 1), batch - 1}):
        check(out[z], ref_mm(a[z], b[z]), dtype, what=f"{what} batch {z}")


# --------------------------------------------------------------------------------------
# grouped_mm: totals past 2^31
# --------------------------------------------------------------------------------------

def group_sizes(total: int, groups: int, empty=()) -> list:
    """Uneven group sizes summing to `total` (groups in `empty` get none)."""
    w = [0.0 if g in empty else 0.5 + random.random() for g in range(groups)]
    sizes = [int(total * x / sum(w)) for x in w]
    last = max(g for g in range(groups) if g not in empty)
    sizes[last] += total - sum(sizes)
    return sizes


def ends_of(sizes) -> list:
    out, acc = [], 0
    for s in sizes:
        acc += s
        out.append(acc)
    return out


def check_grouped_rows(out, a, b, ends, rows, dtype, what):
    """Rows `rows` of a 2D x 3D grouped_mm against float64: the sampled rows as a grouped problem of
    their own (rows past ends[-1] must be zero)."""
    group = [bisect.bisect_right(ends, r) for r in rows]  # (len(ends): past the last group)
    sub_ends = [bisect.bisect_right(group, g) for g in range(len(ends))]
    r = idx(rows)
    ref = ref_grouped_mm(a[r], b, torch.tensor(sub_ends, dtype=torch.int32))
    check(out[r], ref, dtype, what=f"{what}: rows {rows[:8]}...{rows[-4:]}")


@pytest.mark.parametrize("arch", ARCHS)
def test_grouped_mm_2d3d_output_past_2_31(monkeypatch, arch):
    """grouped_mm 2D x 3D, bf16: T = 262181 rows x N = 8200 (2.15e9 elements; rows from 261888 on past
    2^31) in 8 uneven groups, one empty, 77 rows past offs[-1] that must read as zero."""
    dtype, total, k, n, groups, tail = torch.bfloat16, 262144 + 37, 128, 8200, 8, 77
    need(nbytes((total, n), dtype), "grouped_mm 2d3d D past 2^31")
    use_arch(monkeypatch, arch)
    ends = ends_of(group_sizes(total - tail, groups, empty=(2,)))
    offs = torch.tensor(ends, dtype=torch.int32, device=DEV)
    a, b = rand((total, k), dtype), rand((groups, k, n), dtype)
    what = f"grouped_mm 2d3d T={total} N={n} K={k} {arch} ({kernel_of('grouped_mm', a, b, offs)})"
    poison(nbytes((total, n), dtype))
    out = cg.grouped_mm(a, b, offs)
    assert out.shape == (total, n) and out.numel() > E31
    assert_all_written(out, what)
    assert torch.count_nonzero(out[ends[-1]:]) == 0, f"{what}: rows past offs[-1] not zero"
    starts = [0] + ends[:-1]
    rows = picks(total, row_of_2_31(total, n), *starts, *[e - 1 for e in ends])
    check_grouped_rows(out, a, b, ends, rows, dtype, what)
    cols = idx(picks(n))
    check(out[:, cols], ref_grouped_mm(a, b[:, :, cols], offs), dtype, what=f"{what}: columns {cols.tolist()}")


def test_grouped_mm_2d3d_a_past_2_31():
    """grouped_mm 2D x 3D, bf16: A (2^22 + 3, 640) has 2.68e9 elements (rows from 3355443 on past 2^31),
    4 groups, 5 rows past offs[-1]."""
    dtype, total, k, n, groups, tail = torch.bfloat16, 2**22 + 3, 640, 64, 4, 5
    need(nbytes((total, k), dtype) + nbytes((total, n), dtype), "grouped_mm 2d3d A past 2^31")
    ends = ends_of(group_sizes(total - tail, groups))
    offs = torch.tensor(ends, dtype=torch.int32, device=DEV)
    a, b = rand((total, k), dtype), rand((groups, k, n), dtype)
    what = f"grouped_mm 2d3d T={total} N={n} K={k} ({kernel_of('grouped_mm', a, b, offs)})"
    poison(nbytes((total, n), dtype))
    out = cg.grouped_mm(a, b, offs)
    assert_all_written(out, what)
    assert torch.count_nonzero(out[ends[-1]:]) == 0, f"{what}: rows past offs[-1] not zero"
    rows = windows(total, row_of_2_31(total, k), *ends, width=512)
    check_grouped_rows(out, a, b, ends, rows, dtype, what)


@pytest.mark.parametrize("arch", ARCHS)
def test_grouped_mm_2d2d_output_past_2_31(monkeypatch, arch):
    """grouped_mm 2D x 2D (the MoE weight gradient dW = dY^T X), bf16: D (64, 5800, 5808) has 2.16e9
    elements, group 63 starts at 2.12e9 (its rows from 4345 on past 2^31); uneven groups along the
    reduction, one empty."""
    dtype, groups, m, n, total = torch.bfloat16, 64, 5800, 5808, 3072
    need(nbytes((groups, m, n), dtype), "grouped_mm 2d2d D past 2^31")
    use_arch(monkeypatch, arch)
    empty = 5
    ends = ends_of(group_sizes(total - 3, groups, empty=(empty,)))
    offs = torch.tensor(ends, dtype=torch.int32, device=DEV)
    a = rand((total, m), dtype).t()  # dY^T: MN-major
    b = rand((total, n), dtype)      # X
    what = f"grouped_mm 2d2d G={groups} M={m} N={n} T={total} {arch} ({kernel_of('grouped_mm', a, b, offs)})"
    poison(nbytes((groups, m, n), dtype))
    out = cg.grouped_mm(a, b, offs)
    assert out.shape == (groups, m, n) and out.numel() > E31
    assert_all_written(out, what)
    assert torch.count_nonzero(out[empty]) == 0, f"{what}: the empty group is not zero"
    starts = [0] + ends[:-1]
    for g in sorted({0, random.randrange(1, groups - 1), groups - 1}):
        a_g, b_g = a[:, starts[g]:ends[g]], b[starts[g]:ends[g]]
        check_dense(out[g], a_g, b_g, dtype, rows=picks(m, row_of_2_31(m, n, g * m * n)), cols=picks(n),
                    what=f"{what} group {g}")


@pytest.mark.parametrize("op", ["mm", "bmm"])
def test_extent_past_the_limit_is_refused(op):
    """An extent within a tile of 2^31 would overflow the kernels' int32 tile arithmetic (m + block - 1): the binding
    refuses extents above 2^31 - 1025 with a ValueError naming the op, before it allocates D (so a stride-0 operand
    of that extent costs no memory here)."""
    m = 2**31 - 1000
    a = torch.zeros(1, 64, device="cuda", dtype=torch.bfloat16).expand(m, 64)
    b = torch.zeros(64, 8, device="cuda", dtype=torch.bfloat16)
    if op == "bmm":
        a, b = a.unsqueeze(0), b.unsqueeze(0)
    with pytest.raises(ValueError, match=f"gemm.{op}: extents above 2\\^31 - 1025"):
        getattr(cg, op)(a, b)
