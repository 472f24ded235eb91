"""cutorch_gemm.nn.GroupedExperts against a float64 loop over experts: forward, gradients,
empty experts, bad input, torch.compile."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import cutorch_gemm as cg
from conftest import DEVICES  # "cpu", and "cuda" marked gpu (skipped without one)



def reference(layer, x, idx, w):
    x, wg, wd, w = x.double(), layer.w_gate_up.double(), layer.w_down.double(), w.double()
    Fi = layer.intermediate_size
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(idx.shape[1]):
            e = int(idx[t, j])
            h = x[t] @ wg[e]
            out[t] += w[t, j] * ((F.silu(h[:Fi]) * h[Fi:]) @ wd[e])
    return out


def make(device, T=13, E=5, H=16, Fi=24, k=2, dtype=torch.float32, skew=False):
    layer = cg.nn.GroupedExperts(E, H, Fi, device=device, dtype=dtype)
    x = torch.randn(T, H, device=device, dtype=dtype)
    if skew:  # experts 1 and 3 get nothing
        idx = torch.tensor([[0, 2], [4, 2], [0, 4]] * (T // 3) + [[2, 0]] * (T % 3), device=device)[:, :k]
    else:
        idx = torch.stack([torch.randperm(E, device=device)[:k] for _ in range(T)])
    w = torch.softmax(torch.randn(T, k, device=device), -1).to(dtype)
    return layer, x, idx, w


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("skew", [False, True])
def test_forward_matches_reference(device, skew):
    layer, x, idx, w = make(device, skew=skew)
    out = layer(x, idx, w)
    ref = reference(layer, x, idx, w)
    assert out.shape == x.shape
    torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_backward_matches_reference(device):
    layer, x, idx, w = make(device, skew=True)
    x.requires_grad_()
    w.requires_grad_()
    layer(x, idx, w).square().sum().backward()
    ref_layer = cg.nn.GroupedExperts(5, 16, 24, device=device, dtype=torch.float64)
    ref_layer.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    ref = reference(ref_layer, x64, idx, w64)
    ref.square().sum().backward()
    torch.testing.assert_close(x.grad.double(), x64.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad.double(), w64.grad, rtol=1e-4, atol=1e-5)
    # experts 1 and 3 routed nothing: zero gradient, not garbage
    assert torch.all(layer.w_gate_up.grad[[1, 3]] == 0) and torch.all(layer.w_down.grad[[1, 3]] == 0)
    wg_ref = torch.autograd.grad(reference(ref_layer, x64.detach(), idx, w64.detach()).square().sum(),
                                 ref_layer.w_gate_up)[0]
    torch.testing.assert_close(layer.w_gate_up.grad.double(), wg_ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_no_weights_sums_the_experts(device):
    """expert_weights=None: each token's k expert outputs summed unweighted (forward and x's grad)."""
    layer, x, idx, _ = make(device)
    ones = torch.ones(idx.shape, device=device, dtype=x.dtype)
    x.requires_grad_()
    out = layer(x, idx, None)
    torch.testing.assert_close(out.double(), reference(layer, x.detach(), idx, ones), rtol=1e-4, atol=1e-5)
    gx = torch.autograd.grad(out.square().sum(), x)[0]
    x2 = x.detach().clone().requires_grad_()
    gx_ref = torch.autograd.grad(layer(x2, idx, ones).square().sum(), x2)[0]
    torch.testing.assert_close(gx, gx_ref, rtol=1e-5, atol=1e-6)


def test_bad_input():
    layer, x, idx, w = make("cpu")
    with pytest.raises(ValueError, match="expert_idx"):
        layer(x, idx + 10, w)
    with pytest.raises(ValueError, match="expert_idx"):
        layer(x, idx.float(), w)
    with pytest.raises(ValueError, match="expert_weights"):
        layer(x, idx, w[:, :1])
    with pytest.raises(ValueError, match="x must have shape"):
        layer(x[:, :3], idx, w)
    with pytest.raises(ValueError, match="swiglu"):
        cg.nn.GroupedExperts(2, 4, 4, activation="gelu")


def test_compile_matches_eager():
    torch._dynamo.reset()
    layer, x, idx, w = make("cpu")
    layer.validate = False  # the range check reads values on the host: a graph break
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, idx, w), layer(x, idx, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_inference_takes_the_swiglu_op(device, dtype, monkeypatch):
    """Without autograd the up-projection is grouped_mm(activation="swiglu") (fused on Hopper);
    with autograd, grouped_mm then silu * up. Both match the float64 reference."""
    import cutorch_gemm.ops as ops
    layer, x, idx, w = make(device, skew=True, dtype=dtype)
    seen = []
    real = ops.grouped_mm

    def spy(*args, **kwargs):
        seen.append(kwargs.get("activation", "none"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ops, "grouped_mm", spy)
    with torch.no_grad():
        inference = layer(x, idx, w)
    assert seen == ["swiglu", "none"], seen
    seen.clear()
    x.requires_grad_()
    training = layer(x, idx, w)
    assert seen == ["none", "none"], seen
    ref = reference(layer, x.detach(), idx, w)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=3e-2, atol=3e-2)
    torch.testing.assert_close(inference.double(), ref.to(inference.device), **tol)
    torch.testing.assert_close(training.detach().double(), ref.to(training.device), **tol)
