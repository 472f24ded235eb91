"""torch.export (and torch.jit.trace) of models on our layers: the exported graph calls torch.ops.gemm.* (the drop-in
layers used to see export's FakeTensors as a "tensor subclass" and fall back to aten.linear),
with a dynamic batch dimension, and survives torch.export.save / load."""
from __future__ import annotations

import io

import pytest
import torch

import cutorch_gemm as cg
from cutorch_gemm import dropin
from conftest import DEVICES

pytestmark = pytest.mark.parametrize("device", DEVICES)


class _Net(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.l1 = cg.nn.Linear(8, 16, activation="gelu", device=device)
        self.mlp = cg.nn.GatedMLP(16, 24, device=device)
        self.l2 = torch.nn.Linear(16, 4, device=device)  # converted by replace_linear below

    def forward(self, x):
        return cg.matmul(self.l2(self.mlp(self.l1(x))), torch.ones(4, 3, device=x.device))


def _targets(ep):
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def test_export_uses_the_ops(device, monkeypatch):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    net = _Net(device)
    cg.nn.replace_linear(net)
    x = torch.randn(5, 8, device=device)
    with torch.no_grad():
        ep = torch.export.export(net, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    targets = _targets(ep)
    assert "aten.linear.default" not in targets and "aten.mm.default" not in targets, targets
    # five linears (l1, GatedMLP's three, l2: gemm, or mm without bias) and the matmul (mm)
    assert targets.count("gemm.gemm.default") + targets.count("gemm.mm.default") >= 6, targets
    assert "aten.gelu.default" not in targets, targets  # l1's GELU stays in the GEMM epilogue (no grad)
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    loaded = torch.export.load(buf)
    x2 = torch.randn(11, 8, device=device)  # another batch size than the traced one
    with torch.no_grad():
        torch.testing.assert_close(loaded.module()(x2), net(x2), rtol=1e-5, atol=1e-5)


def test_subclasses_still_fall_back(device, monkeypatch):
    """A user's tensor subclass still goes to PyTorch (only export's stand-ins are let through)."""
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)

    class Tagged(torch.Tensor):
        pass

    x = torch.randn(3, 8, device=device).as_subclass(Tagged)
    assert dropin.route_linear(x, torch.randn(4, 8, device=device)) == "torch: tensor subclass"


def test_jit_trace(device, monkeypatch):
    """torch.jit.trace of our layers passes its own check run (the fused activation does not
    depend on the grad mode while tracing) and the traced module computes and trains the same."""
    import warnings
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)
    net = torch.nn.Sequential(cg.nn.Linear(8, 16, activation="gelu", device=device), cg.nn.Linear(16, 4, device=device))
    x = torch.randn(5, 8, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch.jit is deprecated)
        traced = torch.jit.trace(net, x)
    assert "gemm::gemm" in str(traced.inlined_graph)
    x2 = torch.randn(5, 8, device=device)
    torch.testing.assert_close(traced(x2), net(x2), rtol=1e-5, atol=1e-5)
    traced(x2).square().sum().backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    ref = torch.nn.functional.linear(torch.nn.functional.gelu(torch.nn.functional.linear(x2, net[0].weight, net[0].bias)),
                                     net[1].weight, net[1].bias)
    ref.square().sum().backward()
    for g, p in zip(grads, net.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
