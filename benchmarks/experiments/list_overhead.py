"""Where grouped_gemm's list API spends a call: host time against kernel time.

    python benchmarks/experiments/list_overhead.py

For bench_grouped's expert problems as lists (x slices, W_e.t() views, skewed routing) it prints
  - call:   wall time per call in a loop of back-to-back calls (host-bound when host > kernels),
  - host:   the same loop with the GPU kept busy ahead of it (a long sleep kernel first), so the
            host's time per call shows alone,
  - kernel: the sum of the call's CUDA kernel and copy durations (torch.profiler),
  - alloc:  the host time of allocating the call's outputs alone (torch.empty per problem),
  - ref:    grouped_mm on the same problems (one 2D x 3D call) and a loop of torch.mm.
HOST_ONLY=1 prints only the least host time per call over repetitions (for A/B of two builds).
DECODE=1 adds grouped_mm at decode sizes (few rows per expert) against torch._grouped_mm and our tile
kernels (CUTORCH_GEMM_SKINNY=off: the rule before the grouped skinny kernel). LIST=0 skips the list
cases. TOKENS=1,8 limits the decode token counts; DECODE_W=mn gives the experts (E, K, N) weights
(N contiguous) instead of W_e^T views of (E, N, K) ones. CUTORCH_GEMM_SKINNY=sm90 lets the grouped
skinny kernel take up to 64 rows (A/B of its 64-token config). SWIGLU=1 adds the up projections with
the fused SwiGLU against torch._grouped_mm + silu(gate) * up.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import time_interleaved  # noqa: E402
from benchmarks.bench_grouped import expert_lists, group_sizes  # noqa: E402

CASES = [("qwen3_down", 128, 32768, 768, 2048), ("qwen3_up", 128, 32768, 2048, 1536),
         ("olmoe_up", 64, 16384, 2048, 2048), ("small_64x1024", 64, 4096, 1024, 1024)]


def host_us(fn, calls=40):
    """Host microseconds per call with the GPU busy far ahead (the launches only queue)."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e8))  # ~0.2 s of GPU time: the calls below only enqueue (a host-bound
    # loop of many launches, like the torch.mm loop, fills the launch queue and then waits: not
    # its host time)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return t


def host_min_us(fn, reps=10, calls=20):
    """The least host_us over `reps` repetitions: the host's speed drifts between runs (2x seen on
    one machine), its minimum much less."""
    return min(host_us(fn, calls) for _ in range(reps))


def wall_us(fn, calls=40):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def kernel_us(fn, calls=5):
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    tot = 0.0
    names = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            tot += e.device_time
            names[e.name[:60]] = names.get(e.name[:60], 0.0) + e.device_time / calls
    return tot / calls, names


def on_tiles(*args, **kwargs):
    """grouped_mm on the tile kernels (CUTORCH_GEMM_SKINNY=off: the rule before the grouped skinny
    kernel); the knob's previous value is restored."""
    knob = os.environ.get("CUTORCH_GEMM_SKINNY")
    os.environ["CUTORCH_GEMM_SKINNY"] = "off"
    try:
        return cg.grouped_mm(*args, **kwargs)
    finally:
        if knob is None:
            os.environ.pop("CUTORCH_GEMM_SKINNY")
        else:
            os.environ["CUTORCH_GEMM_SKINNY"] = knob


def main():
    gen = torch.Generator().manual_seed(0)
    dt = torch.bfloat16
    for name, E, T, K, N in (CASES if os.environ.get("LIST", "1") != "0" else []):
        sizes = group_sizes(E, T, "skewed", gen)
        x, w, a, b = expert_lists(sizes, E, T, K, N, dtype=dt)
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        wt = w.transpose(1, 2)
        fns = {"list": lambda: cg.grouped_gemm(a, b), "op": lambda: torch.ops.gemm.grouped_gemm(a, b),
               "grouped_mm": lambda: cg.grouped_mm(x, wt, offs), "loop": lambda: [torch.mm(ai, bi) for ai, bi in zip(a, b)],
               "alloc": lambda: [torch.empty(ai.shape[0], bi.shape[1], device="cuda", dtype=dt) for ai, bi in zip(a, b)]}
        if os.environ.get("HOST_ONLY"):
            print(f"{name:14} host us per call (min of 10 x 20): list {host_min_us(fns['list']):7.1f}  "
                  f"op {host_min_us(fns['op']):7.1f}  grouped_mm {host_min_us(fns['grouped_mm']):6.1f}", flush=True)
            continue
        got = fns["list"]()
        ref = fns["loop"]()
        err = max(float((g.float() - r.float()).norm() / max(r.float().norm(), 1e-30)) for g, r in zip(got, ref))
        print(f"{name} E={E} rows={T} K={K} N={N} config={cg.explain('grouped_gemm', a, b).config} max rel err {err:.1e}")
        for k, f in fns.items():
            ku, names = kernel_us(f) if k != "alloc" else (0.0, {})
            top = ", ".join(f"{n} {v:.1f}" for n, v in sorted(names.items(), key=lambda kv: -kv[1])[:3])
            print(f"  {k:10} call {wall_us(f):8.1f} us  host {host_us(f):8.1f} us  kernel {ku:8.1f} us  [{top}]")
        t = time_interleaved({k: fns[k] for k in ("list", "grouped_mm", "loop")})
        print("  interleaved ms: " + "  ".join(f"{k} {v:.4f}" for k, v in t.items()), flush=True)

    if os.environ.get("DECODE"):
        for name, E, K, N, topk in [("qwen3_up", 128, 2048, 1536, 8), ("qwen3_down", 128, 768, 2048, 8),
                                    ("mixtral_up", 8, 4096, 14336, 2), ("mixtral_down", 8, 14336, 4096, 2)]:
            for tokens in [int(t) for t in os.environ.get("TOKENS", "1,2,4,8,32,128").split(",")]:
                rows = tokens * topk
                idx = torch.stack([torch.randperm(E, generator=gen)[:topk] for _ in range(tokens)]).flatten()
                counts = torch.bincount(idx, minlength=E)
                offs = counts.cumsum(0).to(torch.int32).cuda()
                x = torch.randn(rows, K, device="cuda", dtype=dt)
                wt = (torch.randn(E, K, N, device="cuda", dtype=dt) if os.environ.get("DECODE_W") == "mn"
                      else torch.randn(E, N, K, device="cuda", dtype=dt).transpose(1, 2))
                ref = torch._grouped_mm(x, wt, offs=offs).float()
                got = cg.grouped_mm(x, wt, offs).float()
                err = float((got - ref).norm() / max(ref.norm(), 1e-30))
                t = time_interleaved({"ours": lambda: cg.grouped_mm(x, wt, offs), "tiles": lambda: on_tiles(x, wt, offs),
                                      "torch": lambda: torch._grouped_mm(x, wt, offs=offs)})
                wbytes = int((counts > 0).sum()) * K * N * 2  # the weights of the experts hit
                print(f"decode {name:12} tokens {tokens:4} rows {rows:5}  ours {t['ours'] * 1e3:7.1f} us "
                      f"({wbytes / t['ours'] / 1e6:6.0f} GB/s)  tiles {t['tiles'] * 1e3:7.1f} us  torch "
                      f"{t['torch'] * 1e3:7.1f} us  ratio {t['torch'] / t['ours']:.3f} (tiles {t['torch'] / t['tiles']:.3f})"
                      f"  err {err:.1e}  {cg.explain('grouped_mm', x, wt, offs).config}", flush=True)
                if os.environ.get("SWIGLU") and name.endswith("_up"):  # N = [gate | up]: the fused SwiGLU
                    F = N // 2

                    def torch_swiglu():
                        z = torch._grouped_mm(x, wt, offs=offs)
                        return torch.nn.functional.silu(z[:, :F]) * z[:, F:]
                    t = time_interleaved({"ours": lambda: cg.grouped_mm(x, wt, offs, activation="swiglu"),
                                          "tiles": lambda: on_tiles(x, wt, offs, activation="swiglu"),
                                          "torch": torch_swiglu})
                    print(f"swiglu {name:12} tokens {tokens:4} rows {rows:5}  ours {t['ours'] * 1e3:7.1f} us  tiles "
                          f"{t['tiles'] * 1e3:7.1f} us  torch {t['torch'] * 1e3:7.1f} us  ratio "
                          f"{t['torch'] / t['ours']:.3f} (tiles {t['torch'] / t['tiles']:.3f})  "
                          f"{cg.explain('grouped_mm', x, wt, offs, activation='swiglu').config}", flush=True)


if __name__ == "__main__":
    main()
