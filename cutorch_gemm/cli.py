"""``python -m cutorch_gemm {info,check,bench}``: what is built, does it compute, how fast is it.

info   versions, the GPU, how ``_C`` was built, which kernel families can run here
check  every op against a float64 reference on small awkward shapes, on the current device
       (CUDA when available, else CPU); prints PASS/FAIL per op, exits 1 on any failure
bench  ``benchmarks/bench_gemm.py`` (repo root, not part of the package): ours vs PyTorch;
       ``bench --model``: ``benchmarks/bench_model.py``, MLP blocks and MoE layers fwd + bwd
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import torch
import torch.nn.functional as F

import cutorch_gemm as cg

# --------------------------------------------------------------------------------------------
# info
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelFamily:
    """A family of kernels in csrc/, the GPUs it runs on and the ops it serves."""
    name: str
    runs_on: str                 # for humans
    ops: str
    min_cc: Optional[tuple] = None   # lowest compute capability, None: any
    needs_arch: Optional[str] = None  # an entry of _C.compiled_archs() it needs, None: any


# NOTE: keep in step with csrc/instantiations/: one line per family that exists there.
KERNEL_FAMILIES = (
    KernelFamily("sm90", "sm_90 (H100/H200)", "fp16/bf16/tf32 mm, gemm, bmm, grouped_mm, fp8 scaled_mm "
                 "(TMA + wgmma); split-K for small M, fused SwiGLU, pointer-array grouped_gemm",
                 min_cc=(9, 0), needs_arch="sm_90a"),
    KernelFamily("sm80", "sm_80+", "fp16/bf16/tf32/fp64 mm, gemm, bmm, grouped_mm; int8 mm (mma.sync)",
                 min_cc=(8, 0)),
    KernelFamily("simt", "any GPU", "mm, gemm, bmm, grouped_mm, grouped_gemm (fp32 without tf32; CUDA cores)"),
)


def _c_module():
    """cutorch_gemm._C, or None when it cannot be loaded (the error goes to stderr)."""
    mod = getattr(cg, "_C", None)
    if mod is not None:
        return mod
    try:
        return importlib.import_module("cutorch_gemm._C")
    except Exception as exc:
        print(f"cutorch_gemm._C cannot be loaded: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _call(mod, name: str, default=None):
    """``mod.name()`` if it exists and works, else ``default``."""
    fn = getattr(mod, name, None)
    try:
        return fn() if callable(fn) else default
    except Exception:
        return default


def _version() -> str:
    v = getattr(cg, "__version__", None)
    if v:
        return str(v)
    try:
        from importlib.metadata import version
        return version("cutorch_gemm")
    except Exception:
        return "unknown"


def cmd_info(_args: argparse.Namespace) -> int:
    rows = [("cutorch_gemm", f"{_version()}  ({os.path.dirname(os.path.abspath(cg.__file__))})"),
            ("torch", f"{torch.__version__}, CUDA {torch.version.cuda or 'none (CPU build)'}")]
    try:
        import triton
        rows.append(("triton", triton.__version__))
    except Exception:
        rows.append(("triton", "not installed"))

    ccs = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            ccs.append((p.major, p.minor))
            l2 = getattr(p, "L2_cache_size", 0)
            rows.append((f"GPU {i}", f"{p.name}, compute capability {p.major}.{p.minor} "
                                     f"(sm_{p.major}{p.minor}), {p.multi_processor_count} SMs, "
                                     f"{p.total_memory / 2**30:.1f} GiB"
                                     + (f", L2 {l2 / 2**20:.0f} MiB" if l2 else "")))
    else:
        rows.append(("GPU", "no GPU (torch.cuda.is_available() is False)"))

    c = _c_module()
    cuda_built = _call(c, "cuda_built")
    archs = _call(c, "compiled_archs", []) or []
    rows.append(("_C built with CUDA", "unknown (no _C.cuda_built)" if cuda_built is None
                 else ("yes" if cuda_built else "no (CPU reference kernels only)")))
    rows.append(("compiled archs", ", ".join(archs) if archs else "none"))
    if os.environ.get("CUTORCH_GEMM_ARCH"):
        rows.append(("CUTORCH_GEMM_ARCH", os.environ["CUTORCH_GEMM_ARCH"] + " (forces a path)"))

    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print("kernel families:")
    fw = max(len(f.name) for f in KERNEL_FAMILIES)
    rw = max(len(f.runs_on) for f in KERNEL_FAMILIES)
    for fam in KERNEL_FAMILIES:
        usable = _usable(fam, cuda_built, archs, ccs)
        print(f"  {fam.name:<{fw}}  {fam.runs_on:<{rw}}  {fam.ops}  [{usable}]")
    return 0 if c is not None else 1


def _usable(fam: KernelFamily, cuda_built, archs: Sequence[str], ccs: Sequence[tuple]) -> str:
    """Whether a family can run on this machine's GPU 0, in words."""
    if not ccs:
        return "no GPU here"
    if cuda_built is False:
        return "not built"
    if fam.needs_arch and fam.needs_arch not in archs:
        return f"not compiled for {fam.needs_arch}"
    if fam.min_cc and ccs[0] < fam.min_cc:
        return f"needs compute capability {fam.min_cc[0]}.{fam.min_cc[1]}+"
    return "usable here"


# --------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------

CHECK_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
# ‖out − ref‖ / ‖ref‖ against a float64 reference on the same (upcast) inputs, by out dtype.
REL_BOUND = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2,
             torch.float16: 3e-3}
ACTS = {"none": lambda x: x, "relu": torch.relu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


@dataclass
class Case:
    """One comparison: ``ours()`` against the float64 ``ref()``, result dtype ``out_dtype``."""
    label: str
    ours: Callable
    ref: Callable
    out_dtype: torch.dtype
    bound: Optional[float] = None  # the rel_err bound when not REL_BOUND[out_dtype]


class _Maker:
    """Random operands of one dtype on one device, in the memory layouts we want to cover."""

    def __init__(self, dtype: torch.dtype, device: str):
        self.dtype, self.device = dtype, device

    def rand(self, *shape) -> torch.Tensor:
        return torch.randn(*shape, dtype=self.dtype, device=self.device)

    def mat(self, rows: int, cols: int, layout: str = "row") -> torch.Tensor:
        """row: contiguous; col: a transposed view; pad: row-major, leading dim cols + 3."""
        if layout == "col":
            return self.rand(cols, rows).t()
        if layout == "pad":
            return self.rand(rows, cols + 3)[:, :cols]
        return self.rand(rows, cols)

    def offs(self, ends: Sequence[int]) -> torch.Tensor:
        return torch.tensor(ends, dtype=torch.int32, device=self.device)


def _d(t):
    return None if t is None else t.double()


def _ref_gemm(a, b, bias=None, c=None, alpha=1.0, beta=0.0, act="none"):
    """act(alpha * a @ b + beta * c + bias) in float64; c is not read when beta == 0."""
    out = alpha * (_d(a) @ _d(b))
    if c is not None and beta != 0:
        out = out + beta * _d(c)
    if bias is not None:
        out = out + _d(bias)
    return ACTS[act](out)


def _cases_mm(m: _Maker) -> List[Case]:
    cases = []
    # (M, N, K): odd sizes no tile divides, M = 1, K = 1, and one aligned shape.
    shapes = [(37, 53, 29), (1, 7, 64), (130, 65, 1), (64, 96, 128)]
    combos = [(s, ("row", "col")) for s in shapes]                     # nn.Linear layout
    combos += [(shapes[0], lay) for lay in (("col", "row"), ("pad", "pad"), ("row", "row"))]
    for (M, N, K), (la, lb) in combos:
        a, b = m.mat(M, K, la), m.mat(K, N, lb)
        cases.append(Case(f"{M}x{N}x{K} a={la} b={lb}", lambda a=a, b=b: cg.mm(a, b),
                          lambda a=a, b=b: _ref_gemm(a, b), m.dtype))
    if m.dtype in (torch.bfloat16, torch.float16):
        a, b = m.mat(37, 29), m.mat(29, 53, "col")
        cases.append(Case("37x53x29 out_dtype=float32",
                          lambda: cg.mm(a, b, out_dtype=torch.float32),
                          lambda: _ref_gemm(a, b), torch.float32))
    return cases


def _cases_gemm(m: _Maker) -> List[Case]:
    cases = []
    M, N, K = 33, 47, 70
    for act in ACTS:
        a, b, bias = m.mat(M, K), m.mat(K, N, "col"), m.rand(N)
        cases.append(Case(f"{M}x{N}x{K} bias {act}",
                          lambda a=a, b=b, bias=bias, act=act: cg.gemm(a, b, bias=bias,
                                                                       activation=act),
                          lambda a=a, b=b, bias=bias, act=act: _ref_gemm(a, b, bias, act=act),
                          m.dtype))
    a, b, c = m.mat(M, K), m.mat(K, N, "col"), m.mat(M, N, "col")
    cases.append(Case(f"{M}x{N}x{K} alpha=0.5 beta=-1.5 c=col",
                      lambda: cg.gemm(a, b, c=c, alpha=0.5, beta=-1.5),
                      lambda: _ref_gemm(a, b, c=c, alpha=0.5, beta=-1.5), m.dtype))
    a2, b2, c2, bias2 = m.mat(1, 5), m.mat(5, 19, "col"), m.mat(1, 19), m.rand(19)
    cases.append(Case("1x19x5 bias c alpha=2 beta=0.25 silu",
                      lambda: cg.gemm(a2, b2, bias=bias2, c=c2, alpha=2.0, beta=0.25,
                                      activation="silu"),
                      lambda: _ref_gemm(a2, b2, bias2, c2, 2.0, 0.25, "silu"), m.dtype))
    # BLAS convention: with beta == 0, c is not read, so its NaNs must not reach the output.
    nan_c = torch.full((M, N), float("nan"), dtype=m.dtype, device=m.device)
    cases.append(Case(f"{M}x{N}x{K} beta=0 c=NaN",
                      lambda: cg.gemm(a, b, c=nan_c, alpha=1.5, beta=0.0),
                      lambda: _ref_gemm(a, b, alpha=1.5), m.dtype))
    if m.dtype in (torch.bfloat16, torch.float16):
        cases.append(Case(f"{M}x{N}x{K} bias gelu out_dtype=float32",
                          lambda: cg.gemm(a, b, bias=bias, activation="gelu",
                                          out_dtype=torch.float32),
                          lambda: _ref_gemm(a, b, bias, act="gelu"), torch.float32))
    return cases


def _cases_bmm(m: _Maker) -> List[Case]:
    B, M, N, K = 3, 17, 9, 33
    a, b = m.rand(B, M, K), m.rand(B, K, N)
    a_t = m.rand(B, K, M).transpose(1, 2)            # column-major batches
    b_exp = m.rand(1, K, N).expand(B, K, N)          # batch stride 0
    a1, b1 = m.rand(1, 1, 5), m.rand(1, 5, 3)
    ref = lambda x, y: _d(x) @ _d(y)                  # noqa: E731
    cases = [Case(f"{B}x{M}x{N}x{K} contiguous", lambda: cg.bmm(a, b), lambda: ref(a, b), m.dtype),
             Case(f"{B}x{M}x{N}x{K} a=col", lambda: cg.bmm(a_t, b), lambda: ref(a_t, b), m.dtype),
             Case(f"{B}x{M}x{N}x{K} b expanded", lambda: cg.bmm(a, b_exp),
                  lambda: ref(a, b_exp), m.dtype),
             Case("1x1x3x5", lambda: cg.bmm(a1, b1), lambda: ref(a1, b1), m.dtype)]
    if m.dtype in (torch.bfloat16, torch.float16):
        cases.append(Case(f"{B}x{M}x{N}x{K} out_dtype=float32",
                          lambda: cg.bmm(a, b, out_dtype=torch.float32), lambda: ref(a, b),
                          torch.float32))
    return cases


def _groups(ends: Sequence[int]):
    """(g, start, end) for cumulative group ends."""
    start = 0
    for g, end in enumerate(ends):
        yield g, start, end
        start = end


def _cases_grouped_mm(m: _Maker) -> List[Case]:
    G, T, M, N, K = 3, 45, 13, 20, 24
    cases = []

    # 2D x 3D: groups of rows; an empty group; rows at or past offs[-1] are zero.
    ends = [10, 10, 38]
    a, w, bias = m.mat(T, K), m.rand(G, N, K), m.rand(G, N)
    b = w.transpose(1, 2)                             # (G, K, N), nn.Linear-style view
    offs = m.offs(ends)

    def ref_2d3d(bias=None, act="none"):
        out = torch.zeros(T, N, dtype=torch.float64, device=m.device)
        for g, s, e in _groups(ends):
            out[s:e] = _ref_gemm(a[s:e], b[g], None if bias is None else bias[g], act=act)
        return out
    cases.append(Case(f"2Dx3D T={T} ends={ends}", lambda: cg.grouped_mm(a, b, offs),
                      lambda: ref_2d3d(), m.dtype))
    cases.append(Case(f"2Dx3D T={T} ends={ends} bias relu",
                      lambda: cg.grouped_mm(a, b, offs, bias=bias, activation="relu"),
                      lambda: ref_2d3d(bias, "relu"), m.dtype))

    # 2D x 3D with the SwiGLU: b's N is [gate | up]; the result is N / 2 wide.
    w_gu = m.rand(G, K, 2 * N)

    def ref_swiglu():
        z = torch.zeros(T, 2 * N, dtype=torch.float64, device=m.device)
        for g, s, e in _groups(ends):
            z[s:e] = _ref_gemm(a[s:e], w_gu[g])
        return F.silu(z[:, :N]) * z[:, N:]
    cases.append(Case(f"2Dx3D T={T} ends={ends} swiglu", lambda: cg.grouped_mm(a, w_gu, offs, activation="swiglu"),
                      ref_swiglu, m.dtype))

    # 3D x 2D: groups of columns of b; columns at or past offs[-1] are zero.
    ends_n = [7, 20, 40]
    a3, b2, bias_t = m.rand(G, M, K), m.mat(K, T, "col"), m.rand(T)

    def ref_3d2d():
        out = torch.zeros(M, T, dtype=torch.float64, device=m.device)
        for g, s, e in _groups(ends_n):
            out[:, s:e] = _ref_gemm(a3[g], b2[:, s:e], bias_t[s:e], act="silu")
        return out
    cases.append(Case(f"3Dx2D T={T} ends={ends_n} bias silu",
                      lambda: cg.grouped_mm(a3, b2, m.offs(ends_n), bias=bias_t,
                                            activation="silu"),
                      ref_3d2d, m.dtype))

    # 2D x 2D: groups along the reduction (the MoE weight gradient); an empty first group
    # gives act(bias[0]); rows of b past offs[-1] are not used.
    ends_k = [0, 17, 40]
    a2, bk, bias_g = m.mat(M, T, "col"), m.mat(T, N), m.rand(G, N)

    def ref_2d2d():
        return torch.stack([_ref_gemm(a2[:, s:e], bk[s:e], bias_g[g], act="gelu")
                            for g, s, e in _groups(ends_k)])
    cases.append(Case(f"2Dx2D T={T} ends={ends_k} bias gelu",
                      lambda: cg.grouped_mm(a2, bk, m.offs(ends_k), bias=bias_g,
                                            activation="gelu"),
                      ref_2d2d, m.dtype))

    # 3D x 3D: batched, no offsets.
    a3b, b3 = m.rand(G, M, K), m.rand(G, K, N)
    cases.append(Case(f"3Dx3D G={G} {M}x{N}x{K} bias",
                      lambda: cg.grouped_mm(a3b, b3, bias=bias_g),
                      lambda: torch.stack([_ref_gemm(a3b[g], b3[g], bias_g[g]) for g in range(G)]),
                      m.dtype))
    return cases


def _cases_grouped_gemm(m: _Maker) -> List[Case]:
    shapes = [(5, 17, 9), (33, 8, 40), (1, 1, 1)]     # (M, N, K) each
    a = [m.mat(M, K) for M, N, K in shapes]
    b = [m.mat(K, N, "col") for M, N, K in shapes]
    bias = [m.rand(N) for M, N, K in shapes]
    return [
        Case(f"{len(shapes)} problems", lambda: cg.grouped_gemm(a, b),
             lambda: [_ref_gemm(x, y) for x, y in zip(a, b)], m.dtype),
        Case(f"{len(shapes)} problems bias silu",
             lambda: cg.grouped_gemm(a, b, bias=bias, activation="silu"),
             lambda: [_ref_gemm(x, y, z, act="silu") for x, y, z in zip(a, b, bias)], m.dtype),
    ]


def _cases_scaled_mm(m: _Maker) -> List[Case]:
    """fp8 operands (both formats) with per-row / per-tensor scales; m.dtype is the output's."""
    if m.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        return []
    cases = []
    for (M, N, K), (fa, fb), rows in (((37, 53, 32), (torch.float8_e4m3fn, torch.float8_e4m3fn), True),
                                      ((64, 96, 128), (torch.float8_e4m3fn, torch.float8_e5m2), False),
                                      ((1, 7, 48), (torch.float8_e5m2, torch.float8_e4m3fn), True)):
        a = torch.randn(M, K, device=m.device).to(fa)
        b = torch.randn(N, K, device=m.device).to(fb).t()   # column-major, like w.t()
        sa = torch.rand((M, 1) if rows else (), device=m.device) + 0.5
        sb = torch.rand((1, N) if rows else (), device=m.device) + 0.5
        bias = m.rand(N)

        def ref(a=a, b=b, sa=sa, sb=sb, bias=bias):
            return (_d(a) @ _d(b)) * _d(sa) * _d(sb) + _d(bias)
        # Hopper's 8-bit wgmma adds each 128-K block with fewer bits than fp32 (~1e-4 of max |D|
        # measured, as torch._scaled_mm): fp32 outputs get the bound of that, not of fp32.
        wgmma8 = m.device != "cpu" and "8-bit wgmma" in cg.explain("scaled_mm", a, b, sa, sb, bias=bias).reason
        cases.append(Case(f"{M}x{N}x{K} {str(fa)[12:]}x{str(fb)[12:]} {'rowwise' if rows else 'tensorwise'} bias",
                          lambda a=a, b=b, sa=sa, sb=sb, bias=bias: cg.scaled_mm(a, b, sa, sb, bias=bias,
                                                                                 out_dtype=m.dtype),
                          ref, m.dtype, bound=max(REL_BOUND[m.dtype], 1e-3) if wgmma8 else None))
    return cases


CHECKS = {"mm": _cases_mm, "gemm": _cases_gemm, "bmm": _cases_bmm,
          "grouped_mm": _cases_grouped_mm, "grouped_gemm": _cases_grouped_gemm, "scaled_mm": _cases_scaled_mm}


def _compare(out, ref, out_dtype: torch.dtype, bound: Optional[float] = None) -> Optional[str]:
    """None when ``out`` matches the float64 ``ref`` within ``bound`` (default REL_BOUND); else
    what is wrong."""
    bound = REL_BOUND[out_dtype] if bound is None else bound
    if isinstance(ref, list):
        if not isinstance(out, (list, tuple)) or len(out) != len(ref):
            return f"expected a list of {len(ref)} tensors, got {type(out).__name__}"
        for i, (o, r) in enumerate(zip(out, ref)):
            problem = _compare(o, r, out_dtype, bound)
            if problem:
                return f"[{i}] {problem}"
        return None
    if not isinstance(out, torch.Tensor):
        return f"expected a tensor, got {type(out).__name__}"
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    if out.dtype != out_dtype:
        return f"dtype {out.dtype}, expected {out_dtype}"
    if out.device != ref.device:
        return f"device {out.device}, expected {ref.device}"
    if not out.is_contiguous():
        return f"not contiguous (strides {out.stride()})"
    if not bool(torch.isfinite(out).all()):
        return "non-finite values in the output"
    diff = torch.linalg.vector_norm(out.double() - ref)
    scale = torch.linalg.vector_norm(ref)
    err = float(diff / scale) if float(scale) > 0 else float(diff)
    if not err <= bound:
        return f"rel_err {err:.2e} > {bound:.0e}"
    return None


@contextlib.contextmanager
def _no_tf32():
    """Plain fp32 arithmetic for the fp32 cases (our dispatch follows torch's TF32 switch)."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def cmd_check(args: argparse.Namespace) -> int:
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    ops = [o for o in (args.op or CHECKS)]
    unknown = [o for o in ops if o not in CHECKS]
    if unknown:
        print(f"check: unknown op(s) {unknown}; expected some of {list(CHECKS)}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)   # fresh inputs each run; --seed N repeats one
    where = device + (f" ({torch.cuda.get_device_name()})" if device.startswith("cuda") else "")
    print(f"cutorch_gemm check on {where}, dtypes "
          f"{', '.join(str(d).replace('torch.', '') for d in CHECK_DTYPES)}, seed {seed}")
    if device.startswith("cuda") and _call(_c_module(), "cuda_built") is False:
        print("note: cutorch_gemm._C was built without CUDA; the CUDA cases will fail")

    failed_ops = []
    with _no_tf32():
        for op in ops:
            n, failures = 0, []
            for dtype in CHECK_DTYPES:
                try:
                    cases = CHECKS[op](_Maker(dtype, device))
                except Exception as exc:   # building inputs should never fail; say so if it does
                    failures.append(f"{dtype}: making inputs: {type(exc).__name__}: {exc}")
                    continue
                for case in cases:
                    n += 1
                    try:
                        out = case.ours()
                        if device.startswith("cuda"):
                            torch.cuda.synchronize()   # a launch error belongs to this case
                        problem = _compare(out, case.ref(), case.out_dtype, case.bound)
                    except Exception as exc:
                        first = str(exc).splitlines()[0] if str(exc) else ""
                        problem = f"{type(exc).__name__}: {first}"
                    name = f"{str(dtype).replace('torch.', '')} {case.label}"
                    if problem:
                        failures.append(f"{name}: {problem}")
                    elif args.verbose:
                        print(f"        ok    {name}")
            status = "PASS" if not failures else "FAIL"
            detail = f"{n} cases" if not failures else f"{len(failures)}/{n} cases failed"
            print(f"{status}  {op:<13} {detail}", flush=True)
            for line in failures[: args.max_failures]:
                print(f"        {line}")
            if len(failures) > args.max_failures:
                print(f"        ... {len(failures) - args.max_failures} more (--max-failures)")
            if failures:
                failed_ops.append(op)
    print(f"check: {'FAILED: ' + ', '.join(failed_ops) if failed_ops else 'all ops PASS'}")
    return 1 if failed_ops else 0


# --------------------------------------------------------------------------------------------
# bench
# --------------------------------------------------------------------------------------------

def _import_bench(name: str = "bench_gemm"):
    """benchmarks.<name> from the repo root (the parent of this package's folder)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isfile(os.path.join(root, "benchmarks", f"{name}.py")):
        if root not in sys.path:
            sys.path.insert(0, root)   # ahead of any unrelated 'benchmarks' package
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ImportError as exc:
        raise SystemExit(
            f"error: cannot import benchmarks.{name} ({exc}). It lives at the repo root "
            f"(looked in {root}/benchmarks/); run from a source checkout installed with "
            "`pip install --no-build-isolation -e .`") from None


def cmd_bench(rest: Sequence[str]) -> int:
    bench = _import_bench()
    p = argparse.ArgumentParser(prog="python -m cutorch_gemm bench",
                                description="cutorch_gemm vs PyTorch GEMM benchmark")
    bench.add_arguments(p)
    p.add_argument("--model", action="store_true",
                   help="the model-level benchmark (benchmarks/bench_model.py: MLP blocks and MoE "
                        "layers, forward + backward; --dtype bf16, fp16 or fp32) instead of the GEMM "
                        "suites; with --suite too, both (the model table last)")
    args = p.parse_args(list(rest))
    try:
        rows = []
        if not args.model or args.suite:
            rows += bench.run_from_args(args)
        if args.model:
            rows += _import_bench("bench_model").run_from_args(args)
    except ValueError as exc:
        p.error(str(exc))
    return bench.exit_code(rows)   # 0 also without a GPU; 3: WARN rows; 4: nothing measured


# --------------------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cutorch_gemm", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{info,check,bench}")
    sub.add_parser("info", help="versions, GPU, build and kernel families")
    c = sub.add_parser("check", help="self-test of every op against a float64 reference")
    c.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda if available, else cpu)")
    c.add_argument("--op", action="append", help=f"only these ops, from {list(CHECKS)}")
    c.add_argument("--seed", type=int, help="repeat a run's inputs (default: fresh each run)")
    c.add_argument("--max-failures", type=int, default=8, help="failures printed per op")
    c.add_argument("-v", "--verbose", action="store_true", help="print every passing case")
    # bench's flags belong to benchmarks/bench_gemm.py, which is imported only when asked for.
    sub.add_parser("bench", add_help=False, help="benchmark against PyTorch (bench --help)")

    args, rest = p.parse_known_args(argv)
    if args.cmd == "bench":
        return cmd_bench(rest)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    return {"info": cmd_info, "check": cmd_check}[args.cmd](args)
