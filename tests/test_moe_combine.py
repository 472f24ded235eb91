"""gemm.moe_combine / moe_combine_backward (the MoE combine of nn.GroupedExperts) against a
float64 reference: every dtype, with and without weights, k = 1..8, odd and aligned widths,
empty inputs, out-of-range indices, gradients, bad input, opcheck."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import DEVICES, requires_cuda, gpu

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def sample(T, k, H, dtype, device, weights=True, idx_dtype=torch.int64):
    y = torch.randn(T * k, H, device=device).to(dtype)
    inv = torch.randperm(T * k, device=device).to(idx_dtype)
    w = torch.rand(T, k, device=device) if weights else None
    return y, inv, w


def reference(y, inv, w, k):
    """float64: out[t] = sum_j w[t, j] * y[inv[t * k + j]] (weights in fp32 as the op takes them)."""
    T = y.shape[0] // k
    rows = y.double()[inv.long()].reshape(T, k, -1)
    wt = torch.ones(T, k, dtype=torch.float64, device=y.device) if w is None else w.float().double()
    return (rows * wt.unsqueeze(-1)).sum(1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("T,k,H", [(13, 2, 64), (7, 8, 7), (5, 1, 129), (1, 3, 1), (33, 4, 2048)])
@pytest.mark.parametrize("weights", [True, False])
def test_combine_matches_reference(device, dtype, T, k, H, weights):
    y, inv, w = sample(T, k, H, dtype, device, weights)
    out = cg.ops.moe_combine(y, inv, w, k)
    assert out.shape == (T, H) and out.dtype == dtype
    ref = reference(y, inv, w, k)
    torch.testing.assert_close(out.double(), ref, rtol=TOL[dtype], atol=TOL[dtype] * max(1.0, float(ref.abs().max())))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("weights", [True, False])
def test_backward_matches_reference(device, dtype, weights):
    T, k, H = 11, 3, 40
    y, inv, w = sample(T, k, H, dtype, device, weights)
    y.requires_grad_()
    if w is not None:
        w.requires_grad_()
    out = cg.ops.moe_combine(y, inv, w, k)
    g = torch.randn_like(out)
    out.backward(g)
    y64 = y.detach().double().requires_grad_()
    w64 = None if w is None else w.detach().double().requires_grad_()
    reference(y64, inv, w64, k).backward(g.double())
    tol = TOL[dtype] * 4
    torch.testing.assert_close(y.grad.double(), y64.grad, rtol=tol, atol=tol)
    if w is not None:
        assert w.grad.dtype == w.dtype
        torch.testing.assert_close(w.grad.double(), w64.grad, rtol=tol, atol=tol * H ** 0.5)


@pytest.mark.parametrize("device", DEVICES)
def test_int32_indices_and_empty(device):
    y, inv, w = sample(6, 2, 16, torch.float32, device, idx_dtype=torch.int32)
    # fp32 output against the float64 reference: fp32's tolerance (float64's default flaked, 3.7e-5
    # relative on one element near zero with CUTORCH_TEST_SEED=584021285)
    tol = TOL[torch.float32]
    torch.testing.assert_close(cg.ops.moe_combine(y, inv, w, 2).double(), reference(y, inv, w, 2), rtol=tol, atol=tol)
    e = cg.ops.moe_combine(torch.empty(0, 16, device=device), torch.empty(0, dtype=torch.long, device=device), None, 2)
    assert e.shape == (0, 16)
    z = cg.ops.moe_combine(torch.empty(12, 0, device=device), inv, w, 2)
    assert z.shape == (6, 0)


@pytest.mark.parametrize("device", DEVICES)
def test_out_of_range_indices_contribute_nothing(device):
    """A broken permutation must not read or write out of bounds (compute-sanitizer runs this
    on the GPU machine): its slots add nothing, and their rows get no gradient."""
    T, k, H = 4, 2, 24
    y, inv, w = sample(T, k, H, torch.float32, device)
    bad = inv.clone()
    bad[1], bad[6] = -3, T * k + 100
    out = cg.ops.moe_combine(y, bad, w, k)
    keep = torch.ones(T * k, dtype=torch.bool, device=device)
    keep[1] = keep[6] = False
    ref = reference(y, inv, w * keep.reshape(T, k), k)
    torch.testing.assert_close(out.double(), ref)
    gy, gw = torch.ops.gemm.moe_combine_backward(torch.ones(T, H, device=device), y, bad, w, k)
    assert gw.shape == (T, k) and float(gw.reshape(-1)[1]) == 0.0 and float(gw.reshape(-1)[6]) == 0.0
    assert torch.isfinite(gy).all()


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input(device):
    y, inv, w = sample(4, 2, 8, torch.float32, device)
    with pytest.raises(ValueError, match="k .* must be >= 1"):
        cg.ops.moe_combine(y, inv, w, 0)
    with pytest.raises(ValueError, match="multiple of k=3"):
        cg.ops.moe_combine(y, inv, None, 3)
    with pytest.raises(ValueError, match="inv must be 1-D of length T \\* k = 8"):
        cg.ops.moe_combine(y, inv[:5], w, 2)
    with pytest.raises(TypeError, match="inv has dtype .*expected int64 or int32"):
        cg.ops.moe_combine(y, inv.float(), w, 2)
    with pytest.raises(ValueError, match="weights must have shape \\(T=4, k=2\\)"):
        cg.ops.moe_combine(y, inv, w.t(), 2)
    with pytest.raises(TypeError, match="y has dtype .*expected float16"):
        cg.ops.moe_combine(y.int(), inv, w, 2)
    with pytest.raises(ValueError, match="grad must have shape \\(T=4, H=8\\)"):
        torch.ops.gemm.moe_combine_backward(torch.ones(4, 9, device=device), y, inv, w, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    y, inv, w = sample(5, 2, 12, torch.float32, device)
    torch.library.opcheck(torch.ops.gemm.moe_combine.default, (y.requires_grad_(), inv, w.requires_grad_(), 2))
    torch.library.opcheck(torch.ops.gemm.moe_combine_backward.default,
                          (torch.randn(5, 12, device=device), y.detach(), inv, w.detach(), 2))


@requires_cuda
@gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gpu_matches_cpu_definition(dtype):
    """The kernel against the CPU op (same definition, fp32 / fp64 sums), misaligned views too."""
    T, k, H = 37, 8, 520
    y, inv, w = sample(T, k, H + 1, dtype, "cpu")
    y = y[:, 1:]  # rows start 2 / 4 / 8 bytes past 16-byte alignment: the element-wise path
    for yy in (y, y.contiguous()):
        out = cg.ops.moe_combine(yy.cuda(), inv.cuda(), w.cuda(), k).cpu()
        torch.testing.assert_close(out, cg.ops.moe_combine(yy, inv, w, k), rtol=TOL[dtype], atol=TOL[dtype])
        g = torch.randn(T, H).to(dtype)
        gy, gw = torch.ops.gemm.moe_combine_backward(g.cuda(), yy.cuda(), inv.cuda(), w.cuda(), k)
        ry, rw = torch.ops.gemm.moe_combine_backward(g, yy, inv, w, k)
        torch.testing.assert_close(gy.cpu(), ry, rtol=TOL[dtype], atol=TOL[dtype])
        torch.testing.assert_close(gw.cpu(), rw, rtol=1e-4, atol=TOL[dtype] * H ** 0.5 * 4)
