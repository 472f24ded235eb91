"""Drop-in use: matmul with torch.matmul's semantics, linear / nn.Linear / replace_linear,
enable(), autocast. On the CPU the routing runs through the reference ops (dropin.ROUTE_CPU)
so every reshape/broadcast path is checked against torch.matmul; the fallbacks are checked as
they ship (ROUTE_CPU off)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import cutorch_gemm as cg
from cutorch_gemm import dropin
from conftest import DEVICES, GemmOpLog  # "cpu", and "cuda" marked gpu (skipped without one)

MATMUL_SHAPES = [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((4, 5), (5, 3)),
    ((2, 4, 5), (5, 3)), ((2, 4, 5), (5,)), ((5,), (2, 5, 3)), ((2, 4, 5), (2, 5, 3)),
    ((1, 4, 5), (3, 5, 2)), ((3, 1, 4, 5), (2, 5, 6)), ((2, 3, 4, 5), (3, 5, 2)),
    ((0, 4, 5), (5, 3)), ((2, 0, 5), (2, 5, 3)), ((2, 4, 0), (2, 0, 3)), ((7, 1, 9), (9, 1)),
]


@pytest.fixture
def route_cpu(monkeypatch):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matmul_semantics(route_cpu, shapes, dtype):
    a = torch.randn(*shapes[0], dtype=dtype)
    b = torch.randn(*shapes[1], dtype=dtype)
    ref = torch.matmul(a.double(), b.double())
    out = cg.matmul(a, b)
    assert out.shape == ref.shape and out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


def test_matmul_transposed_and_expanded_views(route_cpu):
    a = torch.randn(6, 5).t()                       # column-major view
    b = torch.randn(3, 1, 6, 4).expand(3, 2, 6, 4)  # stride-0 batch
    torch.testing.assert_close(cg.matmul(a.unsqueeze(0), b), torch.matmul(a.unsqueeze(0), b))


@pytest.mark.parametrize("a,b", [
    (torch.randint(0, 5, (3, 4)), torch.randint(0, 5, (4, 2))),           # integers
    (torch.randn(3, 4, dtype=torch.complex64), torch.randn(4, 2, dtype=torch.complex64)),
    (torch.randn(3, 4), torch.randn(4, 2)),                               # CPU: PyTorch
])
def test_matmul_falls_back_exactly(a, b):
    assert dropin.route_matmul(a, b).startswith("torch")
    assert torch.equal(cg.matmul(a, b), torch.matmul(a, b))


def test_matmul_mixed_dtypes_raise_like_torch(route_cpu):
    a, b = torch.randn(3, 4), torch.randn(4, 2, dtype=torch.float64)
    assert dropin.route_matmul(a, b).startswith("torch")
    with pytest.raises(RuntimeError):
        torch.matmul(a, b)
    with pytest.raises(RuntimeError):
        cg.matmul(a, b)


def test_matmul_errors_like_torch(route_cpu):
    with pytest.raises(RuntimeError):
        torch.matmul(torch.randn(3, 4), torch.randn(5, 2))
    with pytest.raises((RuntimeError, ValueError)):
        cg.matmul(torch.randn(3, 4), torch.randn(5, 2))


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("xshape", [(7,), (3, 7), (2, 3, 7), (0, 7)])
def test_linear(route_cpu, activation, xshape):
    x, w, bias = torch.randn(*xshape), torch.randn(5, 7), torch.randn(5)
    act = dropin._ACT_FN[activation]
    torch.testing.assert_close(cg.linear(x, w, bias, activation), act(F.linear(x, w, bias)),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cg.linear(x, w), F.linear(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias_shape", [(1,), ()])
@pytest.mark.parametrize("n", [5, 1, 0])
def test_linear_broadcast_bias_like_torch(route_cpu, bias_shape, n):
    """F.linear broadcasts a bias of shape (1,) or () over N; cutorch_gemm.linear gives the same (it raised
    gemm's bias-shape error for (1,)), and its route says why it handed the call to PyTorch."""
    x, w = torch.randn(3, 7, requires_grad=True), torch.randn(n, 7)
    bias = torch.randn(bias_shape, requires_grad=True)
    ours, ref = cg.linear(x, w, bias), F.linear(x, w, bias)
    torch.testing.assert_close(ours, ref)
    g = torch.randn_like(ref)
    torch.testing.assert_close(torch.autograd.grad(ours, (x, bias), g), torch.autograd.grad(ref, (x, bias), g))
    if n != 1:  # (N = 1: a (1,) bias is (N,), which gemm takes)
        assert dropin.route_linear(x, w, bias).startswith("torch: bias of shape")


@pytest.mark.parametrize("device", DEVICES)
def test_linear_fuses_the_activation_only_when_autograd_does_not_record(route_cpu, device):
    x = torch.randn(5, 8, device=device)
    w = torch.randn(6, 8, device=device, requires_grad=True)
    b = torch.randn(6, device=device, requires_grad=True)
    with GemmOpLog() as log:
        with torch.no_grad():
            fused = cg.linear(x, w, b, activation="gelu")
        y = cg.linear(x, w, b, activation="gelu")
    seen = [k.get("activation", "none") for name, k in log.calls if name == "gemm"]
    assert seen == ["gelu", "none"], log.calls
    assert type(y.grad_fn).__name__ == "GeluBackward0", y.grad_fn  # PyTorch's activation on the GEMM output
    ref = F.gelu(F.linear(x, w, b))
    torch.testing.assert_close(fused, ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    gy = torch.randn_like(y)
    got = torch.autograd.grad(y, (w, b), gy)
    want = torch.autograd.grad(ref, (w, b), gy)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-5)


def test_nn_linear_state_dict_compatible(route_cpu):
    ref = torch.nn.Linear(7, 5)
    ours = cg.nn.Linear(7, 5)
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(4, 7)
    torch.testing.assert_close(ours(x), ref(x))
    ref.load_state_dict(cg.nn.Linear(7, 5, bias=True, activation="relu").state_dict())
    nobias = cg.nn.Linear(7, 5, bias=False)
    assert nobias.bias is None and list(nobias.state_dict()) == ["weight"]


def test_from_linear_shares_parameters(route_cpu):
    m = torch.nn.Linear(4, 3)
    ours = cg.nn.Linear.from_linear(m, activation="silu")
    assert ours.weight is m.weight and ours.bias is m.bias
    x = torch.randn(2, 4)
    torch.testing.assert_close(ours(x), F.silu(m(x)))


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(approximate="tanh"),
                               torch.nn.Linear(16, 16), torch.nn.ReLU(),
                               torch.nn.Sequential(torch.nn.Linear(16, 4)))


def test_replace_linear_counts_and_filters(route_cpu):
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    assert cg.nn.replace_linear(model) == 3
    assert cg.nn.replace_linear(model) == 0  # already replaced
    x = torch.randn(5, 8)
    torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-5)
    assert cg.nn.replace_linear(_mlp(), include=["0", "4.0"]) == 2
    assert cg.nn.replace_linear(_mlp(), include=lambda name, m: m.out_features == 16) == 2


def test_replace_linear_fuses_activations(route_cpu):
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    assert cg.nn.replace_linear(model, fuse_activations=True) == 3
    assert isinstance(model[1], torch.nn.Identity) and model[0].activation == "gelu_tanh"
    assert isinstance(model[3], torch.nn.Identity) and model[2].activation == "relu"
    x = torch.randn(5, 8)
    torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-5)
    # gradients through the fused model match the stock one
    model(x).sum().backward()
    ref(x).sum().backward()
    torch.testing.assert_close(model[0].weight.grad, ref[0].weight.grad, rtol=1e-4, atol=1e-5)


def test_enable_routes_and_restores(route_cpu):
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with GemmOpLog() as log:
        with cg.enable():
            y = a @ b
            z = torch.mm(a, b)
            w = torch.matmul(a, b)
        assert log.names == ["mm"] * 3, log.names
        for t in (y, z, w):
            torch.testing.assert_close(t, a @ b)
        _ = a @ b  # outside: PyTorch again
        assert len(log.calls) == 3
        with pytest.raises(ZeroDivisionError):
            with cg.enable():
                raise ZeroDivisionError
        _ = a @ b
        assert len(log.calls) == 3


def test_enable_nested_and_decorator(route_cpu):
    a, b = torch.randn(3, 4), torch.randn(4, 5)

    @cg.enable()
    def f(x, y):
        with cg.enable():
            return F.linear(x, y.t()) + torch.addmm(torch.randn(5), x, y)

    out = f(a, b)
    assert out.shape == (3, 5)


# torch.addmm's input broadcast to (M, N), with the beta it is scaled by: (N,) at beta 1 is our bias; every other
# form is c as a stride-0 view; beta 0 ignores the input (NaN in it does not propagate); (3, 6) and (4, 6, 1) do
# not broadcast (PyTorch's own error).
ADDMM_INPUTS = [((6,), 1.0), ((6,), 0.5), ((1, 6), 1.0), ((4, 1), 2.0), ((), -1.0), ((1, 1), 0.0), ((4, 6), 0.25),
                ((3, 6), 1.0), ((4, 6, 1), 1.0)]


@pytest.mark.parametrize("device", [pytest.param("cpu", id="cpu-route_cpu")] + [
    pytest.param("cuda", marks=d.marks, id="cuda") for d in DEVICES[1:]])
@pytest.mark.parametrize("inp_shape,beta", ADDMM_INPUTS, ids=str)
def test_enable_addmm_broadcast_input(monkeypatch, device, inp_shape, beta):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    calls = []
    real = cg.ops.gemm
    monkeypatch.setattr(cg.ops, "gemm", lambda *x, **k: calls.append(k) or real(*x, **k))
    dt = torch.float64
    a = torch.randn(4, 5, dtype=dt, device=device, requires_grad=True)
    b = torch.randn(6, 5, dtype=dt, device=device).t().requires_grad_()
    inp = torch.randn(inp_shape, dtype=dt, device=device)
    if beta == 0:
        inp[...] = float("nan")
    inp.requires_grad_()
    try:
        ref = torch.addmm(inp, a, b, beta=beta, alpha=1.5)
    except RuntimeError:
        with cg.enable(), pytest.raises(RuntimeError):
            torch.addmm(inp, a, b, beta=beta, alpha=1.5)
        assert not calls, "a shape PyTorch refuses must not reach our ops"
        return
    with cg.enable():
        out = torch.addmm(inp, a, b, beta=beta, alpha=1.5)
    assert len(calls) == 1, "the broadcast input runs on gemm"
    assert ("bias" in calls[0]) == (inp_shape == (6,) and beta == 1.0)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    g = torch.randn_like(ref)
    ref_grads = torch.autograd.grad(ref, (inp, a, b), g)
    grads = torch.autograd.grad(out, (inp, a, b), g)
    for name, gr, gref in zip(("input", "a", "b"), grads, ref_grads):
        assert gr.shape == gref.shape, name
        torch.testing.assert_close(gr, gref, rtol=1e-10, atol=1e-10, msg=lambda m, n=name: f"grad of {n}: {m}")


@pytest.mark.parametrize("case", ["cpu_int", "complex", "requires_grad", "noncontig_batch", "empty_batch"])
def test_enable_matches_pytorch_on_edge_inputs(case):
    if case == "cpu_int":
        a, b = torch.randint(0, 9, (3, 4)), torch.randint(0, 9, (4, 2))
    elif case == "complex":
        a, b = torch.randn(3, 4, dtype=torch.complex64), torch.randn(4, 2, dtype=torch.complex64)
    elif case == "requires_grad":
        a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2)
    elif case == "noncontig_batch":
        a, b = torch.randn(4, 3, 5).transpose(0, 1)[:, ::2], torch.randn(3, 5, 2)[:, :, :]
    else:
        a, b = torch.randn(0, 3, 4), torch.randn(0, 4, 2)
    ref = torch.matmul(a, b)
    with cg.enable():
        out = torch.matmul(a, b)
    assert torch.equal(out, ref)


# Every routed function on the edge inputs, as shipped and with the CPU routing on (where the
# float cases really go through our ops): the same outcome as PyTorch (values or exception
# type), the same dtype/shape/requires_grad, and the same gradients.
EDGE_FUNCS = {   # name: (rank of a, rank of b, fn(a, b, c)), c a (N,) bias
    "matmul": (3, 3, lambda a, b, c: torch.matmul(a, b)),
    "matmul_fold": (3, 2, lambda a, b, c: torch.matmul(a, b)),
    "operator": (3, 3, lambda a, b, c: a @ b),
    "mm": (2, 2, lambda a, b, c: torch.mm(a, b)),
    "Tensor.bmm": (3, 3, lambda a, b, c: a.bmm(b)),
    "addmm": (2, 2, lambda a, b, c: torch.addmm(c, a, b)),
    "linear": (2, 2, lambda a, b, c: F.linear(a, b.t(), c)),
}
EDGE_CASES = ["int", "complex", "requires_grad", "noncontig_batch", "empty_batch"]


def edge_inputs(case, rank_a, rank_b, device):
    B, M, K, N = 3, 4, 5, 6

    def shape(rank, rows, cols, batch=B):
        return (batch,) * (rank - 2) + (rows, cols)
    if case == "int":
        return (torch.randint(-4, 5, shape(rank_a, M, K), device=device),
                torch.randint(-4, 5, shape(rank_b, K, N), device=device),
                torch.randint(-4, 5, (N,), device=device))
    if case == "complex":
        z = lambda *s: torch.randn(*s, dtype=torch.complex64, device=device)  # noqa: E731
        return z(*shape(rank_a, M, K)), z(*shape(rank_b, K, N)), z(N)
    if case == "requires_grad":
        r = lambda *s: torch.randn(*s, device=device, requires_grad=True)  # noqa: E731
        return r(*shape(rank_a, M, K)), r(*shape(rank_b, K, N)), r(N)
    if case == "noncontig_batch":   # permuted batch dims, a strided K, a column-major b
        a = torch.randn(M, B, 2 * K, device=device).transpose(0, 1)[..., ::2]
        b = torch.randn(N, B, K, device=device).permute(1, 2, 0)
        a, b = (a if rank_a == 3 else a[1]), (b if rank_b == 3 else b[2])
        assert not a.is_contiguous() and not b.is_contiguous()
        return a, b, torch.randn(2 * N, device=device)[::2]
    assert case == "empty_batch"    # B = 0 (M = 0 for the 2-D functions)
    return (torch.randn(*shape(rank_a, M, K, batch=0) if rank_a == 3 else (0, K), device=device),
            torch.randn(*shape(rank_b, K, N, batch=0) if rank_a == 3 == rank_b else (K, N), device=device),
            torch.randn(N, device=device))


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as exc:
        return None, type(exc)


@pytest.mark.parametrize("device,routing", [("cpu", "shipped"), ("cpu", "route_cpu")] + [
    pytest.param("cuda", "shipped", marks=d.marks, id="cuda-shipped") for d in DEVICES[1:]])
@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("func", list(EDGE_FUNCS))
def test_enable_edge_inputs_every_function(monkeypatch, device, routing, case, func):
    if routing == "route_cpu":
        monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    rank_a, rank_b, fn = EDGE_FUNCS[func]
    a, b, c = edge_inputs(case, rank_a, rank_b, device)
    ref, ref_exc = _outcome(fn, a, b, c)
    with GemmOpLog() as log, cg.enable():
        out, exc = _outcome(fn, a, b, c)
    assert exc is ref_exc, f"PyTorch: {ref_exc}, under enable(): {exc}"
    ours_ran = a.dtype.is_floating_point and (device != "cpu" or routing == "route_cpu")
    assert bool(log.calls) == ours_ran, f"our ops called: {log.names}"
    if ref is None:
        return
    assert (out.shape, out.dtype, out.requires_grad) == (ref.shape, ref.dtype, ref.requires_grad)
    if not ours_ran:
        assert torch.equal(out, ref), "a fallback must give PyTorch's exact result"
    else:
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    if ref.requires_grad:
        leaves = [t for t in (a, b, c) if t.requires_grad]
        g = torch.randn_like(ref)
        ref_grads = torch.autograd.grad(ref, leaves, g, allow_unused=True, materialize_grads=True)
        with cg.enable():   # the backward runs our ops' own autograd either way
            grads = torch.autograd.grad(out, leaves, g, allow_unused=True, materialize_grads=True)
        for i, (gr, gref) in enumerate(zip(grads, ref_grads)):
            torch.testing.assert_close(gr, gref, rtol=1e-4, atol=1e-4, msg=lambda m, i=i: f"grad {i}: {m}")


def test_autocast_casts_like_matmul():
    a, b, bias = torch.randn(6, 8), torch.randn(8, 4), torch.randn(4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert cg.mm(a, b).dtype == torch.matmul(a, b).dtype == torch.bfloat16
        y = cg.gemm(a, b, bias=bias, activation="gelu")
        assert y.dtype == torch.bfloat16
        assert cg.bmm(a[None], b[None]).dtype == torch.bfloat16
    ref = F.gelu(a.double() @ b.double() + bias.double())
    assert ((y.double() - ref).norm() / ref.norm()) < 2e-2


def test_autocast_training_step_grads(route_cpu):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.SiLU(), torch.nn.Linear(8, 2))
    cg.nn.replace_linear(model, fuse_activations=True)
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(x).float().square().mean()
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_compiled_block_matches_eager(route_cpu):
    torch._dynamo.reset()
    block = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    cg.nn.replace_linear(block, fuse_activations=True)
    x = torch.randn(4, 8)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), block(x))
    with cg.enable():
        torch.testing.assert_close(torch.compile(lambda u, v: u @ v, fullgraph=True, backend="aot_eager")(x, x.t()),
                                   x @ x.t(), rtol=1e-5, atol=1e-5)


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmul_semantics_cuda(shapes, dtype):
    a = torch.randn(*shapes[0], dtype=dtype, device="cuda")
    b = torch.randn(*shapes[1], dtype=dtype, device="cuda")
    ref = torch.matmul(a.double(), b.double())
    out = cg.matmul(a, b)
    assert out.shape == ref.shape and out.dtype == dtype
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    if ref.numel():
        assert ((out.double() - ref).norm() / ref.norm().clamp_min(1e-12)) < tol


@pytest.mark.gpu
@gpu
def test_enable_and_autocast_cuda():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32)).cuda()
    ref = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32)).cuda()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(16, 64, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        expect = ref(x)
        with cg.enable():
            got = model(x)
    assert got.dtype == expect.dtype == torch.bfloat16
    assert ((got.float() - expect.float()).norm() / expect.float().norm()) < 2e-2
    assert cg.nn.replace_linear(model, fuse_activations=True) == 2
    with torch.autocast("cuda", dtype=torch.bfloat16):
        got = model(x)
    assert ((got.float() - expect.float()).norm() / expect.float().norm()) < 2e-2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_operands_fall_back_and_raw_ops_say_why(monkeypatch, device, layout):
    """Sparse operands: matmul / linear / enable() give PyTorch's result (they failed in our ops'
    dispatcher before), and the raw ops raise a TypeError naming the argument."""
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    to_sparse = (lambda t: t.to_sparse()) if layout == "coo" else (lambda t: t.to_sparse_csr())
    a = torch.randn(4, 5, device=device)
    b = torch.randn(5, 3, device=device)
    sa = to_sparse(a)
    assert dropin.route_matmul(sa, b).startswith("torch:")
    torch.testing.assert_close(cg.matmul(sa, b), torch.matmul(sa, b))
    w = to_sparse(torch.randn(3, 5, device=device))
    torch.testing.assert_close(cg.linear(a, w), F.linear(a, w))
    with cg.enable():
        got = torch.matmul(sa, b)
    torch.testing.assert_close(got, a @ b)
    with pytest.raises(TypeError, match=r"gemm\.mm: a is a torch\.sparse_(coo|csr) tensor"):
        cg.mm(sa, b)
    with pytest.raises(TypeError, match=r"gemm\.gemm: b is a torch\.sparse"):
        cg.gemm(a, to_sparse(b))
