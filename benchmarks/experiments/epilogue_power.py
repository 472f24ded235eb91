"""Per-call time, SM clock and board power of plain vs fused GEMMs over a sustained run, schedule by schedule.

    SHAPES=4096x4096x4096,8192x14336x4096 RUN_S=1.0 python benchmarks/experiments/epilogue_power.py

Why: epilogue_timing.py (benchmarks/RESULTS.md, fiftieth session) read bias + GELU-tanh over our plain mm at
-2% to +3% in 10 ms timing windows but +7% to +11% in 200 ms ones: an excess that grows with the window, as a
power cap's would (the clock follows the board's power over tens of milliseconds). This script runs each variant
alone for RUN_S seconds (calls back to back, no flush, an event pair every CHUNK_MS of work) while
`nvidia-smi --query-gpu=clocks.sm,power.draw -lms 20` samples in the background, and prints per variant:
  first    us per call over the first chunk (the clock the previous idle gap left);
  steady   median us per call over the chunks of the run's second half;
  MHz, W   medians of the samples taken in the run's second half (host time; the samples lag the GPU's state by
           up to their period, so a half-second window is used).
Variants (env as epilogue_ab.py sets it; each cleared for the others):
  plain      cg.mm, the rule's config (128x256 cooperative at these shapes);
  plain_pp   cg.mm with CUTORCH_GEMM_SM90_CONFIG=pingpong (64x256 ping-pong);
  fused      cg.gemm(bias, ACT), the rule's config (128x256 cooperative at these shapes);
  fused_pp   the same with CUTORCH_GEMM_SM90_ACT_PINGPONG=on (64x256 ping-pong at or under M*N*K = 2^39; the
             default until the fiftieth session, which measured it here and made it opt-in);
  torch_mm   torch.mm (cuBLAS); torch_fused: torch._addmm_activation(bias, x, w.t()) (cuBLASLt's epilogue: GELU's
             tanh form for ACT=gelu_tanh, relu for ACT=relu; no other).
DTYPE: bf16 (default), fp16, tf32 (fp32 operands with torch.backends.cuda.matmul.allow_tf32 on, so both our mm
and torch.mm run tf32; the fused variants then take an fp32 bias) or e4m3 (plain: our scaled_mm, torch_mm:
torch._scaled_mm, per-tensor scales, bf16 D, FAST=1: use_fast_accum on both; no fused variants). VARIANTS (default plain,plain_pp,fused,fused_pp) picks them, each optionally with more variables
("plain|CUTORCH_GEMM_SM90_RASTER=16"); "steady vs" is against the first one named.
If fused runs at a lower clock than plain on the same schedule, its power (the activation's math) is the
excess; if plain_pp's clock sits with fused_pp's, the schedule is. Two passes in mirrored order (ABCD DCBA),
each variant preceded by IDLE_S of idle.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks import bench_gemm  # noqa: E402
from benchmarks.bench_gemm import _chunk_times, _make_sets, _make_sets_fp8, _rotating  # noqa: E402
from benchmarks.experiments.epilogue_ab import parse  # noqa: E402  ("<name>|VAR=value[+VAR=value...]")

RUN_S = float(os.environ.get("RUN_S", "1.0"))
CHUNK_MS = float(os.environ.get("CHUNK_MS", "20"))
IDLE_S = float(os.environ.get("IDLE_S", "0.5"))
ACT = os.environ.get("ACT", "gelu_tanh")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "e4m3": torch.float8_e4m3fn}
if os.environ.get("DTYPE", "bf16") not in DTYPES:
    sys.exit(f"DTYPE: one of {sorted(DTYPES)}, not {os.environ['DTYPE']!r}")
DTYPE_NAME = os.environ.get("DTYPE", "bf16")
if DTYPE_NAME == "tf32":
    torch.backends.cuda.matmul.allow_tf32 = True  # (our ops honour the same setting)
FAST = os.environ.get("FAST", "0") == "1"  # (e4m3: use_fast_accum)
VARIANTS = {
    "plain": ("plain", {}),
    "plain_pp": ("plain", {"CUTORCH_GEMM_SM90_CONFIG": "pingpong"}),
    "fused": ("fused", {}),
    "fused_pp": ("fused", {"CUTORCH_GEMM_SM90_ACT_PINGPONG": "on"}),
    "torch_mm": ("torch_mm", {}),
    "torch_fused": ("torch_fused", {}),
}
CHOSEN = os.environ.get("VARIANTS", "plain,plain_pp,fused,fused_pp").split(",")
for _v in CHOSEN:  # a named variant with more variables set
    _base, _extra = parse(_v)
    if _extra:
        VARIANTS[_v] = (VARIANTS[_base][0], {**VARIANTS[_base][1], **_extra})
if "torch_fused" in CHOSEN and ACT not in ("gelu_tanh", "relu"):
    sys.exit(f"torch_fused: torch._addmm_activation has GELU-tanh and relu only, not ACT={ACT}")
ENV_KEYS = {k for v in CHOSEN for k in VARIANTS[v][1]}


class Sampler:
    """nvidia-smi's clocks.sm and power.draw every 20 ms, each line stamped with the host's monotonic time."""

    def __init__(self):
        self.samples = []  # (t, mhz, watts)
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((time.monotonic(), float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                pass

    def between(self, t0, t1):
        return [s for s in list(self.samples) if t0 <= s[0] <= t1]

    def close(self):
        self.proc.terminate()


def sustained(fn, sampler):
    """Runs fn back to back for RUN_S seconds in chunks (bench_gemm._chunk_times, as --timing alone does); returns
    (first us, steady us, MHz, W, samples)."""
    time.sleep(IDLE_S)
    torch.cuda.synchronize()
    t0 = time.monotonic()
    per = _chunk_times(fn, RUN_S, CHUNK_MS)
    t1 = time.monotonic()
    # The GPU ran from about t0 (the queue was empty) to t1; its second half in host time.
    half = sampler.between(t0 + (t1 - t0) / 2, t1)
    mhz = statistics.median(s[1] for s in half) if half else float("nan")
    watts = statistics.median(s[2] for s in half) if half else float("nan")
    return per[0] * 1e3, statistics.median(per[len(per) // 2:]) * 1e3, mhz, watts, len(half)


def main():
    # MxNxK, or BxMxNxK: a batch of B problems (plain: cg.bmm, torch_mm: torch.bmm; 16-bit and tf32 only; written in
    # the fifty-ninth session for the batched pair measurement: its logic ran on a CPU with the timing mocked, not yet
    # on a GPU)
    shapes = [tuple(map(int, s.split("x"))) for s in
              os.environ.get("SHAPES", "4096x4096x4096,8192x14336x4096,2048x11008x4096").split(",")]
    sampler = Sampler()
    time.sleep(0.5)
    if not sampler.samples:
        print("nvidia-smi gave no samples: clocks and power read as nan")
    try:
        for shape in shapes:
            batch, (m, n, k) = (shape[0], shape[1:]) if len(shape) == 4 else (0, shape)
            # fns: the callables per variant kind; config(kind): the config our side runs (explain)
            if batch:
                if DTYPE_NAME == "e4m3":
                    sys.exit("BxMxNxK shapes: 16-bit or tf32 only")
                dev, dt = bench_gemm.DEVICE, DTYPES[DTYPE_NAME]
                sets = [(torch.randn(batch, m, k, device=dev, dtype=dt),
                         torch.randn(batch, n, k, device=dev, dtype=dt).transpose(1, 2) * k ** -0.5)]
                fns = {"plain": _rotating(cg.bmm, sets), "torch_mm": _rotating(torch.bmm, sets)}
                config = lambda kind, args=sets[0]: cg.explain("bmm", *args).config  # noqa: E731
            elif DTYPE_NAME == "e4m3":
                sets = _make_sets_fp8(m, n, k, DTYPES[DTYPE_NAME], False)
                fns = {"plain": _rotating(lambda x, b, sa, sb: cg.scaled_mm(x, b, sa, sb, out_dtype=torch.bfloat16,
                                                                            use_fast_accum=FAST), sets),
                       "torch_mm": _rotating(lambda x, b, sa, sb: torch._scaled_mm(
                           x, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=FAST), sets)}
                config = lambda kind, args=sets[0]: cg.explain("scaled_mm", *args, use_fast_accum=FAST).config  # noqa: E731
            else:
                sets = _make_sets(m, n, k, DTYPES[DTYPE_NAME], True)
                fns = {"plain": _rotating(lambda x, b, bias: cg.mm(x, b), sets),
                       "fused": _rotating(lambda x, b, bias: cg.gemm(x, b, bias=bias, activation=ACT), sets),
                       "torch_mm": _rotating(lambda x, b, bias: torch.mm(x, b), sets),
                       "torch_fused": _rotating(lambda x, b, bias: torch._addmm_activation(
                           bias, x, b, use_gelu=ACT == "gelu_tanh"), sets)}
                config = lambda kind, args=sets[0]: (cg.explain("mm", *args[:2]) if kind == "plain" else  # noqa: E731
                                                     cg.explain("gemm", *args[:2], bias=args[2], activation=ACT)).config
            missing = sorted({VARIANTS[v][0] for v in CHOSEN} - set(fns))
            if missing:
                sys.exit(f"{'x'.join(map(str, shape))} {DTYPE_NAME}: no {', '.join(missing)} variant here "
                         f"(this form has {', '.join(fns)})")
            results = {v: [] for v in CHOSEN}
            configs = {}
            order = CHOSEN + CHOSEN[::-1]
            for v in order:
                kind, env = VARIANTS[v]
                for key in ENV_KEYS:
                    os.environ.pop(key, None)
                os.environ.update(env)
                for _ in range(3):
                    fns[kind]()  # warm-up under this env
                configs[v] = "cuBLAS" if kind.startswith("torch") else config(kind)
                results[v].append(sustained(fns[kind], sampler))
                if v == order[0] and not results[v][0][4]:
                    print("   (no nvidia-smi samples in the run's second half)")
            for key in ENV_KEYS:
                os.environ.pop(key, None)
            print(f"{'x'.join(map(str, shape))} {DTYPE_NAME}, {ACT}, runs of {RUN_S:g} s (two passes, mirrored order)")
            base = statistics.mean(r[1] for r in results[CHOSEN[0]])
            for v, runs in results.items():
                first = statistics.mean(r[0] for r in runs)
                steady = statistics.mean(r[1] for r in runs)
                mhz = statistics.mean(r[2] for r in runs)
                watts = statistics.mean(r[3] for r in runs)
                passes = " / ".join(f"{r[1]:.1f}" for r in runs)
                print(f"   {v:11s} first {first:8.1f} us  steady {steady:8.1f} us ({steady / base - 1:+6.1%} vs "
                      f"{CHOSEN[0]})  {mhz:6.0f} MHz  {watts:5.0f} W  {configs[v]}  passes: {passes}", flush=True)
            del sets, fns, config
            torch.cuda.empty_cache()
    finally:
        sampler.close()


if __name__ == "__main__":
    main()
