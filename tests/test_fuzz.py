"""Randomized differential test: every case draws an op, dtypes, sizes, operand layouts, epilogue
arguments and (on the GPU) a forced kernel family, and compares the result with the float64
reference element by element.

The other test files walk fixed grids (every config, every layout, named awkward sizes); this one
walks their product at random, with layouts those grids leave out: a base pointer off the 16-byte
grid (a view starting at element 1 or 3), a non-unit inner stride (every other column), a padded
column-major view, a stride-0 (expanded) batch; on the GPU, half the cases also set one or two of
the kernel-selection overrides (KNOBS) at random. A failure prints the case; the seed that drew it
is printed by conftest (``CUTORCH_TEST_SEED=... pytest tests/test_fuzz.py``).

Cases: ``CUTORCH_FUZZ_CASES`` on the GPU (default 240), a fixed 60 small ones on the CPU.
"""
from __future__ import annotations

import os
import random

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, check, gpu, offs_from_sizes, poison, ref_bmm, ref_gemm, ref_grouped_gemm,
                      ref_grouped_mm, ref_mm, requires_cuda)
from test_scaled_mm import KINDS, check_scaled, fp8, scale

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
GPU_CASES = int(os.environ.get("CUTORCH_FUZZ_CASES", "240"))
CPU_CASES = 60

# Awkward extents (primes, one past a tile, one short of one) and a few round ones.
SIZES = [1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 63, 64, 65, 97, 127, 128, 129, 191, 200, 256, 257, 383, 509, 1000]
SIZES_GPU = SIZES + [1536, 2049, 3001, 4096]  # several waves of tiles, stream-K and split-K plans
SIZES_CPU = [1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 64, 65]
# The kernel-selection overrides (README) a GPU case may set, one or two at a time, on top of
# CUTORCH_GEMM_ARCH: each forces a path the heuristics take only for some shapes.
KNOBS = {
    "CUTORCH_GEMM_SKINNY": ["off", "force", "sm90", "w8", "w16"],
    "CUTORCH_GEMM_SKINNY_SPLITS": ["1", "2", "3", "8"],
    "CUTORCH_GEMM_SM90_CONFIG": ["coop", "coop192", "pingpong", "pingpong128", "pingpong64"],
    "CUTORCH_GEMM_SM90_CLUSTER": ["1", "2"],
    "CUTORCH_GEMM_SM90_STREAMK": ["off", "on", "wide", "last"],
    "CUTORCH_GEMM_SM90_STREAMK_PAIRS": ["on", "off"],
    "CUTORCH_GEMM_SM90_EPILOGUE": ["direct", "staged", "fused", "general"],
    "CUTORCH_GEMM_SM90_GRID": ["1", "3", "17"],
    "CUTORCH_GEMM_SM90_DEFER": ["off"],
    "CUTORCH_GEMM_SM90_EARLY": ["off"],
    "CUTORCH_GEMM_SM90_BIAS_EARLY": ["off"],
    "CUTORCH_GEMM_SM90_HALF_TILES": ["on", "off"],
    "CUTORCH_GEMM_SM90_GROUP_ENDS": ["off"],
    "CUTORCH_GEMM_SM90_ACT_PINGPONG": ["on"],  # (the activation rule, opt-in since the fiftieth session)
    "CUTORCH_GEMM_SPLIT_K": ["none", "serial:2", "serial:5", "parallel:2", "parallel:7"],
    "CUTORCH_GEMM_SM80_SPLIT_REDUCE": ["kernel"],
    "CUTORCH_GEMM_SM80_EPILOGUE": ["general"],
    "CUTORCH_GEMM_GROUPED_SORT_K": ["1"],
    "CUTORCH_GEMM_GROUPED_PTR": ["on", "off"],
}
LAYOUTS_2D = ["row", "col", "padded", "colpad", "offset", "step2"]
MAX_MACS = {"cpu": 2_000_000, "cuda": 300_000_000}


def _values(shape, dtype, device):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, dtype=torch.int8, device=device)
    return torch.randn(shape, device=device).to(dtype)


def operand(rng: random.Random, shape, dtype, device, layout: str) -> torch.Tensor:
    """A random (r, c) tensor laid out as ``layout``: always a view of a fresh random buffer."""
    r, c = shape
    pad = rng.randint(1, 9)
    if layout == "row":
        return _values((r, c), dtype, device)
    if layout == "col":
        return _values((c, r), dtype, device).t()
    if layout == "padded":  # row-major, leading dimension c + pad
        return _values((r, c + pad), dtype, device)[:, :c]
    if layout == "colpad":  # column-major, leading dimension r + pad
        return _values((c, r + pad), dtype, device)[:, :r].t()
    if layout == "offset":  # row-major from element 1 or 3 of its buffer: no 16-byte aligned base
        off = rng.choice([1, 3])
        return _values((r * c + off,), dtype, device).as_strided((r, c), (c, 1), off)
    if layout == "step2":  # every other column of a wider buffer: inner stride 2
        return _values((r, 2 * c), dtype, device)[:, ::2]
    raise AssertionError(layout)


def operand3(rng: random.Random, shape, dtype, device) -> tuple[torch.Tensor, str]:
    """A random (B, r, c) tensor: a batch of one 2-D layout, or one matrix expanded over the batch."""
    B, r, c = shape
    if rng.random() < 0.2:
        layout = "expand:" + rng.choice(["row", "col"])
        one = operand(rng, (r, c), dtype, device, layout.split(":")[1])
        return one.unsqueeze(0).expand(B, r, c), layout
    layout = rng.choice(["row", "col", "padded", "colpad"])
    if layout == "row":
        return _values((B, r, c), dtype, device), layout
    if layout == "col":
        return _values((B, c, r), dtype, device).transpose(1, 2), layout
    pad = rng.randint(1, 9)
    if layout == "padded":
        return _values((B, r, c + pad), dtype, device)[..., :c], layout
    return _values((B, c, r + pad), dtype, device)[..., :r].transpose(1, 2), layout


def _dims(rng: random.Random, device: str, n: int) -> list[int]:
    """n extents from the awkward set; now and then one of them zero."""
    sizes = SIZES_GPU if device == "cuda" else SIZES_CPU
    dims = [rng.choice(sizes) for _ in range(n)]
    while _prod(dims) > MAX_MACS[device]:
        i = max(range(n), key=lambda j: dims[j])
        dims[i] = max(1, dims[i] // 2)
    if rng.random() < 0.05:
        dims[rng.randrange(n)] = 0
    return dims


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _arch(rng: random.Random, device: str, dtype) -> str:
    """The kernel family forced for the case (GPU): the dispatcher's own choice half of the time."""
    if device != "cuda" or rng.random() < 0.5:
        return "auto"
    if dtype == torch.int8:  # (int8 runs on the sm80 family only; forcing another one is an error)
        return "sm80"
    archs = ["sm80", "simt"]
    if torch.cuda.get_device_capability()[0] == 9 and cg._C.sm90_available():
        archs.append("sm90")
    return rng.choice(archs)


def _out_dtype(rng: random.Random, dtype):
    return rng.choice([None, f32]) if dtype in (f16, bf16) else None


def case_mm(rng, device):
    dtype = rng.choice([f16, bf16, f32, f64, torch.int8])
    m, n, k = _dims(rng, device, 3)
    la, lb = rng.choice(LAYOUTS_2D), rng.choice(LAYOUTS_2D)
    a, b = operand(rng, (m, k), dtype, device, la), operand(rng, (k, n), dtype, device, lb)
    if dtype == torch.int8:
        ref = a.long() @ b.long() if device == "cpu" else (a.double() @ b.double()).long()
        what = f"mm int8 {m}x{n}x{k} a={la} b={lb}"

        def exact(out):
            assert out.dtype == torch.int32 and out.is_contiguous(), what
            assert torch.equal(out.cpu().long(), ref.cpu()), f"{what}: int8 product not exact"
        return what, lambda: cg.mm(a, b), exact, dtype
    od = _out_dtype(rng, dtype)
    return _checked(f"mm {dtype} {m}x{n}x{k} a={la} b={lb} out={od}", lambda: cg.mm(a, b, out_dtype=od),
                    ref_mm(a, b), dtype, od)


def case_gemm(rng, device):
    dtype = rng.choice([f16, bf16, f32, f64])
    m, n, k = _dims(rng, device, 3)
    la, lb, lc = rng.choice(LAYOUTS_2D), rng.choice(LAYOUTS_2D), rng.choice(LAYOUTS_2D)
    a, b = operand(rng, (m, k), dtype, device, la), operand(rng, (k, n), dtype, device, lb)
    bias = _values((n,), dtype, device) if rng.random() < 0.5 else None
    c = operand(rng, (m, n), dtype, device, lc) if rng.random() < 0.4 else None
    alpha = rng.choice([1.0, -0.5, 2.0])
    beta = rng.choice([0.0, 1.0, 0.25]) if c is not None else 0.0
    act = rng.choice(ACTIVATIONS)
    od = _out_dtype(rng, dtype)
    what = (f"gemm {dtype} {m}x{n}x{k} a={la} b={lb} bias={bias is not None} c={lc if c is not None else None} "
            f"alpha={alpha} beta={beta} act={act} out={od}")
    return _checked(what, lambda: cg.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=act, out_dtype=od),
                    ref_gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=act), dtype, od)


def case_bmm(rng, device):
    dtype = rng.choice([f16, bf16, f32, f64])
    m, n, k = _dims(rng, device, 3)
    batch = rng.choice([1, 2, 3, 5])
    while batch > 1 and batch * m * n * k > MAX_MACS[device]:
        batch -= 1
    a, la = operand3(rng, (batch, m, k), dtype, device)
    b, lb = operand3(rng, (batch, k, n), dtype, device)
    od = _out_dtype(rng, dtype)
    return _checked(f"bmm {dtype} {batch}x{m}x{n}x{k} a={la} b={lb} out={od}", lambda: cg.bmm(a, b, out_dtype=od),
                    ref_bmm(a, b), dtype, od)


def _group_sizes(rng, total_max: int, groups: int) -> list[int]:
    """Group extents with empty groups and skew; their sum at most total_max."""
    sizes = [0 if rng.random() < 0.25 else rng.choice(SIZES) for _ in range(groups)]
    while sum(sizes) > total_max:
        i = max(range(groups), key=lambda j: sizes[j])
        sizes[i] //= 2
    return sizes


def case_grouped_mm(rng, device):
    dtype = rng.choice([f16, bf16, f32, f64])
    form = rng.choice(["2d3d", "3d2d", "2d2d", "3d3d"])
    G = rng.choice([1, 2, 3, 4, 8])
    n, k = _dims(rng, device, 2)
    n, k = max(n, 1), max(k, 1)
    budget = max(1, MAX_MACS[device] // (n * k))
    sizes = _group_sizes(rng, min(budget, 2000), G)
    total = sum(sizes)
    extra = rng.choice([0, 0, 5])  # rows past offs[-1] (2D x 3D / 3D x 2D: zeros)
    offs = offs_from_sizes(sizes, device) if form != "3d3d" else None
    act = rng.choice(ACTIVATIONS)
    with_bias = rng.random() < 0.5
    lay = rng.choice(["row", "col"])
    if form == "2d3d":
        a = operand(rng, (total + extra, k), dtype, device, rng.choice(LAYOUTS_2D))
        b, lb = operand3(rng, (G, k, n), dtype, device)
        bias = _values((G, n), dtype, device) if with_bias else None
    elif form == "3d2d":
        a, lb = operand3(rng, (G, n, k), dtype, device)  # (G, M, K) with M = n here
        b = operand(rng, (k, total + extra), dtype, device, rng.choice(LAYOUTS_2D))
        bias = _values((total + extra,), dtype, device) if with_bias else None
    elif form == "2d2d":
        a = operand(rng, (k, total + extra), dtype, device, lay)
        b = operand(rng, (total + extra, n), dtype, device, rng.choice(["row", "col"]))
        lb = lay
        bias = _values((G, n), dtype, device) if with_bias else None
    else:
        m = max(1, min(rng.choice(SIZES), budget // max(G, 1)))
        a, _ = operand3(rng, (G, m, k), dtype, device)
        b, lb = operand3(rng, (G, k, n), dtype, device)
        bias = _values((G, n), dtype, device) if with_bias else None
    od = _out_dtype(rng, dtype)
    what = f"grouped_mm {form} {dtype} sizes={sizes}+{extra} n={n} k={k} b={lb} bias={with_bias} act={act} out={od}"
    return _checked(what, lambda: cg.grouped_mm(a, b, offs, bias=bias, activation=act, out_dtype=od),
                    ref_grouped_mm(a, b, offs, bias, act), dtype, od)


def case_grouped_gemm(rng, device):
    dtype = rng.choice([f16, bf16, f32, f64])
    count = rng.choice([1, 2, 3, 5])
    probs = [_dims(rng, device, 3) for _ in range(count)]
    a = [operand(rng, (m, k), dtype, device, rng.choice(LAYOUTS_2D)) for m, n, k in probs]
    b = [operand(rng, (k, n), dtype, device, rng.choice(LAYOUTS_2D)) for m, n, k in probs]
    bias = [_values((n,), dtype, device) for m, n, k in probs] if rng.random() < 0.5 else None
    act = rng.choice(ACTIVATIONS)
    od = _out_dtype(rng, dtype)
    what = f"grouped_gemm {dtype} problems={probs} bias={bias is not None} act={act} out={od}"
    return _checked(what, lambda: cg.grouped_gemm(a, b, bias=bias, activation=act, out_dtype=od),
                    ref_grouped_gemm(a, b, bias, act), dtype, od)


def case_scaled_mm(rng, device):
    kinds = rng.choice(KINDS)
    m, n, k = _dims(rng, device, 3)
    la, lb = rng.choice(["row", "col", "padded", "odd"]), rng.choice(["row", "col", "padded", "odd"])
    a, b = fp8(m, k, kinds[0], device, la), fp8(k, n, kinds[1], device, lb)
    ka, kb = rng.choice(["tensor", "one", "vector"]), rng.choice(["tensor", "one", "vector"])
    sa, sb = scale(ka, m, device, rows=True), scale(kb, n, device, rows=False)
    od = rng.choice([bf16, f16, f32])
    bias = _values((n,), rng.choice([bf16, f16, f32]), device) if rng.random() < 0.5 else None
    what = (f"scaled_mm {kinds} {m}x{n}x{k} a={la} b={lb} scales={ka}/{kb} "
            f"bias={None if bias is None else bias.dtype} out={od}")
    return (what, lambda: cg.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=od),
            lambda out: check_scaled(out, a, b, sa, sb, bias, od, what=what), kinds[0])


def _checked(what, call, ref, dtype, out_dtype):
    """A case whose result `check` compares with its float64 reference(s)."""
    def verify(out):
        if isinstance(ref, list):
            assert isinstance(out, (list, tuple)) and len(out) == len(ref), what
            for i, (o, r) in enumerate(zip(out, ref)):
                check(o, r, dtype, out_dtype, what=f"{what} [problem {i}]")
        else:
            check(out, ref, dtype, out_dtype, what=what)
    verify.refs = ref if isinstance(ref, list) else [ref]
    return what, call, verify, dtype


CASES = [case_mm, case_gemm, case_gemm, case_bmm, case_grouped_mm, case_grouped_mm, case_grouped_gemm,
         case_scaled_mm]


def _run_case(device: str, monkeypatch) -> None:
    rng = random.Random(random.getrandbits(64))  # conftest seeded `random` for this test
    make_case = rng.choice(CASES)
    what, call, verify, dtype = make_case(rng, device)
    arch = _arch(rng, device, dtype)
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", arch)
    for name in KNOBS:
        monkeypatch.delenv(name, raising=False)
    knobs = {}
    if device == "cuda" and rng.random() < 0.5:
        knobs = {name: rng.choice(KNOBS[name]) for name in rng.sample(sorted(KNOBS), rng.choice([1, 2]))}
        for name, value in knobs.items():
            monkeypatch.setenv(name, value)
    what = f"{what} arch={arch} {' '.join(f'{k}={v}' for k, v in knobs.items())}"
    if device == "cuda":  # NaN-filled freed memory where the output will likely land
        poison(sum(r.numel() for r in getattr(verify, "refs", [])) * 4)
    try:
        out = call()
    except ValueError as e:
        # A forced config or split that cannot serve the call is refused by name; nothing else may fail.
        if any(name in str(e) for name in knobs):
            return
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
    except Exception as e:
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
    try:
        verify(out)
    except Exception as e:
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e


@pytest.mark.parametrize("i", range(CPU_CASES))
def test_fuzz_cpu(i, monkeypatch):
    _run_case("cpu", monkeypatch)


@gpu
@requires_cuda
@pytest.mark.parametrize("i", range(GPU_CASES))
def test_fuzz_cuda(i, monkeypatch):
    _run_case("cuda", monkeypatch)
