"""Power, SM clock and throughput of one GEMM run back to back for a few seconds: the sm80 family
forced (env variants in subprocesses) vs torch.mm. Energy per FLOP = W / (TFLOP/s). Under the
power cap both run at ~690 W, so their speed ratio is the inverse ratio of energy per FLOP.
    python benchmarks/experiments/power_sm80.py"""
import os, subprocess, sys, time, json
import torch

def worker(kind, M, N, K, layout, secs):
    import cutorch_gemm as cg
    bf = torch.float32 if os.environ.get("P_DT") == "f32" else torch.bfloat16
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(M, K, device="cuda", dtype=bf)
    if layout == "nt":   # x @ W^T (both K-major)
        b = torch.randn(N, K, device="cuda", dtype=bf).t()
    elif layout == "nn":  # dy @ W (b MN-major)
        b = torch.randn(K, N, device="cuda", dtype=bf)
    else:                 # dW: a MN-major, b MN-major
        a = torch.randn(K, M, device="cuda", dtype=bf).t(); b = torch.randn(K, N, device="cuda", dtype=bf)
    f = (lambda: torch.mm(a, b)) if kind == "torch" else (lambda: cg.mm(a, b))
    for _ in range(20): f()
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm,temperature.gpu",
                            "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    n = 0; t0 = time.time()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    while time.time() - t0 < secs:
        for _ in range(10): f()
        n += 10
        torch.cuda.synchronize()
    e.record(); e.synchronize()
    smi.terminate(); out = smi.communicate()[0]
    ms = s.elapsed_time(e) / n
    rows = [list(map(float, l.split(","))) for l in out.strip().splitlines() if l.count(",") == 2]
    rows = rows[len(rows) // 4:]  # skip the ramp
    p = sum(r[0] for r in rows) / len(rows); c = sum(r[1] for r in rows) / len(rows); t = rows[-1][2]
    tf = 2 * M * N * K / ms / 1e9
    print(json.dumps(dict(ms=ms, tflops=tf, watts=p, mhz=c, temp=t, pj_per_flop=p / (tf * 1e12) * 1e12)))

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6], float(sys.argv[7])); sys.exit()
    shapes = [(4096, 4096, 4096, "nt", ""), (8192, 14336, 4096, "nt", ""), (8192, 8192, 8192, "nt", "f32")]
    A = {"CUTORCH_GEMM_ARCH": "sm80"}
    for M, N, K, lay, dt in shapes:
        variants = [("torch", {}), ("ours", A), ("ours", {**A, "CUTORCH_GEMM_SM80_EPILOGUE": "general"})]
        if dt == "f32":
            variants.append(("ours", {**A, "CUTORCH_GEMM_SM80_CONFIG": "sm80_128x256x32_s4"}))
        for rnd in range(2):
            for kind, env in variants:
                r = subprocess.run([sys.executable, __file__, "worker", kind, str(M), str(N), str(K), lay, "3"],
                                   env={**os.environ, **env, "P_DT": dt}, capture_output=True, text=True)
                line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
                try:
                    d = json.loads(line)
                    e = {k: v for k, v in env.items() if k != "CUTORCH_GEMM_ARCH"}
                    print(f"{dt or 'bf16'} {M}x{N}x{K} r{rnd} {kind:5} {str(e):50} {d['tflops']:6.1f} TF/s {d['watts']:5.0f} W "
                          f"{d['mhz']:5.0f} MHz {d['temp']:3.0f}C {d['pj_per_flop']:.3f} pJ/FLOP", flush=True)
                except Exception:
                    print(kind, env, "failed:", line, flush=True)
