"""Real model code we did not write (Hugging Face transformers, tiny configs, random weights,
no downloads): a Llama-style language model and a Mixtral-style Mixture-of-Experts model run
under enable() and with replace_linear, against stock PyTorch. On the CPU the routing goes
through the reference ops (dropin.ROUTE_CPU); the GPU suite runs the same on CUDA."""
from __future__ import annotations

import copy

import pytest
import torch

import cutorch_gemm as cg
from cutorch_gemm import dropin

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
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture
def route_cpu(monkeypatch):
    monkeypatch.setattr(dropin, "ROUTE_CPU", True)


def count_calls(monkeypatch):
    calls = {"n": 0}
    for name in ("mm", "gemm", "bmm"):
        real = getattr(cg.ops, name)

        def wrapped(*a, _real=real, **k):
            calls["n"] += 1
            return _real(*a, **k)
        monkeypatch.setattr(cg.ops, name, wrapped)
    return calls


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_enable_matches_stock(route_cpu, monkeypatch, name, device):
    torch.manual_seed(0)
    model = MODELS[name]().to(device).eval()
    ids = torch.randint(0, 128, (2, 16), device=device)
    with torch.no_grad():
        ref = model(ids).logits
        calls = count_calls(monkeypatch)
        with cg.enable():
            out = model(ids).logits
    assert calls["n"] > 0, "enable() routed nothing to cutorch_gemm"
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_replace_linear_matches_stock_and_trains(route_cpu, name, device):
    torch.manual_seed(0)
    stock = MODELS[name]().to(device)
    ours = copy.deepcopy(stock)
    n_linear = sum(type(m) is torch.nn.Linear for m in stock.modules())
    assert cg.nn.replace_linear(ours) == n_linear > 0
    ids = torch.randint(0, 128, (2, 16), device=device)
    labels = torch.randint(0, 128, (2, 16), device=device)
    out_s = stock(ids, labels=labels)
    out_o = ours(ids, labels=labels)
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
