"""The ways a recorded call reaches an op's autograd, and the autograd features around them.

Every op records C++ nodes in its Autograd kernel (csrc/torch/autograd_*.cpp), reached from the wrappers' C++
entry points (ops._FAST), from the wrappers through the op, and from raw `torch.ops.gemm.*` calls alike; a tensor
subclass, a torch function mode or jit.trace go through the op's Autograd kernel in the dispatcher. Every way must
give the same values, the same gradients (first and second order) as torch's own ops; and activation checkpointing
(reentrant, non-reentrant, selective), saved-tensor hooks (offload to the CPU), anomaly mode and
compiled autograd must work through them. Float64 references throughout.
"""
from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

import cutorch_gemm as cg
from conftest import DEVICES

pytestmark = pytest.mark.parametrize("device", DEVICES)

ACT_REF = {"none": lambda z: z, "relu": F.relu, "gelu": F.gelu, "silu": F.silu,
           "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}


def _leaves(device, m=7, k=13, n=5):
    """x (m, k), w (n, k) as an nn.Parameter (nn.Linear's layout), bias (n,): float64, fresh."""
    x = torch.randn(m, k, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(n, k, device=device, dtype=torch.float64))
    b = torch.randn(n, device=device, dtype=torch.float64, requires_grad=True)
    return x, w, b


def _loss(y):
    # Not linear in y: the upstream gradient differs per element, and a second derivative exists.
    return (y.sum(0) ** 2).sum() + (y * y.flip(0)).sum()


def _wrapper(x, w, b, act="gelu"):
    return _loss(cg.gemm(x, w.t(), bias=b, activation=act))


def _raw(x, w, b, act="gelu"):
    return _loss(torch.ops.gemm.gemm(x, w.t(), b, activation=act))


def _reference(x, w, b, act="gelu"):
    return _loss(ACT_REF[act](x @ w.t() + b))


def _grads(fn, leaves, **kw):
    return torch.autograd.grad(fn(*leaves, **kw), leaves)


def _assert_close(got, want, what):
    for i, (g, r) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-10, msg=lambda m: f"{what}, grad[{i}]: {m}")


@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "silu"])
def test_wrapper_and_raw_op_agree(device, act):
    leaves = _leaves(device)
    want = _grads(_reference, leaves, act=act)
    _assert_close(_grads(_wrapper, leaves, act=act), want, f"cg.gemm ({act})")
    _assert_close(_grads(_raw, leaves, act=act), want, f"torch.ops.gemm.gemm ({act})")


def test_graph_nodes(device):
    """mm / bmm / gemm (any activation) record their C++ nodes (csrc/torch/autograd_kernels.cpp), from the
    wrappers and from the raw ops alike. Same values."""
    x, w, b = _leaves(device)
    cases = [(lambda: cg.gemm(x, w.t(), bias=b), lambda: torch.ops.gemm.gemm(x, w.t(), b), "GemmBackward"),
             (lambda: cg.mm(x, w.t()), lambda: torch.ops.gemm.mm(x, w.t()), "MmBackward"),
             (lambda: cg.bmm(x[None], w.t()[None]), lambda: torch.ops.gemm.bmm(x[None], w.t()[None]), "BmmBackward"),
             (lambda: cg.gemm(x, w.t(), activation="silu"), lambda: torch.ops.gemm.gemm(x, w.t(), activation="silu"),
              "GemmBackward")]
    inv = torch.tensor([1, 0, 3, 2], device=device)
    wts = torch.rand(2, 2, device=device, requires_grad=True)
    f8 = torch.randn(8, 16, device=device).to(torch.float8_e4m3fn)
    sa = torch.ones((), device=device, requires_grad=True)
    one = torch.ones((), device=device)
    cases += [(lambda: cg.scaled_mm(f8, f8.t(), sa, one, out_dtype=torch.float32),
               lambda: torch.ops.gemm.scaled_mm(f8, f8.t(), sa, one, out_dtype=torch.float32), "ScaledMmBackward"),
              (lambda: cg.grouped_gemm([x, x[:3]], [w.t(), w.t()])[1],
               lambda: torch.ops.gemm.grouped_gemm([x, x[:3]], [w.t(), w.t()])[1], "GroupedGemmBackward"),
              (lambda: cg.swiglu(x[:, :10]), lambda: torch.ops.gemm.swiglu(x[:, :10]), "SwigluBackward"),
              (lambda: cg.moe_combine(x[:4], inv, wts, 2), lambda: torch.ops.gemm.moe_combine(x[:4], inv, wts, 2),
               "MoeCombineBackward")]
    for wrapped, raw, node in cases:
        y_wrap, y_raw = wrapped(), raw()
        assert y_wrap.grad_fn.name() == y_raw.grad_fn.name() == f"cutorch_gemm::{node}", (node, y_wrap.grad_fn)
        torch.testing.assert_close(y_wrap, y_raw, rtol=0, atol=0)


@pytest.mark.parametrize("weights", [True, False], ids=["weights", "no_weights"])
def test_pointwise_gradients_match_the_reference(device, weights):
    """swiglu and moe_combine's C++ nodes (csrc/torch/autograd_pointwise.cpp) against autograd through torch's
    ops: first gradients (the backward ops), second ones (create_graph: the nodes' composite backward), with
    and without the combine's weights (without, y is not kept: a stand-in of its shape), an out-of-range inv
    entry (contributes nothing), and one input frozen."""
    f64 = torch.float64
    z = torch.randn(5, 8, device=device, dtype=f64, requires_grad=True)
    y = torch.randn(6, 4, device=device, dtype=f64, requires_grad=True)
    w = torch.rand(3, 2, device=device).to(f64).requires_grad_(weights)  # (fp32-representable: used in fp32)
    inv = torch.tensor([3, 0, 7, 1, 4, 2], device=device)  # 7: outside [0, 6)

    def ref_combine(y, w):
        ok = (inv >= 0) & (inv < 6)
        rows = torch.where(ok[:, None], y[inv.clamp(0, 5)], torch.zeros((), dtype=f64, device=device))
        return (rows.reshape(3, 2, 4) * (w if weights else torch.ones_like(w))[..., None]).sum(1)

    ours = lambda z, y, w: (cg.swiglu(z).sin().sum()  # noqa: E731
                            + cg.moe_combine(y, inv, w if weights else None, 2).sin().sum())
    ref = lambda z, y, w: (F.silu(z[:, :4]) * z[:, 4:]).sin().sum() + ref_combine(y, w).sin().sum()  # noqa: E731
    leaves = (z, y, w) if weights else (z, y)
    for create_graph in (False, True):
        g = torch.autograd.grad(ours(z, y, w), leaves, create_graph=create_graph)
        r = torch.autograd.grad(ref(z, y, w), leaves, create_graph=create_graph)
        _assert_close(g[:2], r[:2], f"first gradients (create_graph={create_graph})")
        if weights:  # (the backward op sums the weights' gradient in fp32, as the forward uses them)
            torch.testing.assert_close(g[2], r[2], rtol=1e-6, atol=1e-6)
    gg = torch.autograd.grad(sum(t.square().sum() for t in g), leaves)
    rr = torch.autograd.grad(sum(t.square().sum() for t in r), leaves)
    _assert_close(gg[:2], rr[:2], "second gradients")
    if weights:  # (through the weights' fp32 cast)
        torch.testing.assert_close(gg[2], rr[2], rtol=1e-6, atol=1e-6)
    z.requires_grad_(False)  # a frozen input: its node records nothing, the other still does
    assert cg.swiglu(z).grad_fn is None
    _assert_close(torch.autograd.grad(ours(z, y, w), (y,)), torch.autograd.grad(ref(z, y, w), (y,)), "frozen z")


@pytest.mark.parametrize("op", ["mm", "bmm", "gemm", "gemm alpha beta c", "gemm gelu_tanh alpha beta c", "gemm fp32 out"])
def test_cpp_gradients_match_the_reference(device, op):
    """Every gradient of the C++ nodes against autograd through torch's own ops (float64; the 16-bit case at
    16-bit tolerance), with frozen inputs (needs_input_grad), alpha / beta / c, a bias, an activation, and
    out_dtype=float32 from 16-bit inputs."""
    dt = torch.bfloat16 if op == "gemm fp32 out" else torch.float64
    x = torch.randn(9, 11, device=device, dtype=dt)
    w = torch.randn(6, 11, device=device, dtype=dt)
    b = torch.randn(6, device=device, dtype=dt)
    c = torch.randn(9, 6, device=device, dtype=dt)
    f64 = torch.float64
    calls = {
        "mm": (lambda x, w: cg.mm(x, w.t()), lambda x, w: x @ w.t(), (x, w)),
        "bmm": (lambda x, w: cg.bmm(x.reshape(3, 3, 11), w.t().expand(3, 11, 6)),
                lambda x, w: torch.bmm(x.reshape(3, 3, 11), w.t().expand(3, 11, 6)), (x, w)),
        "gemm": (lambda x, w, b: cg.gemm(x, w.t(), bias=b), lambda x, w, b: x @ w.t() + b, (x, w, b)),
        "gemm alpha beta c": (lambda x, w, b, c: cg.gemm(x, w, bias=b, c=c, alpha=0.5, beta=-2.0),
                              lambda x, w, b, c: 0.5 * (x @ w) - 2.0 * c + b, (x, w.t().contiguous(), b, c)),
        "gemm gelu_tanh alpha beta c": (lambda x, w, b, c: torch.ops.gemm.gemm(x, w, b, c, alpha=0.5, beta=-2.0,
                                                                          activation="gelu_tanh"),
                                   lambda x, w, b, c: F.gelu(0.5 * (x @ w) - 2.0 * c + b, approximate="tanh"),
                                   (x, w.t().contiguous(), b, c)),
        "gemm fp32 out": (lambda x, w, b: cg.gemm(x, w.t(), bias=b, out_dtype=torch.float32),
                          lambda x, w, b: x.to(f64) @ w.to(f64).t() + b.to(f64), (x, w, b)),
    }
    ours, ref, leaves = calls[op]
    tol = dict(rtol=2e-2, atol=5e-2) if dt == torch.bfloat16 else dict(rtol=1e-10, atol=1e-10)
    for frozen in [None] + list(range(len(leaves))):  # every input requiring grad, then each one frozen
        ls = [t.detach().clone().requires_grad_(i != frozen) for i, t in enumerate(leaves)]
        rs = [t.detach().clone().requires_grad_(i != frozen) for i, t in enumerate(leaves)]
        y_ours, y_ref = ours(*ls), ref(*rs)
        torch.testing.assert_close(y_ours.to(f64), y_ref.to(f64), **tol)
        dy = torch.randn_like(y_ours)
        got = torch.autograd.grad(y_ours, [t for t in ls if t.requires_grad], dy)
        want = torch.autograd.grad(y_ref, [t for t in rs if t.requires_grad], dy.to(y_ref.dtype))
        for g1, g2, t in zip(got, want, [t for t in ls if t.requires_grad]):
            assert g1.dtype == t.dtype and g1.shape == t.shape, (g1.dtype, g1.shape, t.shape)
            torch.testing.assert_close(g1.to(f64), g2.to(f64), **tol)


def test_cpp_node_beta_zero_c_grad(device):
    """beta 0: c is not read, its gradient is zeros (not NaN from a NaN c)."""
    x = torch.randn(4, 5, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, device=device, dtype=torch.float64)
    c = torch.full((4, 3), float("nan"), device=device, dtype=torch.float64, requires_grad=True)
    y = cg.gemm(x, w, c=c, beta=0.0)
    assert y.grad_fn.name() == "cutorch_gemm::GemmBackward" and not y.isnan().any()
    gx, gc = torch.autograd.grad(y.sum(), (x, c))
    assert torch.equal(gc, torch.zeros_like(c)) and not gx.isnan().any()


@pytest.mark.parametrize("act", ["none", "silu"])
def test_double_backward(device, act):
    """Second derivatives through the C++ node (no activation; silu: its recomputed pre-activation and the
    activation's derivative): d/d(x, w, b) of (dL/dw . v), the backward's own GEMMs recorded (create_graph)."""
    x, w, b = _leaves(device)
    v = torch.randn_like(w)

    def hvp(fn):
        gw = torch.autograd.grad(fn(x, w, b, act=act), w, create_graph=True)[0]
        return torch.autograd.grad((gw * v).sum(), (x, w, b))

    _assert_close(hvp(_wrapper), hvp(_reference), f"double backward ({act})")


@pytest.mark.parametrize("mode", ["non-reentrant", "reentrant", "selective"])
def test_activation_checkpointing(device, mode):
    leaves = _leaves(device)
    want = _grads(_reference, leaves)
    if mode == "selective":  # keep our GEMM's output, recompute the rest
        def policy(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op == torch.ops.gemm.gemm.default else CheckpointPolicy.PREFER_RECOMPUTE
        ctx_fn = functools.partial(create_selective_checkpoint_contexts, policy)
        loss = checkpoint(_wrapper, *leaves, use_reentrant=False, context_fn=ctx_fn)
    else:
        loss = checkpoint(_wrapper, *leaves, use_reentrant=(mode == "reentrant"))
    loss.backward()  # (reentrant checkpointing supports .backward(), not .grad())
    _assert_close([t.grad for t in leaves], want, f"checkpoint ({mode})")


@pytest.mark.parametrize("how", ["clone hooks", "save_on_cpu"])
def test_saved_tensor_hooks(device, how):
    leaves = _leaves(device)
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t.clone()

    ctx = (torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t) if how == "clone hooks"
           else torch.autograd.graph.save_on_cpu())
    with ctx:
        loss = _wrapper(*leaves)
    _assert_close(torch.autograd.grad(loss, leaves), _grads(_reference, leaves), how)
    if how == "clone hooks":
        assert packed, "the Function's saved tensors did not pass through the pack hook"


def test_anomaly_mode(device):
    leaves = _leaves(device)
    with torch.autograd.detect_anomaly(check_nan=True):
        got = _grads(_wrapper, leaves)
    _assert_close(got, _grads(_reference, leaves), "detect_anomaly")


class _Doubling(TorchFunctionMode):
    """A mode that changes what gemm.gemm computes (2x its result), as a user's mode may."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return 2 * out if func == torch.ops.gemm.gemm.default else out


class _Sub(torch.Tensor):
    pass


def test_torch_function_mode_sees_the_op(device):
    """Under a torch function mode the wrapper calls the op itself, where the mode sees it with
    autograd on, so gradients follow what the mode made of it (applying the Function directly, the
    mode would meet the op inside its forward and the gradients would be those of the plain op)."""
    leaves = _leaves(device)
    with _Doubling():
        got = _grads(_wrapper, leaves)
    _assert_close(got, _grads(lambda x, w, b: _loss(2 * F.gelu(x @ w.t() + b)), leaves), "torch function mode")


def test_tensor_subclass(device):
    x, w, b = _leaves(device)
    xs = x.detach().as_subclass(_Sub).requires_grad_(True)
    _assert_close(_grads(_wrapper, (xs, w, b)), _grads(_reference, (x, w, b)), "tensor subclass")


def test_no_graph_when_nothing_requires_grad(device):
    x, w, b = (t.detach() for t in _leaves(device))
    assert cg.gemm(x, w.t(), bias=b).grad_fn is None
    x.requires_grad_(True)
    with torch.no_grad():
        assert cg.gemm(x, w.t(), bias=b).grad_fn is None
    with torch.inference_mode():
        y = cg.gemm(x, w.t(), bias=b)
        assert y.grad_fn is None and y.is_inference()


def test_bad_input_still_named(device):
    """The direct path's errors are the op's own (argument named), not autograd's."""
    x, w, b = _leaves(device)
    with pytest.raises(ValueError, match="bias"):
        cg.gemm(x, w.t(), bias=b[:-1])
    with pytest.raises(TypeError, match="dtype"):
        cg.mm(x, w.t().float())
    with pytest.raises(TypeError, match="sparse"):
        cg.mm(x, w.t().detach().to_sparse().requires_grad_(True))
    # Arguments of the wrong type: the op's schema error, naming the argument (not the C++ entry point's
    # signature dump).
    e = torch.randn(2, 13, 5, device=device, dtype=torch.float64)
    for call, name in [(lambda: cg.grouped_mm(x.detach(), e, [3, 7]), "offs"),
                       (lambda: cg.mm(x, w.t(), out_dtype="float"), "out_dtype"),
                       (lambda: cg.gemm(x, w.t(), activation=5), "activation")]:
        with pytest.raises(RuntimeError, match=f"argument '{name}'"):
            call()


@pytest.mark.parametrize("op", ["mm", "gemm", "linear"])
def test_autocast_backward_in_the_autocast_dtype(device, op, monkeypatch):
    """Under torch.autocast the operands are cast before autograd records the op (the Autocast key
    sits above Autograd), so the graph saves the 16-bit operands and the backward GEMMs run in
    16 bits, as torch.matmul's. A Function applied around the op would see the fp32 operands and
    run its backward GEMMs in fp32 (tf32 or CUDA cores on a GPU), saving twice the bytes."""
    if device == "cuda" and not torch.cuda.is_bf16_supported():
        pytest.skip("no bf16")
    monkeypatch.setattr(cg.dropin, "ROUTE_CPU", True)  # (linear on CPU tensors: through our ops too)
    x = torch.randn(33, 40, device=device, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(24, 40, device=device))
    b = torch.nn.Parameter(torch.randn(24, device=device))
    calls = {"mm": (lambda: cg.mm(x, w.t()), lambda: torch.ops.gemm.mm(x, w.t())),
             "gemm": (lambda: cg.gemm(x, w.t(), bias=b), lambda: torch.ops.gemm.gemm(x, w.t(), b)),
             "linear": (lambda: cg.linear(x, w, b), lambda: torch.ops.gemm.gemm(x, w.t(), b))}[op]
    dy = torch.randn(33, 24, device=device, dtype=torch.bfloat16)
    results = []
    for call in calls:
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: (saved.append(t.dtype), t)[1], lambda t: t):
            with torch.autocast(device, dtype=torch.bfloat16):
                y = call()
        assert y.dtype == torch.bfloat16
        assert torch.float32 not in saved, f"{op}: saved {saved}: the fp32 operands, not the autocast casts"
        results.append(torch.autograd.grad(y, (x, w, b) if op != "mm" else (x, w), dy))
    for g_wrap, g_raw in zip(*results):
        torch.testing.assert_close(g_wrap, g_raw, rtol=0, atol=0)


def test_routes(device, monkeypatch):
    """Which calls take the C++ entry points (ops._FAST) and which the Python paths."""
    from cutorch_gemm import ops
    taken = []
    monkeypatch.setattr(ops, "_FAST", {op: (lambda *a, _f=f, _op=op, **k: (taken.append(_op), _f(*a, **k))[1])
                                       for op, f in ops._FAST.items()})
    g = torch.ops.gemm
    x, w, b = _leaves(device)
    xd, wd, bd = x.detach(), w.detach(), b.detach()
    e = torch.randn(3, 13, 5, device=device, dtype=torch.float64)
    offs = torch.tensor([2, 5, 7], device=device, dtype=torch.int32)
    f8 = torch.randn(8, 16, device=device).to(torch.float8_e4m3fn)
    one = torch.ones((), device=device)
    cases = [  # (call, the op it should take from C++, or None)
        (lambda: cg.mm(xd, wd.t()), g.mm), (lambda: cg.mm(x, w.t()), g.mm),
        (lambda: cg.bmm(x[None], w.t()[None]), g.bmm),
        (lambda: cg.gemm(x, w.t(), bias=b), g.gemm), (lambda: cg.gemm(xd, wd.t(), activation="gelu"), g.gemm),
        (lambda: cg.gemm(x, w.t(), activation="gelu"), g.gemm),  # recorded, activation too: the C++ node
        (lambda: cg.grouped_mm(xd, e, offs), g.grouped_mm), (lambda: cg.grouped_mm(x, e, offs), g.grouped_mm),
        (lambda: cg.scaled_mm(f8, f8.t(), one, one), g.scaled_mm),
        (lambda: cg.scaled_mm(f8, f8.t(), one.clone().requires_grad_(), one), g.scaled_mm),  # recorded: C++ node
        (lambda: cg.swiglu(xd[:, :12]), None),
    ]
    for call, want in cases:
        taken.clear()
        call()
        assert taken == ([want] if want is not None else []), (want, taken)
    taken.clear()
    with torch.autocast(device, dtype=torch.bfloat16):  # autocast: the op itself (its Autocast kernel)
        cg.mm(x, w.t())
    assert taken == []


@pytest.mark.parametrize("op", ["mm", "gemm", "grouped_mm"])
def test_autocast_under_torch_func(device, op):
    """torch.func.grad under autocast: the Autocast kernel casts before the C++ Autograd kernel records, at
    each level, so the gradient is the one plain autograd gives (16-bit saved operands and backward GEMMs),
    bit for bit."""
    if device == "cuda" and not torch.cuda.is_bf16_supported():
        pytest.skip("no bf16")
    w = torch.randn(13, 6, device=device)
    b = torch.randn(6, device=device)
    ew = torch.randn(3, 13, 6, device=device)
    offs = torch.tensor([2, 2, 7], device=device, dtype=torch.int32)
    call = {"mm": lambda x: cg.mm(x, w), "gemm": lambda x: cg.gemm(x, w, bias=b, activation="silu"),
            "grouped_mm": lambda x: cg.grouped_mm(x, ew, offs)}[op]

    def loss(x):
        with torch.autocast(device, dtype=torch.bfloat16):
            return (call(x).float() ** 2).sum()

    x = torch.randn(7, 13, device=device)
    xr = x.clone().requires_grad_(True)
    want = torch.autograd.grad(loss(xr), xr)[0]
    got = torch.func.grad(loss)(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["mm", "gemm", "bmm"])
def test_frozen_weight_keeps_no_activation(device, op):
    """A frozen weight (LoRA-style fine-tuning): the graph keeps the weight, not the input activation
    (the C++ nodes save an operand only where the other's gradient needs it), and gradients match."""
    x = torch.randn(6, 9, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 9, device=device, dtype=torch.float64)  # frozen
    call = {"mm": lambda: cg.mm(x, w.t()), "gemm": lambda: cg.gemm(x, w.t(), c=torch.ones(6, 4, device=device,
                                                                                          dtype=torch.float64), beta=2.0),
            "bmm": lambda: cg.bmm(x[None], w.t()[None])}[op]
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: (packed.append(t.data_ptr()), t)[1], lambda t: t):
        y = call()
    assert x.data_ptr() not in packed, f"{op}: the input activation was saved though no gradient needs it"
    assert w.data_ptr() in packed
    gx, = torch.autograd.grad(y, x, torch.ones_like(y))
    torch.testing.assert_close(gx, torch.ones(6, 4, device=device, dtype=torch.float64) @ w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("xshape", [(13,), (7, 13), (2, 3, 13), (0, 13), (2, 0, 13)])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
def test_linear_entry_point_matches_the_python_steps(device, monkeypatch, act, xshape, with_bias):
    """dropin.linear's C++ entry point (_C.fast_linear: reshape, W^T, mm or gemm, the activation) against the
    same call through its Python steps (ops.direct refusing): the same values and gradients bit for bit,
    recorded (the activation as PyTorch's op on the GEMM output) and not (fused)."""
    from cutorch_gemm import dropin, ops
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    x = torch.randn(xshape, device=device, dtype=torch.float64)
    w = torch.nn.Parameter(torch.randn(5, 13, device=device, dtype=torch.float64))
    b = torch.randn(5, device=device, dtype=torch.float64, requires_grad=True) if with_bias else None
    entered = []
    real = cg._C.fast_linear
    monkeypatch.setattr(cg._C, "fast_linear", lambda *a: entered.append(1) or real(*a))

    def run(direct):
        monkeypatch.setattr(ops, "direct", (lambda ts: direct) if not direct else ops_direct)
        xs = x.clone().requires_grad_()
        leaves = [xs, w] + ([b] if b is not None else [])
        y = cg.linear(xs, w, b, act)
        dy = torch.randn(y.shape, generator=torch.Generator(device).manual_seed(1), device=device,
                         dtype=y.dtype)
        grads = torch.autograd.grad(y, leaves, dy, allow_unused=True) if y.numel() else ()
        with torch.no_grad():
            y_ng = cg.linear(x, w, b, act)
        return y, grads, y_ng

    ops_direct = ops.direct
    y_py, g_py, ng_py = run(False)
    assert not entered
    y_cpp, g_cpp, ng_cpp = run(True)
    assert len(entered) == 2, "the C++ entry point did not take the call"
    assert y_cpp.shape == y_py.shape == (*xshape[:-1], 5)
    torch.testing.assert_close(y_cpp, y_py, rtol=0, atol=0)
    torch.testing.assert_close(ng_cpp, ng_py, rtol=0, atol=0)
    for g1, g2 in zip(g_cpp, g_py):
        torch.testing.assert_close(g1, g2, rtol=0, atol=0)
    if act not in (None, "none") and y_cpp.numel():
        assert type(y_cpp.grad_fn).__name__ == type(y_py.grad_fn).__name__, (y_cpp.grad_fn, y_py.grad_fn)


MATMUL_SHAPES = [((7, 13), (13, 5)), ((13,), (13, 5)), ((7, 13), (13,)), ((2, 3, 13), (13, 5)), ((2, 3, 13), (13,)),
                 ((13,), (4, 13, 5)), ((4, 7, 13), (4, 13, 5)), ((4, 1, 7, 13), (3, 13, 5)), ((1, 7, 13), (4, 13, 5)),
                 ((0, 7, 13), (13, 5)), ((2, 7, 0), (2, 0, 5)), ((3, 13), (2, 13, 0))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_entry_point_matches_the_python_steps(device, monkeypatch, shapes):
    """dropin.matmul's C++ entry point (_C.fast_matmul: 1-D operands, batch folding and broadcasting, mm or bmm)
    against the same call through its Python steps (ops.direct refusing): the same values and gradients bit for
    bit, and torch.matmul's shapes."""
    from cutorch_gemm import dropin, ops
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    a0 = torch.randn(shapes[0], device=device, dtype=torch.float64)
    b0 = torch.randn(shapes[1], device=device, dtype=torch.float64)
    entered = []
    real = cg._C.fast_matmul
    monkeypatch.setattr(cg._C, "fast_matmul", lambda *a: entered.append(1) or real(*a))
    ops_direct = ops.direct

    def run(direct):
        monkeypatch.setattr(ops, "direct", ops_direct if direct else (lambda ts: False))
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        y = cg.matmul(a, b)
        dy = torch.randn(y.shape, generator=torch.Generator(device).manual_seed(1), device=device, dtype=y.dtype)
        return y, torch.autograd.grad(y, (a, b), dy)

    y_py, g_py = run(False)
    assert not entered
    y_cpp, g_cpp = run(True)
    assert entered == [1], "the C++ entry point did not take the call"
    assert y_cpp.shape == torch.matmul(a0, b0).shape
    torch.testing.assert_close(y_cpp, y_py, rtol=0, atol=0)
    for g1, g2 in zip(g_cpp, g_py):
        torch.testing.assert_close(g1, g2, rtol=0, atol=0)


@pytest.mark.parametrize("act", ["none", "gelu"])
def test_compiled_autograd(device, act):
    """torch._dynamo's compiled autograd traces the C++ nodes' backward (their functionals, bound on each
    trace): mm, bmm, gemm with bias and c, grouped_mm with a bias, swiglu, moe_combine with and without weights,
    scaled_mm's scale, grouped_gemm's lists (one output unused by the loss: its gradient never comes), raw and
    wrapped; gradients as eager, twice."""
    x, w, b = _leaves(device)
    c = torch.randn(7, 5, device=device, dtype=torch.float64, requires_grad=True)
    e = torch.randn(2, 13, 3, device=device, dtype=torch.float64, requires_grad=True)
    eb = torch.randn(2, 3, device=device, dtype=torch.float64, requires_grad=True)
    offs = torch.tensor([3, 6], device=device, dtype=torch.int32)
    leaves = (x, w, b, c, e, eb)

    inv = torch.tensor([5, 0, 6, 1, 4, 2, 3], device=device)
    wts = torch.rand(7, 1, device=device, dtype=torch.float64).float().double().requires_grad_()
    f8 = torch.randn(8, 16, device=device).to(torch.float8_e4m3fn)
    sa = torch.rand(8, 1, device=device, requires_grad=True)
    leaves = leaves + (wts, sa)

    def loss(x, w, b, c, e, eb, wts, sa):
        y = torch.ops.gemm.gemm(x, w.t(), b, c, alpha=0.5, beta=2.0, activation=act)
        return (_loss(y) + _loss(cg.mm(x, w.t())) + cg.bmm(x[None], w.t()[None]).square().sum()
                + _loss(cg.grouped_mm(x, e, offs, bias=eb, activation=act))
                + _loss(cg.swiglu(y[:, :4])) + _loss(cg.moe_combine(y, inv, wts, 1))
                + _loss(torch.ops.gemm.moe_combine(x, inv, None, 1))
                + cg.scaled_mm(f8, f8.t(), sa, torch.ones((), device=device), out_dtype=torch.float32).square().sum()
                + _loss(cg.grouped_gemm([x, x[:2]], [w.t(), e[0]], bias=[b, eb[0]], activation=act)[0])
                + sum(_loss(o) for o in torch.ops.gemm.grouped_gemm([x[1:], x], [e[1], w.t()])))

    want = torch.autograd.grad(loss(*leaves), leaves)
    for _ in range(2):
        for t in leaves:
            t.grad = None
        with torch._dynamo.compiled_autograd._enable(torch.compile(backend="eager")):
            loss(*leaves).backward()
        _assert_close([t.grad for t in leaves], want, f"compiled autograd ({act})")
