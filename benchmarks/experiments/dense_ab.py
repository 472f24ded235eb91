"""Dense mm A/B: the default launch against env-forced variants, interleaved with torch.mm.

    SHAPES=4096x4096x512,8192x14336x4096 VARS="def;CUTORCH_GEMM_SM90_DEFER=off" \
        python benchmarks/experiments/dense_ab.py

bf16, nn.Linear operands (x row-major, W.t()), rotating input sets as benchmarks/bench_gemm.py
times them. A variant is "def" (no variable set) or VAR=value[+VAR=value...], optionally named
"name:VAR=value..." ("def:" names the default); every variable a variant names is cleared before each
call of the others. ROUNDS rounds (default 5; raised to a multiple of the functions) after an untimed settling run
(bench_gemm.time_interleaved), each timing every function once in a rotated order;
prints the median ratio to torch.mm of each variant and its per-round range, or with TABLE=1 one row
per shape (medians only, and the config the default launch runs: the dispatch-rule sweeps of
benchmarks/RESULTS.md, thirtieth session). EPI=gelu: the epilogue suite's launch instead, gemm with bias and
GELU against torch._addmm_activation; EPI=gelu_erf: gemm with bias and exact (erf) GELU against torch.addmm and
F.gelu (PyTorch has no fused exact-GELU epilogue); EPI=bias: gemm with bias against torch.addmm; EPI=c: gemm with a
full row-major (M, N) C and beta = 1 against torch.addmm(C, x, W.t()) (the set's third operand is C). A variant setting
PLAIN=1 times our plain mm on the same operands (the epilogue's cost: its ratio over the default's). DTYPE=tf32: fp32
operands with TF32 allowed on both sides; DTYPE=fp16: float16 operands (default bf16). LAYOUT=nn: b MN-major (a
row-major (K, N) weight: the dX = dY W form); LAYOUT=tn: both operands MN-major (the dW = dY^T X form); default nt
(nn.Linear's forward). Two builds cannot share a process (both are
cutorch_gemm._C): to compare them, run VARS="def:" alternately with each build first on PYTHONPATH.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import (SETTLE_MS, EPILOGUE_ACTIVATION, _make_sets, _rotating, time_interleaved,  # noqa: E402
                                   time_ms, to_layout)


def name_of(variant):
    """A variant's label: its "name:" prefix, else its last 12 characters."""
    head, sep, _ = variant.partition(":")
    return head if sep and "=" not in head else variant[-12:]


def env_of(variant):
    """The variables a variant sets ("def": none)."""
    head, sep, spec = variant.partition(":")
    if not sep or "=" in head:
        spec = variant
    return dict(part.split("=", 1) for part in spec.split("+") if "=" in part)


def main():
    shapes = [tuple(map(int, s.split("x")))
              for s in os.environ.get("SHAPES", "4096x4096x512,8192x14336x4096,4096x4096x4096").split(",")]
    variants = os.environ.get("VARS", "def;CUTORCH_GEMM_SM90_DEFER=off").split(";")
    rounds = int(os.environ.get("ROUNDS", "5"))
    keys = {k for v in variants for k in env_of(v)}
    epi = os.environ.get("EPI", "")
    assert epi in ("", "gelu", "gelu_erf", "bias", "c"), f"EPI: '', 'gelu', 'gelu_erf', 'bias' or 'c', got {epi!r}"
    act = {"gelu": EPILOGUE_ACTIVATION, "gelu_erf": "gelu"}.get(epi, "none")
    layout = os.environ.get("LAYOUT", "nt")
    assert layout in ("nt", "nn", "tn"), f"LAYOUT: 'nt', 'nn' or 'tn', got {layout!r}"
    dtype_name = os.environ.get("DTYPE", "bf16")
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}
    assert dtype_name in dtypes, f"DTYPE: one of {sorted(dtypes)}, got {dtype_name!r}"
    dtype = dtypes[dtype_name]
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"

    def ours(variant):
        env = env_of(variant)

        def f(x, b, *bias):
            for k in keys:
                os.environ.pop(k, None)
            os.environ.update(env)
            if epi == "c" and "PLAIN" not in env:
                return cg.gemm(x, b, c=bias[0], beta=1.0)
            if epi and "PLAIN" not in env:
                return cg.gemm(x, b, bias=bias[0], activation=act)
            return cg.mm(x, b)
        return f

    table = os.environ.get("TABLE") == "1"
    ratios = {v: [] for v in variants}  # per shape, the median ratio to torch (the geomean row)
    if table:
        print("shape".ljust(16) + "torchTF".rjust(8) + "".join(f"{name_of(v):>9s}" for v in variants) + "  def config")
    for m, n, k in shapes:
        sets = to_layout(_make_sets(m, n, k, dtype, bool(epi)), layout)
        if epi == "c":  # (the bias slot holds C)
            sets = [(x, b, torch.randn(m, n, device=x.device, dtype=dtype)) for x, b, _ in sets]
        theirs = {"": torch.mm, "bias": lambda x, b, bias: torch.addmm(bias, x, b),
                  "c": lambda x, b, c: torch.addmm(c, x, b),
                  "gelu": lambda x, b, bias: torch._addmm_activation(bias, x, b, use_gelu=True),
                  "gelu_erf": lambda x, b, bias: torch.nn.functional.gelu(torch.addmm(bias, x, b))}[epi]
        fns = {"torch": _rotating(theirs, sets)}
        for v in variants:
            fns[v] = _rotating(ours(v), sets)
        times = {}  # per callable, its times in round order
        time_interleaved(fns, rounds, timer=lambda f: time_ms(f, warmup_ms=10, rep_ms=30), settle_ms=SETTLE_MS,
                         rounds_out=times)
        gflop = 2 * m * n * k / 1e9
        t_torch = statistics.median(times["torch"])
        for v in variants:
            ratios[v].append(t_torch / statistics.median(times[v]))
        for key in keys:
            os.environ.pop(key, None)
        if table:
            e = (cg.explain("gemm", sets[0][0], sets[0][1], c=sets[0][2], beta=1.0) if epi == "c"
                 else cg.explain("gemm", sets[0][0], sets[0][1], bias=sets[0][2], activation=act) if epi
                 else cg.explain("mm", sets[0][0], sets[0][1]))
            print(f"{m}x{n}x{k}".ljust(16) + f"{gflop / t_torch:8.0f}"
                  + "".join(f"{ratios[v][-1]:9.3f}" for v in variants)
                  + f"  {e.config.replace('Sm90_', '')} x{e.splits}", flush=True)
        else:
            line = f"{m}x{n}x{k}: torch {gflop / t_torch:.0f} TF/s"
            for v in variants:
                per_round = [a / b for a, b in zip(times["torch"], times[v])]
                line += (f" | {name_of(v)} {ratios[v][-1]:.3f}"
                         f" ({min(per_round):.3f}-{max(per_round):.3f})")
            print(line, flush=True)
        del sets
    if table and len(shapes) > 1:
        print("geomean".ljust(24) + "".join(f"{statistics.geometric_mean(ratios[v]):9.3f}" for v in variants))


if __name__ == "__main__":
    main()
