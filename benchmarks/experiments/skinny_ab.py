"""The skinny kernel's A/B (benchmarks/RESULTS.md, seventh session): cuBLAS (torch.mm), the skinny
kernel with 8 and 16 warps (CUTORCH_GEMM_SKINNY=w8 / w16), the dispatch rule's choice, and the tile
kernels (CUTORCH_GEMM_SKINNY=off), in three interleaved rounds of do_bench medians, inputs rotated so
the weight comes from DRAM. Run on a GPU machine:

    python benchmarks/experiments/skinny_ab.py [MxNxK ...]
"""
import itertools, os, statistics, sys
import torch
import cutorch_gemm as cg
from triton.testing import do_bench

shapes = [(16, 4096, 4096), (32, 14336, 4096), (1, 8192, 8192), (8, 4096, 4096), (32, 4096, 4096),
          (4, 14336, 4096), (16, 2048, 2048), (16, 512, 512), (32, 1024, 1024), (8, 256, 4096), (16, 1024, 8192),
          (4, 128, 128), (64, 4096, 14336), (48, 8192, 8192)]
if len(sys.argv) > 1:
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]]
dt = torch.bfloat16
VARS = ["torch", "w8", "w16", "auto", "off"]
print(f"{'M':>4} {'N':>6} {'K':>6} " + " ".join(f"{v:>7}" for v in VARS) + "  ratios(torch/x) " + " ".join(f"{v:>6}" for v in VARS[1:]) + "  GB/s-best  auto-cfg  err")
for m, n, k in shapes:
    wbytes = n * k * 2
    nsets = max(1, min(8, -(-150 * 2**20 // wbytes)))
    sets = [(torch.randn(m, k, device="cuda").to(dt), torch.randn(n, k, device="cuda").to(dt)) for _ in range(nsets)]
    cyc = itertools.cycle(sets)
    def t_fn():
        x, w = next(cyc); return torch.mm(x, w.t())
    def o_fn():
        x, w = next(cyc); return cg.mm(x, w.t())
    x, w = sets[0]
    os.environ["CUTORCH_GEMM_SKINNY"] = ""
    cfg = cg.explain("mm", x, w.t()).config
    os.environ["CUTORCH_GEMM_SKINNY"] = "w16"
    ref = (x.double() @ w.double().t())
    out = cg.mm(x, w.t()).double()
    err = ((out - ref).norm() / ref.norm()).item()
    res = {v: [] for v in VARS}
    for r in range(3):
        for name in (VARS * 2)[r:r + len(VARS)]:
            if name == "torch":
                res[name].append(do_bench(t_fn, warmup=10, rep=30))
            else:
                os.environ["CUTORCH_GEMM_SKINNY"] = "" if name == "auto" else name
                res[name].append(do_bench(o_fn, warmup=10, rep=30))
    med = {k_: statistics.median(v) * 1000 for k_, v in res.items()}
    best = min(med[v] for v in ("w8", "w16"))
    print(f"{m:>4} {n:>6} {k:>6} " + " ".join(f"{med[v]:>7.1f}" for v in VARS) + "  " + " " * 15
          + " ".join(f"{med['torch']/med[v]:>6.3f}" for v in VARS[1:]) + f"  {wbytes/best/1e3:>6.0f}  {cfg}  {err:.1e}")
