"""GPU-only checks (marked ``gpu``; skipped without CUDA).

The op-by-op correctness matrix of test_ops.py / test_autograd.py / test_opcheck.py also
runs on CUDA through their ``device`` parametrization; this file adds what only a GPU has:
bigger tensor-core shapes compared element by element, best-effort poisoning of the caching
allocator so unwritten output elements show up as NaN, deterministic split-K, clamped
offsets, CUDA graphs, streams, device guards and the forced-path environment variable.
"""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, DTYPES, HALF_DTYPES, LAYOUTS, check, dtype_id, make,
                      offs_from_sizes, ref_bmm, ref_gemm, ref_grouped_gemm, ref_grouped_mm,
                      ref_mm)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

DEV = "cuda"


def poison(nbytes: int):
    """Leave a freed block full of 0xFF bytes (NaN in every float dtype) in the caching
    allocator, so that an output allocated next of about that size starts as NaN: elements
    the kernel forgets to write then fail the comparison. Best effort (allocator reuse)."""
    if nbytes <= 0:
        return
    x = torch.full((nbytes,), 255, dtype=torch.uint8, device=DEV)
    del x


def out_bytes(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    return n * torch.empty((), dtype=dtype).element_size()


def cap():
    return torch.cuda.get_device_capability()


# --------------------------------------------------------------------------------------
# bigger shapes, every element
# --------------------------------------------------------------------------------------

GPU_SIZES = [(128, 128, 64), (129, 257, 65), (1000, 1000, 1000), (4096, 257, 512),
             (1, 4096, 4096), (16, 4096, 4096), (3000, 5000, 1000), (8, 8, 8)]
GPU_LAYOUTS = [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col"),
               ("padded", "padded")]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", GPU_SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", GPU_LAYOUTS, ids=lambda l: f"{l[0]}-{l[1]}")
def test_mm_gpu(dtype, mnk, layouts):
    m, n, k = mnk
    a = make((m, k), dtype, DEV, layouts[0])
    b = make((k, n), dtype, DEV, layouts[1])
    poison(out_bytes((m, n), dtype))
    out = cg.mm(a, b)
    check(out, ref_mm(a, b), dtype, what=f"mm {mnk} {layouts}")


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("mnk", [(1000, 1000, 1000), (4096, 257, 512), (16, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_epilogue_gpu(dtype, activation, mnk):
    m, n, k = mnk
    a = make((m, k), dtype, DEV)
    b = make((k, n), dtype, DEV, "col")   # nn.Linear-style weight view
    bias = make((n,), dtype, DEV)
    c = make((m, n), dtype, DEV, "padded")
    poison(out_bytes((m, n), dtype))
    out = cg.gemm(a, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation)
    check(out, ref_gemm(a, b, bias, c, 0.75, -0.5, activation), dtype,
          what=f"gemm {mnk} {activation}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["mm", "gemm", "bmm", "grouped_mm", "grouped_gemm"])
def test_out_fp32_gpu(dtype, op):
    f32 = torch.float32
    if op == "mm":
        a, b = make((1000, 513), dtype, DEV), make((513, 257), dtype, DEV, "col")
        out, ref = cg.mm(a, b, out_dtype=f32), ref_mm(a, b)
    elif op == "gemm":
        a, b = make((1000, 513), dtype, DEV), make((513, 257), dtype, DEV, "col")
        bias, c = make((257,), dtype, DEV), make((1000, 257), dtype, DEV)
        out = cg.gemm(a, b, bias=bias, c=c, beta=1.0, activation="gelu", out_dtype=f32)
        ref = ref_gemm(a, b, bias, c, 1.0, 1.0, "gelu")
    elif op == "bmm":
        a, b = make((4, 300, 129), dtype, DEV), make((4, 129, 200), dtype, DEV, "col")
        out, ref = cg.bmm(a, b, out_dtype=f32), ref_bmm(a, b)
    elif op == "grouped_mm":
        sizes = [100, 0, 257, 31]
        a, b = make((400, 256), dtype, DEV), make((4, 256, 192), dtype, DEV, "col")
        offs = offs_from_sizes(sizes, DEV)
        bias = make((4, 192), dtype, DEV)
        out = cg.grouped_mm(a, b, offs, bias=bias, activation="silu", out_dtype=f32)
        ref = ref_grouped_mm(a, b, offs, bias, "silu")
    else:
        a = [make((300, 64), dtype, DEV), make((7, 129), dtype, DEV)]
        b = [make((64, 96), dtype, DEV), make((129, 1000), dtype, DEV)]
        outs = cg.grouped_gemm(a, b, out_dtype=f32)
        for o, r in zip(outs, ref_grouped_gemm(a, b)):
            check(o, r, dtype, f32)
        return
    check(out, ref, dtype, f32, what=op)


# --------------------------------------------------------------------------------------
# grouped at MoE-like sizes, every layout, every element
# --------------------------------------------------------------------------------------

MOE_SIZES = {
    "skewed_empty": [900, 0, 17, 1, 0, 2000, 129, 0],
    "uniform": [512] * 8,
    "tail": [100, 300, 0, 77],     # extent larger than the sum
}


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d", "3d3d"])
@pytest.mark.parametrize("scenario", list(MOE_SIZES))
def test_grouped_mm_gpu(dtype, layout, scenario):
    sizes = MOE_SIZES[scenario]
    G, total = len(sizes), sum(sizes)
    T = total + (61 if scenario == "tail" else 0)
    K, N, M = 256, 192, 96
    offs = offs_from_sizes(sizes, DEV)
    if layout == "2d3d":
        a, b, bias = make((T, K), dtype, DEV), make((G, K, N), dtype, DEV, "col"), \
            make((G, N), dtype, DEV)
    elif layout == "3d2d":
        a, b, bias = make((G, M, K), dtype, DEV), make((K, T), dtype, DEV), make((T,), dtype, DEV)
    elif layout == "2d2d":  # dW = x^T dY, x^T a column-major view
        a, b, bias = make((K, T), dtype, DEV, "col"), make((T, N), dtype, DEV), \
            make((G, N), dtype, DEV)
    else:
        a, b, bias = make((G, M, K), dtype, DEV), make((G, K, N), dtype, DEV, "col"), \
            make((G, N), dtype, DEV)
        offs = None
    ref = ref_grouped_mm(a, b, offs, bias, "gelu_tanh")
    poison(out_bytes(ref.shape, dtype))
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="gelu_tanh")
    check(out, ref, dtype, what=f"grouped {layout} {scenario}")
    if layout == "2d3d":
        assert torch.all(out[total:] == 0)
    if layout == "3d2d":
        assert torch.all(out[:, total:] == 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
def test_grouped_gemm_gpu(dtype):
    shapes = [(1000, 1000, 512), (1, 4096, 256), (257, 7, 1000), (0, 64, 64), (64, 0, 64),
              (64, 64, 0), (4096, 128, 64)]
    a = [make((m, k), dtype, DEV, LAYOUTS[i % 3]) for i, (m, n, k) in enumerate(shapes)]
    b = [make((k, n), dtype, DEV, LAYOUTS[(i + 1) % 3]) for i, (m, n, k) in enumerate(shapes)]
    bias = [make((n,), dtype, DEV) for (m, n, k) in shapes]
    outs = cg.grouped_gemm(a, b, bias=bias, activation="relu")
    for i, (o, r) in enumerate(zip(outs, ref_grouped_gemm(a, b, bias, "relu"))):
        check(o, r, dtype, what=f"grouped_gemm[{i}] {shapes[i]}")


# --------------------------------------------------------------------------------------
# split-K: big K against the reference, bitwise determinism
# --------------------------------------------------------------------------------------

BIG_K = [(64, 64, 20000), (256, 256, 16384), (1, 128, 65536), (129, 65, 30001)]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", BIG_K, ids=lambda s: "x".join(map(str, s)))
def test_big_k(dtype, mnk):
    m, n, k = mnk
    a, b = make((m, k), dtype, DEV), make((k, n), dtype, DEV, "col")
    bias, c = make((n,), dtype, DEV), make((m, n), dtype, DEV)
    poison(out_bytes((m, n), dtype))
    out = cg.mm(a, b)
    # norm-wise bound; element-wise only checked for finiteness (per-element accumulation
    # error over tens of thousands of terms is not what the element-wise test is sized for)
    check(out, ref_mm(a, b), dtype, elementwise=False, what=f"mm big K {mnk}")
    assert torch.isfinite(out).all()
    # the epilogue is applied once, after the split-K reduction
    out = cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=2.0, activation="gelu")
    check(out, ref_gemm(a, b, bias, c, 0.5, 2.0, "gelu"), dtype, elementwise=False,
          what=f"gemm big K {mnk}")
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", BIG_K + [(1000, 1000, 1000)], ids=lambda s: "x".join(map(str, s)))
def test_deterministic(dtype, mnk):
    m, n, k = mnk
    a, b = make((m, k), dtype, DEV), make((k, n), dtype, DEV, "col")
    bias = make((n,), dtype, DEV)
    first = cg.gemm(a, b, bias=bias, activation="silu")
    for _ in range(4):
        poison(out_bytes((m, n), dtype))
        again = cg.gemm(a, b, bias=bias, activation="silu")
        assert torch.equal(first, again), "repeated calls differ (non-deterministic split-K?)"
    m1, m2 = cg.mm(a, b), cg.mm(a, b)
    assert torch.equal(m1, m2)


def test_deterministic_grouped():
    dtype = torch.bfloat16
    sizes = [3000, 0, 5, 1000]
    a, b = make((4005, 8192), dtype, DEV), make((4, 8192, 64), dtype, DEV)
    offs = offs_from_sizes(sizes, DEV)
    first = cg.grouped_mm(a, b, offs)
    for _ in range(3):
        assert torch.equal(first, cg.grouped_mm(a, b, offs))
    # weight-gradient form (reduction along the groups): big per-group K
    x, dy = make((64, 4005), dtype, DEV, "col"), make((4005, 96), dtype, DEV)
    first = cg.grouped_mm(x, dy, offs)
    for _ in range(3):
        assert torch.equal(first, cg.grouped_mm(x, dy, offs))
    check(first, ref_grouped_mm(x, dy, offs), dtype)


# --------------------------------------------------------------------------------------
# offsets out of order / past the end: clamped on the GPU, never a crash
# --------------------------------------------------------------------------------------

BAD_OFFS = {
    "decreasing": [50, 20, 90],
    "past_end": [40, 90, 5000],
    "negative": [-7, 30, 60],
    "huge": [2**31 - 1, 2**31 - 1, 2**31 - 1],
}


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d"])
@pytest.mark.parametrize("case", list(BAD_OFFS))
def test_bad_offs_clamped_gpu(layout, case):
    dtype = torch.bfloat16
    T, K, N, M, G = 100, 64, 48, 32, 3
    offs = torch.tensor(BAD_OFFS[case], dtype=torch.int32, device=DEV)
    if layout == "2d3d":
        a, b = make((T, K), dtype, DEV), make((G, K, N), dtype, DEV)
    elif layout == "3d2d":
        a, b = make((G, M, K), dtype, DEV), make((K, T), dtype, DEV)
    else:
        a, b = make((M, T), dtype, DEV), make((T, N), dtype, DEV)
    out = cg.grouped_mm(a, b, offs)        # must not raise (no host sync on offs)
    torch.cuda.synchronize()               # must not report an illegal address
    expected = {"2d3d": (T, N), "3d2d": (M, T), "2d2d": (G, M, N)}[layout]
    assert tuple(out.shape) == expected
    # the context is still healthy
    x, y = make((129, 65), dtype, DEV), make((65, 33), dtype, DEV)
    check(cg.mm(x, y), ref_mm(x, y), dtype)
    good = offs_from_sizes([30, 30, 40], DEV)
    check(cg.grouped_mm(a, b, good), ref_grouped_mm(a, b, good), dtype)
    torch.cuda.synchronize()


# --------------------------------------------------------------------------------------
# CUDA graphs: capture once, change offs in place, replay
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d"])
def test_cuda_graph_grouped_mm(layout):
    dtype = torch.bfloat16
    T, K, N, M, G = 300, 128, 64, 48, 4
    sizes1, sizes2 = [100, 50, 0, 150], [0, 7, 200, 20]   # the second leaves a tail
    offs = offs_from_sizes(sizes1, DEV)
    if layout == "2d3d":
        a, b, bias = make((T, K), dtype, DEV), make((G, K, N), dtype, DEV, "col"), \
            make((G, N), dtype, DEV)
    elif layout == "3d2d":
        a, b, bias = make((G, M, K), dtype, DEV), make((K, T), dtype, DEV), make((T,), dtype, DEV)
    else:
        a, b, bias = make((M, T), dtype, DEV, "col"), make((T, N), dtype, DEV), \
            make((G, N), dtype, DEV)

    def run():
        return cg.grouped_mm(a, b, offs, bias=bias, activation="relu")

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            run()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = run()
    graph.replay()
    torch.cuda.synchronize()
    check(out, ref_grouped_mm(a, b, offs, bias, "relu"), dtype, what="replay 1")

    offs.copy_(offs_from_sizes(sizes2, DEV))
    a.copy_(make(tuple(a.shape), dtype, DEV))
    graph.replay()
    torch.cuda.synchronize()
    check(out, ref_grouped_mm(a, b, offs, bias, "relu"), dtype, what="replay 2 (new offs)")
    end = sum(sizes2)
    if layout == "2d3d":
        assert torch.all(out[end:] == 0), "rows past the new offs[-1] not zeroed on replay"
    if layout == "3d2d":
        assert torch.all(out[:, end:] == 0), "columns past the new offs[-1] not zeroed"


def test_cuda_graph_mm_and_gemm():
    dtype = torch.float16
    a, b = make((300, 257), dtype, DEV), make((257, 129), dtype, DEV, "col")
    bias = make((129,), dtype, DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        cg.gemm(a, b, bias=bias, activation="gelu")
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = cg.gemm(a, b, bias=bias, activation="gelu")
    a.copy_(make((300, 257), dtype, DEV))
    graph.replay()
    torch.cuda.synchronize()
    check(out, ref_gemm(a, b, bias, activation="gelu"), dtype)


# --------------------------------------------------------------------------------------
# streams and device guards
# --------------------------------------------------------------------------------------

def test_current_stream_is_used():
    """Work queued on a side stream before the op must be seen by the op: the side stream
    first sleeps, then overwrites ``a``; a kernel launched on another stream would race
    ahead and read the old ``a``."""
    dtype = torch.bfloat16
    a, b = make((1000, 512), dtype, DEV), make((512, 256), dtype, DEV, "col")
    a_new = make((1000, 512), dtype, DEV)
    x, w = make((700, 512), dtype, DEV), make((3, 512, 256), dtype, DEV)
    x_new = make((700, 512), dtype, DEV)
    offs = offs_from_sizes([200, 0, 450], DEV)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)
        a.copy_(a_new)
        x.copy_(x_new)
        out = cg.mm(a, b)
        out_g = cg.gemm(a, b, activation="relu")
        out_grp = cg.grouped_mm(x, w, offs)
        out_list = cg.grouped_gemm([a], [b])
    s.synchronize()
    torch.cuda.current_stream().wait_stream(s)
    check(out, ref_mm(a_new, b), dtype, what="mm on side stream")
    check(out_g, ref_gemm(a_new, b, activation="relu"), dtype, what="gemm on side stream")
    check(out_grp, ref_grouped_mm(x_new, w, offs), dtype, what="grouped_mm on side stream")
    check(out_list[0], ref_mm(a_new, b), dtype, what="grouped_gemm on side stream")


def test_backward_on_side_stream():
    dtype = torch.float32
    a = make((300, 200), dtype, DEV, requires_grad=True)
    b = make((200, 100), dtype, DEV, "col", requires_grad=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = cg.gemm(a, b, activation="silu")
        g = torch.randn_like(out)
        ga, gb = torch.autograd.grad(out, (a, b), g)
    s.synchronize()
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ra, rb = torch.autograd.grad(ref_gemm(a64, b64, activation="silu"), (a64, b64), g.double())
    check(ga, ra, dtype, contiguous=False)
    check(gb, rb, dtype, contiguous=False)


def test_device_guard_cuda0():
    dtype = torch.float16
    with torch.cuda.device(0):
        a, b = make((65, 33), dtype, "cuda:0"), make((33, 17), dtype, "cuda:0")
        out = cg.mm(a, b)
    assert out.device == torch.device("cuda:0")
    check(out, ref_mm(a, b), dtype)


# (two GPUs: tests/test_two_gpus.py runs every path with per-device state on either device)


# --------------------------------------------------------------------------------------
# forced lower paths: CUTORCH_GEMM_ARCH is read at call time
# --------------------------------------------------------------------------------------

def _path_calls(dtype):
    """(op, args, kwargs, reference, tma_ok): tma_ok marks the calls whose operands TMA can read (16-byte
    aligned rows), which a forced sm90 must run on the sm90 family; the others (257x129: 258-byte rows in
    16-bit) fall back to sm80 and explain must say why."""
    a, b = make((257, 129), dtype, DEV), make((129, 65), dtype, DEV, "col")
    bias, c = make((65,), dtype, DEV), make((257, 65), dtype, DEV)
    x, w = make((300, 64), dtype, DEV), make((3, 64, 48), dtype, DEV)
    a8, b8 = make((256, 128), dtype, DEV), make((128, 72), dtype, DEV, "col")
    offs = offs_from_sizes([100, 0, 150], DEV)
    return [
        ("mm", (a, b), {}, lambda: ref_mm(a, b), False),
        ("mm", (a8, b8), {}, lambda: ref_mm(a8, b8), True),
        ("gemm", (a, b), dict(bias=bias, c=c, beta=0.5, activation="gelu_tanh"),
         lambda: ref_gemm(a, b, bias, c, 1.0, 0.5, "gelu_tanh"), False),
        ("bmm", (make((3, 65, 33), dtype, DEV), make((3, 33, 17), dtype, DEV, "col")), {},
         None, False),
        ("grouped_mm", (x, w, offs), dict(activation="silu"),
         lambda: ref_grouped_mm(x, w, offs, None, "silu"), True),
    ]


def test_forced_simt_path(monkeypatch):
    a, b = make((512, 512), torch.bfloat16, DEV), make((512, 512), torch.bfloat16, DEV)
    monkeypatch.delenv("CUTORCH_GEMM_ARCH", raising=False)
    default = cg.explain("mm", a, b)
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "simt")
    forced = cg.explain("mm", a, b)
    assert "simt" in forced.kernel.lower(), str(forced)
    assert str(forced) != str(default), "setting CUTORCH_GEMM_ARCH changed nothing in explain"
    check(cg.mm(a, b), ref_mm(a, b), torch.bfloat16, what="mm with CUTORCH_GEMM_ARCH=simt")
    monkeypatch.delenv("CUTORCH_GEMM_ARCH")
    assert str(cg.explain("mm", a, b)) == str(default), "CUTORCH_GEMM_ARCH not re-read per call"


@pytest.mark.parametrize("arch", ["simt", "sm80", "sm90", "auto"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_forced_paths_correct(monkeypatch, arch, dtype):
    """Every path forced on this GPU computes the right result and explain names it: a forced sm90 runs the
    16-bit calls TMA can read on the sm90 family, and the others on sm80 with the reason TMA refused them."""
    need = {"sm80": (8, 0), "sm90": (9, 0)}.get(arch)
    if need is not None and cap() < need:
        pytest.skip(f"{arch} path needs sm_{need[0]}{need[1]}+")
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", arch)
    for op, args, kwargs, ref, tma_ok in _path_calls(dtype):
        e = cg.explain(op, *args, **kwargs)
        if arch == "simt":
            assert "simt" in e.kernel.lower(), f"{op}: {e}"
        if arch == "sm80" and dtype != torch.float32:  # fp32 here runs without tf32: SIMT
            assert e.kernel == "sm80", f"{op}: {e}"
        if arch == "sm90" and dtype in HALF_DTYPES:
            if tma_ok:
                assert e.kernel == "sm90", f"{op}: forced sm90 on TMA-readable operands ran {e.kernel}: {e}"
            else:
                assert e.kernel == "sm80" and "not sm90: a: TMA needs" in e.reason, (
                    f"{op}: forced sm90 on 258-byte rows should fall back to sm80 naming TMA's rule: {e}")
        out = getattr(cg, op)(*args, **kwargs)
        r = ref() if ref is not None else ref_bmm(*args)
        check(out, r, dtype, what=f"{op} on {arch}")


def test_explain_gpu_names_kernel():
    a, b = make((4096, 4096), torch.bfloat16, DEV), make((4096, 4096), torch.bfloat16, DEV)
    e = cg.explain("mm", a, b)
    s = str(e)
    assert e.kernel and e.config and e.reason
    assert (e.kernel in s or e.config in s) and e.reason in s


@pytest.mark.parametrize("layout", ["2d3d", "3d2d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
@pytest.mark.parametrize("offsets", ["short", "past_end", "decreasing", "all_empty"])
def test_grouped_tail_zero_on_poisoned_memory(layout, dtype, offsets):
    """Rows (2D x 3D) / columns (3D x 2D) past offs[-1] are zeroed on the device before the GEMM
    (no memset of the whole output): the output's memory is poisoned with NaN first, and offs[-1]
    short of the extent, past it (clamped), out of order, or 0."""
    total, G, K, N = 200, 3, 64, 96
    offs_list = {"short": [50, 90, 150], "past_end": [50, 90, 400], "decreasing": [120, 30, 160],
                 "all_empty": [0, 0, 0]}[offsets]
    offs = torch.tensor(offs_list, dtype=torch.int32, device=DEV)
    end = min(max(offs_list[-1], 0), total)
    if layout == "2d3d":
        a, b = make((total, K), dtype, DEV), make((G, K, N), dtype, DEV)
        shape = (total, N)
    else:
        a, b = make((G, 48, K), dtype, DEV), make((K, total), dtype, DEV)
        shape = (48, total)
    poison(shape[0] * shape[1] * torch.empty((), dtype=dtype).element_size())
    out = cg.grouped_mm(a, b, offs)
    torch.cuda.synchronize()
    tail = out[end:] if layout == "2d3d" else out[:, end:]
    assert torch.all(tail == 0), f"{layout} {offsets}: past offs[-1]={end} not zero"
    assert torch.isfinite(out).all(), f"{layout} {offsets}: rows inside the groups not all written"
    if offsets != "decreasing":  # (out-of-order groups overlap: their rows' values are not defined)
        check(out, ref_grouped_mm(a, b, offs.clamp(max=total)), dtype, what=f"{layout} {offsets}")
