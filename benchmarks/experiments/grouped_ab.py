"""grouped_mm A/B: the default launch against env-forced variants, interleaved with torch._grouped_mm.

    python benchmarks/experiments/grouped_ab.py CUTORCH_GEMM_SM90_HALF_TILES=off[,VAR=value,...]

Each variant is one environment setting (read by the binding at every call). ALLCASES=1 runs
bench_grouped's MoE shapes (else four), FORMS=fwd,dW,swiglu and ROUTINGS=skewed,uniform,empty pick
the cases (swiglu: [gate | up] weights of 2N columns, against torch._grouped_mm then silu(gate) * up). Prints TFLOP/s and the ratio to torch._grouped_mm of each variant, per case.
"""
import os, sys
import torch
sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg
from benchmarks.bench_gemm import time_interleaved
from benchmarks.bench_grouped import group_sizes

CASES = [("qwen3_up", 128, 32768, 2048, 1536), ("qwen3_down", 128, 32768, 768, 2048), ("olmoe_up", 64, 16384, 2048, 2048),
         ("mixtral_up", 8, 16384, 4096, 14336)]
if os.environ.get("ALLCASES"):
    CASES = [("mixtral_up", 8, 16384, 4096, 14336), ("mixtral_down", 8, 16384, 14336, 4096),
             ("qwen3_up", 128, 32768, 2048, 1536), ("qwen3_down", 128, 32768, 768, 2048),
             ("deepseek_up", 32, 32768, 7168, 4096), ("olmoe_up", 64, 16384, 2048, 2048)]
VARIANTS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["CUTORCH_GEMM_SM90_CONFIG=pingpong"]
ENV_KEYS = {v.split("=", 1)[0] for v in VARIANTS}  # cleared before every call: the default launch
gen = torch.Generator().manual_seed(0)
dt = torch.bfloat16
for name, E, T, K, N in CASES:
    for routing in os.environ.get("ROUTINGS", "skewed,uniform").split(","):
        sizes = group_sizes(E, T, routing, gen)
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        for form in os.environ.get("FORMS", "fwd,dW").split(","):
            if form == "fwd":
                a = torch.randn(T, K, device="cuda", dtype=dt); b = torch.randn(E, N, K, device="cuda", dtype=dt).transpose(1, 2)
            elif form == "swiglu":
                a = torch.randn(T, K, device="cuda", dtype=dt); b = torch.randn(E, K, 2 * N, device="cuda", dtype=dt) * K ** -0.5
            else:
                a = torch.randn(T, K, device="cuda", dtype=dt).t(); b = torch.randn(T, N, device="cuda", dtype=dt)
            def mk(env):
                def f():
                    for v in ENV_KEYS:
                        os.environ.pop(v, None)
                    if env:
                        k, val = env.split("=", 1); os.environ[k] = val
                    return cg.grouped_mm(a, b, offs, activation="swiglu" if form == "swiglu" else "none")
                return f
            fns = {"ours": mk(None)}
            for v in VARIANTS:
                fns[v.split("=")[-1]] = mk(v)
            def torch_ref():
                h = torch._grouped_mm(a, b, offs=offs)
                return torch.nn.functional.silu(h[:, :N]) * h[:, N:] if form == "swiglu" else h
            fns["torch"] = torch_ref
            ref = fns["torch"]().float()
            for k2, f in fns.items():
                got = f().float()
                err = float((got - ref).norm() / ref.norm())
                assert err < 2e-2, (name, k2, err)
            t = time_interleaved(fns)
            flop = 2 * T * K * N * (2 if form == "swiglu" else 1)
            print(f"{name:11} {routing:8} {form:4} " + "  ".join(f"{k2} {flop / ms / 1e9:6.1f} ({t['torch'] / ms:.3f})" for k2, ms in t.items()), flush=True)
