"""Parallel split-K on the sm80 path: partials summed inside the GEMM kernel (one cooperative
launch; the default when the grid fits the GPU at once) against the reduction kernel
(CUTORCH_GEMM_SM80_SPLIT_REDUCE=kernel), at several slice counts, interleaved with the launch
without split-K; then kernel times from torch.profiler (warm L2).
    python benchmarks/experiments/sm80_split_fused.py"""
import os, sys, torch
sys.path.insert(0, ".")
os.environ["CUTORCH_GEMM_ARCH"] = "sm80"
import cutorch_gemm as cg
from benchmarks.bench_gemm import time_interleaved

KEYS = ("CUTORCH_GEMM_SPLIT_K", "CUTORCH_GEMM_SM80_SPLIT_REDUCE", "CUTORCH_GEMM_SM80_CONFIG")


def setenv(env):
    for k in KEYS:
        os.environ.pop(k, None)
    os.environ.update(env)


def variants(splits, cfg):
    v = {"none": {"CUTORCH_GEMM_SPLIT_K": "none"}, "auto": {}, "auto kernel": {"CUTORCH_GEMM_SM80_SPLIT_REDUCE": "kernel"}}
    for n in splits:  # on the split plan's config (a forced split alone keeps the unsplit plan's tiles)
        v[f"p{n}"] = {"CUTORCH_GEMM_SPLIT_K": f"parallel:{n}", "CUTORCH_GEMM_SM80_CONFIG": cfg}
    return v


def run(label, dt, M, N, K, splits=(8,)):
    a = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn(N, K, device="cuda").to(dt).t()
    setenv({})
    e = cg.explain("mm", a, b)
    vs = variants(splits, e.config)
    ref = None
    fns = {}
    for name, env in vs.items():
        def f(env=env):
            setenv(env)
            return cg.mm(a, b)
        fns[name] = f
        out = f()
        if name == "auto kernel":
            setenv({})
            assert torch.equal(out, cg.mm(a, b)), "fused and kernel reductions differ"
    t = time_interleaved(fns, rounds=7)
    base = t["none"]
    print(f"{label} {M}x{N}x{K} (auto: {e.config} x{e.splits}): none {base*1e3:.1f} us; " +
          "; ".join(f"{n} {t[n]*1e3:.1f} us ({base/t[n]:.2f}x)" for n in vs if n != "none"), flush=True)
    # kernel times with a warm L2
    from torch.profiler import ProfilerActivity, profile
    for name in ("auto", "auto kernel"):
        setenv(vs[name])
        for _ in range(3):
            cg.mm(a, b)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                cg.mm(a, b)
            torch.cuda.synchronize()
        ks = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                key = "reduce" if "splitk_reduce" in e.name else "gemm" if "sm80_gemm" in e.name else e.name[:30]
                ks.setdefault(key, []).append(e.device_time)
        print(f"   {name}: " + ", ".join(f"{k} {sorted(v)[len(v)//2]:.1f} us x{len(v)}" for k, v in ks.items()), flush=True)
    setenv({})


run("fp16", torch.float16, 512, 512, 16384)
run("bf16", torch.bfloat16, 256, 1024, 16384)
run("fp64", torch.float64, 256, 256, 16384, splits=(8,))
