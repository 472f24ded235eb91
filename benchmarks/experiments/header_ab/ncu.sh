#!/usr/bin/env bash
# One launch of a config under ncu, through a built header_ab binary: bytes, cycles, clock, tensor-pipe activity.
#   AB_BIN=path bash benchmarks/experiments/header_ab/ncu.sh M N K CONFIG [VAR=value+...]
# Both sides get CONFIG (AB_NEW_CFG), so the first graph node that ncu sees is that config's kernel (the old side's
# graph runs first). NOTE: `--launch-skip` does not reach the second graph's nodes (forty-eighth session: it profiled
# the first graph's kernel again). The optional VAR=value list is set while the old side's graph is captured
# (AB_OLD_ENV: e.g. CUTORCH_GEMM_SM90_RASTER=16). --clock-control none: the machines' clocks are left alone, so
# compare cycles and bytes between runs; the clock (cycles / time) is what the power cap left.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: AB_BIN=path $0 M N K CONFIG [VAR=value+...]"; exit 2; }
metrics=gpu__time_duration.sum,sm__cycles_active.avg,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,\
dram__bytes_read.sum,smsp__inst_executed.sum
AB_NEW_CFG=$4 AB_OLD_ENV="${5:-}" ncu --clock-control none --graph-profiling node -k regex:sm90_gemm_ws_kernel -c 1 \
  --metrics "$metrics" --csv "${AB_BIN:-/tmp/header_ab}" "$1" "$2" "$3" "$4" 2>&1 |
  grep -E '^"[0-9]' | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"'
