"""Model-level benchmark: transformer MLP blocks and MoE layers, forward + backward, with and
without cutorch_gemm, in one run on one GPU.

Cases (bf16 by default; ``--dtype`` picks others):
    llama_swiglu_mlp  down(silu(gate(x)) * up(x)), three nn.Linear without bias, 4096 -> 14336
    gpt_gelu_mlp      Linear(4096, 16384) + GELU(tanh) + Linear(16384, 4096), with bias
        stock    the torch module as written
        ours     a deepcopy converted by ``cutorch_gemm.nn.replace_linear(m, fuse_activations=True)``
                 (the Llama block becomes the fused gated MLP: gate and up as one GEMM, SwiGLU
                 and its backward in one pass each; the GPT block's GELU goes into the first
                 GEMM's epilogue in inference)
        enable   the stock module run inside ``with cutorch_gemm.enable():``
    qwen3_30b_a3b_moe, mixtral_moe  (``LAYERS`` of bench_grouped.py: E experts, top-k, H -> F)
        stock    a per-expert Python loop (``torch.where`` per expert, torch.mm, SwiGLU,
                 index_add_): what an eager model without grouped GEMMs does
        ours     ``cutorch_gemm.nn.GroupedExperts``
        _grouped_mm  the same layer on ``torch._grouped_mm`` (bench_grouped.torch_layer_forward)

One step = clear the gradients, forward, ``backward(dy)`` with a fixed random ``dy``; the
input requires grad. Times are ``bench_gemm.time_interleaved`` medians (CUDA events; the
variants of a case alternate in interleaved rounds after an untimed settling run). Before timing,
every variant's output and its gradients (input and weights) are compared with the stock
one's: ``rel_err`` is the largest ‖ours − stock‖ / ‖stock‖ over them, ``ok`` means within
``bench_gemm.REL_ERR_BOUND`` (2e-2 for bf16).

Usage:
    python -m cutorch_gemm bench --model [--quick] [--dtype bf16] [--out results]
    python benchmarks/bench_model.py [--quick] [--dtype bf16] [--out results]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import bench_grouped  # noqa: E402
from benchmarks.bench_gemm import (REL_ERR_BOUND, SHORT, _fmt, _import_cutorch_gemm,  # noqa: E402
                                   normalize_dtypes, parse_list, time_interleaved, write_csv)

DEVICE = "cuda"   # module constants so that a test can run the cases on a CPU
# The per-round timer of time_interleaved (None: its own time_ms rounds); tests swap in a clock.
TIMER: Optional[Callable[[Callable[[], object]], float]] = None


# --------------------------------------------------------------------------------------------
# The blocks
# --------------------------------------------------------------------------------------------

class SwiGLUMLP(torch.nn.Module):
    """The Llama feed-forward block: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases."""

    def __init__(self, hidden: int, intermediate: int, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.up_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.down_proj = torch.nn.Linear(intermediate, hidden, **kw)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def gelu_mlp(hidden: int, intermediate: int, device=None, dtype=None) -> torch.nn.Sequential:
    """The GPT-2 feed-forward block: Linear + GELU (tanh approximation) + Linear, with biases."""
    kw = dict(device=device, dtype=dtype)
    return torch.nn.Sequential(torch.nn.Linear(hidden, intermediate, **kw),
                               torch.nn.GELU(approximate="tanh"),
                               torch.nn.Linear(intermediate, hidden, **kw))


@dataclass(frozen=True)
class MlpCase:
    name: str
    build: Callable           # build(hidden, intermediate, device=, dtype=) -> nn.Module
    gemms: int                # GEMMs per forward, each tokens x hidden x intermediate
    hidden: int
    intermediate: int
    tokens: int
    quick_tokens: int


MLP_CASES = (
    MlpCase("llama_swiglu_mlp", SwiGLUMLP, 3, 4096, 14336, 8192, 2048),
    MlpCase("gpt_gelu_mlp", gelu_mlp, 2, 4096, 16384, 8192, 2048),
)
MOE_CASES = bench_grouped.LAYERS   # (name, E, top-k, H, F, tokens); quick: the first only


def loop_layer_forward(layer, x, expert_idx, expert_weights):
    """GroupedExperts.forward as eager model code writes it without grouped GEMMs: for each
    expert, its (token, slot) pairs by ``torch.where`` (a host synchronisation per expert), two
    ``torch.mm`` with SwiGLU between them, the routing weight, and an ``index_add_``."""
    Fi = layer.intermediate_size
    out = torch.zeros_like(x)
    for e in range(layer.num_experts):
        tok, slot = torch.where(expert_idx == e)
        if tok.numel() == 0:
            continue
        h = torch.mm(x[tok], layer.w_gate_up[e])
        y = torch.mm(F.silu(h[:, :Fi]) * h[:, Fi:], layer.w_down[e])
        out.index_add_(0, tok, y * expert_weights[tok, slot].to(y.dtype).unsqueeze(1))
    return out


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------

CSV_FIELDS = ("case", "dtype", "shape", "tokens", "stock", "stock_ms", "ours_ms", "enable_ms",
              "grouped_mm_ms", "ratio", "ratio_enable", "ratio_grouped_mm", "ours_tflops",
              "stock_tflops", "rel_err", "ok", "note")
NAN = float("nan")


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 and math.isfinite(num) and math.isfinite(den) else NAN


def _tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12 if ms > 0 and math.isfinite(ms) else NAN


def make_row(case: str, dtype: str, shape: str, tokens: int, flops: float, stock: str,
             stock_ms: float, ours_ms: float, enable_ms: float = NAN,
             grouped_mm_ms: float = NAN, rel_err: float = NAN, note: str = "") -> dict:
    """One result row. ratio = stock_ms / ours_ms (> 1: ours faster); ratio_enable = stock_ms /
    enable_ms; ratio_grouped_mm = grouped_mm_ms / ours_ms. ok: rel_err within the dtype's
    bound (a NaN rel_err, i.e. nothing compared, is not ok)."""
    bound = REL_ERR_BOUND[dtype]
    ok = math.isfinite(rel_err) and rel_err <= bound
    if not ok and not note:
        note = f"rel_err {rel_err:.2e} > {bound:.0e}" if math.isfinite(rel_err) else "not compared"
    return dict(case=case, dtype=dtype, shape=shape, tokens=tokens, stock=stock,
                stock_ms=stock_ms, ours_ms=ours_ms, enable_ms=enable_ms,
                grouped_mm_ms=grouped_mm_ms, ratio=_ratio(stock_ms, ours_ms),
                ratio_enable=_ratio(stock_ms, enable_ms),
                ratio_grouped_mm=_ratio(grouped_mm_ms, ours_ms),
                ours_tflops=_tflops(flops, ours_ms), stock_tflops=_tflops(flops, stock_ms),
                rel_err=rel_err, ok=ok, note=note[:200])


def format_table(rows: Sequence[dict]) -> str:
    """A compact aligned text table of result rows, the legend and any warnings below it."""
    head = ["case", "dtype", "tokens", "stock ms", "ours ms", "ratio", "enable ms", "ratio",
            "_grouped_mm ms", "ratio", "ours TF/s", "rel err", "ok"]
    lines = [[r["case"], SHORT.get(r["dtype"], r["dtype"]), str(r["tokens"]),
              _fmt(r["stock_ms"], ".3f"), _fmt(r["ours_ms"], ".3f"), _fmt(r["ratio"], ".3f"),
              _fmt(r["enable_ms"], ".3f"), _fmt(r["ratio_enable"], ".3f"),
              _fmt(r["grouped_mm_ms"], ".3f"), _fmt(r["ratio_grouped_mm"], ".3f"),
              _fmt(r["ours_tflops"], ".1f"), _fmt(r["rel_err"], ".1e"),
              "ok" if r["ok"] else "WARN"] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in lines]) for i, h in enumerate(head)]
    left = {0, 1, len(head) - 1}

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(c) for c in lines]
    out += ["",
            "forward + backward per step. MLP: stock = the torch module, ours = replace_linear("
            "fuse_activations=True),",
            "  enable = the stock module under cutorch_gemm.enable(). MoE: stock = a per-expert "
            "loop of torch.mm,",
            "  ours = nn.GroupedExperts, _grouped_mm = the same layer on torch._grouped_mm.",
            "ratio = stock ms / ours ms, stock ms / enable ms, _grouped_mm ms / ours ms (> 1: "
            "cutorch_gemm faster);",
            "rel err = largest ||x - stock|| / ||stock|| over the output and the gradients "
            "(input and weights)"]
    notes = [f"  {r['case']} {SHORT.get(r['dtype'], r['dtype'])}: {r['note']}"
             for r in rows if r.get("note")]
    if notes:
        out += ["", "warnings:"] + notes
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------

def _rel_err(got: Sequence[torch.Tensor], ref: Sequence[torch.Tensor]) -> float:
    """The largest ||got - ref|| / ||ref|| over matching tensors (inf for a non-finite one)."""
    worst = 0.0
    for g, r in zip(got, ref):
        g, r = g.float(), r.float()
        err = float(torch.linalg.vector_norm(g - r) / torch.linalg.vector_norm(r).clamp_min(1e-30))
        worst = max(worst, err if math.isfinite(err) else float("inf"))
    return worst


def _capture(step: Callable[[], torch.Tensor], leaves: Sequence[torch.Tensor]) -> list:
    """Runs one step; returns its output and the gradients of `leaves`, copied."""
    out = step()
    return [out.detach().clone()] + [t.grad.detach().clone() for t in leaves]


def _measure(variants: dict, leaves_of: dict, notes: list) -> tuple:
    """Runs every variant (name -> step) once, compares it with "stock", then times it.
    Returns ({name: ms}, the largest rel_err against stock). A variant that fails is noted in
    `notes` and gets NaN; without both "stock" and "ours" nothing is compared (NaN)."""
    results = {}
    for name, step in variants.items():
        try:
            results[name] = _capture(step, leaves_of[name])
        except Exception as exc:   # one unsupported variant must not hide the others
            first = (str(exc).splitlines() or [""])[0][:120]
            notes.append(f"{name} failed: {type(exc).__name__}: {first}")
    rel = NAN
    if "stock" in results and "ours" in results:
        rel = max(_rel_err(results[n], results["stock"]) for n in results if n != "stock")
    ran = set(results)
    del results   # free the copies before timing
    times = time_interleaved({name: step for name, step in variants.items() if name in ran}, timer=TIMER)
    return {name: times.get(name, NAN) for name in variants}, rel


def _empty_cache() -> None:
    if DEVICE.startswith("cuda"):
        torch.cuda.empty_cache()


def run_mlp_case(cg, case: MlpCase, dtype_name: str, tokens: int) -> dict:
    dtype = getattr(torch, dtype_name)
    H, Fi = case.hidden, case.intermediate
    stock = case.build(H, Fi, device=DEVICE, dtype=dtype)
    ours = copy.deepcopy(stock)
    cg.nn.replace_linear(ours, fuse_activations=True)
    x = torch.randn(tokens, H, device=DEVICE, dtype=dtype, requires_grad=True)
    dy = torch.randn(tokens, H, device=DEVICE, dtype=dtype)

    def step(model, mode=contextlib.nullcontext):
        def go():
            model.zero_grad(set_to_none=True)
            x.grad = None
            with mode():
                out = model(x)
                out.backward(dy)
            return out
        return go

    notes = []
    times, rel = _measure({"stock": step(stock), "ours": step(ours), "enable": step(stock, cg.enable)},
                          {"stock": [x, *stock.parameters()], "ours": [x, *ours.parameters()],
                           "enable": [x, *stock.parameters()]}, notes)
    flops = 3 * case.gemms * 2.0 * tokens * H * Fi   # forward, and twice that backward
    return make_row(case.name, dtype_name, f"{H}->{Fi}", tokens, flops, "torch module",
                    times["stock"], times["ours"], enable_ms=times["enable"], rel_err=rel,
                    note="; ".join(notes))


def run_moe_case(cg, name: str, E: int, k: int, H: int, Fi: int, T: int, dtype_name: str,
                 gen: torch.Generator) -> dict:
    dtype = getattr(torch, dtype_name)
    layer, x, idx, wts, dy = bench_grouped.make_layer(cg, E, k, H, Fi, T, gen, dtype=dtype,
                                                      device=DEVICE)
    leaves = [x, layer.w_gate_up, layer.w_down]
    variants = {"stock": loop_layer_forward, "ours": lambda l, a, i, w: l(a, i, w),
                "grouped_mm": bench_grouped.torch_layer_forward}
    notes = []
    times, rel = _measure({n: bench_grouped.layer_step(layer, x, idx, wts, dy, f)
                           for n, f in variants.items()}, {n: leaves for n in variants}, notes)
    flops = 3 * 2.0 * T * k * H * 3 * Fi   # gate_up (H -> 2F) + down (F -> H), fwd + 2x bwd
    return make_row(name, dtype_name, f"E{E} top{k} {H}->{Fi}", T, flops, "per-expert loop",
                    times["stock"], times["ours"], grouped_mm_ms=times["grouped_mm"],
                    rel_err=rel, note="; ".join(notes))


def plan(quick: bool) -> list:
    """[(kind, case, tokens)] in run order."""
    cases = [("mlp", c, c.quick_tokens if quick else c.tokens) for c in MLP_CASES]
    cases += [("moe", c, c[5]) for c in (MOE_CASES[:1] if quick else MOE_CASES)]
    return cases


def _failed_row(kind: str, case, dtype_name: str, tokens: int, exc: BaseException) -> dict:
    name = case.name if kind == "mlp" else case[0]
    return make_row(name, dtype_name, "?", tokens, NAN, "?", NAN, NAN,
                    note=f"{type(exc).__name__}: {exc}")


def run(quick: bool = False, out_dir: str = "results", dtype="bfloat16",
        progress: bool = True) -> list:
    """Check and time every case in each dtype of `dtype` (a name or a list of names); write
    bench_model.{csv,txt} under `out_dir` and print the table last. Returns the rows (dicts
    with the CSV_FIELDS keys); [] without a CUDA GPU or with a CPU-only extension."""
    dtypes = normalize_dtypes([dtype] if isinstance(dtype, str) else list(dtype))
    if DEVICE.startswith("cuda") and not torch.cuda.is_available():
        print("bench_model: no CUDA GPU visible to PyTorch "
              f"(torch {torch.__version__}, CUDA {torch.version.cuda}): nothing to benchmark.",
              flush=True)
        return []
    try:
        cg = _import_cutorch_gemm()
    except Exception as exc:
        print(f"bench_model: cannot import cutorch_gemm ({type(exc).__name__}: {exc})", flush=True)
        return []
    cuda_built = getattr(getattr(cg, "_C", None), "cuda_built", None)
    if DEVICE.startswith("cuda") and cuda_built is not None and not cuda_built():
        print("bench_model: cutorch_gemm._C was built without CUDA: nothing to benchmark.",
              flush=True)
        return []

    cases = [(kind, case, tokens, d) for d in dtypes for kind, case, tokens in plan(quick)]
    where = torch.cuda.get_device_name() if DEVICE.startswith("cuda") else DEVICE
    print(f"bench_model: {where}, torch {torch.__version__}, {len(cases)} cases", file=sys.stderr)
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    gen = torch.Generator().manual_seed(0)   # the routing, as in bench_grouped
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, "bench_model.csv")
    rows, t0 = [], time.time()
    for i, (kind, case, tokens, d) in enumerate(cases, 1):
        label = case.name if kind == "mlp" else case[0]
        if progress:
            print(f"[{i}/{len(cases)}] {label} {SHORT.get(d, d)} {tokens} tokens", file=sys.stderr,
                  flush=True)
        try:
            if kind == "mlp":
                rows.append(run_mlp_case(cg, case, d, tokens))
            else:
                rows.append(run_moe_case(cg, *case[:6], d, gen))
        except Exception as exc:   # record it and go on (out of memory, an unsupported dtype)
            rows.append(_failed_row(kind, case, d, tokens, exc))
        _empty_cache()
        write_csv(rows, csv_path, fields=CSV_FIELDS)   # a run cut short keeps what it measured
    table = format_table(rows)
    with open(os.path.join(out_dir, "bench_model.txt"), "w") as f:
        f.write(table + "\n")
    print(f"bench_model: {len(rows)} cases in {time.time() - t0:.0f} s; wrote {csv_path}",
          file=sys.stderr, flush=True)
    print(table, flush=True)   # last, so that the tail of a log holds it
    return rows


def run_from_args(args: argparse.Namespace) -> list:
    """For ``python -m cutorch_gemm bench --model`` (bench_gemm's flags)."""
    return run(quick=args.quick, out_dir=args.out, dtype=parse_list(args.dtype) or ["bfloat16"],
               progress=not args.no_progress)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from benchmarks.bench_gemm import exit_code
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="2048-token MLPs and the first MoE layer")
    p.add_argument("--dtype", action="append", metavar="DTYPE[,DTYPE]",
                   help="bf16 (default), fp16, fp32")
    p.add_argument("--out", default="results", help="folder for bench_model.{csv,txt}")
    p.add_argument("--no-progress", action="store_true", help="no per-case lines on stderr")
    args = p.parse_args(argv)
    try:
        rows = run_from_args(args)
    except ValueError as exc:
        p.error(str(exc))
    return exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
