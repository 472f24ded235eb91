"""How precisely do the 8-bit GEMMs accumulate? For each shape: the largest error of
cutorch_gemm.scaled_mm (whatever path the environment selects) and of torch._scaled_mm with
use_fast_accum False / True, all with fp32 output, against a float64 reference, in units of
eps32 * sum|a||b| (a full-fp32 accumulation stays below ~K of them; a tensor core that keeps
fewer accumulator bits shows far more).

    python scripts/fp8_accum_probe.py
"""
import torch

import cutorch_gemm as cg

E4 = torch.float8_e4m3fn
SHAPES = [(333, 7, 96), (64, 4096, 512), (1, 1000, 272), (512, 512, 4096), (256, 1024, 16384)]


def err_units(out, ref, mag):
    e = (out.double() - ref).abs() / (mag * torch.finfo(torch.float32).eps)
    rel = (out.double() - ref).abs().max() / ref.abs().max()
    return float(e.max()), float(rel)


def main():
    torch.manual_seed(0)
    print(f"fp8 accumulation probe on {torch.cuda.get_device_name()}: max |err| / (eps32 * sum|ab|), max |err| / max|ref|")
    print(f"{'M':>5} {'N':>5} {'K':>6}  {'ours':>16}  {'torch exact':>16}  {'torch fast':>16}  kernel")
    for m, n, k in SHAPES:
        a = (torch.randn(m, k, device="cuda") * 2).to(E4)
        b = (torch.randn(n, k, device="cuda") * 2).to(E4).t()
        one = torch.ones((), device="cuda")
        ref = a.double() @ b.double()
        mag = a.double().abs() @ b.double().abs()
        ours = cg.scaled_mm(a, b, one, one, out_dtype=torch.float32)
        cols = [err_units(ours, ref, mag)]
        for fast in (False, True):
            try:
                t = torch._scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=fast)
                cols.append(err_units(t, ref, mag))
            except Exception as exc:  # noqa: BLE001 (report, do not stop)
                cols.append((float("nan"), float("nan")))
                print("  torch._scaled_mm:", str(exc).splitlines()[0][:100])
        e = cg.explain("scaled_mm", a, b, one, one)
        fmt = "  ".join(f"{u:7.1f} {r:8.1e}" for u, r in cols)
        print(f"{m:>5} {n:>5} {k:>6}  {fmt}  {e.kernel} {e.config}")


if __name__ == "__main__":
    main()
