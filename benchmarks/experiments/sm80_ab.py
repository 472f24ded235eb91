"""A/B in one process, interleaved with torch: the sm80 epilogue's rows of eight vs the general store
(CUTORCH_GEMM_SM80_EPILOGUE=general), the tf32 configs, and the split-K forms.
    python benchmarks/experiments/sm80_ab.py"""
import os, sys, torch
sys.path.insert(0, ".")
os.environ["CUTORCH_GEMM_ARCH"] = "sm80"
import cutorch_gemm as cg
from benchmarks.bench_gemm import time_interleaved
torch.backends.cuda.matmul.allow_tf32 = True
def run(label, dt, M, N, K, variants, split=None):
    a = torch.randn(M, K, device="cuda").to(dt); b = torch.randn(N, K, device="cuda").to(dt).t()
    fns = {"torch": lambda: torch.mm(a, b)}
    for name, env in variants.items():
        def f(env=env):
            for k in ("CUTORCH_GEMM_SM80_EPILOGUE", "CUTORCH_GEMM_SM80_CONFIG", "CUTORCH_GEMM_SPLIT_K"):
                os.environ.pop(k, None)
            os.environ.update(env)
            return cg.mm(a, b)
        fns[name] = f
    t = time_interleaved(fns, rounds=7)
    fl = 2 * M * N * K
    print(f"{label:5s} {M}x{N}x{K}: torch {fl/t['torch']/1e9:.0f}; " + "; ".join(
        f"{n} {fl/t[n]/1e9:.0f} ({t['torch']/t[n]:.3f})" for n in variants), flush=True)
G = {"CUTORCH_GEMM_SM80_EPILOGUE": "general"}
ab = {"rows8": {}, "general": G}
for dt, lab in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
    run(lab, dt, 4096, 4096, 4096, ab)
    run(lab, dt, 8192, 14336, 4096, ab)
tf = {"128x128x32": {"CUTORCH_GEMM_SM80_CONFIG": "128x128x32"},
      "128x128x32 general": {"CUTORCH_GEMM_SM80_CONFIG": "128x128x32", **G},
      "128x256x32_S4": {"CUTORCH_GEMM_SM80_CONFIG": "sm80_128x256x32_s4"}}
run("tf32", torch.float32, 4096, 4096, 4096, tf)
run("tf32", torch.float32, 8192, 8192, 8192, tf)
sk = {"split": {}, "split general": G, "none": {"CUTORCH_GEMM_SPLIT_K": "none"},
      "none general": {"CUTORCH_GEMM_SPLIT_K": "none", **G}}
for n in (4, 8, 12):
    sk[f"p{n}"] = {"CUTORCH_GEMM_SPLIT_K": f"parallel:{n}", "CUTORCH_GEMM_SM80_CONFIG": "128x128x64"}
for n in (8, 16):
    sk[f"p{n} 64x64"] = {"CUTORCH_GEMM_SPLIT_K": f"parallel:{n}", "CUTORCH_GEMM_SM80_CONFIG": "64x64x64"}
    sk[f"s{n}"] = {"CUTORCH_GEMM_SPLIT_K": f"serial:{n}", "CUTORCH_GEMM_SM80_CONFIG": "128x128x64"}
run("fp16", torch.float16, 512, 512, 16384, sk)
run("bf16", torch.bfloat16, 256, 1024, 16384, sk)
