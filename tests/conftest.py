"""Shared helpers for the cutorch_gemm test suite.

* ``ref_*``: float64 references built from plain torch ops on upcast inputs.
* ``rel_err`` / ``check``: ``||out - ref|| / ||ref||`` against per-dtype bounds, plus an
  element-wise check so that a single garbage or NaN element cannot hide in the norm.
* ``make``: a tensor of a logical shape in a chosen memory layout ("row", "col", "padded"),
  always a view of a freshly allocated random buffer (never a copy, never zeros).
* ``sample_inputs(device)``: a list of ``Sample(name, op, args, kwargs)`` shared by the
  correctness, gradient and opcheck tests (extension-cpp style).
* ``DEVICES``: ``["cpu", cuda]`` with cuda marked ``gpu`` and skipped when unavailable.

Every test gets a fresh seed (from ``CUTORCH_TEST_SEED`` when set, else random); it is
printed, so a failure's captured stdout says how to reproduce it.
"""
from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import cutorch_gemm  # noqa: F401  (registers torch.ops.gemm.*)

HAS_CUDA = torch.cuda.is_available()

gpu = pytest.mark.gpu
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
# The Hopper families' tests: an sm_90 GPU and an extension built with sm_90a kernels.
requires_sm90 = pytest.mark.skipif(not HAS_CUDA or torch.cuda.get_device_capability()[0] != 9
                                   or not cutorch_gemm._C.sm90_available(),
                                   reason="needs an sm_90 GPU and sm_90a kernels")


class GemmOpLog(TorchDispatchMode):
    """Inside ``with GemmOpLog() as log:``, ``log.calls`` lists the ``torch.ops.gemm.*`` ops that ran, as
    (op name, kwargs): whatever route the wrappers took to them (Python, the C++ entry points of
    csrc/torch/fast_calls.cpp, the C++ autograd nodes' backward), every op reaches the dispatcher. Spying on
    ``cutorch_gemm.ops.<name>`` misses the calls that go from Python straight to C++."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "gemm":
            self.calls.append((func._opname, dict(kwargs)))
        return func(*args, **kwargs)

    @property
    def names(self):
        return [name for name, _ in self.calls]


@pytest.fixture
def tile_kernels_only(monkeypatch):
    """Small-M shapes would go to the skinny kernels (tests/test_skinny.py, test_sm90_skinny.py); with
    this they exercise the tile families' own small-M paths (narrow tiles, split-K)."""
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "off")

@pytest.fixture
def fresh_dynamo(monkeypatch):
    """A reset dynamo with no on-disk caches: the AOTAutograd cache is keyed on the forward
    graph, so an edit of a backward (csrc/torch/autograd_*.cpp, nn.py's Functions) could be served a stale
    backward; every graph is compiled in the test."""
    import torch._dynamo
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)
    monkeypatch.setattr(functorch_config, "enable_autograd_cache", False)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[gpu, requires_cuda], id="cuda"),
]

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
HALF_DTYPES = [torch.float16, torch.bfloat16]
ACTIVATIONS = ["none", "relu", "gelu", "gelu_tanh", "silu"]
CLUSTER_NOTE = "2x1 clusters"  # what explain's reason says of a launch in 2x1 thread-block clusters
TF32_BOUND = 4e-3  # norm-wise relative error of a tf32 GEMM: 10 mantissa bits per input, ~1e-3 per product
LAYOUTS = ["row", "col", "padded"]

# ||out - ref|| / ||ref|| bounds, by input dtype, for an output in float32/float64 (or the
# input dtype when that is float32/float64).
BOUNDS = {
    torch.float64: 1e-12,
    torch.float32: 1e-5,
    torch.bfloat16: 1e-2,
    torch.float16: 2e-3,
}
HALF_OUT_FACTOR = 4.0  # the result itself is rounded to 16 bits

TINY = 1e-30


def dtype_id(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


# --------------------------------------------------------------------------------------
# Seeding: fresh inputs every test, reproducible from the printed seed.
# --------------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _fresh_seed(request):
    env = os.environ.get("CUTORCH_TEST_SEED")
    seed = int(env) if env else random.SystemRandom().randrange(2**31)
    torch.manual_seed(seed)
    random.seed(seed)
    print(f"[seed] {request.node.nodeid}: CUTORCH_TEST_SEED={seed}")
    request.node.user_properties.append(("seed", seed))
    yield seed


@pytest.fixture(autouse=True)
def _full_fp32_precision():
    """fp32 tests compare at 1e-5: make sure nothing lets a GEMM use TF32."""
    old_prec = torch.get_float32_matmul_precision()
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.set_float32_matmul_precision(old_prec)
    torch.backends.cuda.matmul.allow_tf32 = old_tf32


# --------------------------------------------------------------------------------------
# Tensor factories
# --------------------------------------------------------------------------------------

def randn(*shape, dtype=torch.float32, device="cpu", requires_grad=False) -> torch.Tensor:
    t = torch.randn(*shape, dtype=torch.float32, device=device).to(dtype)
    return t.requires_grad_(requires_grad) if requires_grad else t


def make(shape: Sequence[int], dtype=torch.float32, device="cpu", layout: str = "row",
         requires_grad: bool = False, pad: int = 3) -> torch.Tensor:
    """Random tensor of logical ``shape`` with the last two dims laid out as ``layout``.

    row    -- contiguous.
    col    -- the transpose of a contiguous (..., cols, rows) buffer (column-major view).
    padded -- row-major with the leading dimension padded: a slice of a wider buffer.
    The result is a view (no copy) and a leaf when ``requires_grad``.
    """
    shape = tuple(shape)
    if layout == "row" or len(shape) < 2:
        base = torch.randn(shape, dtype=torch.float32, device=device).to(dtype)
        t = base
    elif layout == "col":
        base = torch.randn(shape[:-2] + (shape[-1], shape[-2]), device=device).to(dtype)
        t = base.transpose(-1, -2)
    elif layout == "padded":
        base = torch.randn(shape[:-1] + (shape[-1] + pad,), device=device).to(dtype)
        t = base[..., : shape[-1]]
    else:
        raise AssertionError(f"unknown layout {layout}")
    assert t.shape == shape
    if layout == "col" and len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1:
        assert t.stride(-2) == 1
    if layout == "padded" and len(shape) >= 2 and shape[-2] > 1:
        assert t.stride(-2) == shape[-1] + pad and t.stride(-1) == 1
    if requires_grad:
        t.requires_grad_(True)  # views of a non-grad buffer are leaves
    return t


def poison(nbytes: int, device="cuda") -> None:
    """A freed 0xFF block (NaN in every float dtype) that the next output of about that size is
    likely to reuse from the caching allocator: elements a kernel forgets to write then fail the
    comparison. Best effort."""
    if nbytes > 0:
        torch.full((nbytes,), 255, dtype=torch.uint8, device=device)  # freed at once, back to the cache


def linear_operands(m, n, k, dtype, x_layout="row", device="cuda"):
    """x (m, k) in ``x_layout`` and b = W.t() for a contiguous W (n, k): the nn.Linear layout the
    skinny kernels read."""
    x = make((m, k), dtype, device, x_layout, pad=8)
    w = torch.randn(n, k, device=device).to(dtype)
    return x, w.t()


def sm90_case_id(case) -> str:
    """pytest id of a forced-config sm90 case (config, M, N, K, grid cap or None, ...)."""
    return f"{case[0]}-{case[1]}x{case[2]}x{case[3]}" + (f"-grid{case[4]}" if case[4] else "")


def forced_sm90_operands(monkeypatch, case, dtype):
    """A forced-config sm90 case's setup: CUTORCH_GEMM_SM90_CONFIG (and _GRID, when capped) from (config, M, N, K,
    grid, ...), nn.Linear operands a (M, K) and b = W.t(), and explain's verdict for mm on them."""
    config, m, n, k, grid = case[:5]
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    if grid:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", grid)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t()
    return a, b, cutorch_gemm.explain("mm", a, b)


def capture(fn):
    """(graph, result): fn() run once on a side stream (the warm-up torch.cuda.graphs asks for), then captured in a
    CUDA graph; result is what the captured call returned (its tensors live in the graph's memory)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = fn()
    return graph, result


def check_repeatable_and_graph_replay(x, b, dtype, what):
    """mm(x, b) gives identical bits when repeated, and a CUDA graph captured once replays it
    correctly after x changes in place."""
    mm = cutorch_gemm.mm
    first = mm(x, b)
    for _ in range(3):
        assert torch.equal(first, mm(x, b)), f"{what}: a fixed-order K sum gives identical bits"
    graph, out = capture(lambda: mm(x, b))
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    check(out, ref_gemm(x, b), dtype, what=f"{what}: graph replay with new x")


def count_repeat_mismatches(fn, first, calls: int, every: int = 100, sync_every: int = 50) -> int:
    """Calls fn() `calls` - 1 more times in a row (a synchronize every sync_every calls, so a fault shows
    where it happens); every every-th call's outputs (a tensor or a list of them) are compared bit for bit
    with `first`, on the GPU. Returns how many compared outputs differed."""
    firsts = first if isinstance(first, (list, tuple)) else [first]
    mismatched = torch.zeros((), dtype=torch.int64, device=firsts[0].device)
    for i in range(1, calls):
        out = fn()
        if i % every == 0:
            for o, f in zip(out if isinstance(out, (list, tuple)) else [out], firsts):
                mismatched += (o != f).any().to(torch.int64)
        if i % sync_every == 0:
            torch.cuda.synchronize()
    return int(mismatched)


def offs_from_sizes(sizes: Sequence[int], device="cpu") -> torch.Tensor:
    """int32 cumulative group ends from group sizes."""
    ends, acc = [], 0
    for s in sizes:
        acc += s
        ends.append(acc)
    return torch.tensor(ends, dtype=torch.int32, device=device)


# --------------------------------------------------------------------------------------
# float64 references (plain torch ops only)
# --------------------------------------------------------------------------------------

def ref_act(x: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "none":
        return x
    if activation == "relu":
        return torch.clamp_min(x, 0.0)
    if activation == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if activation == "gelu_tanh":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if activation == "silu":
        return x * torch.sigmoid(x)
    raise AssertionError(f"unknown activation {activation}")


def _d(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    return None if t is None else t.double()


def _with_pre(out: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    """Attach the pre-activation reference to a reference output (read by ``check``)."""
    out.pre_act = pre
    return out


def _with_sizes(out: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Attach the size of the terms each reference element sums (read by ``check`` as its
    default ``scale``): a sum that cancels is only as accurate as its terms are large."""
    out.term_sizes = sizes.detach()
    return out


def ref_gemm(a, b, bias=None, c=None, alpha=1.0, beta=0.0, activation="none"):
    acc = alpha * (a.double() @ b.double())
    sizes = abs(alpha) * (a.detach().double().abs() @ b.detach().double().abs())
    if c is not None and beta != 0:
        acc = acc + beta * c.double()
        sizes = sizes + abs(beta) * c.detach().double().abs()
    if bias is not None:
        acc = acc + bias.double()
        sizes = sizes + bias.detach().double().abs()
    if activation == "none":
        return _with_sizes(acc, sizes)
    return _with_sizes(_with_pre(ref_act(acc, activation), acc), sizes)


def ref_mm(a, b):
    return _with_sizes(a.double() @ b.double(), a.detach().double().abs() @ b.detach().double().abs())


def ref_bmm(a, b):
    return _with_sizes(torch.bmm(a.double(), b.double()), torch.bmm(a.detach().double().abs(), b.detach().double().abs()))


def _bounds(offs: torch.Tensor):
    ends = [int(v) for v in offs.cpu().tolist()]
    starts = [0] + ends[:-1]
    return list(zip(starts, ends))


def ref_grouped_mm(a, b, offs=None, bias=None, activation="none"):
    """torch._grouped_mm semantics in float64 (see cutorch_gemm.ops.grouped_mm)."""
    out = _ref_grouped_mm(a, b, offs, bias, activation)
    sizes = _ref_grouped_mm(a.detach().abs(), b.detach().abs(), offs, None if bias is None else bias.detach().abs(),
                            "none")
    if activation == "none":
        return _with_sizes(out, sizes)
    return _with_sizes(_with_pre(out, _ref_grouped_mm(a, b, offs, bias, "none")), sizes)


def _ref_grouped_mm(a, b, offs, bias, activation):
    a64, b64, bias64 = a.double(), b.double(), _d(bias)
    if a.dim() == 3 and b.dim() == 3:  # batched
        acc = a64 @ b64
        if bias64 is not None:
            acc = acc + bias64[:, None, :]
        return ref_act(acc, activation)
    assert offs is not None
    groups = _bounds(offs)
    if a.dim() == 2 and b.dim() == 3:  # groups along rows of a
        T, N = a.shape[0], b.shape[-1]
        pieces = []
        for g, (s, e) in enumerate(groups):
            if e <= s:
                continue
            acc = a64[s:e] @ b64[g]
            if bias64 is not None:
                acc = acc + bias64[g]
            pieces.append(ref_act(acc, activation))
        end = groups[-1][1] if groups else 0
        pieces.append(a64.new_zeros(T - end, N))
        return torch.cat(pieces, 0)
    if a.dim() == 3 and b.dim() == 2:  # groups along columns of b
        M, T = a.shape[1], b.shape[1]
        pieces = []
        for g, (s, e) in enumerate(groups):
            if e <= s:
                continue
            acc = a64[g] @ b64[:, s:e]
            if bias64 is not None:
                acc = acc + bias64[s:e]
            pieces.append(ref_act(acc, activation))
        end = groups[-1][1] if groups else 0
        pieces.append(a64.new_zeros(M, T - end))
        return torch.cat(pieces, 1)
    if a.dim() == 2 and b.dim() == 2:  # groups along the reduction
        outs = []
        for g, (s, e) in enumerate(groups):
            acc = a64[:, s:e] @ b64[s:e]
            if bias64 is not None:
                acc = acc + bias64[g]
            outs.append(ref_act(acc, activation))
        if not outs:
            return a64.new_zeros(0, a.shape[0], b.shape[1])
        return torch.stack(outs, 0)
    raise AssertionError("bad ranks")


def ref_grouped_gemm(a_list, b_list, bias=None, activation="none"):
    out = []
    for i, (a, b) in enumerate(zip(a_list, b_list)):
        out.append(ref_gemm(a, b, bias=None if bias is None else bias[i], activation=activation))
    return out


# --------------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------------

def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    return float(torch.linalg.vector_norm(out64 - ref64)) / max(
        float(torch.linalg.vector_norm(ref64)), TINY)


def bound_for(in_dtype: torch.dtype, out_dtype: Optional[torch.dtype] = None) -> float:
    out_dtype = in_dtype if out_dtype is None else out_dtype
    b = BOUNDS[in_dtype]
    if out_dtype in (torch.float16, torch.bfloat16):
        b *= HALF_OUT_FACTOR
    return b


def check(out: torch.Tensor, ref: torch.Tensor, in_dtype: torch.dtype,
          out_dtype: Optional[torch.dtype] = None, *, elementwise: bool = True,
          contiguous: bool = True, what: str = "",
          scale: Optional[torch.Tensor] = None, scale_u: Optional[float] = None) -> float:
    """Assert ``out`` matches the float64 ``ref``: shape, dtype, contiguity, finiteness,
    norm-wise relative error and (by default) every element.

    Norm-wise: ``||out - ref|| <= bound * ||ref||`` (+ the two floors below).
    Element-wise: ``|out_i - ref_i| <= bound * (|ref_i| + rms(ref))`` (+ the floors):
    accumulation errors scale with the typical magnitude, output rounding with the element
    itself. A NaN, an Inf or an element left unwritten (garbage) fails it.

    Floors that no implementation can beat, so tiny outputs (e.g. a 1x1 result squashed to
    ~1e-7 by gelu) do not fail spuriously:
    * when ``ref`` carries ``pre_act`` (the pre-activation reference), the activation
      evaluated in the accumulator type has an absolute error of a few ``eps(acc)*|pre|``
      (gelu's ``1 + erf(x)`` cancels for x << 0): allow ``4 * eps(acc) * |pre|``;
    * the output dtype's subnormal spacing (2^-24 for fp16) per element;
    * ``scale`` (per element, the sum of the absolute values of the terms that ``ref`` adds
      up, e.g. ``|A| @ |B|``): rounding perturbs every term by up to one unit roundoff ``u``,
      which cancellation in the sum cannot shrink: allow ``2 * u * scale``. ``u`` is
      ``scale_u``, by default that of ``in_dtype`` (a backward rounds dZ to the input dtype, as
      PyTorch's does). A forward reference that carries ``term_sizes`` (ref_mm / ref_gemm /
      ref_bmm attach it) uses the accumulator's ``u``: its terms are summed there. Without this
      a short cancelling sum (a 1x2 dB over 12 rows, a 1x1 output of a 6-term dot product)
      fails on a correct implementation now and then.
    """
    exp_dtype = in_dtype if out_dtype is None else out_dtype
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    assert out.dtype == exp_dtype, f"{what}: dtype {out.dtype} != {exp_dtype}"
    if contiguous:
        assert out.is_contiguous(), f"{what}: output not contiguous (strides {out.stride()})"
    bound = bound_for(in_dtype, out_dtype)
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    if ref64.numel() == 0:
        return 0.0
    ref_finite = torch.isfinite(ref64)
    bad = ref_finite & ~torch.isfinite(out64)
    assert not bad.any(), (f"{what}: {int(bad.sum())} non-finite elements where the "
                           f"reference is finite, first at {bad.nonzero()[0].tolist()}")
    pre = getattr(ref, "pre_act", None)
    eps_acc = torch.finfo(torch.float64 if in_dtype == torch.float64 else torch.float32).eps
    fo = torch.finfo(exp_dtype)
    quantum = fo.smallest_normal * fo.eps  # subnormal spacing of the output dtype
    floor_elem = torch.full_like(ref64, quantum)
    if pre is not None:
        floor_elem = floor_elem + 4 * eps_acc * pre.detach().double().cpu().abs()
    if scale is None and getattr(ref, "term_sizes", None) is not None:
        # a forward reference: the terms are summed in the accumulator type
        scale, scale_u = ref.term_sizes, eps_acc / 2
    if scale is not None:
        assert scale.shape == ref.shape, f"{what}: scale shape {tuple(scale.shape)}"
        unit_roundoff = scale_u if scale_u is not None else torch.finfo(in_dtype).eps / 2
        floor_elem = floor_elem + 2 * unit_roundoff * scale.detach().double().cpu().abs()
    floor_norm = float(torch.linalg.vector_norm(floor_elem))
    err = rel_err(out64, ref64)
    ref_norm = float(torch.linalg.vector_norm(ref64))
    err_abs = float(torch.linalg.vector_norm(out64 - ref64))
    assert err_abs <= bound * ref_norm + floor_norm, (
        f"{what}: rel err {err:.3e} > bound {bound:.1e} ({in_dtype}->{exp_dtype})")
    if elementwise:
        rms = float(ref64.square().mean().sqrt())
        diff = (out64 - ref64).abs()
        allowed = bound * (ref64.abs() + rms) + floor_elem
        over = diff > allowed
        if over.any():
            idx = over.nonzero()[0].tolist()
            raise AssertionError(
                f"{what}: {int(over.sum())}/{over.numel()} elements off by more than "
                f"{bound:.1e}*(|ref|+rms); first at {idx}: out={out64[tuple(idx)].item()!r} "
                f"ref={ref64[tuple(idx)].item()!r} (rms {rms:.3e})")
    return err


# --------------------------------------------------------------------------------------
# Samples shared by correctness, autograd and opcheck tests
# --------------------------------------------------------------------------------------

@dataclass
class Sample:
    name: str
    op: Any                       # an OpOverload, e.g. torch.ops.gemm.mm.default
    args: tuple
    kwargs: dict = field(default_factory=dict)
    ref: Optional[Callable] = None  # ref(*args, **kwargs) -> float64 tensor or list

    def __repr__(self) -> str:  # short ids in pytest output
        return self.name


def _ref_for(op_name: str) -> Callable:
    if op_name == "mm":
        return lambda a, b, out_dtype=None: ref_mm(a, b)
    if op_name == "gemm":
        return lambda a, b, bias=None, c=None, alpha=1.0, beta=0.0, activation="none", \
            out_dtype=None: ref_gemm(a, b, bias, c, alpha, beta, activation)
    if op_name == "bmm":
        return lambda a, b, out_dtype=None: ref_bmm(a, b)
    if op_name == "grouped_mm":
        return lambda a, b, offs=None, bias=None, activation="none", out_dtype=None: \
            ref_grouped_mm(a, b, offs, bias, activation)
    if op_name == "grouped_gemm":
        return lambda a, b, bias=None, activation="none", out_dtype=None: \
            ref_grouped_gemm(a, b, bias, activation)
    raise AssertionError(op_name)


def sample_inputs(device, *, dtype=torch.float32, requires_grad: bool = False) -> list[Sample]:
    """Small samples covering every op, layout and epilogue; fresh random data per call."""
    def t(*shape, layout="row"):
        return make(shape, dtype, device, layout, requires_grad=requires_grad)

    ops = torch.ops.gemm
    S: list[Sample] = []

    def add(name, op_name, args, **kwargs):
        S.append(Sample(f"{op_name}-{name}", getattr(ops, op_name).default, args, kwargs,
                        _ref_for(op_name)))

    add("row", "mm", (t(5, 7), t(7, 3)))
    add("col_padded", "mm", (t(6, 9, layout="col"), t(9, 4, layout="padded")))
    add("k0", "mm", (t(4, 0), t(0, 3)))
    add("bias_gelu", "gemm", (t(5, 7), t(7, 6)), bias=t(6), activation="gelu")
    add("c_beta_alpha_silu", "gemm", (t(5, 8, layout="col"), t(8, 3)),
        bias=t(3), c=t(5, 3, layout="padded"), alpha=0.5, beta=-1.5, activation="silu")
    add("c_beta0", "gemm", (t(4, 6), t(6, 5)), c=t(4, 5), beta=0.0, activation="relu")
    add("gelu_tanh", "gemm", (t(3, 4), t(4, 7)), bias=t(7), c=t(3, 7), beta=1.0,
        activation="gelu_tanh")
    add("k0_bias_c", "gemm", (t(3, 0), t(0, 4)), bias=t(4), c=t(3, 4), beta=2.0,
        activation="silu")
    add("row", "bmm", (t(3, 4, 5), t(3, 5, 6)))
    add("col", "bmm", (t(2, 5, 3, layout="col"), t(2, 3, 4, layout="padded")))
    a2 = t(13, 6)
    add("2d3d_empty_group_tail", "grouped_mm",
        (a2, t(4, 6, 5), offs_from_sizes([3, 0, 5, 2], device)),  # rows 10..12 past the end
        bias=t(4, 5), activation="gelu")
    add("2d3d_plain", "grouped_mm", (t(9, 4), t(3, 4, 6, layout="col"),
                                     offs_from_sizes([2, 3, 4], device)))
    add("3d2d", "grouped_mm", (t(3, 5, 6), t(6, 11), offs_from_sizes([4, 0, 5], device)),
        bias=t(11), activation="relu")
    add("2d2d", "grouped_mm", (t(5, 12), t(12, 4), offs_from_sizes([5, 0, 6], device)),
        bias=t(3, 4), activation="silu")
    add("3d3d", "grouped_mm", (t(3, 4, 5), t(3, 5, 6), None), bias=t(3, 6),
        activation="gelu_tanh")
    add("lists", "grouped_gemm", ([t(3, 4), t(5, 2), t(1, 6)], [t(4, 6), t(2, 3), t(6, 1)]))
    add("lists_bias_act", "grouped_gemm", ([t(2, 5), t(4, 3)], [t(5, 3), t(3, 7)]),
        bias=[t(3), t(7)], activation="gelu")
    return S


def sample_id(s: Sample) -> str:
    return s.name


def call_sample(s: Sample):
    return s.op(*s.args, **s.kwargs)


def ref_sample(s: Sample):
    return s.ref(*s.args, **s.kwargs)


def _abs_arg(x):
    if isinstance(x, torch.Tensor):
        return x.abs() if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_abs_arg(v) for v in x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return abs(x)
    return x


def term_sizes_sample(s: Sample):
    """The reference on |inputs| (and |alpha|, |beta|): per output element, the size of the terms
    its sum adds up, for ``check(..., scale=)`` (with every input positive the activations are in
    their near-linear range, so this does not understate them)."""
    return s.ref(*_abs_arg(s.args), **{k: _abs_arg(v) for k, v in s.kwargs.items()})
