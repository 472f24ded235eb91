"""torch.compile(fullgraph=True, dynamic=True) over every op: same results as eager, forward
and backward, and no recompilation when the sizes change. One compiled function per
device (compiling is slow on a small CPU)."""
from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing

import cutorch_gemm as cg
from conftest import DEVICES, make, offs_from_sizes


@pytest.fixture(autouse=True)
def _reset_dynamo(fresh_dynamo):
    yield


def every_op(a, b, bias, c, a3, b3, x, w, wbias, offs, p0, p1, q0, q1):
    y_mm = cg.mm(a, b)
    y_gemm = cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=1.5, activation="gelu")
    y_bmm = cg.bmm(a3, b3)
    y_grp = cg.grouped_mm(x, w, offs, bias=wbias, activation="silu")
    y_list = cg.grouped_gemm([p0, p1], [q0, q1], activation="relu")
    return (y_mm, y_gemm, y_bmm, y_grp, y_list[0], y_list[1])


def _inputs(device, M, N, K, B, T, sizes, dtype=torch.float32):
    G = len(sizes)

    def t(*shape, layout="row"):
        return make(shape, dtype, device, layout, requires_grad=True)

    return [t(M, K), t(K, N, layout="col"), t(N), t(M, N),
            t(B, M, K), t(B, K, N),
            t(T, K), t(G, K, N), t(G, N), offs_from_sizes(sizes, device),
            t(M + 2, K), t(M, K + 3), t(K, N), t(K + 3, N + 1)]


def _forward_backward(fn, inputs):
    outs = fn(*inputs)
    leaves = [x for x in inputs if x.requires_grad]
    torch.manual_seed(1234)  # identical upstream grads for eager and compiled
    gs = [torch.randn_like(o) for o in outs]
    grads = torch.autograd.grad(outs, leaves, gs, allow_unused=True, materialize_grads=True)
    return [o.detach() for o in outs], [g.detach() for g in grads]


@pytest.mark.parametrize("device", DEVICES)
def test_compile_every_op(device):
    cnt = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(every_op, backend=cnt, fullgraph=True, dynamic=True)

    # two calls with different sizes: none 0 or 1 (dynamo specializes those) and, within a
    # call, no two dims equal (duck sizing would tie them and the next call would recompile)
    for (M, N, K, B, T, sizes) in [(9, 6, 5, 4, 13, [4, 0, 6]), (12, 10, 15, 5, 17, [2, 9, 5])]:
        inputs = _inputs(device, M, N, K, B, T, sizes)
        out_c, grad_c = _forward_backward(compiled, inputs)
        out_e, grad_e = _forward_backward(every_op, inputs)
        for i, (o_c, o_e) in enumerate(zip(out_c, out_e)):
            assert o_c.shape == o_e.shape and o_c.dtype == o_e.dtype, f"output {i}"
            torch.testing.assert_close(o_c, o_e, rtol=1e-5, atol=1e-5,
                                       msg=lambda m, i=i: f"output {i}: {m}")
        for i, (g_c, g_e) in enumerate(zip(grad_c, grad_e)):
            torch.testing.assert_close(g_c, g_e, rtol=1e-5, atol=1e-5,
                                       msg=lambda m, i=i: f"grad {i}: {m}")
        # rows past offs[-1] are zero in the compiled result too
        assert torch.all(out_c[3][sum(sizes):] == 0)

    assert cnt.frame_count == 1, f"recompiled: {cnt.frame_count} frames for dynamic=True"
