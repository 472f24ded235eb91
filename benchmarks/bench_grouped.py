"""Grouped-GEMM benchmark: cutorch_gemm.grouped_mm against torch._grouped_mm and a loop of
torch.mm over the MoE shape set of ANCHORS.md, in one run on one GPU, plus the GroupedExperts
layer forward+backward against the same layer written with torch._grouped_mm.

Cases (experts E, routed rows T, K -> N), bf16, weights (E, N, K) contiguous used as
w.transpose(1, 2) (K-major, the nn.Linear layout); routing skewed (expert e gets weight
u^2 + 0.05), uniform, or with empty experts; counts rounded to 16 rows. Forms:
    fwd  2D x 3D: x (T, K) @ w[e] per expert group -> (T, N)
    dW   2D x 2D: x^T (K, T) @ dy (T, N) per group -> (E, K, N)
plus whole GroupedExperts layers (forward + backward, skewed top-k routing) against the same
layer written with torch._grouped_mm.

Usage:
    python benchmarks/bench_grouped.py [--quick] [--out results]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_gemm import time_interleaved, write_csv  # noqa: E402

# (name, experts, routed rows, K, N, in quick set)
CASES = (
    ("mixtral_up", 8, 16384, 4096, 14336, True),
    ("mixtral_down", 8, 16384, 14336, 4096, False),
    ("qwen3_30b_a3b_up", 128, 32768, 2048, 1536, True),
    ("qwen3_30b_a3b_down", 128, 32768, 768, 2048, False),
    ("deepseek_v3_rank_up", 32, 32768, 7168, 4096, False),
    ("olmoe_up", 64, 16384, 2048, 2048, False),
    ("small_64x1024", 64, 4096, 1024, 1024, True),
)
ROUTINGS = ("skewed", "uniform", "empty")


def group_sizes(experts: int, rows: int, routing: str, gen: torch.Generator) -> list:
    """Rows per expert, multiples of 16 summing to `rows` (ANCHORS.md's routing)."""
    if routing == "uniform":
        w = torch.ones(experts)
    else:
        w = torch.rand(experts, generator=gen) ** 2 + 0.05
        if routing == "empty":
            w[torch.randperm(experts, generator=gen)[: max(1, experts // 8)]] = 0
    units = rows // 16
    counts = torch.floor(w / w.sum() * units).long()
    counts[torch.argmax(w)] += units - int(counts.sum())
    return (counts * 16).tolist()


def torch_grouped(a, b, offs):
    return torch._grouped_mm(a, b, offs=offs)


def run_case(cg, name, E, T, K, N, routing, form, device, gen) -> dict:
    sizes = group_sizes(E, T, routing, gen)
    offs = torch.tensor(sizes, device=device).cumsum(0).to(torch.int32)
    dt = torch.bfloat16
    if form == "fwd":
        a = torch.randn(T, K, device=device, dtype=dt)
        b = torch.randn(E, N, K, device=device, dtype=dt).transpose(1, 2)
        flops = 2 * T * K * N
    elif form == "swiglu":  # up-projection with [gate | up] weights laid out like GroupedExperts'
        a = torch.randn(T, K, device=device, dtype=dt)
        b = torch.randn(E, K, 2 * N, device=device, dtype=dt) * K ** -0.5
        flops = 2 * T * K * 2 * N
    else:
        a = torch.randn(T, K, device=device, dtype=dt).t()  # x^T (K, T)
        b = torch.randn(T, N, device=device, dtype=dt)       # dy (T, N)
        flops = 2 * T * K * N
    ours = lambda: cg.grouped_mm(a, b, offs)  # noqa: E731
    ref = lambda: torch_grouped(a, b, offs)  # noqa: E731
    if form == "swiglu":
        def ours():
            return cg.grouped_mm(a, b, offs, activation="swiglu")

        def ref():
            h = torch_grouped(a, b, offs)
            return torch.nn.functional.silu(h[:, :N]) * h[:, N:]

    def loop():
        start = 0
        for e, s in enumerate(sizes):
            if form == "fwd":
                torch.mm(a[start:start + s], b[e])
            elif form == "swiglu":  # (the loop's SwiGLU too: the same work as ours and ref)
                h = torch.mm(a[start:start + s], b[e])
                torch.nn.functional.silu(h[:, :N]) * h[:, N:]
            else:
                torch.mm(a[:, start:start + s], b[start:start + s])
            start += s

    got, expect = ours(), ref()
    live = slice(0, int(offs[-1])) if form in ("fwd", "swiglu") else slice(None)
    err = float((got[live].float() - expect[live].float()).norm() / expect[live].float().norm().clamp_min(1e-30))
    t = time_interleaved({"ours": ours, "ref": ref, "loop": loop})
    t_ours, t_ref, t_loop = t["ours"], t["ref"], t["loop"]
    return dict(case=name, routing=routing, form=form, E=E, T=T, K=K, N=N, ours_ms=t_ours,
                torch_ms=t_ref, loop_ms=t_loop, ours_tflops=flops / t_ours / 1e9,
                torch_tflops=flops / t_ref / 1e9, ratio=t_ref / t_ours, ratio_loop=t_loop / t_ours,
                rel_err=err, ok=err < 2e-2,
                config=cg.explain("grouped_mm", a, b, offs, activation="swiglu" if form == "swiglu" else "none").config)


def expert_lists(sizes, E, T, K, N, device="cuda", dtype=torch.bfloat16):
    """The list API's operands for experts' problems: x (T, K) and w (E, N, K), then a = the x row slices of
    each expert (`sizes` rows each, in order) and b = the W_e.t() views."""
    x = torch.randn(T, K, device=device, dtype=dtype)
    w = torch.randn(E, N, K, device=device, dtype=dtype)
    starts = [sum(sizes[:e]) for e in range(E)]
    return x, w, [x[s:s + n] for s, n in zip(starts, sizes)], [w[e].t() for e in range(E)]


def run_list_case(cg, name, E, T, K, N, routing, device, gen) -> dict:
    """grouped_gemm's list API on the same expert problems (each its own tensors: x slices and
    W_e.t() views) against a loop of torch.mm. On sm90, small problems take the pointer-array
    launch, and problems that fill the GPU one launch each (explain says which)."""
    sizes = group_sizes(E, T, routing, gen)
    _, _, a, b = expert_lists(sizes, E, T, K, N, device)

    def ours():
        return cg.grouped_gemm(a, b)

    def loop():
        return [torch.mm(ai, bi) for ai, bi in zip(a, b)]
    got, expect = ours(), loop()
    num = sum(float((g.float() - r.float()).norm()) ** 2 for g, r in zip(got, expect)) ** 0.5
    den = sum(float(r.float().norm()) ** 2 for r in expect) ** 0.5
    err = num / max(den, 1e-30)
    t = time_interleaved({"ours": ours, "loop": loop})
    t_ours, t_loop = t["ours"], t["loop"]
    flops = 2 * T * K * N
    return dict(case=name, routing=routing, form="list", E=E, T=T, K=K, N=N, ours_ms=t_ours, torch_ms=float("nan"),
                loop_ms=t_loop, ours_tflops=flops / t_ours / 1e9, torch_tflops=float("nan"), ratio=float("nan"),
                ratio_loop=t_loop / t_ours, rel_err=err, ok=err < 2e-2,
                config=cg.explain("grouped_gemm", a, b).config)


# GroupedExperts layers (name, experts E, top-k, hidden H, intermediate F, tokens T)
LAYERS = (
    ("qwen3_30b_a3b_moe", 128, 8, 2048, 768, 4096),
    ("mixtral_moe", 8, 2, 4096, 14336, 4096),
)


def torch_layer_forward(layer, x, expert_idx, expert_weights):
    """GroupedExperts.forward with torch._grouped_mm in place of ours (same routing code)."""
    from cutorch_gemm.nn import route_by_expert

    E, H, Fi = layer.num_experts, layer.hidden_size, layer.intermediate_size
    T = expert_idx.shape[0]
    order, token_of, offs = route_by_expert(expert_idx, E)
    h = torch._grouped_mm(x[token_of], layer.w_gate_up, offs=offs)
    act = torch.nn.functional.silu(h[:, :Fi]) * h[:, Fi:]
    y = torch._grouped_mm(act, layer.w_down, offs=offs)
    y = y * expert_weights.reshape(-1)[order].to(y.dtype).unsqueeze(1)
    return torch.zeros(T, H, dtype=y.dtype, device=y.device).index_add_(0, token_of, y)


def make_layer(cg, E, k, H, Fi, T, gen, dtype=torch.bfloat16, device="cuda"):
    """A GroupedExperts layer and one batch routed top-k with skewed expert popularity:
    (layer, x, expert_idx, expert_weights, dy), x requiring grad, dy the upstream gradient."""
    layer = cg.nn.GroupedExperts(E, H, Fi, device=device, dtype=dtype)
    layer.validate = False  # the range check reads expert_idx on the host
    x = torch.randn(T, H, device=device, dtype=dtype, requires_grad=True)
    prob = torch.rand(E, generator=gen) ** 2 + 0.05
    idx = torch.multinomial(prob.expand(T, E), k, replacement=False, generator=gen).to(device)
    wts = torch.softmax(torch.randn(T, k, device=device), -1).to(dtype)
    dy = torch.randn(T, H, device=device, dtype=dtype)
    return layer, x, idx, wts, dy


def layer_step(layer, x, idx, wts, dy, fwd):
    """A no-argument callable: clear the gradients, run fwd(layer, x, idx, wts) forward and
    backward (upstream gradient dy); returns the forward's output."""
    def go():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        out = fwd(layer, x, idx, wts)
        out.backward(dy)
        return out
    return go


def run_layer(cg, name, E, k, H, Fi, T, gen) -> dict:
    """Forward + backward of cutorch_gemm.nn.GroupedExperts against the same layer on
    torch._grouped_mm (same parameters, same inputs, skewed routing)."""
    layer, x, idx, wts, dy = make_layer(cg, E, k, H, Fi, T, gen)
    ours = layer_step(layer, x, idx, wts, dy, lambda l, a, i, w: l(a, i, w))
    ref = layer_step(layer, x, idx, wts, dy, torch_layer_forward)
    ours()
    g_ours = [t.grad.float().clone() for t in (x, layer.w_gate_up, layer.w_down)]
    ref()
    g_ref = [t.grad.float() for t in (x, layer.w_gate_up, layer.w_down)]
    err = max(float((a - b).norm() / b.norm().clamp_min(1e-30)) for a, b in zip(g_ours, g_ref))
    t = time_interleaved({"ours": ours, "ref": ref})
    t_ours, t_ref = t["ours"], t["ref"]
    flops = 3 * 2 * T * k * H * 3 * Fi  # fwd (gate_up + down) and 2x for backward
    return dict(case=name, routing="skewed", form="layer_fwd_bwd", E=E, T=T * k, K=H, N=Fi, ours_ms=t_ours,
                torch_ms=t_ref, loop_ms=float("nan"), ours_tflops=flops / t_ours / 1e9,
                torch_tflops=flops / t_ref / 1e9, ratio=t_ref / t_ours, ratio_loop=float("nan"), rel_err=err,
                ok=err < 3e-2, config="GroupedExperts")


def run(quick: bool = False, out_dir: str = "results") -> list:
    if not torch.cuda.is_available():
        print("bench_grouped: no CUDA GPU here; nothing measured")
        return []
    import cutorch_gemm as cg

    gen = torch.Generator().manual_seed(0)
    rows = []
    for name, E, T, K, N, in_quick in CASES:
        if quick and not in_quick:
            continue
        for routing in (("skewed",) if quick else ROUTINGS):
            for form in ("fwd", "dW", "swiglu"):
                row = run_case(cg, name, E, T, K, N, routing, form, "cuda", gen)
                rows.append(row)
                print(f"{name:20s} {routing:8s} {form:4s} ours {row['ours_tflops']:7.1f} TF/s  "
                      f"torch {row['torch_tflops']:7.1f}  x{row['ratio']:.3f} vs _grouped_mm  "
                      f"x{row['ratio_loop']:.2f} vs loop  {'ok' if row['ok'] else 'MISMATCH'}  {row['config']}",
                      flush=True)
    for name, E, T, K, N, in_quick in CASES:
        if quick and not in_quick:
            continue
        row = run_list_case(cg, name, E, T, K, N, "skewed", "cuda", gen)
        rows.append(row)
        print(f"{name:20s} skewed   list grouped_gemm {row['ours_tflops']:7.1f} TF/s  x{row['ratio_loop']:.2f} vs "
              f"a torch.mm loop  {'ok' if row['ok'] else 'MISMATCH'}  {row['config']}", flush=True)
    for name, E, k, H, Fi, T in LAYERS:
        if quick and name != LAYERS[0][0]:
            continue
        row = run_layer(cg, name, E, k, H, Fi, T, gen)
        rows.append(row)
        print(f"{name:20s} layer fwd+bwd ours {row['ours_ms']:.3f} ms  torch._grouped_mm layer "
              f"{row['torch_ms']:.3f} ms  x{row['ratio']:.3f}  grad rel err {row['rel_err']:.1e}  "
              f"{'ok' if row['ok'] else 'MISMATCH'}", flush=True)
    os.makedirs(out_dir, exist_ok=True)
    write_csv(rows, os.path.join(out_dir, "bench_grouped.csv"), fields=list(rows[0]) if rows else None)
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="results")
    args = p.parse_args(argv)
    rows = run(args.quick, args.out)
    return 3 if any(not r["ok"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
