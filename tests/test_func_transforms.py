"""Forward-mode AD, double backward and the torch.func transforms (grad, vjp, jvp, jacrev,
jacfwd, hessian, vmap) through every op, against the float64 reference formulas of conftest.py
run through the same transforms.

Before the ops had their own autograd (autograd.Functions first, C++ Autograd and vmap kernels since:
csrc/torch/autograd_*.cpp, vmap_kernels.cpp), forward-mode AD returned a zero tangent without a word
(torch.library.register_autograd's kernel drops tangents) and torch.func.grad / jacrev raised; these tests
pin both down. Float64 throughout (the CPU reference ops, the GPU's DMMA path) except where a test says
otherwise: the transforms are glue over the ops, whose numerics the op tests cover per kernel.
"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import cutorch_gemm as cg
from conftest import DEVICES, make, offs_from_sizes, ref_gemm, sample_inputs

pytestmark = pytest.mark.parametrize("device", DEVICES)

F64 = torch.float64
TOL = dict(rtol=1e-9, atol=1e-9)


def _wrapper(sample):
    """The Python wrapper (cg.mm, cg.gemm, ...) for a sample's op, with the sample's arguments."""
    name = sample.op._schema.name.split("::")[-1]
    fn = getattr(cg, name)
    return lambda *args: fn(*args, **sample.kwargs)


def _leaves(sample):
    """The sample's differentiable tensors, flattened (lists of grouped_gemm included), and a
    function that puts replacements for them back into the argument tuple."""
    flat, where = [], []
    for i, arg in enumerate(sample.args):
        if isinstance(arg, torch.Tensor) and arg.is_floating_point():
            flat.append(arg)
            where.append((i, None))
        elif isinstance(arg, (list, tuple)):
            for j, t in enumerate(arg):
                flat.append(t)
                where.append((i, j))
    kw_names = [k for k, v in sample.kwargs.items() if isinstance(v, torch.Tensor) or isinstance(v, list)]

    def rebuild(values):
        args = [list(a) if isinstance(a, (list, tuple)) else a for a in sample.args]
        for (i, j), v in zip(where, values[:len(where)]):
            if j is None:
                args[i] = v
            else:
                args[i][j] = v
        kwargs = dict(sample.kwargs)
        rest = list(values[len(where):])
        for k in kw_names:
            if isinstance(kwargs[k], list):
                kwargs[k], rest = rest[:len(kwargs[k])], rest[len(kwargs[k]):]
            else:
                kwargs[k], rest = rest[0], rest[1:]
        return args, kwargs

    for k in kw_names:
        v = sample.kwargs[k]
        flat.extend(v if isinstance(v, list) else [v])
    return flat, rebuild


def _fns(sample):
    """(ours, ref): functions of the flattened leaves returning a tuple of outputs."""
    name = sample.op._schema.name.split("::")[-1]
    wrapper = getattr(cg, name)
    _, rebuild = _leaves(sample)

    def as_tuple(out):
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    def ours(*values):
        args, kwargs = rebuild(values)
        return as_tuple(wrapper(*args, **kwargs))

    def ref(*values):
        args, kwargs = rebuild(values)
        return as_tuple(sample.ref(*args, **kwargs))

    return ours, ref


def _samples(device):
    return sample_inputs(device, dtype=F64)


def _close(xs, ys, what):
    assert len(xs) == len(ys), what
    for i, (x, y) in enumerate(zip(xs, ys)):
        assert x.shape == y.shape, f"{what}[{i}]: shape {tuple(x.shape)} vs {tuple(y.shape)}"
        torch.testing.assert_close(x, y.to(x.dtype), **TOL, msg=lambda m: f"{what}[{i}]: {m}")


@pytest.mark.parametrize("index", range(len(sample_inputs("cpu"))))
def test_jvp_matches_reference(device, index):
    s = _samples(device)[index]
    leaves, _ = _leaves(s)
    tangents = [torch.randn_like(t) for t in leaves]
    ours, ref = _fns(s)
    out, tan = torch.func.jvp(ours, tuple(leaves), tuple(tangents))
    r_out, r_tan = torch.func.jvp(ref, tuple(leaves), tuple(tangents))
    _close(out, r_out, f"{s.name} primal")
    _close(tan, r_tan, f"{s.name} tangent")
    assert any(t.abs().sum() > 0 for t in tan) or all(t.numel() == 0 or t.abs().sum() == 0 for t in r_tan)


@pytest.mark.parametrize("index", range(len(sample_inputs("cpu"))))
def test_forward_ad_on_the_raw_op(device, index):
    """torch.ops.gemm.* inside forward_ad.dual_level (no torch.func): the op's Autograd kernel
    carries the tangent (it used to come back as zeros)."""
    s = _samples(device)[index]
    leaves, rebuild = _leaves(s)
    tangents = [torch.randn_like(t) for t in leaves]
    _, ref = _fns(s)
    _, r_tan = torch.func.jvp(ref, tuple(leaves), tuple(tangents))
    with fwAD.dual_level():
        args, kwargs = rebuild([fwAD.make_dual(t, d) for t, d in zip(leaves, tangents)])
        out = s.op(*args, **kwargs)
        outs = tuple(out) if isinstance(out, (list, tuple)) else (out,)
        tan = tuple(fwAD.unpack_dual(o).tangent for o in outs)
    assert all(t is not None for t in tan), f"{s.name}: no tangent on the output"
    _close(tan, r_tan, f"{s.name} tangent")


@pytest.mark.parametrize("index", range(len(sample_inputs("cpu"))))
def test_vjp_jacrev_jacfwd(device, index):
    s = _samples(device)[index]
    leaves, _ = _leaves(s)
    ours, ref = _fns(s)
    out, vjp_fn = torch.func.vjp(ours, *leaves)
    r_out, r_vjp_fn = torch.func.vjp(ref, *leaves)
    cot = tuple(torch.randn_like(o) for o in out)
    _close(vjp_fn(cot), r_vjp_fn(cot), f"{s.name} vjp")
    if sum(t.numel() for t in leaves) <= 200:  # full Jacobians of the small samples
        first = lambda *v: ours(*v)[0]  # noqa: E731
        r_first = lambda *v: ref(*v)[0]  # noqa: E731
        argnums = tuple(range(len(leaves)))
        jr = torch.func.jacrev(first, argnums=argnums)(*leaves)
        jf = torch.func.jacfwd(first, argnums=argnums)(*leaves)
        rj = torch.func.jacrev(r_first, argnums=argnums)(*leaves)
        _close(jr, rj, f"{s.name} jacrev")
        _close(jf, rj, f"{s.name} jacfwd")


@pytest.mark.parametrize("index", range(len(sample_inputs("cpu"))))
def test_double_backward(device, index):
    """create_graph=True and a second backward: the ops' backward is differentiable (it is built
    from the same ops, and the activations' derivatives from torch ops)."""
    s = _samples(device)[index]
    leaves, _ = _leaves(s)
    ours, ref = _fns(s)

    def second(fn):
        xs = [t.detach().clone().requires_grad_(True) for t in leaves]
        outs = fn(*xs)
        w = [torch.sin(torch.arange(o.numel(), dtype=F64, device=o.device)).reshape(o.shape) for o in outs]
        loss = sum((o * o * wi).sum() for o, wi in zip(outs, w))
        g = torch.autograd.grad(loss, xs, create_graph=True, allow_unused=True, materialize_grads=True)
        total = sum((gi * gi).sum() for gi in g)
        return torch.autograd.grad(total, xs, allow_unused=True, materialize_grads=True)

    _close(second(ours), second(ref), f"{s.name} second derivative")


def test_hessian_of_fused_activations(device):
    a = torch.randn(4, 5, dtype=F64, device=device)
    b = torch.randn(5, 3, dtype=F64, device=device)
    bias = torch.randn(3, dtype=F64, device=device)
    for act in ("relu", "gelu", "gelu_tanh", "silu"):
        h = torch.func.hessian(lambda x: cg.gemm(x, b, bias=bias, activation=act).pow(2).sum())(a)
        rh = torch.func.hessian(lambda x: ref_gemm(x, b, bias, None, 1.0, 0.0, act).pow(2).sum())(a)
        torch.testing.assert_close(h, rh, **TOL, msg=lambda m: f"{act}: {m}")


def test_vmap(device):
    """vmap over the wrappers (through each op's Function and the ops' per-slice fallback), and
    vmap of grad (per-sample gradients)."""
    x = torch.randn(3, 5, 7, dtype=F64, device=device)
    w = torch.randn(7, 4, dtype=F64, device=device)
    bias = torch.randn(4, dtype=F64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the per-slice fallback's performance warning
        torch.testing.assert_close(torch.vmap(cg.mm, in_dims=(0, None))(x, w), x @ w, **TOL)
        torch.testing.assert_close(torch.vmap(cg.mm, in_dims=(None, 0))(w.t(), x.transpose(1, 2)),
                                   w.t() @ x.transpose(1, 2), **TOL)
        y = torch.vmap(lambda t: cg.gemm(t, w, bias=bias, activation="silu"))(x)
        torch.testing.assert_close(y, torch.nn.functional.silu(x @ w + bias), **TOL)
        per_sample = torch.vmap(torch.func.grad(lambda t: cg.gemm(t, w, bias=bias, activation="gelu").sum()))(x)
        ref = torch.vmap(torch.func.grad(lambda t: ref_gemm(t, w, bias, None, 1.0, 0.0, "gelu").sum()))(x)
        torch.testing.assert_close(per_sample, ref, **TOL)
        wg = torch.func.grad(lambda ww: torch.vmap(lambda t: cg.mm(t, ww))(x).square().sum())(w)
        torch.testing.assert_close(wg, torch.func.grad(lambda ww: (x @ ww).square().sum())(w), **TOL)
        e = torch.randn(2, 3, 7, 4, dtype=F64, device=device)
        offs = offs_from_sizes([2, 3, 0], device)
        a = torch.randn(2, 5, 7, dtype=F64, device=device)
        g = torch.vmap(lambda t, ee: cg.grouped_mm(t, ee, offs))(a, e)
        torch.testing.assert_close(g, torch.stack([cg.grouped_mm(a[i], e[i], offs) for i in range(2)]), **TOL)
        ws = torch.randn(3, 7, 4, dtype=F64, device=device)  # a batch of weights: one gemm per entry
        torch.testing.assert_close(torch.vmap(lambda ww: cg.gemm(x[0], ww, activation="relu"))(ws),
                                   torch.relu(x[0] @ ws), **TOL)
        cs = torch.randn(3, 5, 4, dtype=F64, device=device)  # a batch of c folds into M with a
        torch.testing.assert_close(torch.vmap(lambda t, cc: cg.gemm(t, w, c=cc, beta=0.5))(x, cs),
                                   x @ w + 0.5 * cs, **TOL)
        for fn in (lambda t: cg.mm(t, w), lambda t: cg.gemm(t, w, bias=bias),  # a batch of zero entries
                   lambda t: cg.grouped_mm(t, e[0], offs), lambda t: tuple(cg.grouped_gemm([t], [w]))):
            out = torch.vmap(fn)(x[:0])
            out = out[0] if isinstance(out, tuple) else out
            assert out.shape == (0, 5, 4), out.shape
        lists = torch.vmap(lambda t: tuple(cg.grouped_gemm([t, t[:2]], [w, w[:, :1]])))(x)
        torch.testing.assert_close(lists[0], x @ w, **TOL)
        torch.testing.assert_close(lists[1], x[:, :2] @ w[:, :1], **TOL)


def test_vmap_nested_and_per_entry(device):
    """The C++ vmap kernels (csrc/torch/vmap_kernels.cpp) under nested vmaps: an operand batched at the outer
    level only, seen inside the inner one (unwrapped at its own level), both batched, batch dimensions other
    than 0; bmm under vmap; a batch of biases (one gemm per entry); int8 mm (one mm per entry, exact int32)."""
    x = torch.randn(3, 4, 5, 7, dtype=F64, device=device)  # (outer 3, inner 4, m 5, k 7)
    w = torch.randn(3, 7, 6, dtype=F64, device=device)     # batched at the outer level only
    bias = torch.randn(6, dtype=F64, device=device)
    ref = torch.einsum("oimk,okn->oimn", x, w)
    got = torch.vmap(lambda xo, wo: torch.vmap(lambda xi: cg.mm(xi, wo))(xo))(x, w)
    torch.testing.assert_close(got, ref, **TOL)
    got = torch.vmap(lambda wo: torch.vmap(lambda xi: cg.gemm(xi, wo, bias=bias, activation="relu"),
                                           in_dims=1)(x[0].transpose(0, 1)))(w)
    torch.testing.assert_close(got, torch.relu(torch.einsum("imk,okn->oimn", x[0], w) + bias), **TOL)
    ws = torch.randn(4, 7, 6, dtype=F64, device=device)  # both batched at the inner level
    got = torch.vmap(lambda xo: torch.vmap(cg.mm)(xo, ws))(x)
    torch.testing.assert_close(got, torch.einsum("oimk,ikn->oimn", x, ws), **TOL)
    a3 = torch.randn(2, 3, 5, 7, dtype=F64, device=device)
    b3 = torch.randn(7, 3, 7, 4, dtype=F64, device=device)[:2]  # a batch of bmm operands, batch dim 0
    torch.testing.assert_close(torch.vmap(cg.bmm)(a3, b3), a3 @ b3, **TOL)
    biases = torch.randn(4, 6, dtype=F64, device=device)
    got = torch.vmap(lambda bb: cg.gemm(x[0, 0], w[0], bias=bb, activation="gelu"))(biases)
    torch.testing.assert_close(got, torch.nn.functional.gelu(x[0, 0] @ w[0] + biases[:, None, :]), **TOL)
    q = torch.randint(-128, 128, (3, 5, 16), dtype=torch.int8, device=device)
    r = torch.randint(-128, 128, (16, 8), dtype=torch.int8, device=device)
    if device == "cpu" or torch.cuda.get_device_capability() >= (8, 0):
        got = torch.vmap(cg.mm, in_dims=(0, None))(q, r)
        assert got.dtype == torch.int32
        assert torch.equal(got.cpu(), (q.cpu().long() @ r.cpu().long()).int())  # (no int64 matmul on CUDA)


def test_swiglu_and_moe_combine(device):
    gu = torch.randn(6, 8, dtype=F64, device=device)
    t = torch.randn_like(gu)

    def ref_swiglu(z):
        g, u = z.chunk(2, -1)
        return torch.nn.functional.silu(g) * u

    _close(torch.func.jvp(cg.swiglu, (gu,), (t,)), torch.func.jvp(ref_swiglu, (gu,), (t,)), "swiglu jvp")
    _close([torch.func.hessian(lambda z: cg.swiglu(z).pow(2).sum())(gu)],
           [torch.func.hessian(lambda z: ref_swiglu(z).pow(2).sum())(gu)], "swiglu hessian")
    assert torch.autograd.gradgradcheck(cg.swiglu, (gu.clone().requires_grad_(),))

    k, T, H = 2, 3, 4
    y = torch.randn(T * k, H, dtype=F64, device=device)
    inv = torch.tensor([3, 0, 1, 2, 5, 4], device=device)
    # weights are used in fp32 (ops.moe_combine): fp32-representable values keep float64 exact
    wts = torch.randn(T, k, device=device).to(F64)

    def ref_combine(yy, ww):
        return (yy[inv].reshape(T, k, H) * ww.to(torch.float32).to(F64)[..., None]).sum(1)

    ours = lambda yy, ww: cg.moe_combine(yy, inv, ww, k)  # noqa: E731
    ty, tw = torch.randn_like(y), torch.randn(T, k, device=device).to(F64)
    _close(torch.func.jvp(ours, (y, wts), (ty, tw)), torch.func.jvp(ref_combine, (y, wts), (ty, tw)),
           "moe_combine jvp")
    _close([torch.func.jacrev(ours, argnums=0)(y, wts)], [torch.func.jacrev(ref_combine, argnums=0)(y, wts)],
           "moe_combine jacrev y")
    # the weights' gradient: fp32 sums (the op's backward), so fp32's accuracy
    torch.testing.assert_close(torch.func.jacrev(ours, argnums=1)(y, wts),
                               torch.func.jacrev(ref_combine, argnums=1)(y, wts), rtol=1e-6, atol=1e-6)
    # second derivative in (y, weights): the product term
    h = torch.func.hessian(lambda yy, ww: ours(yy, ww).pow(2).sum(), argnums=(0, 1))(y, wts)
    rh = torch.func.hessian(lambda yy, ww: ref_combine(yy, ww).pow(2).sum(), argnums=(0, 1))(y, wts)
    _close([h[0][0]], [rh[0][0]], "moe_combine hessian (y, y)")
    for i, j in ((0, 1), (1, 0), (1, 1)):  # blocks with the weights: fp32's accuracy (as above)
        torch.testing.assert_close(h[i][j], rh[i][j], rtol=1e-6, atol=1e-6)
    # an inv entry out of range contributes nothing, in every derivative too
    inv_bad = torch.tensor([3, 0, 1, 99, 5, -1], device=device)
    valid = ((inv_bad >= 0) & (inv_bad < T * k)).reshape(T, k).to(F64)
    ref_bad = lambda yy, ww: (yy[inv_bad.clamp(0, T * k - 1)].reshape(T, k, H)  # noqa: E731
                              * (ww.to(torch.float32).to(F64) * valid)[..., None]).sum(1)
    ones = torch.ones(T, H, dtype=F64, device=device)
    g = torch.func.vjp(lambda yy, ww: cg.moe_combine(yy, inv_bad, ww, k), y, wts)[1](ones)
    rg = torch.func.vjp(ref_bad, y, wts)[1](ones)
    _close([g[0]], [rg[0]], "moe_combine bad inv vjp y")
    torch.testing.assert_close(g[1], rg[1], rtol=1e-6, atol=1e-6)


def test_scaled_mm_tangents(device):
    """scaled_mm: tangents and gradients of the scales and the bias (the 8-bit operands have none)."""
    a = (torch.randn(5, 16, device=device) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(8, 16, device=device) * 2).to(torch.float8_e4m3fn).t()
    sa = torch.rand(5, 1, device=device) + 0.5
    sb = torch.rand(1, 8, device=device) + 0.5
    bias = torch.randn(8, device=device)
    # a @ b as the op computes it (Hopper's 8-bit wgmma adds products with fewer bits than fp32,
    # test_scaled_mm.py's TC8_ACCUM; the scales are applied after): the tangents are checked
    # against the op's own product, the product against float64 in test_scaled_mm.py.
    one = torch.ones((), device=device)
    prod = cg.scaled_mm(a, b, one, one, out_dtype=torch.float32).to(F64)

    def ref(s_a, s_b, bb):
        return s_a.to(F64) * s_b.to(F64) * prod + bb.to(F64)

    ours = lambda s_a, s_b, bb: cg.scaled_mm(a, b, s_a, s_b, bias=bb, out_dtype=torch.float32)  # noqa: E731
    tangents = (torch.randn_like(sa), torch.randn_like(sb), torch.randn_like(bias))
    out, tan = torch.func.jvp(ours, (sa, sb, bias), tangents)
    _, r_tan = torch.func.jvp(ref, (sa, sb, bias), tangents)
    torch.testing.assert_close(out.to(F64), ref(sa, sb, bias), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(tan.to(F64), r_tan, rtol=1e-5, atol=1e-4)
    g = torch.func.grad(lambda *p: ours(*p).sum(), argnums=(0, 1, 2))(sa, sb, bias)
    rg = torch.func.grad(lambda *p: ref(*p).sum(), argnums=(0, 1, 2))(sa, sb, bias)
    for x, y in zip(g, rg):
        torch.testing.assert_close(x.to(F64), y.to(F64), rtol=1e-5, atol=1e-4)


def test_raw_ops_under_torch_func(device):
    """Raw torch.ops.gemm.* calls (mm, bmm, gemm, grouped_mm, grouped_gemm, swiglu, moe_combine here) work under
    every transform: their autograd and vmap kernels are C++ (csrc/torch/autograd_*.cpp, vmap_kernels.cpp). (While
    some ops' autograd was a Python Function, those raised here when called raw, and earlier jvp returned zeros.)"""
    a = torch.randn(4, 5, dtype=F64, device=device)
    b = torch.randn(5, 3, dtype=F64, device=device)
    bias = torch.randn(3, dtype=F64, device=device)
    ta = torch.randn_like(a)
    g = torch.func.grad(lambda x: torch.ops.gemm.mm(x, b).square().sum())(a)
    torch.testing.assert_close(g, 2 * (a @ b) @ b.t(), **TOL)
    _, t = torch.func.jvp(lambda x: torch.ops.gemm.gemm(x, b, bias, activation="relu"), (a,), (ta,))
    torch.testing.assert_close(t, (ta @ b) * (a @ b + bias > 0), **TOL)
    xs = torch.randn(2, 4, 5, dtype=F64, device=device)
    torch.testing.assert_close(torch.vmap(lambda x: torch.ops.gemm.bmm(x[None], b[None])[0])(xs), xs @ b, **TOL)
    h = torch.func.hessian(lambda x: torch.ops.gemm.gemm(x, b, bias, activation="silu").square().sum())(a)
    rh = torch.func.hessian(lambda x: ref_gemm(x, b, bias, None, 1.0, 0.0, "silu").square().sum())(a)
    torch.testing.assert_close(h, rh, **TOL)
    e = torch.randn(2, 5, 3, dtype=F64, device=device)
    offs = offs_from_sizes([1, 3], device)
    g = torch.func.grad(lambda x: torch.ops.gemm.grouped_mm(x, e, offs, activation="silu").square().sum())(a)
    rg = torch.func.grad(lambda x: torch.nn.functional.silu(torch.cat([x[:1] @ e[0], x[1:4] @ e[1]])).square().sum())(a)
    torch.testing.assert_close(g, rg, **TOL)
    # swiglu and moe_combine (csrc/torch/autograd_pointwise.cpp): grad, jvp, vmap of the raw ops
    z = torch.randn(3, 4, 6, dtype=F64, device=device)
    ref_sw = lambda x: torch.nn.functional.silu(x[..., :3]) * x[..., 3:]  # noqa: E731
    torch.testing.assert_close(torch.func.grad(lambda x: torch.ops.gemm.swiglu(x).square().sum())(z),
                               torch.func.grad(lambda x: ref_sw(x).square().sum())(z), **TOL)
    torch.testing.assert_close(torch.vmap(torch.ops.gemm.swiglu, in_dims=1)(z), ref_sw(z.movedim(1, 0)), **TOL)
    y = torch.randn(6, 5, dtype=F64, device=device)
    inv = torch.tensor([3, 0, 5, 1, 4, 2], device=device)
    w = torch.randn(3, 2, dtype=torch.float32, device=device).to(F64)
    ref_cb = lambda yy, ww: (yy[inv].reshape(3, 2, 5) * ww[..., None]).sum(1)  # noqa: E731
    tw = torch.randn(3, 2, dtype=torch.float32, device=device).to(F64)  # (weights are used in fp32)
    torch.testing.assert_close(torch.func.jvp(lambda ww: torch.ops.gemm.moe_combine(y, inv, ww, 2), (w,), (tw,)),
                               torch.func.jvp(lambda ww: ref_cb(y, ww), (w,), (tw,)), **TOL)
    ys = torch.randn(2, 6, 5, dtype=F64, device=device)
    torch.testing.assert_close(torch.vmap(lambda yy: torch.ops.gemm.moe_combine(yy, inv, w, 2))(ys),
                               torch.stack([ref_cb(yy, w) for yy in ys]), **TOL)
    # grouped_gemm (csrc/torch/autograd_grouped_gemm.cpp): lists under grad and vmap
    b2 = torch.randn(5, 2, dtype=F64, device=device)
    g = torch.func.grad(lambda x: sum(o.square().sum() for o in torch.ops.gemm.grouped_gemm([x, x[:2]], [b, b2])))(a)
    torch.testing.assert_close(g, torch.func.grad(lambda x: (x @ b).square().sum() + (x[:2] @ b2).square().sum())(a),
                               **TOL)
    outs = torch.vmap(lambda x: tuple(torch.ops.gemm.grouped_gemm([x, x[:2]], [b, b2], activation="relu")))(xs)
    torch.testing.assert_close(outs[0], torch.relu(xs @ b), **TOL)
    torch.testing.assert_close(outs[1], torch.relu(xs[:, :2] @ b2), **TOL)


def test_modules_under_torch_func(device, monkeypatch):
    """nn.Linear, the gated MLP and the MoE layer under torch.func: per-sample gradients through
    torch.func.functional_call, against the same modules on torch ops. (On the CPU, ROUTE_CPU
    sends the drop-in layers to the reference ops, as on a GPU to the kernels.)"""
    monkeypatch.setattr(cg.dropin, "ROUTE_CPU", True)
    torch.manual_seed(0)
    lin = cg.nn.Linear(6, 5, activation="gelu", device=device, dtype=F64)
    ref_lin = lambda p, x: torch.nn.functional.gelu(x @ p["weight"].t() + p["bias"])  # noqa: E731
    params = {k: v.detach() for k, v in lin.named_parameters()}
    x = torch.randn(4, 6, dtype=F64, device=device)
    g = torch.func.grad(lambda p: torch.func.functional_call(lin, p, (x,)).square().sum())(params)
    rg = torch.func.grad(lambda p: ref_lin(p, x).square().sum())(params)
    for k in params:
        torch.testing.assert_close(g[k], rg[k], **TOL)
    per = torch.vmap(torch.func.grad(lambda p, xi: torch.func.functional_call(lin, p, (xi[None],)).sum()),
                     in_dims=(None, 0))(params, x)
    rper = torch.vmap(torch.func.grad(lambda p, xi: ref_lin(p, xi[None]).sum()), in_dims=(None, 0))(params, x)
    for k in params:
        torch.testing.assert_close(per[k], rper[k], **TOL)

    mlp = cg.nn.GatedMLP(6, 8, device=device, dtype=F64)
    mp = {k: v.detach() for k, v in mlp.named_parameters()}

    def ref_mlp(p, xx):
        h = torch.nn.functional.silu(xx @ p["gate_proj.weight"].t()) * (xx @ p["up_proj.weight"].t())
        return h @ p["down_proj.weight"].t()

    g = torch.func.grad(lambda p: torch.func.functional_call(mlp, p, (x,)).square().sum())(mp)
    rg = torch.func.grad(lambda p: ref_mlp(p, x).square().sum())(mp)
    for k in mp:
        torch.testing.assert_close(g[k], rg[k], **TOL)

    moe = cg.nn.GroupedExperts(3, 6, 4, device=device, dtype=F64)
    ep = {k: v.detach() for k, v in moe.named_parameters()}
    idx = torch.tensor([[0, 2], [1, 0], [2, 2], [0, 1]], device=device)
    wts = torch.rand(4, 2, device=device).to(F64)

    def ref_moe(p, xx):
        out = torch.zeros_like(xx)
        for t in range(xx.shape[0]):
            for j in range(idx.shape[1]):
                e = int(idx[t, j])
                z = xx[t] @ p["w_gate_up"][e]
                h = torch.nn.functional.silu(z[:4]) * z[4:]
                out[t] = out[t] + wts[t, j].to(torch.float32).to(F64) * (h @ p["w_down"][e])
        return out

    g = torch.func.grad(lambda p, xx: torch.func.functional_call(moe, p, (xx, idx, wts)).square().sum(),
                        argnums=(0, 1))(ep, x)
    rg = torch.func.grad(lambda p, xx: ref_moe(p, xx).square().sum(), argnums=(0, 1))(ep, x)
    for k in ep:
        torch.testing.assert_close(g[0][k], rg[0][k], **TOL)
    torch.testing.assert_close(g[1], rg[1], **TOL)


def test_bf16_tangent_dtype(device):
    """A 16-bit op's tangent has the output's dtype (out_dtype included) and its accuracy."""
    a = make((9, 16), torch.bfloat16, device)
    b = make((16, 12), torch.bfloat16, device, "col")
    bias = make((12,), torch.bfloat16, device)
    ta, tb = torch.randn_like(a), torch.randn_like(b)
    for od in (None, torch.float32):
        _, tan = torch.func.jvp(lambda x, y: cg.gemm(x, y, bias=bias, activation="silu", out_dtype=od), (a, b), (ta, tb))
        assert tan.dtype == (od or torch.bfloat16)
        _, r_tan = torch.func.jvp(lambda x, y: ref_gemm(x, y, bias.to(F64), None, 1.0, 0.0, "silu"),
                                  (a.to(F64), b.to(F64)), (ta.to(F64), tb.to(F64)))
        err = (tan.to(F64) - r_tan).norm() / r_tan.norm()
        assert err < 2e-2, f"out_dtype={od}: relative error {err:.3g}"


def test_autograd_functional_and_batched_gradcheck(device):
    """torch.autograd.functional's jacobian / hessian with vectorize=True, autograd.grad with
    is_grads_batched, and gradcheck's batched-gradient and forward-mode checks: torch's own
    vmap-over-backward paths (the legacy vmap among them, which has no per-entry fallback for
    grouped_gemm's Tensor[] arguments)."""
    a = torch.randn(4, 5, dtype=F64, device=device)
    w = torch.randn(5, 3, dtype=F64, device=device)
    bias = torch.randn(3, dtype=F64, device=device)
    ours = lambda t: cg.gemm(t, w, bias=bias, activation="gelu")  # noqa: E731
    ref = lambda t: ref_gemm(t, w, bias, None, 1.0, 0.0, "gelu")  # noqa: E731
    for vectorize in (False, True):
        jac = torch.autograd.functional.jacobian
        hes = torch.autograd.functional.hessian
        torch.testing.assert_close(jac(ours, a, vectorize=vectorize), jac(ref, a), **TOL)
        torch.testing.assert_close(hes(lambda t: ours(t).pow(2).sum(), a, vectorize=vectorize),
                                   hes(lambda t: ref(t).pow(2).sum(), a), **TOL)
        lists = lambda t: tuple(cg.grouped_gemm([t, t[:2]], [w, w], activation="relu"))  # noqa: E731
        r_lists = lambda t: (torch.relu(t @ w), torch.relu(t[:2] @ w))  # noqa: E731
        for x, y in zip(jac(lists, a, vectorize=vectorize), jac(r_lists, a)):
            torch.testing.assert_close(x, y, **TOL)
    x = a.clone().requires_grad_(True)
    cot = torch.randn(6, 4, 3, dtype=F64, device=device)
    g = torch.autograd.grad(ours(x), x, cot, is_grads_batched=True)[0]
    xr = a.clone().requires_grad_(True)
    rg = torch.autograd.grad(ref(xr), xr, cot, is_grads_batched=True)[0]
    torch.testing.assert_close(g, rg, **TOL)
    leaves = [t.requires_grad_(True) for t in (torch.randn(3, 4, dtype=F64, device=device),
                                               torch.randn(2, 5, dtype=F64, device=device),
                                               torch.randn(4, 6, dtype=F64, device=device),
                                               torch.randn(5, 2, dtype=F64, device=device))]
    fn = lambda a0, a1, b0, b1: tuple(cg.grouped_gemm([a0, a1], [b0, b1], activation="silu"))  # noqa: E731
    assert torch.autograd.gradcheck(fn, leaves, check_batched_grad=True, check_forward_ad=True,
                                    check_batched_forward_grad=True)
    mm_leaves = [torch.randn(3, 4, dtype=F64, device=device).requires_grad_(True),
                 torch.randn(4, 2, dtype=F64, device=device).requires_grad_(True)]
    assert torch.autograd.gradcheck(cg.mm, mm_leaves, check_batched_grad=True, check_forward_ad=True,
                                    check_batched_forward_grad=True)
