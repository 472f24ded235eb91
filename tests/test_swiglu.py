"""grouped_mm with activation="swiglu": b's N is [gate | up], the result silu(gate) * up of width
N / 2 (MoE up-projections), for 2D x 3D (groups along M, empty and odd groups, rows past
offs[-1]) and 3D x 3D, with bias; shapes and errors, the fake kernel, and gradients of a, b and
bias against float64 autograd. Every device."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import DEVICES, check, dtype_id, offs_from_sizes

DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64]


def ref_swiglu_grouped(a, b, offs, bias):
    """float64 reference: z = a @ b[g] + bias[g] per group (zero rows past the last group), then
    silu(gate) * up."""
    a64, b64 = a.cpu().double(), b.cpu().double()  # differentiable: the grad test uses it too
    bias64 = None if bias is None else bias.cpu().double()
    if offs is None:
        z = a64 @ b64 + (0 if bias64 is None else bias64[:, None, :])
    else:
        z = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float64)
        start = 0
        for g, end in enumerate(offs.cpu().tolist()):
            z[start:end] = a64[start:end] @ b64[g] + (0 if bias64 is None else bias64[g])
            start = end
        # rows past offs[-1] are zero in z, hence in silu(gate) * up
    f = z.shape[-1] // 2
    return torch.nn.functional.silu(z[..., :f]) * z[..., f:]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("sizes", [(5, 0, 17, 1), (64, 64), (0, 0, 3)], ids=lambda s: "-".join(map(str, s)))
def test_swiglu_2d3d(device, dtype, sizes):
    k, f = 96, 72
    t = sum(sizes) + 3  # three rows past offs[-1]
    a = torch.randn(t, k, device=device, dtype=dtype)
    b = torch.randn(len(sizes), k, 2 * f, device=device, dtype=dtype) * k ** -0.5
    bias = torch.randn(len(sizes), 2 * f, device=device, dtype=dtype)
    offs = offs_from_sizes(sizes, device)
    for bi in (None, bias):
        out = cg.grouped_mm(a, b, offs, bias=bi, activation="swiglu")
        assert out.shape == (t, f)
        check(out, ref_swiglu_grouped(a, b, offs, bi), dtype, what=f"swiglu 2Dx3D {sizes}")
        assert torch.equal(out[-3:].cpu(), torch.zeros(3, f, dtype=dtype)), "rows past offs[-1] must be 0"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
def test_swiglu_3d3d_and_out_dtype(device, dtype):
    a = torch.randn(3, 33, 40, device=device, dtype=dtype)
    b = torch.randn(3, 40, 2 * 25, device=device, dtype=dtype)
    b_col = b.transpose(1, 2).contiguous().transpose(1, 2)  # MN-major weights: same values
    bias = torch.randn(3, 50, device=device, dtype=dtype)
    out_dtype = torch.float32 if dtype == torch.bfloat16 else None
    for bb in (b, b_col):
        out = cg.grouped_mm(a, bb, bias=bias, activation="swiglu", out_dtype=out_dtype)
        assert out.shape == (3, 33, 25) and out.dtype == (out_dtype or dtype)
        check(out, ref_swiglu_grouped(a, bb, None, bias), dtype, out_dtype, what="swiglu 3Dx3D")


@pytest.mark.parametrize("device", DEVICES)
def test_swiglu_errors_and_fake(device):
    a = torch.randn(10, 8, device=device)
    offs = offs_from_sizes([4, 6], device)
    with pytest.raises(ValueError, match="N must be even"):
        cg.grouped_mm(a, torch.randn(2, 8, 7, device=device), offs, activation="swiglu")
    with pytest.raises(ValueError, match="swiglu' needs 2D x 3D"):
        cg.grouped_mm(torch.randn(2, 5, 8, device=device), torch.randn(8, 10, device=device), offs,
                      activation="swiglu")
    with pytest.raises(ValueError, match=r"bias must have shape \(2, 12\)"):
        cg.grouped_mm(a, torch.randn(2, 8, 12, device=device), offs, bias=torch.randn(2, 6, device=device),
                      activation="swiglu")
    with pytest.raises(ValueError, match="unknown activation 'swish'.*swiglu"):
        cg.grouped_mm(a, torch.randn(2, 8, 12, device=device), offs, activation="swish")
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        out = torch.ops.gemm.grouped_mm(torch.empty(10, 8), torch.empty(2, 8, 12), torch.empty(2, dtype=torch.int32),
                                        activation="swiglu")
    assert out.shape == (10, 6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=dtype_id)
def test_swiglu_grads(device, dtype):
    sizes = (6, 0, 9)
    k, f = 24, 10
    t = sum(sizes) + 2
    a = torch.randn(t, k, device=device, dtype=dtype, requires_grad=True)
    b = torch.randn(len(sizes), k, 2 * f, device=device, dtype=dtype, requires_grad=True)
    bias = torch.randn(len(sizes), 2 * f, device=device, dtype=dtype, requires_grad=True)
    offs = offs_from_sizes(sizes, device)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="swiglu")
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (a, b, bias), g)
    leaves = [x.detach().cpu().double().requires_grad_(True) for x in (a, b, bias)]
    want = torch.autograd.grad(ref_swiglu_grouped(*leaves[:2], offs, leaves[2]), leaves, g.cpu().double())
    bound = 1e-10 if dtype == torch.float64 else 1e-4
    for name, x, r in zip(("a", "b", "bias"), got, want):
        assert x.shape == r.shape, name
        err = float((x.cpu().double() - r).norm() / r.norm())
        assert err < bound, f"swiglu grad of {name}: rel err {err:.2e}"
    torch.library.opcheck(torch.ops.gemm.grouped_mm, (a, b, offs, bias), {"activation": "swiglu"})


# --------------------------------------------------------------------------------------
# GPU: the SwiGLU fused into the sm90 kernel's epilogue
# --------------------------------------------------------------------------------------

SM90 = (torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 and cg._C.cuda_built()
        and cg._C.sm90_available())


@pytest.mark.gpu
@pytest.mark.skipif(not SM90, reason="the fused SwiGLU epilogue is an sm90 kernel variant")
@pytest.mark.parametrize("config", ["coop", "pingpong"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=dtype_id)
# (weights, F): F a multiple of the 128-column output tile, F not (the last tile's gate half
# reads into the up columns; those outputs are not stored), F odd (no pair stores; K-major
# weights only: a row-major (K, 2F) b needs 16-byte aligned rows for TMA).
# F = 20 MN-major: the up half starts 40 bytes into each row, which TMA cannot: unfused.
@pytest.mark.parametrize("weights,f", [("mn_major", 256), ("mn_major", 200), ("mn_major", 20), ("k_major", 256),
                                       ("k_major", 200), ("k_major", 67)], ids=lambda v: str(v))
def test_sm90_fused_swiglu(monkeypatch, config, weights, dtype, f):
    """Gate and up halves in one B tile; odd and empty groups, rows past offs[-1]; bias; fp32
    output."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    sizes, k = (130, 0, 1, 77, 256), 320
    t = sum(sizes) + 5
    a = torch.randn(t, k, device="cuda", dtype=dtype)
    w = torch.randn(len(sizes), k, 2 * f, device="cuda", dtype=dtype) * k ** -0.5  # (G, K, 2F): MN-major
    b = w if weights == "mn_major" else w.transpose(1, 2).contiguous().transpose(1, 2)
    bias = torch.randn(len(sizes), 2 * f, device="cuda", dtype=dtype)
    offs = offs_from_sizes(sizes, "cuda")
    e = cg.explain("grouped_mm", a, b, offs, bias=bias, activation="swiglu")
    fused = weights == "k_major" or f * a.element_size() % 16 == 0
    assert e.kernel == "sm90" and ("swiglu fused" if fused else "not 16-byte aligned") in e.reason, str(e)
    ref = ref_swiglu_grouped(a, b, offs, bias)
    for out_dtype in (None, torch.float32):
        torch.empty(t * f * 2, device="cuda", dtype=dtype).fill_(float("nan"))  # poison the allocator
        out = cg.grouped_mm(a, b, offs, bias=bias, activation="swiglu", out_dtype=out_dtype)
        assert out.shape == (t, f)
        check(out, ref, dtype, out_dtype, what=f"fused swiglu {config} {weights} F={f} out={out_dtype}")
        assert torch.equal(out[-5:].cpu(), torch.zeros(5, f, dtype=out.dtype))
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "sm80")
    assert "swiglu unfused" in cg.explain("grouped_mm", a, b, offs, bias=bias, activation="swiglu").reason
    unfused = cg.grouped_mm(a, b, offs, bias=bias, activation="swiglu")
    check(unfused, ref, dtype, what="unfused swiglu (sm80)")


@pytest.mark.gpu
@pytest.mark.skipif(not SM90, reason="the fused SwiGLU epilogue is an sm90 kernel variant")
def test_sm90_fused_swiglu_3d3d_and_grads(monkeypatch):
    a = torch.randn(3, 100, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(3, 64, 2 * 136, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    bias = torch.randn(3, 272, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    assert "swiglu fused" in cg.explain("grouped_mm", a, b, bias=bias, activation="swiglu").reason
    out = cg.grouped_mm(a, b, bias=bias, activation="swiglu")
    check(out, ref_swiglu_grouped(a, b, None, bias), torch.bfloat16, what="fused swiglu 3Dx3D")
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (a, b, bias), g)
    leaves = [x.detach().cpu().double().requires_grad_(True) for x in (a, b, bias)]
    want = torch.autograd.grad(ref_swiglu_grouped(*leaves[:2], None, leaves[2]), leaves, g.cpu().double())
    for name, x, r in zip(("a", "b", "bias"), got, want):
        err = float((x.cpu().double() - r).norm() / r.norm())
        assert err < 3e-2, f"fused swiglu grad of {name}: rel err {err:.2e}"
