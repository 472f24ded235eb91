"""The SwiGLU element-wise ops (gemm.swiglu / gemm.swiglu_backward) and the gated MLP path:
nn.GatedMLP, replace_linear(fuse_activations=True) on Llama-style blocks (root or nested), the
fused autograd function against float64 autograd of the block as written, and its fallbacks.
On the CPU the fused path runs through the reference ops (dropin.ROUTE_CPU)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import cutorch_gemm as cg
from cutorch_gemm import dropin
from cutorch_gemm import nn as cgnn
from conftest import DEVICES, check, dtype_id

DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64]


@pytest.fixture
def route_cpu(monkeypatch):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)


class LlamaLikeMLP(torch.nn.Module):
    """Written like transformers' LlamaMLP (not our code's shape): config-free copy."""

    def __init__(self, hidden, inter, bias=False, dtype=None, device=None):
        super().__init__()
        kw = dict(bias=bias, dtype=dtype, device=device)
        self.hidden_size, self.intermediate_size = hidden, inter
        self.gate_proj = torch.nn.Linear(hidden, inter, **kw)
        self.up_proj = torch.nn.Linear(hidden, inter, **kw)
        self.down_proj = torch.nn.Linear(inter, hidden, **kw)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def ref_swiglu(gu64):
    f = gu64.shape[-1] // 2
    return F.silu(gu64[..., :f]) * gu64[..., f:]


# ---- the element-wise ops -------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(7, 26), (65, 2 * 129), (3, 5, 16), (1, 2), (0, 8), (4, 0), (2 * 1000,)],
                         ids=str)
def test_swiglu_forward_and_backward(device, dtype, shape):
    gu = (torch.randn(shape, device=device, dtype=torch.float64) * 3).to(dtype)
    out = cg.swiglu(gu)
    ref = ref_swiglu(gu.double())
    check(out, ref, dtype, what="swiglu")
    # backward against float64 autograd of the reference
    grad = torch.randn(ref.shape, device=device, dtype=torch.float64).to(dtype)
    g64 = gu.double().requires_grad_()
    ref_swiglu(g64).backward(grad.double())
    dgu = torch.ops.gemm.swiglu_backward(grad, gu)
    check(dgu, g64.grad, dtype, what="swiglu_backward")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
def test_swiglu_strided_inputs_and_autograd(device, dtype):
    """A row-sliced [gate | up] (row stride wider than 2F), an odd F (no 16-byte vectors), a
    transposed grad; and the op differentiates through autograd."""
    base = torch.randn(9, 40, device=device, dtype=dtype)
    gu = base[:, 3:3 + 2 * 13]                       # row stride 40, F = 13
    check(cg.swiglu(gu), ref_swiglu(gu.double()), dtype, what="sliced")
    grad = torch.randn(13, 9, device=device, dtype=dtype).t()
    g64 = gu.double().requires_grad_()
    ref_swiglu(g64).backward(grad.double())
    check(torch.ops.gemm.swiglu_backward(grad, gu), g64.grad, dtype, what="strided backward")
    leaf = gu.detach().clone().requires_grad_()
    cg.swiglu(leaf).backward(grad)
    check(leaf.grad, g64.grad, dtype, what="autograd")


def test_swiglu_gradcheck():
    gu = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(cg.swiglu, (gu,))


@pytest.mark.parametrize("device", DEVICES)
def test_swiglu_bad_input(device):
    with pytest.raises(ValueError, match="gate_up's last dimension must be even"):
        cg.swiglu(torch.randn(4, 7, device=device))
    with pytest.raises(TypeError, match="gate_up has dtype"):
        cg.swiglu(torch.ones(4, 8, device=device, dtype=torch.int32))
    with pytest.raises(ValueError, match="at least one dimension"):
        cg.swiglu(torch.tensor(1.0, device=device))
    gu = torch.randn(4, 8, device=device)
    with pytest.raises(ValueError, match=r"grad must have shape \(4, 4\)"):
        torch.ops.gemm.swiglu_backward(torch.randn(4, 8, device=device), gu)
    with pytest.raises(TypeError, match="grad has dtype"):
        torch.ops.gemm.swiglu_backward(torch.randn(4, 4, device=device, dtype=torch.float64), gu)


def test_swiglu_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        gu = torch.empty(3, 5, 8)
        assert tuple(cg.swiglu(gu).shape) == (3, 5, 4)
        assert tuple(torch.ops.gemm.swiglu_backward(torch.empty(3, 5, 4), gu).shape) == (3, 5, 8)
        with pytest.raises(ValueError, match="must be even"):
            cg.swiglu(torch.empty(3, 5))


def test_swiglu_opcheck():
    gu = torch.randn(6, 10, dtype=torch.float32, requires_grad=True)
    torch.library.opcheck(torch.ops.gemm.swiglu.default, (gu,))
    torch.library.opcheck(torch.ops.gemm.swiglu_backward.default, (torch.randn(6, 5), gu.detach()))


# ---- replace_linear / GatedMLP structure ----------------------------------------------------

def test_replace_linear_converts_gated_blocks_in_place():
    torch.manual_seed(0)
    root = LlamaLikeMLP(8, 12)
    params = {n: p for n, p in root.named_parameters()}
    keys = list(root.state_dict())
    assert cg.nn.replace_linear(root, fuse_activations=True) == 3
    assert isinstance(root, LlamaLikeMLP) and isinstance(root, cgnn._GatedMLPMixin)
    assert list(root.state_dict()) == keys
    assert all(p is params[n] for n, p in root.named_parameters())  # same Parameter objects
    assert cgnn._packed(root.gate_proj.weight, root.up_proj.weight) is not None
    assert all(isinstance(getattr(root, n), cg.nn.Linear) for n in ("gate_proj", "up_proj", "down_proj"))
    # nested, with a filter: only the included block converts; plain Linears still count
    model = torch.nn.ModuleDict({"a": LlamaLikeMLP(8, 12), "b": LlamaLikeMLP(8, 12), "head": torch.nn.Linear(8, 2)})
    n = cg.nn.replace_linear(model, include=lambda name, m: not name.startswith("b."), fuse_activations=True)
    assert n == 3 + 1
    assert isinstance(model["a"], cgnn._GatedMLPMixin) and not isinstance(model["b"], cgnn._GatedMLPMixin)
    # without fuse_activations only the Linears are swapped
    plain = LlamaLikeMLP(8, 12)
    assert cg.nn.replace_linear(plain) == 3 and not isinstance(plain, cgnn._GatedMLPMixin)
    # a block that is not gated (other act) is left alone
    other = LlamaLikeMLP(8, 12)
    other.act_fn = torch.nn.GELU()
    assert cg.nn.replace_linear(other, fuse_activations=True) == 3 and not isinstance(other, cgnn._GatedMLPMixin)
    # deepcopy clones each Parameter on its own: the copy is packed again at its first forward
    clone = copy.deepcopy(root)
    dropin.ROUTE_CPU, saved = True, dropin.ROUTE_CPU
    try:
        x = torch.randn(3, 8)
        torch.testing.assert_close(clone(x), root(x), rtol=1e-5, atol=1e-5)
    finally:
        dropin.ROUTE_CPU = saved
    assert cgnn._packed(clone.gate_proj.weight, clone.up_proj.weight) is not None
    assert clone.gate_proj.weight.data_ptr() != root.gate_proj.weight.data_ptr()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xshape", [(5, 8), (2, 3, 8), (1, 8), (0, 8)], ids=str)
def test_fused_path_matches_float64_autograd(route_cpu, monkeypatch, bias, xshape):
    """float32 on the CPU through the reference ops: output and every gradient against the block
    as written in float64; the fused function must actually run."""
    torch.manual_seed(1)
    stock = LlamaLikeMLP(8, 12, bias=bias)
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours, fuse_activations=True)
    calls = []
    real = cgnn._GatedMLPFunction.apply
    monkeypatch.setattr(cgnn._GatedMLPFunction, "apply", lambda *a: calls.append(1) or real(*a))
    x = torch.randn(xshape, requires_grad=True)
    dy = torch.randn(*xshape[:-1], 8)
    out = ours(x)
    out.backward(dy)
    assert calls, "the fused path did not run"
    ref_model = copy.deepcopy(stock).double()
    x64 = x.detach().double().requires_grad_()
    ref = ref_model(x64)
    ref.backward(dy.double())
    check(out, ref, torch.float32, contiguous=False, what="y")
    check(x.grad, x64.grad, torch.float32, contiguous=False, what="dx")
    for (name, p), (_, p64) in zip(ours.named_parameters(), ref_model.named_parameters()):
        check(p.grad, p64.grad, torch.float32, contiguous=False, what=f"d{name}")


def test_fused_function_gradcheck(route_cpu):
    torch.manual_seed(2)
    m = cg.nn.GatedMLP(6, 5, bias=True, dtype=torch.float64)
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    w = (m.gate_proj.weight, m.up_proj.weight, m.down_proj.weight, m.gate_proj.bias, m.up_proj.bias, m.down_proj.bias)
    assert torch.autograd.gradcheck(lambda x_, *ps: cgnn._GatedMLPFunction.apply(x_, *ps), (x, *w))
    # float64 bias gradients are float64 sums: exact against autograd of the block as written
    x = torch.randn(300, 6, dtype=torch.float64) * 1e3
    for p in w:
        p.grad = None
    cgnn._GatedMLPFunction.apply(x, *w).sum().backward()
    got = [p.grad.clone() for p in w[3:]]
    for p in w:
        p.grad = None
    m._cg_unfused_forward(x).sum().backward()
    for g, p in zip(got, w[3:]):
        torch.testing.assert_close(g, p.grad, rtol=1e-12, atol=1e-9)


def test_fallbacks_give_the_blocks_result(route_cpu):
    """Reassigned (unpacked) parameters are packed again; autocast and mixed dtypes run the block
    as written, with the same result."""
    torch.manual_seed(3)
    stock = LlamaLikeMLP(8, 12)
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours, fuse_activations=True)
    x = torch.randn(4, 8)
    torch.testing.assert_close(ours(x), stock(x), rtol=1e-5, atol=1e-5)
    ours.up_proj.weight = torch.nn.Parameter(ours.up_proj.weight.detach().clone())  # packing broken
    up = ours.up_proj.weight
    torch.testing.assert_close(ours(x), stock(x), rtol=1e-5, atol=1e-5)     # ... and restored
    assert ours.up_proj.weight is up and cgnn._packed(ours.gate_proj.weight, up) is not None
    ours.up_proj.weight = torch.nn.Parameter(up.detach().double())          # a dtype apart: not packed
    assert cgnn._gated_fused(x, ours.gate_proj, ours.up_proj, ours.down_proj) is None
    ours.up_proj.weight = up
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert cgnn._gated_fused(x, ours.gate_proj, ours.up_proj, ours.down_proj) is None
        assert ours(x).dtype == torch.bfloat16


def test_shipped_cpu_routing_falls_back():
    stock = LlamaLikeMLP(8, 12)
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours, fuse_activations=True)
    x = torch.randn(3, 8)
    assert cgnn._gated_fused(x, ours.gate_proj, ours.up_proj, ours.down_proj) is None
    torch.testing.assert_close(ours(x), stock(x))


def test_gated_mlp_module_state_dict_and_compile(route_cpu):
    m = cg.nn.GatedMLP(8, 12)
    stock = LlamaLikeMLP(8, 12)
    m.load_state_dict(stock.state_dict())          # same keys and shapes, loads in place
    assert cgnn._packed(m.gate_proj.weight, m.up_proj.weight) is not None
    x = torch.randn(5, 8)
    torch.testing.assert_close(m(x), stock(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), m(x))


# ---- on the GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=dtype_id)
@pytest.mark.parametrize("tokens,hidden,inter", [(64, 128, 96), (7, 64, 40), (129, 72, 13), (1, 64, 64), (0, 64, 32)],
                         ids=str)
@pytest.mark.parametrize("bias", [False, True])
def test_fused_path_cuda(monkeypatch, dtype, tokens, hidden, inter, bias):
    torch.manual_seed(4)
    stock = LlamaLikeMLP(hidden, inter, bias=bias, device="cuda", dtype=dtype)
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours, fuse_activations=True)
    calls = []
    real = cgnn._GatedMLPFunction.apply
    monkeypatch.setattr(cgnn._GatedMLPFunction, "apply", lambda *a: calls.append(1) or real(*a))
    x = torch.randn(tokens, hidden, device="cuda", dtype=dtype, requires_grad=True)
    dy = torch.randn(tokens, hidden, device="cuda", dtype=dtype)
    out = ours(x)
    out.backward(dy)
    assert calls
    ref_model = copy.deepcopy(stock).double()
    x64 = x.detach().double().requires_grad_()
    ref = ref_model(x64)
    ref.backward(dy.double())
    # two GEMMs and a rounding of [gate | up] and h in between: the bound of a 16-bit output, x4
    tol = {torch.bfloat16: 8e-2, torch.float16: 1.6e-2, torch.float32: 2e-4}[dtype]

    def close(a, b, what):
        a, b = a.detach().double().cpu(), b.detach().double().cpu()
        assert torch.isfinite(a).all(), what
        if b.numel():
            assert float((a - b).norm() / b.norm().clamp_min(1e-30)) < tol, what
    close(out, ref, "y")
    close(x.grad, x64.grad, "dx")
    for (name, p), (_, p64) in zip(ours.named_parameters(), ref_model.named_parameters()):
        close(p.grad, p64.grad, f"d{name}")
