"""`scaled_mm`: 8-bit float GEMM with per-tensor / per-row / per-column fp32 scales and a bias,
like torch._scaled_mm. Every device: the float64 reference with an element-wise bound, every
e4m3 / e5m2 pairing, scale form, out_dtype, layout and awkward size, input checks, fake kernel,
opcheck and gradients (scales and bias). On Hopper: the sm90 8-bit wgmma kernels (both configs,
every epilogue path) and the upcast path for the layouts they do not read, against
torch._scaled_mm in the same run."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import CLUSTER_NOTE, DEVICES, gpu, requires_cuda

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
KINDS = [(E4, E4), (E4, E5), (E5, E4), (E5, E5)]
OUT_DTYPES = [torch.bfloat16, torch.float16, torch.float32]
SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


def kind_id(pair) -> str:
    return "x".join(str(t).replace("torch.float8_", "") for t in pair)


def fp8(rows: int, cols: int, dtype, device, layout: str = "row") -> torch.Tensor:
    """A (rows, cols) 8-bit tensor of random values. layout: "row" (contiguous), "col" (a
    transposed contiguous tensor), "padded" (row-major, leading dimension rounded up to 16 + 16:
    still TMA-readable), "odd" (row-major, leading dimension cols + 1: not TMA-readable)."""
    def rnd(r, c):
        return (torch.randn(r, c, device=device) * 2).to(dtype)
    if layout == "row":
        return rnd(rows, cols)
    if layout == "col":
        return rnd(cols, rows).t()
    ld = (cols + 15) // 16 * 16 + 16 if layout == "padded" else cols + 1
    return rnd(rows, ld)[:, :cols]


def scale(kind: str, n: int, device, rows: bool) -> torch.Tensor:
    """kind: "tensor" (0-d), "one" (shape (1,)), "vector" ((n, 1) for a, (1, n) for b)."""
    if kind == "tensor":
        return torch.rand((), device=device) + 0.25
    if kind == "one":
        return torch.rand(1, device=device) + 0.25
    return torch.rand((n, 1) if rows else (1, n), device=device) + 0.25


def ref_scaled(a, b, sa, sb, bias):
    """float64 reference and the size of its terms (the bound's scale)."""
    a64, b64 = a.cpu().double(), b.cpu().double()
    m, n = a.shape[0], b.shape[1]
    s = sa.cpu().double().reshape(-1, 1) * sb.cpu().double().reshape(1, -1)
    s = s.reshape(()) if s.numel() == 1 else s.expand(m, n)  # (a vector scale of an empty M or N has 0 elements)
    ref = (a64 @ b64) * s
    mag = (a64.abs() @ b64.abs()) * s.abs()
    if bias is not None:
        ref = ref + bias.cpu().double()
        mag = mag + bias.cpu().double().abs()
    return ref, mag


def uses_8bit_wgmma(a, b, sa, sb, bias, out_dtype) -> bool:
    """Whether this call runs Hopper's 8-bit wgmma (rather than the exact upcast path)."""
    if not a.is_cuda:
        return False
    e = cg.explain("scaled_mm", a, b, sa, sb, bias=bias, out_dtype=out_dtype)
    return e.kernel == "sm90" and "x128_" in e.config


# Hopper's 8-bit wgmma adds a k-block's 128 products with fewer accumulator bits than fp32:
# measured (scripts/fp8_accum_probe.py, H100) up to ~3.7e3 eps32 = 0.9 * 2^-11 of sum|a*b| per
# k-block, which the kernel then adds in fp32. Bound: 2^-10 of sum|a*b|.
TC8_ACCUM = 2.0 ** -10


def check_scaled(out, a, b, sa, sb, bias, out_dtype, what=""):
    """Shape, dtype, contiguity and every element: |out - ref| <= u(out) |ref| + 4 K eps32 mag +
    the output's subnormal spacing. The products are exact in fp32 and the sums run in fp32
    (error ~ K eps32 mag), then D is rounded once (half an ulp of out_dtype). On the 8-bit wgmma
    path, the tensor core's accumulation adds TC8_ACCUM * mag (test_sm90_scaled_mm_promotes
    checks, separately, that the error does not grow with K)."""
    m, n = a.shape[0], b.shape[1]
    assert out.shape == (m, n), f"{what}: shape {tuple(out.shape)}"
    assert out.dtype == out_dtype, f"{what}: dtype {out.dtype}"
    assert out.is_contiguous(), f"{what}: strides {out.stride()}"
    ref, mag = ref_scaled(a, b, sa, sb, bias)
    o = out.cpu().double()
    assert torch.isfinite(o).all(), f"{what}: non-finite output"
    fo = torch.finfo(out_dtype)
    k = max(a.shape[1], 1)
    sums = 4 * k * torch.finfo(torch.float32).eps
    if uses_8bit_wgmma(a, b, sa, sb, bias, out_dtype):
        sums += TC8_ACCUM
    allowed = (fo.eps / 2) * ref.abs() + sums * mag + fo.smallest_normal * fo.eps
    bad = (o - ref).abs() > allowed
    if bad.any():
        i = bad.nonzero()[0].tolist()
        raise AssertionError(f"{what}: {int(bad.sum())}/{bad.numel()} elements off; first at {i}: "
                             f"out={o[tuple(i)].item()!r} ref={ref[tuple(i)].item()!r}")


SHAPES = [(1, 1, 1), (16, 16, 16), (7, 65, 129), (129, 257, 512), (1000, 7, 64), (1, 300, 4096), (64, 12, 32)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kinds", KINDS, ids=kind_id)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_scaled_mm_kinds_and_sizes(device, kinds, mnk):
    m, n, k = mnk
    a, b = fp8(m, k, kinds[0], device), fp8(k, n, kinds[1], device, "col")
    sa, sb = scale("vector", m, device, True), scale("vector", n, device, False)
    out = cg.scaled_mm(a, b, sa, sb)
    check_scaled(out, a, b, sa, sb, None, torch.bfloat16, f"{kind_id(kinds)} {mnk}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", OUT_DTYPES, ids=str)
@pytest.mark.parametrize("scales", [("tensor", "tensor"), ("one", "vector"), ("vector", "one"), ("vector", "vector")],
                         ids="-".join)
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16, torch.float32], ids=str)
def test_scaled_mm_scales_bias_out_dtype(device, out_dtype, scales, bias_dtype):
    m, n, k = 200, 264, 384
    a, b = fp8(m, k, E4, device), fp8(k, n, E4, device, "col")
    sa, sb = scale(scales[0], m, device, True), scale(scales[1], n, device, False)
    bias = None if bias_dtype is None else torch.randn(n, device=device).to(bias_dtype)
    out = cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype)
    check_scaled(out, a, b, sa, sb, bias, out_dtype, f"{scales} bias={bias_dtype} out={out_dtype}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("la,lb", [("row", "col"), ("col", "col"), ("row", "row"), ("padded", "col"),
                                   ("row", "padded"), ("odd", "col"), ("col", "odd")])
def test_scaled_mm_layouts(device, la, lb):
    m, n, k = 96, 80, 160
    a = fp8(m, k, E4, device, la)
    b = fp8(n, k, E5, device, lb).t() if lb != "row" else fp8(k, n, E5, device, "row")
    sa, sb = scale("vector", m, device, True), scale("tensor", n, device, False)
    out = cg.scaled_mm(a, b, sa, sb, out_dtype=torch.float32)
    check_scaled(out, a, b, sa, sb, None, torch.float32, f"a {la}, b {lb}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mnk", [(0, 5, 16), (5, 0, 16), (5, 7, 0), (0, 0, 0)], ids=lambda s: "x".join(map(str, s)))
def test_scaled_mm_empty(device, mnk):
    m, n, k = mnk
    a, b = fp8(m, k, E4, device), fp8(k, n, E4, device, "col")
    bias = torch.randn(n, device=device)
    out = cg.scaled_mm(a, b, scale("tensor", 1, device, True), scale("tensor", 1, device, False), bias=bias,
                       out_dtype=torch.float32)
    assert out.shape == (m, n)
    # K = 0: the product is zero and D is the bias in every row.
    assert torch.equal(out.cpu(), bias.cpu().expand(m, n))


@pytest.mark.parametrize("device", DEVICES)
def test_scaled_mm_input_checks(device):
    a, b = fp8(8, 32, E4, device), fp8(32, 16, E4, device, "col")
    sa, sb = scale("tensor", 8, device, True), scale("tensor", 16, device, False)
    with pytest.raises(TypeError, match=r"a has dtype .*; expected torch.float8_e4m3fn or torch.float8_e5m2"):
        cg.scaled_mm(a.to(torch.bfloat16), b, sa, sb)
    with pytest.raises(TypeError, match=r"b has dtype .*; expected torch.float8_e4m3fn"):
        cg.scaled_mm(a, b.float(), sa, sb)
    with pytest.raises(ValueError, match=r"b must have shape \(K=32, N\)"):
        cg.scaled_mm(a, fp8(31, 16, E4, device), sa, sb)
    with pytest.raises(ValueError, match="a must be a 2-D tensor"):
        cg.scaled_mm(a[None], b, sa, sb)
    with pytest.raises(TypeError, match="scale_a has dtype .*; expected float32"):
        cg.scaled_mm(a, b, sa.double(), sb)
    with pytest.raises(ValueError, match=r"scale_a must have one element .* or shape \(8, 1\)"):
        cg.scaled_mm(a, b, torch.ones(8, device=device), sb)
    with pytest.raises(ValueError, match=r"scale_b must have one element .* or shape \(1, 16\)"):
        cg.scaled_mm(a, b, sa, torch.ones(16, 1, device=device))
    with pytest.raises(ValueError, match=r"bias must have shape \(16,\)"):
        cg.scaled_mm(a, b, sa, sb, bias=torch.zeros(15, device=device))
    with pytest.raises(TypeError, match="bias has dtype .*; expected bfloat16, float16 or float32"):
        cg.scaled_mm(a, b, sa, sb, bias=torch.zeros(16, device=device, dtype=torch.float64))
    with pytest.raises(TypeError, match="unsupported out_dtype .*; expected bfloat16, float16 or float32"):
        cg.scaled_mm(a, b, sa, sb, out_dtype=E4)


@requires_cuda
@gpu
def test_scaled_mm_device_mismatch():
    a, b = fp8(8, 32, E4, "cuda"), fp8(32, 16, E4, "cuda", "col")
    with pytest.raises(ValueError, match="scale_a is on cpu but a is on cuda"):
        cg.scaled_mm(a, b, torch.ones(()), torch.ones((), device="cuda"))
    with pytest.raises(ValueError, match="b is on cpu but a is on cuda"):
        cg.scaled_mm(a, b.cpu(), torch.ones((), device="cuda"), torch.ones((), device="cuda"))


def test_scaled_mm_fake_compile_and_opcheck():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        out = torch.ops.gemm.scaled_mm(torch.empty(5, 32, dtype=E4), torch.empty(32, 3, dtype=E5),
                                       torch.empty(()), torch.empty(1, 3), out_dtype=torch.float16)
    assert out.shape == (5, 3) and out.dtype == torch.float16
    a, b = fp8(9, 48, E4, "cpu"), fp8(48, 6, E4, "cpu", "col")
    sa, sb = scale("vector", 9, "cpu", True), scale("vector", 6, "cpu", False)
    # NOTE: not opcheck's test_schema: it multiplies the inputs, which PyTorch does not implement
    # for float8 on the CPU ("mul_cpu_reduced_float"); the schema is exercised by every call here.
    utils = ("test_faketensor", "test_autograd_registration", "test_aot_dispatch_dynamic")
    torch.library.opcheck(torch.ops.gemm.scaled_mm, (a, b, sa, sb), {"out_dtype": torch.float32}, test_utils=utils)
    torch.library.opcheck(torch.ops.gemm.scaled_mm, (a, b, sa.requires_grad_(True), sb),
                          {"bias": torch.randn(6, requires_grad=True)}, test_utils=utils)
    # The schema's default out_dtype (written 15, ScalarType::BFloat16) is bfloat16.
    assert torch.ops.gemm.scaled_mm(a, b, sa.detach(), sb).dtype == torch.bfloat16


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scales", [("tensor", "vector"), ("vector", "one")], ids="-".join)
def test_scaled_mm_grads_of_scales_and_bias(device, scales):
    m, n, k = 24, 40, 64
    a, b = fp8(m, k, E4, device), fp8(k, n, E5, device, "col")
    sa = scale(scales[0], m, device, True).requires_grad_(True)
    sb = scale(scales[1], n, device, False).requires_grad_(True)
    bias = torch.randn(n, device=device, requires_grad=True)
    out = cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.float32)
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (sa, sb, bias), g)
    prod = a.cpu().double() @ b.cpu().double()

    def reference(prod, sa, sb, bias):
        return prod * (sa.cpu().reshape(-1, 1) if sa.numel() > 1 else sa.cpu()) \
            * (sb.cpu().reshape(1, -1) if sb.numel() > 1 else sb.cpu()) + bias.cpu()

    leaves = [t.detach().cpu().double().requires_grad_(True) for t in (sa, sb, bias)]
    want = torch.autograd.grad(reference(prod, *leaves), leaves, g.cpu().double())
    # The size of the terms each gradient sums (a per-tensor scale's gradient sums all M x N of
    # them in fp32, which cancel): the same run on |values|.
    abs_leaves = [t.detach().cpu().double().abs().requires_grad_(True) for t in (sa, sb, bias)]
    sizes = torch.autograd.grad(reference(prod.abs(), *abs_leaves), abs_leaves, g.cpu().double().abs())
    # The backward recomputes a @ b with scaled_mm: on Hopper, the 8-bit tensor core's accumulation.
    per_term = 4e-6 + (TC8_ACCUM if uses_8bit_wgmma(a, b, sa, sb, bias, torch.float32) else 0.0)
    for name, x, r, z in zip(("scale_a", "scale_b", "bias"), got, want, sizes):
        assert x.shape == r.shape, f"{name}: grad shape {tuple(x.shape)} != {tuple(r.shape)}"
        err = float((x.cpu().double() - r).norm())
        assert err <= 1e-5 * float(r.norm()) + per_term * float(z.norm()), \
            f"{name}: grad rel err {err / float(r.norm()):.2e} (term sizes {float(z.norm()):.2e})"


def test_scaled_mm_no_grad_for_8bit_operands():
    a = fp8(4, 16, E4, "cpu").requires_grad_(True)
    b = fp8(16, 8, E4, "cpu", "col")
    out = cg.scaled_mm(a, b, torch.ones(()), torch.ones(()), out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="no gradient for the 8-bit operands"):
        out.sum().backward()


def test_scaled_mm_explain_cpu():
    a, b = fp8(4, 16, E4, "cpu"), fp8(16, 8, E4, "cpu", "col")
    e = cg.explain("scaled_mm", a, b, torch.ones(()), torch.ones(1, 8))
    assert e.kernel == "cpu_reference" and "scale_b per column" in e.reason


# --------------------------------------------------------------------------------------
# GPU: the sm90 8-bit kernels and the upcast path, against torch._scaled_mm
# --------------------------------------------------------------------------------------

needs_sm90 = pytest.mark.skipif(not SM90, reason="the 8-bit wgmma kernels need an sm_90 GPU")


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("config", ["coop", "coop192", "pingpong", "pingpong64"])
@pytest.mark.parametrize("mnk", [(256, 512, 1024), (130, 264, 4096), (64, 4096, 512), (333, 7, 96), (17, 12, 48),
                                 (1, 1000, 272)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("out_dtype", OUT_DTYPES, ids=str)
def test_sm90_scaled_mm_configs(monkeypatch, config, mnk, out_dtype):
    """Both configs through every epilogue path: TMA stores (N a multiple of 8), pairs from
    registers (even N), element-wise (odd N); partial tiles along M and N; one row."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = mnk
    a, b = fp8(m, k, E4, "cuda"), fp8(n, k, E4, "cuda").t()
    sa, sb = scale("vector", m, "cuda", True), scale("vector", n, "cuda", False)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    e = cg.explain("scaled_mm", a, b, sa, sb, bias=bias, out_dtype=out_dtype)
    assert e.kernel == "sm90" and e.config.startswith("Sm90_") and "x128_" in e.config, str(e)
    assert ("128x192" in e.config) == (config == "coop192"), str(e)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)  # poison the allocator's block
    del out
    out = cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype)
    check_scaled(out, a, b, sa, sb, bias, out_dtype, f"{config} {mnk} {out_dtype}")


# The 2x1 cluster rule's K clauses for 8-bit operands (fifty-ninth session; device/sm90_cluster_streamk.h), counted in
# 128-element K slices. (M, N, K), pairs on 132 SMs.
F8_CLUSTER_CASES = [((4096, 8448, 1024), True),    # 8 slices, 1056 tiles = 8 rounds: the short-K clause
                    ((4096, 4096, 4224), True),    # 33 slices, 512 tiles = 3.9 rounds, 3% idle: the mid-K clause
                    ((4096, 4096, 4096), False),   # 32 slices at 3.9 rounds: neither
                    ((4096, 8448, 896), False)]    # 7 slices


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("fast", [False, True], ids=["promoted", "fast_accum"])
@pytest.mark.parametrize("case", F8_CLUSTER_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_sm90_scaled_mm_cluster_rule(monkeypatch, case, fast):
    for var in ("CUTORCH_GEMM_SM90_CONFIG", "CUTORCH_GEMM_SM90_CLUSTER", "CUTORCH_GEMM_SM90_GRID"):
        monkeypatch.delenv(var, raising=False)
    (m, n, k), pairs = case
    a, b = fp8(m, k, E4, "cuda"), fp8(n, k, E4, "cuda").t()
    sa, sb = scale("vector", m, "cuda", True), scale("vector", n, "cuda", False)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    e = cg.explain("scaled_mm", a, b, sa, sb, bias=bias, use_fast_accum=fast)
    assert e.kernel == "sm90" and e.config == "Sm90_128x256x128_Coop_S4" and e.splits == 1, str(e)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert (CLUSTER_NOTE in e.reason) == pairs, str(e)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)  # poison the allocator's block
    del out
    out = cg.scaled_mm(a, b, sa, sb, bias=bias, use_fast_accum=fast)
    if fast:  # chained in the tensor core over all of K: the split test's bound, and every element finite
        ref, _ = ref_scaled(a, b, sa, sb, bias)
        assert torch.isfinite(out).all()
        err = float((out.double().cpu() - ref).abs().max() / ref.abs().max())
        assert err <= 2e-2, (case, err)
    else:
        check_scaled(out, a, b, sa, sb, bias, torch.bfloat16, f"cluster rule {m}x{n}x{k}")


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("fast", [False, True], ids=["promoted", "fast_accum"])
@pytest.mark.parametrize("mnk", [(64, 1024, 4096), (33, 520, 2000), (5, 7, 2048), (128, 1000, 1536)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("out_dtype", OUT_DTYPES, ids=str)
def test_sm90_scaled_mm_split_k(mnk, out_dtype, fast):
    """Small M: split-K over K ranges (a partial last one, partials by TMA store, pairs or element
    by element), summed in split order with the scales and bias; both scale forms."""
    m, n, k = mnk
    a, b = fp8(m, k, E4, "cuda"), fp8(n, k, E4, "cuda").t()
    for form in ("tensor", "vector"):
        sa, sb = scale(form, m, "cuda", True), scale(form, n, "cuda", False)
        bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) if form == "vector" else None
        e = cg.explain("scaled_mm", a, b, sa, sb, bias=bias, out_dtype=out_dtype, use_fast_accum=fast)
        assert e.kernel == "sm90" and e.splits > 1 and "split-K" in e.reason, str(e)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)  # poison the allocator's block
        del out
        out = cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype, use_fast_accum=fast)
        if fast:  # chained in the tensor core within each K range: the bound of the fast test below
            ref, _ = ref_scaled(a, b, sa, sb, bias)
            err = float((out.double().cpu() - ref).abs().max() / ref.abs().max())
            assert err <= 2e-2, (mnk, form, err)
        else:
            check_scaled(out, a, b, sa, sb, bias, out_dtype, f"split {mnk} {form} {out_dtype}")


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("kinds", [(E4, E4), (E4, E5), (E5, E4)], ids=kind_id)
@pytest.mark.parametrize("rowwise", [False, True], ids=["tensorwise", "rowwise"])
def test_sm90_scaled_mm_matches_torch(monkeypatch, kinds, rowwise):
    m, n, k = 512, 768, 2048
    a, b = fp8(m, k, kinds[0], "cuda"), fp8(n, k, kinds[1], "cuda").t()
    if rowwise:
        sa, sb = scale("vector", m, "cuda", True), scale("vector", n, "cuda", False)
    else:
        sa, sb = scale("tensor", 1, "cuda", True), scale("tensor", 1, "cuda", False)
    ours = cg.scaled_mm(a, b, sa, sb)
    check_scaled(ours, a, b, sa, sb, None, torch.bfloat16, "ours")
    try:  # PyTorch takes fewer kind / scaling combinations than we do
        theirs = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    except RuntimeError as exc:
        print(f"torch._scaled_mm does not take {kind_id(kinds)} rowwise={rowwise}: {exc}")
        return
    check_scaled(theirs, a, b, sa, sb, None, torch.bfloat16, "torch._scaled_mm")


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("config", ["coop", "coop192", "pingpong", "pingpong64"])
def test_sm90_scaled_mm_promotes(monkeypatch, config):
    """The accumulation error must not grow with K: each k-block's sum is added to an fp32
    accumulator. Chained in the tensor core (torch's use_fast_accum=True), the largest error at
    K = 16384 is ~7e-3 of max|D| (H100); promoted, ~1e-4, as torch._scaled_mm's default."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = 256, 1024, 16384
    a, b = fp8(m, k, E4, "cuda"), fp8(n, k, E4, "cuda").t()
    one = torch.ones((), device="cuda")
    assert uses_8bit_wgmma(a, b, one, one, None, torch.float32)
    ref = a.double() @ b.double()

    def err(x):
        return float((x.double() - ref).abs().max() / ref.abs().max())

    ours = err(cg.scaled_mm(a, b, one, one, out_dtype=torch.float32))
    exact = err(torch._scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=False))
    fast = err(torch._scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=True))
    print(f"max error / max|D| at K={k}: ours {ours:.2e}, torch exact {exact:.2e}, torch fast {fast:.2e}")
    assert ours <= max(2 * exact, 1e-4) and ours <= 1e-3, (ours, exact, fast)


@requires_cuda
@gpu
@needs_sm90
def test_sm90_scaled_mm_explain_fallbacks(monkeypatch):
    one = torch.ones((), device="cuda")
    a, b = fp8(64, 64, E4, "cuda"), fp8(64, 64, E4, "cuda").t()
    e = cg.explain("scaled_mm", a, b, one, one)
    assert e.kernel == "sm90" and "x128_" in e.config and "8-bit wgmma" in e.reason, str(e)
    check_scaled(cg.scaled_mm(a, b, one, one), a, b, one, one, None, torch.bfloat16, "8-bit wgmma")
    a, b = fp8(64, 64, E4, "cuda"), fp8(64, 64, E4, "cuda")  # b row-major: MN-major, no 8-bit wgmma
    e = cg.explain("scaled_mm", a, b, one, one)
    assert e.kernel == "sm90" and "x64_" in e.config and "upcasts" in e.reason, str(e)  # a 16-bit config
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "sm80")
    e = cg.explain("scaled_mm", a, b.t().contiguous().t(), one, one)
    assert e.kernel == "sm80" and "CUTORCH_GEMM_ARCH=sm80" in e.reason, str(e)
    out = cg.scaled_mm(a, b, one, one, out_dtype=torch.float32)
    check_scaled(out, a, b, one, one, None, torch.float32, "forced sm80")


def test_scaled_mm_under_torch_compile(fresh_dynamo):
    """No graph break: the fake kernel gives torch.compile the output's shape and dtype."""
    a, b = fp8(33, 64, E4, "cpu"), fp8(64, 20, E5, "cpu", "col")
    sa, sb = scale("vector", 33, "cpu", True), scale("tensor", 20, "cpu", False)
    bias = torch.randn(20)

    def f(a, b, sa, sb, bias):
        return torch.relu(cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.float32)) * 2

    got = torch.compile(f, fullgraph=True)(a, b, sa, sb, bias)
    torch.testing.assert_close(got, f(a, b, sa, sb, bias), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_use_fast_accum_is_accepted_and_exact_on_the_reference(device):
    """use_fast_accum (torch._scaled_mm's keyword) is taken everywhere; on the CPU reference (and
    the upcast path) it changes nothing."""
    a, b = fp8(33, 96, E4, "cpu"), fp8(40, 96, E4, "cpu").t()
    sa, sb = scale("tensor", 1, "cpu", True), scale("tensor", 1, "cpu", False)
    exact = cg.scaled_mm(a, b, sa, sb, out_dtype=torch.float32)
    fast = cg.scaled_mm(a, b, sa, sb, out_dtype=torch.float32, use_fast_accum=True)
    assert torch.equal(exact, fast)
    out = torch.ops.gemm.scaled_mm(a.to(device), b.to(device), sa.to(device), sb.to(device),
                                   out_dtype=torch.float32, use_fast_accum=True)
    check_scaled(out, a.to(device), b.to(device), sa.to(device), sb.to(device), None, torch.float32, "fast")


def test_use_fast_accum_opcheck():
    a, b = fp8(16, 64, E4, "cpu"), fp8(24, 64, E5, "cpu").t()
    sa, sb = scale("tensor", 1, "cpu", True), scale("tensor", 1, "cpu", False)
    utils = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")  # (see above)
    torch.library.opcheck(torch.ops.gemm.scaled_mm.default, (a, b, sa, sb),
                          {"out_dtype": torch.bfloat16, "use_fast_accum": True}, test_utils=utils)


@requires_cuda
@gpu
@needs_sm90
@pytest.mark.parametrize("config", ["coop", "pingpong"])
@pytest.mark.parametrize("kinds", [(E4, E4), (E4, E5), (E5, E4), (E5, E5)], ids=kind_id)
def test_sm90_fast_accum_matches_torch_fast(monkeypatch, config, kinds):
    """use_fast_accum=True runs the chained kernel: its error against float64 is that of
    torch._scaled_mm(use_fast_accum=True) (same instruction, same order), larger than the
    promoted default's at long K; awkward M / N and a bias go through every epilogue path."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    for m, n, k in [(256, 1024, 16384), (130, 264, 4096), (333, 7, 96)]:
        a, b = fp8(m, k, kinds[0], "cuda"), fp8(n, k, kinds[1], "cuda").t()
        one = torch.ones((), device="cuda")
        assert uses_8bit_wgmma(a, b, one, one, None, torch.float32)
        ref = a.double() @ b.double()

        def err(x):
            return float((x.double() - ref).abs().max() / ref.abs().max())

        ours = err(cg.scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=True))
        exact = err(cg.scaled_mm(a, b, one, one, out_dtype=torch.float32))
        try:
            theirs = err(torch._scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=True))
        except (RuntimeError, ValueError):  # a kind pairing torch does not take (e5m2 x e5m2: ValueError)
            theirs = None
        print(f"{config} {kind_id(kinds)} {m}x{n}x{k}: fast {ours:.2e} torch fast {theirs} promoted {exact:.2e}")
        assert ours <= 2e-2, (m, n, k, ours)
        assert exact <= 1e-3, (m, n, k, exact)
        if theirs is not None:
            assert ours <= 2 * theirs + 1e-4, (m, n, k, ours, theirs)
    bias = torch.randn(264, device="cuda", dtype=torch.bfloat16)
    a, b = fp8(130, 512, kinds[0], "cuda"), fp8(264, 512, kinds[1], "cuda").t()
    sa, sb = scale("vector", 130, "cuda", True), scale("vector", 264, "cuda", False)
    out = cg.scaled_mm(a, b, sa, sb, bias=bias, use_fast_accum=True)
    check_scaled(out, a, b, sa, sb, bias, torch.bfloat16, f"fast {config} bias")
