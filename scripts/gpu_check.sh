#!/usr/bin/env bash
# Build, inspect, check, test and benchmark cutorch_gemm on the GPU machine, in one call.
#
#   bash scripts/gpu_check.sh            (from the repo root; it cd's there anyway)
#
# Stages: GPU list -> build (pip -e, ptxas -v) -> ptxas summary -> SASS histogram -> info ->
# check -> GPU tests -> benchmark -> stage summary -> benchmark table (printed LAST, so the
# tail of the output that the device tool returns holds it).
# A failed build stops the script; any other failed stage is recorded, the rest still run,
# and the script exits 1 at the end if anything failed.
#
# Environment:
#   OUT=./gpu_out        where the results go (the device tool brings back at most 8 files,
#                        so this script writes exactly these 7: build.log ptxas.txt
#                        sass_summary.txt gpu_check.log bench_gemm.csv bench_gemm.txt
#                        bench_gemm.png)
#   SKIP_BUILD=1         use the extension that is already built
#   SKIP_TESTS=1         skip pytest
#   SKIP_SASS=1          skip the SASS histogram (cuobjdump: ~40 s)
#   SKIP_BENCH=1         skip python -m cutorch_gemm bench (a build-and-test call)
#   SKIP_SM80_BENCH=1    skip benchmarks/bench_sm80.py --quick (the sm80 family forced, vs PyTorch)
#   GROUPED_BENCH=1      also run benchmarks/bench_grouped.py --quick (MoE shapes vs torch._grouped_mm)
#   DECODE_BENCH=1       also run benchmarks/experiments/list_overhead.py DECODE=1 (MoE decode shapes vs
#                        torch._grouped_mm; the list API's host time)
#   SANITIZE=1           also run compute-sanitizer (memcheck, racecheck, synccheck) over
#                        scripts/sanitize_sweep.py (every family and config)
#   TESTS="tests"        the pytest paths of the GPU test stage (e.g. tests/test_scaled_mm.py)
#   BENCH_SUITES=dense,small_m,fp32,epilogue,fp8,moe128,moe8   BENCH_DTYPES=bfloat16   BENCH_QUICK=1
#   MAX_JOBS (default: all cores)   PYTHON (default: python3)
#   TORCH_CUDA_ARCH_LIST (default 8.0;9.0a; "9.0a" alone halves the build on a Hopper GPU)
#   CHECK_TIMEOUT=300 TEST_TIMEOUT=300 BENCH_TIMEOUT=420 (seconds; a hung kernel must not
#   eat the whole lease, and the table of a finished bench must still come back)
set -euo pipefail
export PYTHONUNBUFFERED=1

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
LOG="$OUT/gpu_check.log"
: > "$LOG"
BENCH_SUITES="${BENCH_SUITES:-dense,small_m,fp32,epilogue,fp8,moe128,moe8}"
BENCH_DTYPES="${BENCH_DTYPES:-bfloat16}"
TMPD="$(mktemp -d)"
trap 'rm -rf "$TMPD"' EXIT

declare -a SUMMARY=()   # one line per stage
declare -a FAILED=()

say() { echo "$@" | tee -a "$LOG"; }

# run_stage NAME TIMEOUT_S SHOW CMD...
#   SHOW: all (live on the console), tail:N (last N lines after it ends), none.
#   Output always goes to $LOG. Never aborts the script; records rc and time.
run_stage() {
  local name=$1 limit=$2 show=$3
  shift 3
  local out="$TMPD/$name.out" rc t0=$SECONDS
  say ""
  say "==== $name: $*"
  set +e
  if [[ $show == all ]]; then
    timeout -k 15 "$limit" "$@" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
  else
    timeout -k 15 "$limit" "$@" >"$out" 2>&1
    rc=$?
  fi
  set -e
  cat "$out" >>"$LOG"
  if [[ $show == tail:* ]]; then tail -n "${show#tail:}" "$out"; fi
  local what="ok"
  if [[ $rc == 124 || $rc == 137 ]]; then what="TIMED OUT after ${limit}s"
  elif [[ $rc != 0 ]]; then what="FAILED (rc=$rc)"; fi
  # pytest: 5 means no test was selected (no GPU tests yet), not a failure.
  if [[ $name == tests && $rc == 5 ]]; then what="no tests selected (rc=5)"; rc=0; fi
  # bench (benchmarks/bench_gemm.py exit codes): 3 = some results did not match PyTorch's,
  # 4 = nothing measured (a CPU-only build); 0 without a table = no GPU: a failure here.
  if [[ $name == bench && $rc == 3 ]]; then what="ran, but some results did not match PyTorch (WARN rows)"; fi
  if [[ $name == bench && $rc == 4 ]]; then what="nothing measured (_C built without CUDA?)"; fi
  if [[ $name == bench && $rc == 0 && ! -s "$OUT/bench_gemm.txt" ]]; then
    what="nothing measured (no GPU?)"; rc=4
  fi
  say "==== $name: $what, $((SECONDS - t0)) s"
  SUMMARY+=("$(printf '%-8s %6s  %s' "$name" "$((SECONDS - t0))s" "$what")")
  if [[ $rc != 0 ]]; then FAILED+=("$name"); fi
  return 0
}

# ---------------------------------------------------------------------------------------------
say "==== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) in $PWD, git $(git rev-parse --short HEAD 2>/dev/null || echo '?'), OUT=$OUT"
nvidia-smi -L 2>&1 | tee -a "$LOG" || say "nvidia-smi failed"
say "python: $PY ($("$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1))"
say "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo 'not found')"

source scripts/system_gcc.sh  # (not the image's default compiler: its extension segfaults on any error message)

# ---------------------------------------------------------------------------------------------
# Build. Its full output is build.log; the console gets it without the ptxas -v chatter.
if [[ "${SKIP_BUILD:-0}" == 1 ]]; then
  say "==== build: skipped (SKIP_BUILD=1)"
  SUMMARY+=("$(printf '%-8s %6s  %s' build - skipped)")
else
  say ""
  say "==== build: MAX_JOBS=${MAX_JOBS:-$(nproc)} CUTORCH_GEMM_PTXAS_VERBOSE=1 pip install -v --no-build-isolation --no-deps -e ."
  t0=$SECONDS
  set +e
  # -v: without it pip hides the compiler's output, and with it the ptxas report.
  MAX_JOBS="${MAX_JOBS:-$(nproc)}" CUTORCH_GEMM_PTXAS_VERBOSE=1 \
    "$PY" -m pip install -v --no-build-isolation --no-deps -e . 2>&1 \
    | tee "$OUT/build.log" \
    | grep --line-buffered -v -E '^ *ptxas info|bytes stack frame, [0-9]+ bytes spill'
  rc=${PIPESTATUS[0]}
  set -e
  say "==== build: rc=$rc, $((SECONDS - t0)) s"
  if [[ $rc != 0 ]]; then
    say "BUILD FAILED; the first errors in $OUT/build.log:"
    grep -n -E 'error|Error' "$OUT/build.log" | head -n 30 | tee -a "$LOG" || true
    exit 1
  fi
  SUMMARY+=("$(printf '%-8s %6s  %s' build "$((SECONDS - t0))s" ok)")

  # Registers, shared memory, stack and spills of every kernel, from ptxas -v.
  run_stage ptxas 120 all "$PY" - "$OUT/build.log" "$OUT/ptxas.txt" <<'PYEOF'
import re, shutil, subprocess, sys
log, dst = sys.argv[1], sys.argv[2]
entry_re = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
props_re = re.compile(r"Function properties for (\S+)")
frame_re = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
used_re = re.compile(r"Used (\d+) registers")
smem_re = re.compile(r"(\d+) bytes smem")
kernels, raw, cur, props_for = [], [], None, None
for line in open(log, errors="replace"):
    if "ptxas" not in line and "bytes stack frame" not in line:
        continue
    raw.append(line.rstrip())
    if m := entry_re.search(line):
        cur = dict(name=m[1], arch=m[2], regs=0, smem=0, stack=0, spill_st=0, spill_ld=0)
        kernels.append(cur)
    elif m := props_re.search(line):
        props_for = m[1]
    elif (m := frame_re.search(line)) and cur and props_for == cur["name"]:
        cur.update(stack=int(m[1]), spill_st=int(m[2]), spill_ld=int(m[3]))
    elif (m := used_re.search(line)) and cur:
        cur["regs"] = int(m[1])
        if s := smem_re.search(line):
            cur["smem"] = int(s[1])
names = sorted({k["name"] for k in kernels})
demangled = dict(zip(names, names))
filt = shutil.which("cu++filt") or shutil.which("c++filt")
if filt and names:
    res = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True)
    if res.returncode == 0 and len(res.stdout.splitlines()) == len(names):
        demangled = dict(zip(names, res.stdout.splitlines()))
def short(n, width=150):
    d = demangled[n]
    return d if len(d) <= width else d[:width - 3] + "..."
with open(dst, "w") as f:
    f.write(f"{'arch':<7} {'regs':>4} {'smem':>7} {'stack':>6} {'spillST':>7} {'spillLD':>7}  kernel\n")
    for k in sorted(kernels, key=lambda k: (k["arch"], -k["regs"], k["name"])):
        f.write(f"{k['arch']:<7} {k['regs']:>4} {k['smem']:>7} {k['stack']:>6} {k['spill_st']:>7} "
                f"{k['spill_ld']:>7}  {short(k['name'])}\n")
    f.write("\n# raw ptxas lines\n" + "\n".join(raw) + "\n")
if not kernels:
    print("ptxas: no kernel lines in build.log (nothing compiled, or the build did not pass -Xptxas=-v)")
    sys.exit(0)
archs = {}
for k in kernels:
    archs[k["arch"]] = archs.get(k["arch"], 0) + 1
top = max(kernels, key=lambda k: k["regs"])
print(f"ptxas: {len(kernels)} kernel builds ({', '.join(f'{a}: {n}' for a, n in sorted(archs.items()))}); "
      f"max {top['regs']} registers ({top['arch']} {short(top['name'])[:100]})")
spills = [k for k in kernels if k["spill_st"] or k["spill_ld"]]
stacks = [k for k in kernels if k["stack"] and not (k["spill_st"] or k["spill_ld"])]
if spills:
    print(f"ptxas: {len(spills)} kernel builds SPILL:")
    for k in spills[:15]:
        print(f"  {k['arch']:<7} {k['regs']:>3} regs, {k['spill_st']} B spill stores, "
              f"{k['spill_ld']} B spill loads  {short(k['name'])[:110]}")
else:
    print("ptxas: no spills")
if stacks:
    print(f"ptxas: {len(stacks)} kernel builds use a stack frame without spilling (local arrays?)")
print(f"ptxas: table in {dst}")
PYEOF
fi

# ---------------------------------------------------------------------------------------------
# SASS instruction histogram of the built extension (the raw dump stays out of $OUT: size).
if [[ "${SKIP_SASS:-0}" != 1 ]]; then
run_stage sass 300 all "$PY" - "$OUT/sass_summary.txt" "$TMPD/sass.txt" <<'PYEOF'
import collections, glob, os, re, shutil, subprocess, sys
dst, dump = sys.argv[1], sys.argv[2]
tool = shutil.which("cuobjdump") or next(
    (p for p in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump"),
                 "/usr/local/cuda/bin/cuobjdump") if os.path.exists(p)), None)
if tool is None:
    print("sass: cuobjdump not found; skipped")
    open(dst, "w").write("cuobjdump not found\n")
    sys.exit(0)
try:
    import cutorch_gemm._C as C
    so = C.__file__
except Exception as exc:
    found = sorted(glob.glob("cutorch_gemm/_C*.so") + glob.glob("build/**/_C*.so", recursive=True))
    if not found:
        print(f"sass: cannot find the built _C*.so ({exc})")
        sys.exit(1)
    so = found[0]
with open(dump, "w") as f:
    res = subprocess.run([tool, "-sass", so], stdout=f, stderr=subprocess.PIPE, text=True)
if res.returncode != 0:
    # A CPU-only build has no device code: cuobjdump says so and fails.
    print(f"sass: {tool} -sass {so} failed: {res.stderr.strip()[:300]}")
    open(dst, "w").write(f"cuobjdump failed on {so}: {res.stderr.strip()}\n")
    sys.exit(0 if "does not contain device code" in res.stderr else 1)
KEYS = ["FFMA", "DFMA", "HMMA", "DMMA", "IMMA", "HGMMA", "QGMMA", "LDS", "LDSM", "STS", "LDG", "LDGSTS", "STG",
        "UTMALDG", "UTMASTG", "LDL", "STL", "BAR"]
arch_re = re.compile(r"^\s*code for (sm_\w+)")
func_re = re.compile(r"^\s*Function : (\S+)")
inst_re = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)")
per_func = collections.OrderedDict()
arch, func = "?", None
for line in open(dump, errors="replace"):
    if m := arch_re.match(line):
        arch = m[1]
    elif m := func_re.match(line):
        func = (arch, m[1])
        per_func.setdefault(func, collections.Counter())
    elif func and (m := inst_re.search(line)):
        per_func[func][m[1]] += 1
names = sorted({n for _, n in per_func})
demangled = dict(zip(names, names))
filt = shutil.which("cu++filt") or shutil.which("c++filt")
if filt and names:
    r = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True)
    if r.returncode == 0 and len(r.stdout.splitlines()) == len(names):
        demangled = dict(zip(names, r.stdout.splitlines()))
def short(n, width=120):
    d = demangled[n]
    return d if len(d) <= width else d[:width - 3] + "..."
per_arch = collections.defaultdict(collections.Counter)
for (a, _), c in per_func.items():
    per_arch[a].update(c)
head = f"{'arch':<7} " + " ".join(f"{k:>7}" for k in KEYS) + f" {'total':>8}"
row = lambda a, c: f"{a:<7} " + " ".join(f"{c[k]:>7}" for k in KEYS) + f" {sum(c.values()):>8}"
lines = [f"SASS of {so} ({len(per_func)} functions), instruction counts (static, base opcode)",
         "", "per arch:", head] + [row(a, c) for a, c in sorted(per_arch.items())]
lines += ["", "per function:", head + "  function"]
lines += [row(a, c) + "  " + short(n) for (a, n), c in per_func.items()]
lines += ["", "top 25 opcodes per arch:"]
for a, c in sorted(per_arch.items()):
    lines.append(f"{a}: " + ", ".join(f"{k} {v}" for k, v in c.most_common(25)))
open(dst, "w").write("\n".join(lines) + "\n")
print("\n".join(["sass: " + head] + ["sass: " + row(a, c) for a, c in sorted(per_arch.items())]))
local = [(a, n, c) for (a, n), c in per_func.items() if c["LDL"] or c["STL"]]
if local:
    print(f"sass: {len(local)} functions use local memory (LDL/STL):")
    for a, n, c in local[:15]:
        print(f"  {a:<7} LDL {c['LDL']:>4} STL {c['STL']:>4}  {short(n)[:110]}")
else:
    print("sass: no LDL/STL (no local-memory traffic)")
print(f"sass: full table in {dst}")
PYEOF
fi

# ---------------------------------------------------------------------------------------------
run_stage info 120 all "$PY" -m cutorch_gemm info
run_stage check "${CHECK_TIMEOUT:-300}" all "$PY" -m cutorch_gemm check

if [[ "${SKIP_TESTS:-0}" == 1 ]]; then
  say "==== tests: skipped (SKIP_TESTS=1)"
  SUMMARY+=("$(printf '%-8s %6s  %s' tests - skipped)")
else
  # Full output in gpu_check.log; the console gets the last 30 lines.
  read -r -a test_paths <<<"${TESTS:-tests}"
  run_stage tests "${TEST_TIMEOUT:-300}" tail:30 "$PY" -m pytest -q -m gpu "${test_paths[@]}"
fi

# The sm80 family forced on this GPU against PyTorch (and split-K on/off): its table goes to the
# console and the log (its CSV to a temporary folder: $OUT keeps to its 7 files).
if [[ "${SKIP_SM80_BENCH:-0}" != 1 ]]; then
  run_stage sm80 "${SM80_BENCH_TIMEOUT:-240}" tail:16 "$PY" benchmarks/bench_sm80.py --quick --out "$TMPD"
fi

# compute-sanitizer memcheck (whole sweep), racecheck and synccheck (one case per family) over
# scripts/sanitize_sweep.py when asked: SANITIZE=1. racecheck prints every hazard (--racecheck-report all): the
# reports that led to the sixty-sixth session's skinny epilogue change were read that way (benchmarks/RESULTS.md).
if [[ "${SANITIZE:-0}" == 1 ]]; then
  SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  run_stage memcheck "${SANITIZE_TIMEOUT:-400}" tail:12 "$SAN" --tool memcheck --error-exitcode 9 \
    "$PY" scripts/sanitize_sweep.py
  run_stage racecheck "${SANITIZE_TIMEOUT:-400}" tail:8 "$SAN" --tool racecheck --racecheck-report all --error-exitcode 9 \
    "$PY" scripts/sanitize_sweep.py --quick
  run_stage synccheck "${SANITIZE_TIMEOUT:-400}" tail:8 "$SAN" --tool synccheck --error-exitcode 9 \
    "$PY" scripts/sanitize_sweep.py --quick
fi

# benchmarks/bench_grouped.py --quick (grouped_mm forms, the SwiGLU up-projection, the list API,
# one GroupedExperts layer) when asked: GROUPED_BENCH=1. Its CSV goes to the temporary folder.
if [[ "${GROUPED_BENCH:-0}" == 1 ]]; then
  run_stage grouped "${GROUPED_BENCH_TIMEOUT:-300}" tail:30 "$PY" benchmarks/bench_grouped.py --quick --out "$TMPD"
fi

# MoE decode (a few rows over many experts) and the list API's host time against kernel time
# (benchmarks/experiments/list_overhead.py, DECODE=1) when asked: DECODE_BENCH=1.
if [[ "${DECODE_BENCH:-0}" == 1 ]]; then
  run_stage decode "${DECODE_BENCH_TIMEOUT:-300}" tail:40 env DECODE=1 "$PY" benchmarks/experiments/list_overhead.py
fi

# The bench prints its table on stdout; the console gets its progress lines when it ends and
# the table once, at the very end. It rewrites bench_gemm.{csv,txt} after every case, so a
# timed-out run still leaves what it measured.
bench_args=(--out "$OUT" --suite "$BENCH_SUITES" --dtype "$BENCH_DTYPES")
if [[ "${BENCH_QUICK:-0}" == 1 ]]; then bench_args+=(--quick); fi
rm -f "$OUT/bench_gemm.txt"
if [[ "${SKIP_BENCH:-0}" == 1 ]]; then
  say "==== bench: skipped (SKIP_BENCH=1)"
  SUMMARY+=("$(printf '%-8s %6s  %s' bench - skipped)")
  : > "$TMPD/bench.out"
else
  run_stage bench "${BENCH_TIMEOUT:-420}" none "$PY" -m cutorch_gemm bench "${bench_args[@]}"
  grep -E '^bench_gemm:|^\[ *[0-9]+/' "$TMPD/bench.out" || true
fi

# ---------------------------------------------------------------------------------------------
say ""
say "==== summary"
for line in "${SUMMARY[@]}"; do say "  $line"; done
say "  results in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
if (( ${#FAILED[@]} )); then say "  FAILED stages: ${FAILED[*]}"; else say "  all stages passed"; fi
say ""
if [[ -s "$OUT/bench_gemm.txt" ]]; then
  say "==== benchmark ($BENCH_SUITES; $BENCH_DTYPES)$(grep -q TIMED <<<"${SUMMARY[*]}" && echo ', cut short')"
  tee -a "$LOG" <"$OUT/bench_gemm.txt"
else
  say "==== benchmark: no table; last lines of its output:"
  tail -n 30 "$TMPD/bench.out" | tee -a "$LOG"
fi
# The table stays the last thing printed; the exit status carries the verdict.
if (( ${#FAILED[@]} )); then exit 1; fi
