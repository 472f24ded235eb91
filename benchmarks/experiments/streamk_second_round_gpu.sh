#!/usr/bin/env bash
# Deep-K dense shapes whose 128x256 tiles take between one and two rounds with the second 20-60% full, where neither
# stream-K form of choose_sm90_streamk serves ("last": at least half a round; "wide": at most a quarter), so the wave
# rule takes the 64x256 ping-pong tiles or a fit width (seventy-fifth session: 1296x4096x14336 on ping-pong 0.857x
# torch.mm, cooperative tiles without clusters and "wide" stream-K forced 0.948x). Each against the "wide" form forced
# (every tile in at most two pieces), with and without clusters, and "last". One GPU call (~5 min with the build):
#
#   bash benchmarks/experiments/streamk_second_round_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh >/dev/null || exit 1
echo "== deep K, 128x256 tiles in 1-2 rounds (ratio to torch.mm, 5 rounds)"
SHAPES=1296x4096x14336,1408x4096x14336,1296x4096x8192,1424x4096x8192,1200x4608x8192,1000x6144x8192,2304x2560x8192,1296x4096x4096 \
  ROUNDS=5 TABLE=1 \
  VARS="def;c1wide:CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=wide;wide:CUTORCH_GEMM_SM90_STREAMK=wide;cc1wide:CUTORCH_GEMM_SM90_CONFIG=coop+CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=wide;c1last:CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=last" \
  timeout 300 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -11
echo "== what each variant runs (explain)"
python3 - <<'PY'
import os, torch, cutorch_gemm as cg
vs = {"def": {}, "c1wide": {"CUTORCH_GEMM_SM90_CLUSTER": "1", "CUTORCH_GEMM_SM90_STREAMK": "wide"},
      "wide": {"CUTORCH_GEMM_SM90_STREAMK": "wide"}}
for s in ("1296x4096x14336", "1424x4096x8192", "1200x4608x8192", "2304x2560x8192"):
    m, n, k = map(int, s.split("x"))
    x = torch.empty(m, k, device="cuda", dtype=torch.bfloat16); w = torch.empty(n, k, device="cuda", dtype=torch.bfloat16)
    for name, env in vs.items():
        for key in ("CUTORCH_GEMM_SM90_CLUSTER", "CUTORCH_GEMM_SM90_STREAMK"): os.environ.pop(key, None)
        os.environ.update(env)
        e = cg.explain("mm", x, w.t())
        r = e.reason
        print(f"{s:16s} {name:7s} {e.config} | " + "; ".join(p for p in r.split("; ") if "stream" in p or "cluster" in p)[:230])
PY
