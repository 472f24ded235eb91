"""Benchmark cutorch_gemm against PyTorch's own GEMM (cuBLAS / cuBLASLt), in one run on one GPU.

Shape sets are those of /work/shared/design/ANCHORS.md. Operands are laid out as in
``nn.Linear``: ``x`` (M, K) row-major and ``b = W.t()`` where ``W`` (N, K) is contiguous, so
``b`` is a column-major (K, N) view, never a copy.

Suites (``SUITES``):
    dense     large square-ish GEMMs, in the requested 16-bit dtypes
    small_m   decode-like shapes, M <= 128 (bandwidth-bound)
    fp32      float32 with TF32 off (SIMT / FFMA path on both sides)
    tf32      float32 with TF32 on (not run by default)
    epilogue  bias + GELU fused: ours ``gemm(..., bias, activation)`` against
              ``torch._addmm_activation`` (cuBLASLt GELU_BIAS epilogue), plus our plain ``mm``
    fp8, fp8_rowwise   ``scaled_mm`` (e4m3 -> bf16) against ``torch._scaled_mm``
    moe128, moe8       ``grouped_mm`` 2D x 3D on MoE expert shapes against ``torch._grouped_mm``
    moe_decode, moe_decode8   the same at decode sizes: a few rows, one per expert (not run by default)
    mid, mid_epilogue  mid-size shapes (128x256 tiles leave rounds partly empty), plain and with bias + GELU
              (not run by default)
    big, big_epilogue  shapes where the 128x320 and 192x192 tiles serve, plain and with bias + GELU (not run by
              default)
    tokens             350-1600 tokens against nn.Linear weights, where the fit rules' one- and two-round forms act
              (not run by default)
(defined in ``benchmarks/gemm_suites.py``)

Timing follows /work/.library/device/METHOD.md: ``triton.testing.do_bench`` medians (a
CUDA-event loop when Triton is missing), random inputs (never zeros), several input sets
rotated when one set fits in L2, ours and PyTorch's timed in the same process in interleaved
rounds after an untimed settling run (``time_interleaved``: both sides see the same clock drift,
and each starts a round equally often), or each alone (``--timing alone``); see ``bench_timing.py``.
Only ratios from one run are comparable: absolute times drift by ~6% between runs.

Usage:
    python benchmarks/bench_gemm.py --suite dense --dtype bf16 --quick --out results
    python -m cutorch_gemm bench --suite dense,epilogue
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import math
import os
import sys
import time
from typing import Callable, Iterable, Optional, Sequence

import torch

# --------------------------------------------------------------------------------------------
# What to run: benchmarks/gemm_suites.py
# --------------------------------------------------------------------------------------------

try:  # imported as benchmarks.bench_gemm (python -m cutorch_gemm bench, the tests)
    from .gemm_suites import (DEFAULT_DTYPES, DEFAULT_SUITES, DTYPE_ALIASES, EPILOGUE_ACTIVATION,  # noqa: F401
                              REL_ERR_BOUND, SHORT, SUITES, Suite)
except ImportError:  # run as a script: benchmarks/ is sys.path[0]
    from gemm_suites import (DEFAULT_DTYPES, DEFAULT_SUITES, DTYPE_ALIASES, EPILOGUE_ACTIVATION,  # noqa: F401
                             REL_ERR_BOUND, SHORT, SUITES, Suite)

ROTATE_FACTOR = 3   # input sets together span this many L2s when one set fits in L2
MAX_SETS = 32
FALLBACK_L2_BYTES = 50 * 2**20
DEVICE = "cuda"     # a module constant so the logic can be exercised on a CPU in a test

CSV_FIELDS = ("suite", "dtype", "M", "N", "K", "ours_ms", "torch_ms", "ours_tflops",
              "torch_tflops", "ratio", "ours_plain_ms", "rel_err", "ok", "config", "note")


# --------------------------------------------------------------------------------------------
# Timing: benchmarks/bench_timing.py
# --------------------------------------------------------------------------------------------

try:  # (imported as benchmarks.bench_gemm, or run as a script; re-exported: the experiments import them from here)
    from .bench_timing import (ALONE_RUN_S, INTERLEAVE_ROUNDS, SETTLE_MS, TIMINGS, _chunk_times,  # noqa: F401
                               _event_bench, _settle, _triton_do_bench, time_alone, time_interleaved, time_ms)
except ImportError:
    from bench_timing import (ALONE_RUN_S, INTERLEAVE_ROUNDS, SETTLE_MS, TIMINGS, _chunk_times,  # noqa: F401
                              _event_bench, _settle, _triton_do_bench, time_alone, time_interleaved, time_ms)


def _rotating(fn: Callable, sets: Sequence[tuple]) -> Callable[[], object]:
    """A no-argument callable that applies ``fn`` to the next input set on each call."""
    if len(sets) == 1:
        args = sets[0]
        return lambda: fn(*args)
    cycle = itertools.cycle(sets)
    return lambda: fn(*next(cycle))


@contextlib.contextmanager
def _tf32(enabled: bool):
    """Set torch's TF32 switch for matmuls (our dispatch reads the same switch)."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# --------------------------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------------------------

def _l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or FALLBACK_L2_BYTES)


def _make_sets(M: int, N: int, K: int, dtype: torch.dtype, with_bias: bool) -> list:
    """Random input sets (x, b[, bias]); several when one set fits in L2, so we time HBM."""
    elem = torch.tensor([], dtype=dtype).element_size()
    one_set = (M * K + N * K + M * N + (N if with_bias else 0)) * elem
    l2 = _l2_bytes()
    n_sets = 1 if one_set >= l2 else min(MAX_SETS, math.ceil(ROTATE_FACTOR * l2 / one_set))
    sets = []
    for _ in range(n_sets):
        x = torch.randn(M, K, device=DEVICE, dtype=dtype)
        # nn.Linear-like scale keeps |out| ~ |x| so fp16 cannot overflow at large K.
        w = torch.randn(N, K, device=DEVICE, dtype=dtype) * K ** -0.5
        if with_bias:
            sets.append((x, w.t(), torch.randn(N, device=DEVICE, dtype=dtype)))
        else:
            sets.append((x, w.t()))
    return sets


def to_layout(sets: list, layout: str) -> list:
    """(x, W.t()[, ...]) sets in another operand layout, same values, fresh storage: "nn" b MN-major (W.t()
    copied row-major: the dX = dY W form), "tn" both operands MN-major (x M-contiguous too: dW = dY^T X); "nt" as
    they are."""
    if layout == "nt":
        return sets
    return [(x.t().contiguous().t() if layout == "tn" else x, b.contiguous(), *rest) for x, b, *rest in sets]


def _make_sets_fp8(M: int, N: int, K: int, dtype: torch.dtype, rowwise: bool) -> list:
    """Random scaled_mm input sets (x, w.t(), scale_a, scale_b), rotated like _make_sets."""
    one_set = M * K + N * K + 2 * M * N
    l2 = _l2_bytes()
    n_sets = 1 if one_set >= l2 else min(MAX_SETS, math.ceil(ROTATE_FACTOR * l2 / one_set))
    sets = []
    for _ in range(n_sets):
        x = torch.randn(M, K, device=DEVICE).to(dtype)
        w = torch.randn(N, K, device=DEVICE).to(dtype)
        shape_a, shape_b = ((M, 1), (1, N)) if rowwise else ((), ())
        sa = torch.rand(shape_a, device=DEVICE) * K ** -0.5 + 1e-3
        sb = torch.rand(shape_b, device=DEVICE) + 0.5
        sets.append((x, w.t(), sa, sb))
    return sets


def _expert_offsets(tokens: int, experts: int) -> torch.Tensor:
    """int32 cumulative ends of a fixed skewed routing: expert e gets a share ~ (e + 1)^-0.7,
    multiples of 16 rows, every row routed (the same split in every run)."""
    w = torch.arange(1, experts + 1, dtype=torch.float64) ** -0.7
    units = torch.floor(w / w.sum() * (tokens // 16)).long()
    units[0] += tokens // 16 - int(units.sum())
    return (units * 16).cumsum(0).to(torch.int32).to(DEVICE)


def _decode_offsets(rows: int, experts: int) -> torch.Tensor:
    """int32 cumulative ends for MoE decode: `rows` rows spread evenly over the experts, one per
    expert while rows <= experts (most groups empty), every row routed (the same in every run)."""
    owner = (torch.arange(rows, dtype=torch.int64) * experts) // max(rows, 1)
    counts = torch.bincount(owner, minlength=experts)
    return counts.cumsum(0).to(torch.int32).to(DEVICE)


def _make_sets_grouped(T: int, N: int, K: int, dtype: torch.dtype, experts: int, decode: bool = False) -> list:
    """(x, W^T views, offs) sets, rotated like _make_sets; W is (E, N, K) like nn.Linear weights."""
    elem = torch.tensor([], dtype=dtype).element_size()
    one_set = (T * K + experts * N * K + T * N) * elem
    l2 = _l2_bytes()
    n_sets = 1 if one_set >= l2 else min(MAX_SETS, math.ceil(ROTATE_FACTOR * l2 / one_set))
    offs = _decode_offsets(T, experts) if decode else _expert_offsets(T, experts)
    return [(torch.randn(T, K, device=DEVICE, dtype=dtype),
             (torch.randn(experts, N, K, device=DEVICE, dtype=dtype) * K ** -0.5).transpose(1, 2), offs)
            for _ in range(n_sets)]


def _rel_err(ours: torch.Tensor, ref: torch.Tensor) -> float:
    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        raise ValueError(f"returned {ours.dtype} {tuple(ours.shape)}, "
                         f"expected {ref.dtype} {tuple(ref.shape)}")
    ours, ref = ours.float(), ref.float()
    err = float(torch.linalg.vector_norm(ours - ref) / torch.linalg.vector_norm(ref))
    return err if math.isfinite(err) else float("inf")


def _config_of(cg, op: str, *args, **kwargs) -> str:
    """explain(...).config as a short string, or '?' when explain is missing or fails."""
    explain = getattr(cg, "explain", None)
    if explain is None:
        return "?"
    try:
        e = explain(op, *args, **kwargs)
        splits = getattr(e, "splits", 1) or 1
        return str(getattr(e, "config", "?")) + (f" splitK={splits}" if splits > 1 else "")
    except Exception as exc:  # explain is diagnostic only: never fail a benchmark on it
        return f"? ({type(exc).__name__})"


def _tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12 if ms and math.isfinite(ms) else float("nan")


def _failed_row(suite: str, dtype: str, M: int, N: int, K: int, exc: BaseException) -> dict:
    nan = float("nan")
    return dict(suite=suite, dtype=dtype, M=M, N=N, K=K, ours_ms=nan, torch_ms=nan,
                ours_tflops=nan, torch_tflops=nan, ratio=nan, ours_plain_ms=nan, rel_err=nan,
                ok=False, config="?", note=f"{type(exc).__name__}: {exc}"[:200])


def run_case(cg, suite_name: str, dtype_name: str, M: int, N: int, K: int, timing: str = "interleaved") -> dict:
    """Check and time one (suite, dtype, M, N, K); returns one result row."""
    suite = SUITES[suite_name]
    dtype = getattr(torch, dtype_name)
    bound_key = "tf32" if (dtype_name == "float32" and suite.tf32) else dtype_name
    row = dict(suite=suite_name, dtype=dtype_name, M=M, N=N, K=K, ours_ms=float("nan"),
               torch_ms=float("nan"), ours_plain_ms=float("nan"), rel_err=float("nan"),
               ok=False, config="?", note="")
    epilogue = suite.kind == "epilogue"
    with _tf32(suite.tf32):
        if suite.kind == "scaled":
            sets = _make_sets_fp8(M, N, K, dtype, suite.rowwise)
        elif suite.kind == "grouped":
            sets = _make_sets_grouped(M, N, K, dtype, suite.experts, suite.decode)
        else:
            sets = to_layout(_make_sets(M, N, K, dtype, with_bias=epilogue), suite.layout)
        if suite.kind == "scaled":
            def ours(x, b, sa, sb):
                return cg.scaled_mm(x, b, sa, sb, out_dtype=torch.bfloat16)

            def theirs(x, b, sa, sb):
                return torch._scaled_mm(x, b, sa, sb, out_dtype=torch.bfloat16)
            row["config"] = _config_of(cg, "scaled_mm", *sets[0])
        elif suite.kind == "grouped":
            def ours(x, b, offs):
                return cg.grouped_mm(x, b, offs)

            def theirs(x, b, offs):
                return torch._grouped_mm(x, b, offs=offs)
            row["config"] = _config_of(cg, "grouped_mm", *sets[0])
        elif epilogue:
            def ours(x, b, bias):
                return cg.gemm(x, b, bias=bias, activation=EPILOGUE_ACTIVATION)

            def theirs(x, b, bias):
                return torch._addmm_activation(bias, x, b, use_gelu=True)
            row["config"] = _config_of(cg, "gemm", *sets[0][:2], bias=sets[0][2],
                                       activation=EPILOGUE_ACTIVATION)
        else:
            ours, theirs = (lambda x, b: cg.mm(x, b)), (lambda x, b: torch.mm(x, b))
            row["config"] = _config_of(cg, "mm", *sets[0])

        # Correctness first: a fast wrong kernel is not a result.
        try:
            row["rel_err"] = _rel_err(ours(*sets[0]), theirs(*sets[0]))
            row["ok"] = row["rel_err"] <= REL_ERR_BOUND[bound_key]
        except Exception as exc:
            row["note"] = f"ours failed: {type(exc).__name__}: {exc}"[:200]
        fns = {"torch_ms": _rotating(theirs, sets)}
        if not row["note"]:
            fns["ours_ms"] = _rotating(ours, sets)
            if epilogue:
                fns["ours_plain_ms"] = _rotating(lambda x, b, bias: cg.mm(x, b), sets)
        row.update(time_alone(fns) if timing == "alone" else time_interleaved(fns))
    del sets
    torch.cuda.empty_cache()
    row["ours_tflops"] = _tflops(M, N, K, row["ours_ms"])
    row["torch_tflops"] = _tflops(M, N, K, row["torch_ms"])
    row["ratio"] = row["torch_ms"] / row["ours_ms"] if row["ours_ms"] > 0 else float("nan")
    if not row["ok"] and not row["note"]:
        row["note"] = f"rel_err {row['rel_err']:.2e} > {REL_ERR_BOUND[bound_key]:.0e}"
    return row


# --------------------------------------------------------------------------------------------
# Progress, table, CSV, plot
# --------------------------------------------------------------------------------------------

class _Progress:
    """tqdm on a terminal when installed; otherwise one line per case on stderr (log-friendly)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.i, self.bar = total, enabled, 0, None
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc="bench", file=sys.stderr, leave=False)
            except ImportError:
                pass

    def start(self, label: str) -> None:
        self.i += 1
        if self.bar is not None:
            self.bar.set_postfix_str(label)
        elif self.enabled:
            print(f"[{self.i:>{len(str(self.total))}}/{self.total}] {label}", file=sys.stderr,
                  flush=True)

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fmt(v, spec: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def format_table(rows: Sequence[dict], timing: str = "interleaved") -> str:
    """A compact aligned text table of result rows."""
    # (the epilogue suites time our plain mm too: "epilogue", "big_epilogue")
    has_plain = any(isinstance(r.get("ours_plain_ms"), float) and math.isfinite(r["ours_plain_ms"]) for r in rows)
    head = ["suite", "dtype", "M", "N", "K", "ours ms", "torch ms", "ours TF/s", "torch TF/s",
            "ratio"] + (["plain ms"] if has_plain else []) + ["ok", "config"]
    lines = []
    for r in rows:
        cells = [r["suite"], SHORT.get(r["dtype"], r["dtype"]), str(r["M"]), str(r["N"]),
                 str(r["K"]), _fmt(r["ours_ms"], ".4f"), _fmt(r["torch_ms"], ".4f"),
                 _fmt(r["ours_tflops"], ".1f"), _fmt(r["torch_tflops"], ".1f"),
                 _fmt(r["ratio"], ".3f")]
        if has_plain:
            cells.append(_fmt(r.get("ours_plain_ms"), ".4f"))
        cells.append("ok" if r["ok"] else "WARN")
        config = str(r["config"])
        cells.append(config if len(config) <= 48 else config[:45] + "...")
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    left = {0, 1, len(head) - 1, len(head) - 2}   # text columns; numbers align right

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(c) for c in lines]
    notes = [f"  {r['suite']} {r['M']}x{r['N']}x{r['K']} {SHORT.get(r['dtype'], r['dtype'])}: "
             f"{r['note']}" for r in rows if r.get("note")]
    if notes:
        out += ["", "warnings:"] + notes
    out += ["", "ratio = torch_ms / ours_ms (>1: ours faster); TF/s = 2MNK / time"
            + ("; plain ms = our mm without the epilogue" if has_plain else "")
            + ("; each side timed alone (--timing alone: CUDA-graph replays)" if timing == "alone" else "")]
    return "\n".join(out)


def _csv_cell(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"   # empty: not measured
    return v


def write_csv(rows: Sequence[dict], path: str, fields: Optional[Sequence[str]] = None) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields or CSV_FIELDS), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_cell(v) for k, v in r.items()})


def write_plot(rows: Sequence[dict], path: str) -> Optional[str]:
    """TFLOP/s per case, ours vs PyTorch, one panel per suite. Returns a note if skipped."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display on the GPU machine
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: skipped the plot"
    suites = list(dict.fromkeys(r["suite"] for r in rows))
    several_dtypes = len({r["dtype"] for r in rows}) > 1
    fig, axes = plt.subplots(len(suites), 1, figsize=(12, 3.6 * len(suites)), squeeze=False)
    for ax, suite in zip(axes[:, 0], suites):
        sub = [r for r in rows if r["suite"] == suite]
        labels = [f"{r['M']}x{r['N']}x{r['K']}" + (f"\n{SHORT.get(r['dtype'], r['dtype'])}"
                                                   if several_dtypes else "") for r in sub]
        xs = range(len(sub))
        ours_tf = [r["ours_tflops"] for r in sub]
        ax.bar([x - 0.2 for x in xs], ours_tf, 0.4, label="cutorch_gemm")
        ax.bar([x + 0.2 for x in xs], [r["torch_tflops"] for r in sub], 0.4, label="PyTorch")
        for x, r in zip(xs, sub):
            # ratio above each pair; WARN in red where our result did not match PyTorch's
            top = max((v for v in (r["ours_tflops"], r["torch_tflops"]) if v == v), default=0)
            text = "WARN" if not r["ok"] else _fmt(r["ratio"], ".2f") + "x"
            ax.annotate(text, (x, top), ha="center", va="bottom", fontsize=8,
                        color="red" if not r["ok"] else "black")
        ax.set_xlim(-0.6, max(len(sub), 5) - 0.4)   # same bar width in every panel
        ax.set_ylim(0, max([v for r in sub for v in (r["ours_tflops"], r["torch_tflops"])
                            if v == v] + [1e-9]) * 1.15)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(suite, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    fig.suptitle(f"cutorch_gemm vs PyTorch {torch.__version__} on {name} "
                 "(label: torch_ms / ours_ms)")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------

def parse_list(values: Optional[Iterable[str]]) -> list:
    """Flatten ``["a,b", "c"]`` to ``["a", "b", "c"]``."""
    return [v.strip() for item in (values or ()) for v in item.split(",") if v.strip()]


def normalize_dtypes(dtypes: Iterable[str]) -> list:
    out = []
    for d in dtypes:
        d = str(d).replace("torch.", "").lower()
        if d not in DTYPE_ALIASES:
            raise ValueError(f"unknown dtype {d!r}; expected one of {sorted(DTYPE_ALIASES)}")
        out.append(DTYPE_ALIASES[d])
    return list(dict.fromkeys(out))


def plan(suites: Sequence[str], dtypes: Sequence[str], quick: bool) -> list:
    """The (suite, dtype, M, N, K) cases, in run order."""
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; expected some of {list(SUITES)}")
    cases = []
    for name in suites:
        suite = SUITES[name]
        for dtype in ([suite.dtype] if suite.dtype else dtypes):
            cases += [(name, dtype, M, N, K) for M, N, K, q in suite.shapes if q or not quick]
    return cases


def _import_cutorch_gemm():
    try:
        import cutorch_gemm
        return cutorch_gemm
    except ImportError:
        # Run as a script from a checkout that is not installed: try the repo root.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if root not in sys.path:
            sys.path.insert(0, root)
        import cutorch_gemm
        return cutorch_gemm


def run(suites: Sequence[str] = DEFAULT_SUITES, dtypes: Sequence[str] = DEFAULT_DTYPES,
        quick: bool = False, out_dir: str = "results", progress: bool = True, timing: str = "interleaved") -> list:
    """Check and time every case; write CSV, table and plot under ``out_dir``.

    ``timing``: "interleaved" (``time_interleaved``, the default) or "alone" (``time_alone``).

    Returns the result rows (dicts with the CSV_FIELDS keys); [] when there is nothing to
    run on (no CUDA GPU, or an extension built without CUDA).
    """
    if timing not in TIMINGS:
        raise ValueError(f"timing: one of {', '.join(TIMINGS)}, not {timing!r}")
    cases = plan(list(suites), normalize_dtypes(dtypes), quick)
    if not torch.cuda.is_available():
        print("bench_gemm: no CUDA GPU visible to PyTorch "
              f"(torch {torch.__version__}, CUDA {torch.version.cuda}): nothing to benchmark.",
              file=sys.stderr)
        return []
    try:
        cg = _import_cutorch_gemm()
    except Exception as exc:
        print(f"bench_gemm: cannot import cutorch_gemm ({type(exc).__name__}: {exc}); "
              "build it first: pip install --no-build-isolation -e .", file=sys.stderr)
        return []
    cuda_built = getattr(getattr(cg, "_C", None), "cuda_built", None)
    if cuda_built is not None and not cuda_built():
        print("bench_gemm: cutorch_gemm._C was built without CUDA; rebuild on a machine with "
              "a CUDA toolkit: nothing to benchmark.", file=sys.stderr)
        return []

    print(f"bench_gemm: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          + (f"each side run alone ({ALONE_RUN_S:g} s of CUDA-graph replays, two passes)" if timing == "alone" else
             f"{'triton do_bench' if _triton_do_bench() else 'CUDA-event loop (no triton)'}, interleaved")
          + f", {len(cases)} cases", file=sys.stderr)
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))  # fresh inputs every run
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, "bench_gemm.csv")
    txt_path = os.path.join(out_dir, "bench_gemm.txt")
    rows, bar, t0 = [], _Progress(len(cases), progress), time.time()
    try:
        for suite, dtype, M, N, K in cases:
            bar.start(f"{suite} {SHORT.get(dtype, dtype)} {M}x{N}x{K}")
            try:
                rows.append(run_case(cg, suite, dtype, M, N, K, timing))
            except Exception as exc:  # record it and go on: one bad case must not hide the rest
                rows.append(_failed_row(suite, dtype, M, N, K, exc))
            torch.cuda.empty_cache()   # after the except block has dropped the traceback
            bar.step()
            # Rewritten after every case: a run cut short by a time limit keeps what it measured.
            write_csv(rows, csv_path)
            with open(txt_path, "w") as f:
                f.write(format_table(rows, timing) + "\n")
    finally:
        bar.close()

    table = format_table(rows, timing)
    note = write_plot(rows, os.path.join(out_dir, "bench_gemm.png")) if rows else "no rows"
    print(f"bench_gemm: {len(rows)} cases in {time.time() - t0:.0f} s; wrote {csv_path}"
          + (f"; {note}" if note else f", {os.path.join(out_dir, 'bench_gemm.png')}"),
          file=sys.stderr)
    sys.stderr.flush()
    print(table, flush=True)  # last, so that the tail of a log holds it
    return rows


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The benchmark's flags (shared with ``python -m cutorch_gemm bench``)."""
    p.add_argument("--suite", action="append", metavar="NAME[,NAME]",
                   help=f"suites to run, from {list(SUITES)} (default: {','.join(DEFAULT_SUITES)})")
    p.add_argument("--dtype", action="append", metavar="DTYPE[,DTYPE]",
                   help="16-bit dtypes for the dense/small_m/epilogue suites: bf16, fp16 "
                        "(default: bf16); the fp32/tf32 suites always use float32")
    p.add_argument("--quick", action="store_true", help="a handful of shapes, for a fast check")
    p.add_argument("--timing", choices=TIMINGS, default="interleaved",
                   help="interleaved: both sides in alternating rounds (the default); alone: each side run back to "
                        f"back for {ALONE_RUN_S:g} s after an idle gap, timed at the clock its own power leaves")
    p.add_argument("--out", default="results", help="folder for bench_gemm.{csv,txt,png}")
    p.add_argument("--no-progress", action="store_true", help="no progress indicator")


# Exit codes of main() and `python -m cutorch_gemm bench`, apart from Python's own 1 (an
# uncaught error) and argparse's 2 (bad flags), so scripts/gpu_check.sh can tell them apart.
EXIT_WARN = 3         # measured, but some of our results did not match PyTorch's
EXIT_NOTHING_RUN = 4  # a GPU is there but nothing was measured (CPU-only build, import error)


def exit_code(rows: Sequence[dict]) -> int:
    if not rows:
        # No GPU is not an error (the README's quickstart ends with the bench on any machine).
        return 0 if not torch.cuda.is_available() else EXIT_NOTHING_RUN
    return 0 if all(r["ok"] for r in rows) else EXIT_WARN


def run_from_args(args: argparse.Namespace) -> list:
    return run(suites=parse_list(args.suite) or DEFAULT_SUITES,
               dtypes=parse_list(args.dtype) or DEFAULT_DTYPES,
               quick=args.quick, out_dir=args.out, progress=not args.no_progress,
               timing=getattr(args, "timing", "interleaved"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        rows = run_from_args(args)
    except ValueError as exc:
        p.error(str(exc))
    return exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
