"""mm against PyTorch (cuBLAS) for whichever cutorch_gemm build is on the path: one line per shape.

    PYTHONPATH=/path/to/build python benchmarks/experiments/mm_ratio.py TAG

Compares two builds on one machine when they cannot share a process (both are `cutorch_gemm._C`):
run it alternately under each build's path. tf32 (allowed) at 4096^3 and 8192^3, bf16 at 4096^3 and
8192x14336x4096, nn.Linear operands; 5 rounds per shape, the median ratio and its range.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import _make_sets, _rotating, time_ms  # noqa: E402


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "build"
    torch.backends.cuda.matmul.allow_tf32 = True
    cases = ((torch.float32, [(4096, 4096, 4096), (8192, 8192, 8192)]),
             (torch.bfloat16, [(4096, 4096, 4096), (8192, 14336, 4096)]))
    for dtype, shapes in cases:
        for m, n, k in shapes:
            sets = _make_sets(m, n, k, dtype, False)
            theirs, ours = _rotating(torch.mm, sets), _rotating(cg.mm, sets)
            ratios = []
            for _ in range(5):
                t = time_ms(theirs, warmup_ms=10, rep_ms=40)
                ratios.append(t / time_ms(ours, warmup_ms=10, rep_ms=40))
            print(f"{tag} {str(dtype)[6:]} {m}x{n}x{k} ratio {statistics.median(ratios):.3f} "
                  f"({min(ratios):.3f}-{max(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main()
