"""The skinny kernels' A/B (benchmarks/RESULTS.md, seventh and eleventh sessions): cuBLAS (torch.mm),
the dispatch rule's choice ("auto"), the mma.sync skinny kernel with 8 or 16 warps ("w8", "w16") or
under its rule ("sm80"), the tile kernels ("off"), and the Hopper skinny kernel with a fixed K split
("s1", "s2", ...: CUTORCH_GEMM_SKINNY=sm90, CUTORCH_GEMM_SKINNY_SPLITS=N); a "+short" or "+deep" suffix
("auto+short", "s2+deep": CUTORCH_GEMM_SKINNY_RING) picks the 64-token launch's ring. In three interleaved
rounds of do_bench medians, inputs rotated so the weight comes from DRAM. VARS picks the columns
(default torch,w8,w16,auto,off). Run on a GPU machine:

    VARS=torch,auto,sm80,off,s1,s2 python benchmarks/experiments/skinny_ab.py [MxNxK ...]
"""
import itertools, os, statistics, sys
import torch
import cutorch_gemm as cg
from triton.testing import do_bench

shapes = [(16, 4096, 4096), (32, 14336, 4096), (64, 4096, 14336), (128, 8192, 8192), (1, 8192, 8192),
          (8, 4096, 4096), (4, 14336, 4096), (16, 1024, 8192), (48, 8192, 8192), (96, 4096, 4096), (16, 512, 512)]
if len(sys.argv) > 1 and "x" in sys.argv[1]:
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]]
dt = torch.bfloat16
VARS = os.environ.get("VARS", "torch,w8,w16,auto,off").split(",")
print(f"{'M':>4} {'N':>6} {'K':>6} " + " ".join(f"{v:>7}" for v in VARS) + "  | torch/x: " + " ".join(f"{v:>6}" for v in VARS[1:]) + f"  GB/s({VARS[1]})  auto-cfg  err")
def setenv(name):
    os.environ.pop("CUTORCH_GEMM_SKINNY_SPLITS", None)
    os.environ["CUTORCH_GEMM_SKINNY"] = ""
    os.environ["CUTORCH_GEMM_SKINNY_RING"] = ""
    for ring in ("short", "deep"):  # the 64-token Hopper skinny launch's ring (device/sm90_skinny.h)
        if name.endswith("+" + ring):
            os.environ["CUTORCH_GEMM_SKINNY_RING"] = ring
            name = name[:-len(ring) - 1]
    if name in ("sm80", "off", "w8", "w16", "force"):
        os.environ["CUTORCH_GEMM_SKINNY"] = name
    elif name.startswith("s") and name[1:].isdigit():
        os.environ["CUTORCH_GEMM_SKINNY"] = "sm90"
        os.environ["CUTORCH_GEMM_SKINNY_SPLITS"] = name[1:]
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
    setenv("auto")
    e = cg.explain("mm", x, w.t())
    cfg = f"{e.config}/s{e.splits}"
    ref = (x.double() @ w.double().t())
    errs = []
    for v in VARS[1:]:
        setenv(v)
        out = cg.mm(x, w.t()).double()
        errs.append(((out - ref).norm() / ref.norm()).item())
    res = {v: [] for v in VARS}
    for r in range(3):
        for name in (VARS * 2)[r:r + len(VARS)]:
            if name == "torch":
                res[name].append(do_bench(t_fn, warmup=10, rep=30))
            else:
                setenv(name)
                res[name].append(do_bench(o_fn, warmup=10, rep=30))
    med = {k_: statistics.median(v) * 1000 for k_, v in res.items()}
    print(f"{m:>4} {n:>6} {k:>6} " + " ".join(f"{med[v]:>7.1f}" for v in VARS) + "  |          "
          + " ".join(f"{med['torch']/med[v]:>6.3f}" for v in VARS[1:]) + f"  {wbytes/med[VARS[1]]/1e3:>6.0f}  {cfg}  {max(errs):.1e}", flush=True)
