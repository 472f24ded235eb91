"""Real model code we did not write (Hugging Face transformers, tiny configs, random weights,
no downloads): a Llama-style language model and a Mixtral-style Mixture-of-Experts model run
under enable() and with replace_linear, against stock PyTorch. On the CPU the routing goes
through the reference ops (dropin.ROUTE_CPU); the GPU suite runs the same on CUDA."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import cutorch_gemm as cg
from cutorch_gemm import dropin
from conftest import DEVICES, GemmOpLog  # "cpu", and "cuda" marked gpu (skipped without one)

transformers = pytest.importorskip("transformers")


def tiny_llama():
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg)


def tiny_mixtral():
    cfg = transformers.MixtralConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, max_position_embeddings=64)
    return transformers.MixtralForCausalLM(cfg)


MODELS = {"llama": tiny_llama, "mixtral": tiny_mixtral}


@pytest.fixture
def route_cpu(monkeypatch):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)




@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_enable_matches_stock(route_cpu, name, device):
    torch.manual_seed(0)
    model = MODELS[name]().to(device).eval()
    ids = torch.randint(0, 128, (2, 16), device=device)
    with torch.no_grad():
        ref = model(ids).logits
        with GemmOpLog() as log, cg.enable():
            out = model(ids).logits
    assert log.calls, "enable() routed nothing to cutorch_gemm"
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("fuse", [False, True], ids=["plain", "fused"])
def test_replace_linear_matches_stock_and_trains(route_cpu, monkeypatch, name, device, fuse):
    """fused: fuse_activations=True turns the Llama MLPs into fused gated MLPs (nn.GatedMLP's
    path: gate and up as one GEMM, SwiGLU in one pass); Mixtral's experts (w1 / w2 / w3) stay."""
    from cutorch_gemm import nn as cgnn
    torch.manual_seed(0)
    stock = MODELS[name]().to(device)
    ours = copy.deepcopy(stock)
    n_linear = sum(type(m) is torch.nn.Linear for m in stock.modules())
    assert cg.nn.replace_linear(ours, fuse_activations=fuse) == n_linear > 0
    gated = [m for m in ours.modules() if isinstance(m, cgnn._GatedMLPMixin)]
    assert len(gated) == (2 if fuse and name == "llama" else 0)
    calls = []
    real = cgnn._GatedMLPFunction.apply
    monkeypatch.setattr(cgnn._GatedMLPFunction, "apply", lambda *a: calls.append(1) or real(*a))
    ids = torch.randint(0, 128, (2, 16), device=device)
    labels = torch.randint(0, 128, (2, 16), device=device)
    out_s = stock(ids, labels=labels)
    out_o = ours(ids, labels=labels)
    assert len(calls) == len(gated)
    torch.testing.assert_close(out_o.logits, out_s.logits, rtol=1e-4, atol=1e-4)
    out_s.loss.backward()
    out_o.loss.backward()
    for (ns, ps), (no, po) in zip(stock.named_parameters(), ours.named_parameters()):
        assert ns == no
        if ps.grad is None:
            assert po.grad is None
            continue
        torch.testing.assert_close(po.grad, ps.grad, rtol=1e-3, atol=1e-5, msg=f"grad of {ns}")


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_logits_within_bounds(route_cpu, device):
    torch.manual_seed(0)
    stock = tiny_llama().to(device=device, dtype=torch.bfloat16).eval()
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours)
    ids = torch.randint(0, 128, (2, 16), device=device)
    with torch.no_grad():
        ref, out = stock(ids).logits.float(), ours(ids).logits.float()
    assert ((out - ref).norm() / ref.norm()) < 2e-2


# --------------------------------------------------------------------------------------------
# torch.compile, CUDA graphs, enable() inside compiled code
# --------------------------------------------------------------------------------------------

def recording_backend(inner: str):
    """A torch.compile backend that records the call targets of each Dynamo graph, then hands
    the graph to `inner` ("inductor", "aot_eager")."""
    targets = []

    def backend(gm, example_inputs):
        targets.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return torch._dynamo.lookup_backend(inner)(gm, example_inputs)
    return backend, targets


def decoder_layer_and_inputs(device):
    """The tiny Llama's first decoder layer (attention + MLP) after replace_linear, an input
    that requires grad and the rotary position embeddings the layer takes."""
    model = tiny_llama().to(device)
    cg.nn.replace_linear(model)
    layer = model.model.layers[0]
    x = torch.randn(2, 16, 64, device=device, requires_grad=True)
    pos = torch.arange(16, device=device)[None].expand(2, 16)
    return layer, x, model.model.rotary_emb(x, pos)


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_decoder_layer_matches_eager(route_cpu, fresh_dynamo, device):
    """torch.compile(fullgraph=True) with Inductor (5-12 s on a 2-core CPU) over a
    transformer block whose projections are cutorch_gemm.nn.Linear: forward and gradients."""
    torch.manual_seed(0)
    layer, x, pos_emb = decoder_layer_and_inputs(device)

    def block(h):
        out = layer(h, position_embeddings=pos_emb)
        return out[0] if isinstance(out, tuple) else out

    backend, targets = recording_backend("inductor")
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    out_c = compiled(x)
    assert any(t.startswith("gemm.") for t in targets), f"no cutorch_gemm op in the graph: {targets}"
    out_e = block(x)
    g = torch.randn_like(out_e)
    grads_c = torch.autograd.grad(out_c, [x, *layer.parameters()], g)
    grads_e = torch.autograd.grad(out_e, [x, *layer.parameters()], g)
    torch.testing.assert_close(out_c, out_e, rtol=1e-4, atol=1e-4)
    for (name, _), gc, ge in zip([("x", None), *layer.named_parameters()], grads_c, grads_e):
        torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-4, msg=lambda m, n=name: f"grad of {n}: {m}")


def _mlp_fn(u, w1, w2):
    return F.linear(torch.relu(F.linear(u, w1)), w2) @ w2   # two F.linear, then a matmul


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pattern", ["enable_outside", "enable_inside", "decorated"])
def test_enable_under_compile_fullgraph(route_cpu, fresh_dynamo, device, pattern):
    """enable() and torch.compile(fullgraph=True) in every order (see enable.py): Dynamo traces
    the mode, so the graph holds torch.ops.gemm.*; forward and backward match eager PyTorch."""
    x = torch.randn(6, 8, device=device, requires_grad=True)
    w1, w2 = torch.randn(16, 8, device=device), torch.randn(8, 16, device=device)
    if pattern == "enable_outside":
        fn = _mlp_fn
    elif pattern == "enable_inside":
        def fn(u, a, b):
            with cg.enable():
                return _mlp_fn(u, a, b)
    else:
        fn = cg.enable()(_mlp_fn)
    backend, targets = recording_backend("aot_eager" if device == "cpu" else "inductor")
    compiled = torch.compile(fn, fullgraph=True, backend=backend)
    if pattern == "enable_outside":
        with cg.enable():
            out = compiled(x, w1, w2)
    else:
        out = compiled(x, w1, w2)
    assert sum(t.startswith("gemm.") for t in targets) == 3, targets
    ref = _mlp_fn(x, w1, w2)
    g = torch.randn_like(ref)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(torch.autograd.grad(out, x, g)[0], torch.autograd.grad(ref, x, g)[0],
                               rtol=1e-4, atol=1e-4)


def test_compiled_fn_guards_on_enable(route_cpu, fresh_dynamo):
    """One compiled function called outside, inside and again outside enable(): two graphs (the
    stock one is reused for the third call), never the other mode's graph."""
    backend, targets = recording_backend("aot_eager")
    compiled = torch.compile(lambda u, v: u @ v, fullgraph=True, backend=backend)
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    compiled(a, b)
    assert not any(t.startswith("gemm.") for t in targets)
    n = len(targets)
    with cg.enable():
        torch.testing.assert_close(compiled(a, b), a @ b)
    assert any(t.startswith("gemm.") for t in targets[n:])
    n = len(targets)
    torch.testing.assert_close(compiled(a, b), a @ b)
    assert len(targets) == n, "recompiled for the stock path"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_cuda_graph_replace_linear_and_enable(dtype):
    """Capture a replace_linear'ed Llama MLP forward and an enable()-routed matmul in one
    CUDA graph, replay on new data written into the static inputs, compare with eager stock."""
    torch.manual_seed(0)
    stock = tiny_llama().model.layers[0].mlp.to("cuda", dtype)
    ours = copy.deepcopy(stock)
    assert cg.nn.replace_linear(ours) == 3
    x = torch.randn(32, 64, device="cuda", dtype=dtype)
    a, b = torch.randn(32, 64, device="cuda", dtype=dtype), torch.randn(64, 48, device="cuda", dtype=dtype)

    def work():
        with cg.enable():
            return ours(x), a @ b

    with torch.no_grad():
        side = torch.cuda.Stream()   # warm up off the capture stream, as torch.cuda.graphs asks
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                work()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with GemmOpLog() as log, torch.cuda.graph(graph):
            y, z = work()
        assert len(log.calls) >= 4, f"the capture did not go through cutorch_gemm: {log.names}"
        bound = 2e-2 if dtype == torch.bfloat16 else 1e-4
        for _ in range(3):
            x.copy_(torch.randn_like(x))
            a.copy_(torch.randn_like(a))
            b.copy_(torch.randn_like(b))
            graph.replay()
            torch.cuda.synchronize()
            ref_y, ref_z = stock(x).float(), (a.double() @ b.double()).float()
            assert ((y.float() - ref_y).norm() / ref_y.norm()) < bound
            assert ((z.float() - ref_z).norm() / ref_z.norm()) < bound
