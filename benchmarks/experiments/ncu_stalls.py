"""Where a kernel's warps wait, from ncu's per-instruction stall sampling, ours against PyTorch's.

On a GPU machine, with the extension built:

    ncu --clock-control none --profile-from-start off --section WarpStateStats --section SourceCounters \
        -o r -f python benchmarks/experiments/ncu_locked_clock.py mm:1024x1024x1024
    ncu -i r.ncu-rep --page source --csv --print-source sass > source.csv
    python benchmarks/experiments/ncu_stalls.py source.csv

For each kernel in the report: the samples by stall reason, the instructions with the most samples,
and the share of samples in code that runs once per warp or so (setup, epilogue, exit: executed at
most 16 times per CTA's worth of warps) against the loops. (ncu's default cache control flushes the
caches before the launch, as the benchmarks' L2 flush does: cold-code fetches show as `no_inst`.)
"""
import csv
import sys


def kernels(path):
    """(kernel name, header, rows) per kernel block of an `ncu --page source --csv` export."""
    block = None
    for line in open(path, errors="replace").read().split("\n"):
        if line.startswith('"Kernel Name"'):
            if block:
                yield block
            block = [line]
        elif block is not None:
            block.append(line)
    if block:
        yield block


def main(path, top=12):
    for block in kernels(path):
        name = next(csv.reader([block[0]]))[1]
        rows = list(csv.reader(block[1:]))
        hdr = rows[0]
        data = [r for r in rows[1:] if len(r) == len(hdr)]
        col = {h: i for i, h in enumerate(hdr)}
        num = lambda r, h: float(r[col[h]] or 0)
        samples = "Warp Stall Sampling (All Samples)"
        total = sum(num(r, samples) for r in data) or 1.0
        execd = [num(r, "Instructions Executed") for r in data]
        loop_floor = max(execd) / 4  # instructions of the k-loop run far more often than the rest
        once = sum(num(r, samples) for r, e in zip(data, execd) if e < loop_floor)
        reasons = {h[6:]: sum(num(r, h) for r in data) for h in hdr if h.startswith("stall_") and "(" not in h}
        print(f"== {name[:110]}")
        print(f"   {len(data)} SASS instructions, {total:.0f} samples; {100 * once / total:.0f}% outside the loops")
        print("   by reason: " + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in
                                         sorted(reasons.items(), key=lambda kv: -kv[1])[:8] if v))
        for r in sorted(data, key=lambda r: -num(r, samples))[:top]:
            why = ",".join(f"{h[6:]}={r[col[h]]}" for h in hdr
                           if h.startswith("stall_") and "(" not in h and num(r, h) > 0)
            print(f"   {100 * num(r, samples) / total:5.1f}%  x{num(r, 'Instructions Executed'):<6.0f} "
                  f"{r[col['Source']].strip()[:60]:60} {why}")


if __name__ == "__main__":
    main(sys.argv[1])
