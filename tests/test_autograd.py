"""Gradients of every op against float64 reference autograd (torch.autograd.grad on the
reference formulas), every activation, bias and c grads, grouped layouts with empty groups;
plus torch.autograd.gradcheck in float64 at small sizes."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, DEVICES, DTYPES, check, dtype_id, make, offs_from_sizes,
                      ref_bmm, ref_gemm, ref_grouped_gemm, ref_grouped_mm, ref_mm,
                      sample_inputs)

pytestmark = pytest.mark.parametrize("device", DEVICES)
GRAD_DTYPES = [torch.float32, torch.bfloat16, torch.float64]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def compare_grads(op_fn, ref_fn, leaves, dtype, out_dtype=None, what=""):
    """Backward of ``op_fn(*leaves)`` with a random upstream gradient versus float64
    autograd through ``ref_fn`` on upcast copies of the same leaves. Returns the grads.

    Each grad is a sum of products (dB = A^T dZ, ...); the same reference run on |leaves| and
    |upstream| gives the size of its terms, which ``check`` needs to bound the error of a
    sum that cancels (see its ``scale``). With every input positive the activations sit in
    their near-linear range (slope about 1, the largest any of them has), so that run does
    not understate the terms."""
    outs = _as_list(op_fn(*leaves))
    gs = [torch.randn(o.shape, device=o.device).to(o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, leaves, gs, allow_unused=True, materialize_grads=True)
    leaves64 = [l.detach().double().requires_grad_(True) for l in leaves]
    refs = _as_list(ref_fn(*leaves64))
    ref_grads = torch.autograd.grad(refs, leaves64, [g.double() for g in gs],
                                    allow_unused=True, materialize_grads=True)
    abs64 = [l.detach().double().abs().requires_grad_(True) for l in leaves]
    term_sizes = torch.autograd.grad(_as_list(ref_fn(*abs64)), abs64,
                                     [g.double().abs() for g in gs],
                                     allow_unused=True, materialize_grads=True)
    for i, (g, r, s, leaf) in enumerate(zip(grads, ref_grads, term_sizes, leaves)):
        assert g.shape == leaf.shape, f"{what}: grad[{i}] shape {g.shape} != {leaf.shape}"
        # grads have the dtype of their input; no contiguity requirement
        check(g, r, dtype, contiguous=False, what=f"{what} grad[{i}]", scale=s)
    return grads


# --------------------------------------------------------------------------------------
# mm / gemm / bmm
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("la,lb", [("row", "row"), ("col", "padded"), ("padded", "col")])
def test_mm_grad(device, dtype, la, lb):
    a = make((33, 17), dtype, device, la, requires_grad=True)
    b = make((17, 65), dtype, device, lb, requires_grad=True)
    compare_grads(cg.mm, ref_mm, [a, b], dtype, what="mm")


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["mm", "gemm"])
def test_linear_weight_grad_layout(device, dtype, op):
    """b = W.t() of a row-major weight (nn.Linear): W's gradient comes back in W's own layout
    (contiguous), so autograd does not copy it, and matches float64 autograd; bias sums too."""
    x = make((37, 24), dtype, device, requires_grad=True)
    w = make((65, 24), dtype, device, requires_grad=True)
    bias = make((65,), dtype, device, requires_grad=True)
    if op == "mm":
        leaves, fn, ref = [x, w], (lambda x, w: cg.mm(x, w.t())), (lambda x, w: ref_mm(x, w.t()))
    else:
        leaves = [x, w, bias]
        fn = lambda x, w, bias: cg.gemm(x, w.t(), bias=bias, alpha=0.5)  # noqa: E731
        ref = lambda x, w, bias: ref_gemm(x, w.t(), bias, None, 0.5)  # noqa: E731
    grads = compare_grads(fn, ref, leaves, dtype, what=f"linear {op}")
    assert grads[1].is_contiguous() and grads[1].stride() == w.stride(), grads[1].stride()
    out = fn(*leaves)
    out.backward(torch.randn_like(out))
    assert w.grad.is_contiguous(), w.grad.stride()


# name: (bias?, c?, alpha, beta)
GEMM_GRAD_CASES = {
    "bias_c_alpha_beta": (True, True, 0.75, -1.5),
    "c_beta0": (True, True, 1.0, 0.0),   # c not read: zero grad for c
    "plain": (False, False, 1.0, 0.0),
    "alpha_bias": (True, False, -2.0, 0.0),
}


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("case", list(GEMM_GRAD_CASES))
def test_gemm_grad(device, dtype, activation, case):
    has_bias, has_c, alpha, beta = GEMM_GRAD_CASES[case]
    m, n, k = 29, 37, 65
    leaves = [make((m, k), dtype, device, "col", requires_grad=True),
              make((k, n), dtype, device, "row", requires_grad=True)]
    if has_bias:
        leaves.append(make((n,), dtype, device, requires_grad=True))
    if has_c:
        leaves.append(make((m, n), dtype, device, "padded", requires_grad=True))

    def split(xs):
        a, b, *rest = xs
        bias = rest.pop(0) if has_bias else None
        c = rest.pop(0) if has_c else None
        return a, b, bias, c

    def op_fn(*xs):
        a, b, bias, c = split(xs)
        return cg.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=activation)

    def ref_fn(*xs):
        a, b, bias, c = split(xs)
        return ref_gemm(a, b, bias, c, alpha, beta, activation)

    grads = compare_grads(op_fn, ref_fn, leaves, dtype, what=f"gemm {case} {activation}")
    if has_c and beta == 0.0:
        assert torch.all(grads[-1] == 0), "c is not read when beta == 0: its grad must be 0"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_gemm_grad_out_fp32(device, dtype, activation):
    leaves = [make((17, 33), dtype, device, requires_grad=True),
              make((33, 9), dtype, device, "col", requires_grad=True),
              make((9,), dtype, device, requires_grad=True),
              make((17, 9), dtype, device, requires_grad=True)]

    def op_fn(a, b, bias, c):
        return cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=1.0, activation=activation,
                       out_dtype=torch.float32)

    def ref_fn(a, b, bias, c):
        return ref_gemm(a, b, bias, c, 0.5, 1.0, activation)

    grads = compare_grads(op_fn, ref_fn, leaves, dtype, what="gemm out fp32")
    assert all(g.dtype == dtype for g in grads)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gemm_grad_k0(device, activation):
    """K = 0: grads of a and b are empty; bias and c still get theirs."""
    dtype = torch.float32
    leaves = [make((7, 0), dtype, device, requires_grad=True),
              make((0, 5), dtype, device, requires_grad=True),
              make((5,), dtype, device, requires_grad=True),
              make((7, 5), dtype, device, requires_grad=True)]
    compare_grads(
        lambda a, b, bias, c: cg.gemm(a, b, bias=bias, c=c, beta=0.5, activation=activation),
        lambda a, b, bias, c: ref_gemm(a, b, bias, c, 1.0, 0.5, activation),
        leaves, dtype, what="gemm k0")


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layout", ["row", "col", "expand_a", "expand_b"])
def test_bmm_grad(device, dtype, layout):
    B, m, n, k = 3, 13, 9, 21
    if layout == "expand_a":
        leaves = [make((1, m, k), dtype, device, requires_grad=True),
                  make((B, k, n), dtype, device, requires_grad=True)]
        fn = lambda a, b: (a.expand(B, m, k), b)  # noqa: E731
    elif layout == "expand_b":
        leaves = [make((B, m, k), dtype, device, "col", requires_grad=True),
                  make((1, k, n), dtype, device, requires_grad=True)]
        fn = lambda a, b: (a, b.expand(B, k, n))  # noqa: E731
    else:
        leaves = [make((B, m, k), dtype, device, layout, requires_grad=True),
                  make((B, k, n), dtype, device, layout, requires_grad=True)]
        fn = lambda a, b: (a, b)  # noqa: E731
    compare_grads(lambda a, b: cg.bmm(*fn(a, b)), lambda a, b: ref_bmm(*fn(a, b)),
                  leaves, dtype, what=f"bmm {layout}")


# --------------------------------------------------------------------------------------
# grouped_mm: every layout, empty groups, rows past the end, bias + activation
# --------------------------------------------------------------------------------------

SIZES = [3, 0, 6, 1, 0]   # empty first-middle-last groups, odd sizes
T, K_, N_, M_ = 14, 11, 7, 5  # T > sum(SIZES): rows/cols past offs[-1]


def _grouped_leaves(layout, dtype, device, with_bias=True):
    G = len(SIZES)
    mk = lambda *s, lay="row": make(s, dtype, device, lay, requires_grad=True)  # noqa: E731
    if layout == "2d3d":
        leaves = [mk(T, K_, lay="col"), mk(G, K_, N_)]
        bias = mk(G, N_)
    elif layout == "3d2d":
        leaves = [mk(G, M_, K_), mk(K_, T, lay="padded")]
        bias = mk(T)
    elif layout == "2d2d":
        leaves = [mk(M_, T, lay="col"), mk(T, N_)]
        bias = mk(G, N_)
    else:
        leaves = [mk(G, M_, K_), mk(G, K_, N_, lay="col")]
        bias = mk(G, N_)
    if with_bias:
        leaves.append(bias)
    offs = None if layout == "3d3d" else offs_from_sizes(SIZES, device)
    return leaves, offs


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_grouped_mm_grad(device, dtype, layout, activation):
    leaves, offs = _grouped_leaves(layout, dtype, device)
    compare_grads(
        lambda a, b, bias: cg.grouped_mm(a, b, offs, bias=bias, activation=activation),
        lambda a, b, bias: ref_grouped_mm(a, b, offs, bias, activation),
        leaves, dtype, what=f"grouped_mm {layout} {activation}")


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
def test_grouped_mm_grad_no_bias(device, layout):
    dtype = torch.float32
    leaves, offs = _grouped_leaves(layout, dtype, device, with_bias=False)
    compare_grads(lambda a, b: cg.grouped_mm(a, b, offs, activation="gelu"),
                  lambda a, b: ref_grouped_mm(a, b, offs, None, "gelu"),
                  leaves, dtype, what=f"grouped_mm {layout} no bias")


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d"])
def test_grouped_mm_empty_groups_zero_grad(device, layout):
    """Empty groups and the part past offs[-1] get exactly zero gradient."""
    dtype = torch.float32
    leaves, offs = _grouped_leaves(layout, dtype, device)
    a, b, bias = leaves
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="silu")
    ga, gb, gbias = torch.autograd.grad(out, leaves, torch.randn_like(out),
                                        allow_unused=True, materialize_grads=True)
    empty = [g for g, s in enumerate(SIZES) if s == 0]
    end = sum(SIZES)
    if layout == "2d3d":
        for g in empty:
            assert torch.all(gb[g] == 0), f"grad of b[{g}] (empty group) not zero"
            assert torch.all(gbias[g] == 0), f"grad of bias[{g}] (empty group) not zero"
        assert torch.all(ga[end:] == 0), "grad of rows of a past offs[-1] not zero"
    elif layout == "3d2d":
        for g in empty:
            assert torch.all(ga[g] == 0), f"grad of a[{g}] (empty group) not zero"
        assert torch.all(gb[:, end:] == 0), "grad of columns of b past offs[-1] not zero"
        assert torch.all(gbias[end:] == 0), "grad of bias past offs[-1] not zero"
    else:  # 2d2d: the reduction columns past the end get nothing
        assert torch.all(ga[:, end:] == 0), "grad of columns of a past offs[-1] not zero"
        assert torch.all(gb[end:] == 0), "grad of rows of b past offs[-1] not zero"
        # an empty group still has output act(bias[g]): its bias grad is not zero in general
    for g in (ga, gb, gbias):
        assert torch.isfinite(g).all()


# --------------------------------------------------------------------------------------
# grouped_gemm
# --------------------------------------------------------------------------------------

GG_SHAPES = [(5, 3, 4), (1, 9, 17), (12, 2, 1), (0, 3, 2), (4, 5, 0)]


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_grouped_gemm_grad(device, dtype, activation):
    P = len(GG_SHAPES)
    a = [make((m, k), dtype, device, "col" if i % 2 else "row", requires_grad=True)
         for i, (m, n, k) in enumerate(GG_SHAPES)]
    b = [make((k, n), dtype, device, requires_grad=True) for (m, n, k) in GG_SHAPES]
    bias = [make((n,), dtype, device, requires_grad=True) for (m, n, k) in GG_SHAPES]
    leaves = a + b + bias

    def unpack(xs):
        return list(xs[:P]), list(xs[P:2 * P]), list(xs[2 * P:])

    compare_grads(
        lambda *xs: cg.grouped_gemm(*unpack(xs)[:2], bias=unpack(xs)[2], activation=activation),
        lambda *xs: ref_grouped_gemm(*unpack(xs)[:2], unpack(xs)[2], activation),
        leaves, dtype, what=f"grouped_gemm {activation}")


def test_grouped_gemm_grad_no_bias_partial_requires_grad(device):
    """Only some inputs require grad (e.g. frozen weights)."""
    dtype = torch.float32
    a = [make((6, 4), dtype, device, requires_grad=True), make((3, 5), dtype, device,
                                                              requires_grad=True)]
    b = [make((4, 2), dtype, device), make((5, 7), dtype, device)]
    outs = cg.grouped_gemm(a, b, activation="relu")
    gs = [torch.randn_like(o) for o in outs]
    grads = torch.autograd.grad(outs, a, gs)
    a64 = [x.detach().double().requires_grad_() for x in a]
    refs = ref_grouped_gemm(a64, b, None, "relu")
    ref_grads = torch.autograd.grad(refs, a64, [g.double() for g in gs])
    for g, r in zip(grads, ref_grads):
        check(g, r, dtype, contiguous=False)


@pytest.mark.parametrize("path", ["wrapper", "op"])
def test_grouped_gemm_graph_only_when_needed(device, path):
    """No input requiring grad, or grad mode off: the call runs below autograd (no graph node,
    the same values); one input requiring grad: a graph through every problem. Both through
    cg.grouped_gemm and through torch.ops.gemm.grouped_gemm (its autograd kernel)."""
    dtype = torch.float32
    a = [make((6, 4), dtype, device), make((3, 5), dtype, device)]
    b = [make((4, 2), dtype, device), make((5, 7), dtype, device)]
    call = cg.grouped_gemm if path == "wrapper" else torch.ops.gemm.grouped_gemm
    plain = call(a, b)
    assert all(o.grad_fn is None and not o.requires_grad for o in plain)
    refs = ref_grouped_gemm(a, b, None, "none")
    for o, r in zip(plain, refs):
        check(o, r, dtype)
    b[1].requires_grad_()
    with torch.no_grad():
        assert all(o.grad_fn is None for o in call(a, b))
    outs = call(a, b)
    assert all(o.requires_grad for o in outs)
    (gb,) = torch.autograd.grad(outs[1].sum(), [b[1]])
    check(gb, a[1].double().t() @ torch.ones(3, 7, dtype=torch.float64, device=device), dtype)
    for o, p in zip(outs, plain):
        assert torch.equal(o.detach(), p)


# --------------------------------------------------------------------------------------
# the shared samples: grads versus the reference
# --------------------------------------------------------------------------------------

def test_samples_grad(device):
    dtype = torch.float64
    for s in sample_inputs(device, dtype=dtype, requires_grad=True):
        flat, rebuild = _flatten_args(s.args, s.kwargs)
        leaves = [x for x in flat if isinstance(x, torch.Tensor) and x.requires_grad]

        def run(fn, *ls, flat=flat, rebuild=rebuild, leaves=leaves):
            subst = dict(zip(map(id, leaves), ls))
            args, kwargs = rebuild([subst.get(id(x), x) for x in flat])
            return fn(*args, **kwargs)

        compare_grads(lambda *ls: run(s.op, *ls), lambda *ls: run(s.ref, *ls), leaves, dtype,
                      what=s.name)


def _flatten_args(args, kwargs):
    """Flatten tensors in (args, kwargs) including lists; return (flat, rebuild)."""
    flat, spec = [], []
    items = list(args) + [kwargs[k] for k in kwargs]
    for x in items:
        if isinstance(x, (list, tuple)):
            spec.append(("list", len(x)))
            flat.extend(x)
        else:
            spec.append(("one", 1))
            flat.append(x)
    keys, nargs = list(kwargs), len(args)

    def rebuild(new_flat):
        out, i = [], 0
        for kind, n in spec:
            if kind == "list":
                out.append(list(new_flat[i:i + n]))
            else:
                out.append(new_flat[i])
            i += n
        return tuple(out[:nargs]), dict(zip(keys, out[nargs:]))

    return flat, rebuild


# --------------------------------------------------------------------------------------
# gradcheck (float64, small)
# --------------------------------------------------------------------------------------

def _gc(fn, inputs):
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_gradcheck_mm(device):
    a = make((3, 4), torch.float64, device, "col", requires_grad=True)
    b = make((4, 5), torch.float64, device, requires_grad=True)
    _gc(cg.mm, (a, b))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gradcheck_gemm(device, activation):
    d = torch.float64
    a = make((3, 4), d, device, requires_grad=True)
    b = make((4, 5), d, device, "col", requires_grad=True)
    bias = make((5,), d, device, requires_grad=True)
    c = make((3, 5), d, device, "padded", requires_grad=True)
    _gc(lambda a, b, bias, c: cg.gemm(a, b, bias=bias, c=c, alpha=0.7, beta=-1.3,
                                      activation=activation), (a, b, bias, c))


def test_gradcheck_bmm(device):
    d = torch.float64
    a = make((2, 3, 4), d, device, requires_grad=True)
    b = make((1, 4, 2), d, device, requires_grad=True)
    _gc(lambda a, b: cg.bmm(a, b.expand(2, 4, 2)), (a, b))


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
@pytest.mark.parametrize("activation", ["gelu_tanh", "relu"])
def test_gradcheck_grouped_mm(device, layout, activation):
    d = torch.float64
    G = 3
    sizes = [2, 0, 3]
    offs = None if layout == "3d3d" else offs_from_sizes(sizes, device)
    Tg = 6  # one row/column past the end
    mk = lambda *s: make(s, d, device, requires_grad=True)  # noqa: E731
    if layout == "2d3d":
        ins = (mk(Tg, 3), mk(G, 3, 2), mk(G, 2))
    elif layout == "3d2d":
        ins = (mk(G, 2, 3), mk(3, Tg), mk(Tg))
    elif layout == "2d2d":
        ins = (mk(2, Tg), mk(Tg, 3), mk(G, 3))
    else:
        ins = (mk(G, 2, 3), mk(G, 3, 2), mk(G, 2))
    _gc(lambda a, b, bias: cg.grouped_mm(a, b, offs, bias=bias, activation=activation), ins)


def test_gradcheck_grouped_gemm(device):
    d = torch.float64
    mk = lambda *s: make(s, d, device, requires_grad=True)  # noqa: E731
    ins = (mk(2, 3), mk(4, 1), mk(3, 2), mk(1, 3), mk(2), mk(3))
    _gc(lambda a0, a1, b0, b1, c0, c1: tuple(
        cg.grouped_gemm([a0, a1], [b0, b1], bias=[c0, c1], activation="silu")), ins)
