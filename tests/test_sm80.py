"""The Ampere-class family (cp.async multistage + ldmatrix + mma.sync), forced on any GPU of
sm_80 or newer with CUTORCH_GEMM_ARCH=sm80: every named config, every operand-major
combination, misaligned and strided operands (narrow copies), every epilogue, serial and
parallel split-K (summed in the kernel or by a reduction kernel), bmm and grouped launches,
tf32 and fp64 (DMMA), empty extents, CUDA-graph replay, all against float64 references with
poisoned outputs. Skipped below sm_80."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from cutorch_gemm.explain import _sm80_mn_major
from conftest import (ACTIVATIONS, HALF_DTYPES, check, dtype_id, make, offs_from_sizes, poison, ref_bmm, ref_gemm,
                      ref_grouped_mm, rel_err)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8
                       or not cg._C.sm80_available(), reason="needs an sm_80+ GPU and sm_80-family kernels"),
]

CONFIGS_16 = ["128x256x64", "128x128x64", "64x128x64", "64x64x64", "Sm80_128x128x64_S3_K2"]
CONFIGS_TF32 = ["128x256x32", "128x128x32", "64x64x32"]
K_MAJOR_ONLY = {"128x256x32"}  # configs that read K-major a and b only
CONFIGS_F64 = ["128x64x16", "64x64x16"]
TF32_BOUND = 4e-3  # tf32 keeps 10 mantissa bits (inputs truncated): ~1e-3 relative per product


@pytest.fixture(autouse=True)
def _force_sm80(monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "sm80")
    for name in ("CUTORCH_GEMM_SM80_CONFIG", "CUTORCH_GEMM_SPLIT_K", "CUTORCH_GEMM_SM80_EPILOGUE",
                 "CUTORCH_GEMM_SM80_SPLIT_REDUCE", "CUTORCH_GEMM_L2_HINT"):
        monkeypatch.delenv(name, raising=False)


def _fits(config: str) -> bool:
    smem = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    need = {"128x256x64": 144 * 1024, "128x256x32": 192 * 1024, "Sm80_128x128x64_S3_K2": 192 * 1024}.get(config, 0)
    return smem >= need + 1024


def use(monkeypatch, config=None, split=None):
    if config is not None:
        if not _fits(config):
            pytest.skip(f"{config} needs more shared memory than this GPU has")
        monkeypatch.setenv("CUTORCH_GEMM_SM80_CONFIG", config)
    if split is not None:
        monkeypatch.setenv("CUTORCH_GEMM_SPLIT_K", split)


def expect_sm80(op, *args, config=None, **kwargs):
    e = cg.explain(op, *args, **kwargs)
    assert e.kernel == "sm80", str(e)
    if config is not None:
        assert e.config == config or f"_{config}_" in e.config, str(e)  # a full name or a tile
    return e


def check_tf32(out, ref, what):
    assert out.dtype == torch.float32 and out.shape == ref.shape, what
    assert torch.isfinite(out).all(), what
    err = rel_err(out, ref)
    assert err < TF32_BOUND, f"{what}: rel err {err:.2e} >= {TF32_BOUND}"


# --------------------------------------------------------------------------------------
# 16-bit: configs x operand majors x awkward shapes
# --------------------------------------------------------------------------------------

SHAPES = [(129, 257, 72), (7, 65, 1000), (1, 300, 136), (1000, 1000, 1000), (67, 131, 8)]
MAJORS = [("row", "col"), ("row", "row"), ("col", "col"), ("col", "row")]


@pytest.mark.parametrize("config", CONFIGS_16)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layouts", MAJORS, ids="-".join)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm80_mm_configs_and_majors(monkeypatch, config, dtype, layouts, mnk):
    use(monkeypatch, config)
    m, n, k = mnk
    a, b = make((m, k), dtype, "cuda", layouts[0]), make((k, n), dtype, "cuda", layouts[1])
    expect_sm80("mm", a, b, config=config)
    poison(m * n * 2)
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"sm80 {config} {layouts} {mnk}")


def _misaligned(dtype):
    """Operands that need the narrow copies: (name, a, b)."""
    base = torch.randn(300, 1000, device="cuda").to(dtype)
    wb = torch.randn(1000, 260, device="cuda").to(dtype)
    yield "odd K (2-byte rows)", torch.randn(150, 99, device="cuda").to(dtype), torch.randn(99, 70, device="cuda").to(dtype).t().contiguous().t()
    yield "column slice +1 (2-byte base)", base[:, 1:200], wb[1:200, :]
    yield "column slice +2 (4-byte base)", base[:, 2:202], wb[2:202, 2:130]
    yield "column slice +4 (8-byte base)", base[:, 4:204], wb[4:204, 4:132]
    yield "both strides > 1", base[::2, ::3], wb[:668:2, ::2]
    mn_odd = torch.randn(199, 151, device="cuda").to(dtype)[:, :150].t()  # (150, 199), strides (1, 151)
    yield "MN-major, odd leading dim", mn_odd, wb[:199, 1:]


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("config", ["128x128x64", "64x64x64"])
def test_sm80_misaligned_and_strided_operands_run_on_tensor_cores(monkeypatch, dtype, config):
    use(monkeypatch, config)
    for what, a, b in _misaligned(dtype):
        if a.shape[1] != b.shape[0]:
            b = b[: a.shape[1]]
        expect_sm80("mm", a, b)
        poison(a.shape[0] * b.shape[1] * 2)
        check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"{what}: a {a.stride()} b {b.stride()}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm80_gemm_epilogue(monkeypatch, dtype, activation):
    m, n, k = 257, 203, 200
    a, b = make((m, k), dtype, "cuda"), make((k, n), dtype, "cuda", "col")
    bias = torch.randn(n, device="cuda").to(dtype)
    c = torch.randn(n, m, device="cuda").to(dtype).t()  # column-major C
    for out_dtype in (None, torch.float32):
        expect_sm80("gemm", a, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation)
        out = cg.gemm(a, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation, out_dtype=out_dtype)
        check(out, ref_gemm(a, b, bias, c, 0.75, -0.5, activation), dtype, out_dtype,
              what=f"sm80 gemm {activation} out={out_dtype}")


@pytest.mark.parametrize("config", CONFIGS_16)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm80_epilogue_rows_of_eight(monkeypatch, config, dtype, activation):
    """Without C, whole-width tiles of a row-major D with 16-byte aligned rows take the
    eight-column store path; N = 264 leaves a partial last tile column (the general path) and
    M = 257 a partial last tile row, both in the same launch."""
    use(monkeypatch, config)
    m, n, k = 257, 264, 200
    a, b = make((m, k), dtype, "cuda"), make((k, n), dtype, "cuda", "col")
    bias = torch.randn(n, device="cuda").to(dtype)
    for out_dtype in (None, torch.float32):
        expect_sm80("gemm", a, b, bias=bias, alpha=0.75, activation=activation, config=config)
        poison(m * n * 4)
        out = cg.gemm(a, b, bias=bias, alpha=0.75, activation=activation, out_dtype=out_dtype)
        check(out, ref_gemm(a, b, bias, None, 0.75, 0.0, activation), dtype, out_dtype,
              what=f"sm80 {config} rows of eight {activation} out={out_dtype}")
        # the same functor on the same accumulators: bit-identical to the general store
        monkeypatch.setenv("CUTORCH_GEMM_SM80_EPILOGUE", "general")
        general = cg.gemm(a, b, bias=bias, alpha=0.75, activation=activation, out_dtype=out_dtype)
        monkeypatch.delenv("CUTORCH_GEMM_SM80_EPILOGUE")
        assert torch.equal(out, general), f"sm80 {config} {activation} out={out_dtype}: rows of eight != general"
    poison(m * n * 4)
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"sm80 {config} rows of eight plain")
    # batched: every batch entry's D starts 16-byte aligned (d_off = z * M * N)
    a3, b3 = make((3, 65, 72), dtype, "cuda"), make((3, 72, 136), dtype, "cuda")
    poison(3 * 65 * 136 * 4)
    check(cg.bmm(a3, b3), ref_bmm(a3, b3), dtype, what=f"sm80 {config} rows of eight bmm")


# --------------------------------------------------------------------------------------
# split-K
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("split", ["serial:2", "serial:4", "parallel:3", "parallel:16"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=dtype_id)
def test_sm80_split_k_forced(monkeypatch, split, dtype):
    use(monkeypatch, split=split)
    m, n, k = 200, 136, 3000  # K not a multiple of the 128-byte slice; more slices than k-tiles for fp64
    a, b = make((m, k), dtype, "cuda"), make((k, n), dtype, "cuda", "col")
    bias = torch.randn(n, device="cuda").to(dtype)
    c = torch.randn(m, n, device="cuda").to(dtype)
    e = expect_sm80("gemm", a, b, bias=bias, c=c, beta=0.5, activation="gelu")
    assert e.splits == int(split.split(":")[1]) and split.split(":")[0] in e.reason, str(e)
    poison(m * n * 8)
    out = cg.gemm(a, b, bias=bias, c=c, beta=0.5, activation="gelu")
    check(out, ref_gemm(a, b, bias, c, 1.0, 0.5, "gelu"), dtype, what=f"split-K {split}")
    # bmm: every batch entry has its own semaphores / partial slices
    a3, b3 = make((3, 64, k), dtype, "cuda"), make((3, k, 72), dtype, "cuda")
    check(cg.bmm(a3, b3), ref_bmm(a3, b3), dtype, what=f"bmm split-K {split}")
    # the serial semaphores are left at zero: a second call on a reused workspace agrees
    out2 = cg.gemm(a, b, bias=bias, c=c, beta=0.5, activation="gelu")
    assert torch.equal(out, out2), "split-K is not deterministic"


def _kernel_names(fn) -> list:
    """Names of the CUDA kernels ``fn`` launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


# (dtype, M, N, K, splits): N % 4 != 0 takes the scalar partial loads; 7 splits give uneven row bands
FUSED_CASES = [(torch.bfloat16, 200, 136, 3000, 16), (torch.float16, 129, 135, 2048, 7),
               (torch.float32, 300, 260, 1500, 3), (torch.float64, 65, 72, 4096, 5)]


@pytest.mark.parametrize("case", FUSED_CASES, ids=lambda c: f"{dtype_id(c[0])}-{c[1]}x{c[2]}x{c[3]}-s{c[4]}")
def test_sm80_parallel_split_k_sums_in_kernel(monkeypatch, case):
    """Parallel split-K sums its partials inside the GEMM kernel when the grid is resident at once:
    one launch, no reduction kernel, and the same bits as the reduction kernel (same order)."""
    dtype, m, n, k, splits = case
    use(monkeypatch, split=f"parallel:{splits}")
    tf32 = dtype == torch.float32
    torch.backends.cuda.matmul.allow_tf32 = tf32  # fp32 runs on this path as tf32; the fixture restores it
    verify = (lambda out, ref, what: check_tf32(out, ref, what)) if tf32 else \
        (lambda out, ref, what: check(out, ref, dtype, what=what))
    a, b = make((m, k), dtype, "cuda"), make((k, n), dtype, "cuda", "col")
    bias = torch.randn(n, device="cuda").to(dtype)
    c = torch.randn(m, n, device="cuda").to(dtype)
    kw = dict(bias=bias, c=c, beta=0.5, activation="silu")
    poison(m * n * 8)
    names = _kernel_names(lambda: cg.gemm(a, b, **kw))
    assert not any("splitk_reduce" in x for x in names) and sum("sm80_gemm_kernel" in x for x in names) == 1, names
    fused = cg.gemm(a, b, **kw)
    verify(fused, ref_gemm(a, b, bias, c, 1.0, 0.5, "silu"), f"fused split-K x{splits}")
    out_f32 = cg.gemm(a, b, bias=bias, out_dtype=torch.float32) if dtype in HALF_DTYPES else None
    a3, b3 = make((3, 64, k), dtype, "cuda"), make((3, k, 72), dtype, "cuda")
    bmm = cg.bmm(a3, b3)
    verify(bmm, ref_bmm(a3, b3), f"fused split-K bmm x{splits}")

    monkeypatch.setenv("CUTORCH_GEMM_SM80_SPLIT_REDUCE", "kernel")
    names = _kernel_names(lambda: cg.gemm(a, b, **kw))
    assert any("splitk_reduce" in x for x in names), names
    assert torch.equal(fused, cg.gemm(a, b, **kw)), "in-kernel and reduction-kernel sums differ"
    if out_f32 is not None:
        assert torch.equal(out_f32, cg.gemm(a, b, bias=bias, out_dtype=torch.float32))
    assert torch.equal(bmm, cg.bmm(a3, b3))


def test_sm80_fused_split_k_counters_reset_between_launches(monkeypatch):
    """The arrival counters return to zero after every launch: alternating slice counts and
    shapes on one stream (a counter left over would make a later launch sum too early or hang)."""
    dt = torch.float16
    a, b = make((256, 4096), dt, "cuda"), make((4096, 384), dt, "cuda", "col")
    ref = ref_gemm(a, b)
    outs = {}
    for splits in (16, 3, 7, 16, 2, 5, 16):
        monkeypatch.setenv("CUTORCH_GEMM_SPLIT_K", f"parallel:{splits}")
        out = cg.mm(a, b)
        check(out, ref, dt, what=f"x{splits} after other slice counts")
        if splits in outs:
            assert torch.equal(out, outs[splits])
        outs[splits] = out
        small = make((100, 1024), dt, "cuda")
        check(cg.mm(small, b[:1024]), ref_gemm(small, b[:1024]), dt, what=f"small x{splits}")


def test_sm80_fused_split_k_on_two_streams(monkeypatch):
    """Each stream has its own counters: fused launches on two streams at once stay correct."""
    use(monkeypatch, split="parallel:8")
    dt = torch.bfloat16
    xs = [(make((256, 8192), dt, "cuda"), make((8192, 256), dt, "cuda", "col")) for _ in range(2)]
    refs = [cg.mm(a, b) for a, b in xs]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()
    outs = [[], []]
    for _ in range(20):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                outs[i].append(cg.mm(*xs[i]))
    torch.cuda.synchronize()
    for i in range(2):
        check(refs[i], ref_gemm(*xs[i]), dt, what="stream reference")
        for o in outs[i]:
            assert torch.equal(o, refs[i]), f"stream {i}: a fused split-K result differs"


def test_sm80_cuda_graph_replay_with_parallel_split_k(monkeypatch):
    """A captured parallel split-K keeps the reduction kernel (a graph may replay on any stream)
    and replays correctly with new inputs; eager launches after the capture still fuse."""
    use(monkeypatch, split="parallel:6")
    dt = torch.bfloat16
    a, b = make((192, 4096), dt, "cuda"), make((4096, 200), dt, "cuda", "col")
    eager = cg.mm(a, b)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = cg.mm(a, b)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        g.replay()
        torch.cuda.synchronize()
        check(out, ref_gemm(a, b), dt, what="graph replay, parallel split-K")
        assert torch.equal(out, cg.mm(a, b))


@pytest.mark.parametrize("split", ["none", "serial:3", "parallel:5", "parallel:16"])
def test_sm80_sliced_k_config_with_split_k(monkeypatch, split):
    """The sliced-K config (two warp groups per tile, each half of the CTA's K range, summed in
    shared memory) under every split form; K = 3000 leaves the groups unequal k-tile counts and
    some slices' second group none (x16)."""
    use(monkeypatch, config="Sm80_128x128x64_S3_K2", split=split)
    dt = torch.bfloat16
    m, n, k = 200, 136, 3000
    a, b = make((m, k), dt, "cuda"), make((k, n), dt, "cuda", "col")
    bias = torch.randn(n, device="cuda").to(dt)
    c = torch.randn(m, n, device="cuda").to(dt)
    kw = dict(bias=bias, c=c, beta=0.5, activation="gelu")
    expect_sm80("gemm", a, b, config="Sm80_128x128x64_S3_K2", **kw)
    poison(m * n * 8)
    out = cg.gemm(a, b, **kw)
    check(out, ref_gemm(a, b, bias, c, 1.0, 0.5, "gelu"), dt, what=f"sliced K, split {split}")
    assert torch.equal(out, cg.gemm(a, b, **kw)), "sliced K is not deterministic"
    # Its loads carry the L2 evict-first policy: where lines go in L2, never the result.
    monkeypatch.setenv("CUTORCH_GEMM_L2_HINT", "off")
    assert torch.equal(out, cg.gemm(a, b, **kw)), "the L2 policy changed the result"
    monkeypatch.delenv("CUTORCH_GEMM_L2_HINT")
    if split.startswith("parallel"):
        monkeypatch.setenv("CUTORCH_GEMM_SM80_SPLIT_REDUCE", "kernel")
        assert torch.equal(out, cg.gemm(a, b, **kw)), "in-kernel and reduction-kernel sums differ"


def test_sm80_split_k_heuristic_small_output_long_k():
    a = make((512, 16384), torch.float16, "cuda")
    b = make((16384, 512), torch.float16, "cuda", "col")
    e = expect_sm80("mm", a, b)
    assert e.splits > 1, str(e)
    if _fits("Sm80_128x128x64_S3_K2"):
        assert e.config == "Sm80_128x128x64_S3_K2", str(e)
    names = _kernel_names(lambda: cg.mm(a, b))
    assert not any("splitk_reduce" in x for x in names), names  # one wave: summed in the kernel
    check(cg.mm(a, b), ref_gemm(a, b), torch.float16, what="heuristic split-K")


# --------------------------------------------------------------------------------------
# batched and grouped launches
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("layouts", MAJORS, ids="-".join)
def test_sm80_bmm(layouts):
    dt = torch.float16
    a, b = make((5, 129, 72), dt, "cuda", layouts[0]), make((5, 72, 257), dt, "cuda", layouts[1])
    expect_sm80("bmm", a, b)
    poison(5 * 129 * 257 * 2)
    check(cg.bmm(a, b), ref_bmm(a, b), dt, what=f"sm80 bmm {layouts}")
    b0 = make((1, 72, 40), dt, "cuda").expand(5, 72, 40)  # batch stride 0 (broadcast weight)
    check(cg.bmm(a, b0), ref_bmm(a, b0), dt, what="bmm with a broadcast b")


@pytest.mark.parametrize("sizes", [[37, 0, 91, 1, 128], [0, 0, 5], [300]], ids=str)
@pytest.mark.parametrize("a_layout", ["row", "col"])
def test_sm80_grouped_mm_forms(sizes, a_layout):
    dt = torch.bfloat16
    G, T, K, N = len(sizes), sum(sizes), 72, 136
    offs = offs_from_sizes(sizes, "cuda")
    # 2D x 3D (groups along M), any a layout (the sm80 loaders take arbitrary group starts)
    x, w = make((T + 5, K), dt, "cuda", a_layout), make((G, K, N), dt, "cuda", "col")
    expect_sm80("grouped_mm", x, w, offs)
    check(cg.grouped_mm(x, w, offs), ref_grouped_mm(x, w, offs), dt, what="2d3d")
    # 3D x 2D (groups along N)
    a3, bt = make((G, 64, K), dt, "cuda", a_layout), make((K, T), dt, "cuda", "row")
    check(cg.grouped_mm(a3, bt, offs), ref_grouped_mm(a3, bt, offs), dt, what="3d2d")
    # 2D x 2D (groups along K: dW), both layouts
    xt, dy = make((64, T), dt, "cuda", a_layout), make((T, N), dt, "cuda", "row")
    expect_sm80("grouped_mm", xt, dy, offs)
    check(cg.grouped_mm(xt, dy, offs), ref_grouped_mm(xt, dy, offs), dt, what="2d2d")


# --------------------------------------------------------------------------------------
# tf32 and fp64
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIGS_TF32)
@pytest.mark.parametrize("layouts", MAJORS, ids="-".join)
@pytest.mark.parametrize("mnk", [(129, 257, 72), (1, 65, 1000), (300, 7, 33), (300, 264, 100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm80_tf32(monkeypatch, config, layouts, mnk):
    use(monkeypatch, config)
    torch.backends.cuda.matmul.allow_tf32 = True  # the autouse fixture restores it
    m, n, k = mnk
    a, b = make((m, k), torch.float32, "cuda", layouts[0]), make((k, n), torch.float32, "cuda", layouts[1])
    # (the binding's operand majors: with M = 1 a "col" a is still K-major)
    if config in K_MAJOR_ONLY and _sm80_mn_major(a, b):
        # an MN-major operand: the forced config gives way to the heuristic's, which says why
        e = expect_sm80("mm", a, b)
        assert f"_{config}_" not in e.config and "K-major operands only" in e.reason, str(e)
    else:
        e = expect_sm80("mm", a, b, config=config)
    assert "tf32" in e.reason, str(e)
    poison(m * n * 4)
    check_tf32(cg.mm(a, b), ref_gemm(a, b), f"tf32 {config} {layouts} {mnk}")
    # the strided / misaligned forms take element-wise or 4-byte copies
    base = torch.randn(2 * m + 1, 2 * k + 3, device="cuda")
    for a2 in (base[1:m + 1, 1:k + 1], base[::2, ::2][:m, :k]):
        check_tf32(cg.mm(a2, b), ref_gemm(a2, b), f"tf32 a strides {a2.stride()}")


def test_sm80_fp32_without_tf32_stays_exact():
    a, b = make((100, 200), torch.float32, "cuda"), make((200, 50), torch.float32, "cuda")
    e = cg.explain("mm", a, b)
    assert e.kernel == "simt" and "tf32" in e.reason, str(e)
    check(cg.mm(a, b), ref_gemm(a, b), torch.float32, what="fp32 highest precision")


@pytest.mark.parametrize("config", CONFIGS_F64)
@pytest.mark.parametrize("layouts", MAJORS, ids="-".join)
@pytest.mark.parametrize("mnk", [(129, 257, 72), (1, 65, 1000), (300, 7, 33)], ids=lambda s: "x".join(map(str, s)))
def test_sm80_fp64_dmma(monkeypatch, config, layouts, mnk):
    use(monkeypatch, config)
    m, n, k = mnk
    a, b = make((m, k), torch.float64, "cuda", layouts[0]), make((k, n), torch.float64, "cuda", layouts[1])
    expect_sm80("mm", a, b, config=config)
    poison(m * n * 8)
    check(cg.mm(a, b), ref_gemm(a, b), torch.float64, what=f"fp64 {config} {layouts} {mnk}")


# --------------------------------------------------------------------------------------
# edges, graphs, agreement
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("mnk", [(0, 5, 7), (5, 0, 7), (5, 7, 0), (0, 0, 0)], ids=lambda s: "x".join(map(str, s)))
def test_sm80_empty_extents(dtype, mnk):
    m, n, k = mnk
    a, b = make((m, k), dtype, "cuda"), make((k, n), dtype, "cuda")
    bias = torch.randn(n, device="cuda").to(dtype)
    out = cg.gemm(a, b, bias=bias, activation="silu")
    check(out, ref_gemm(a, b, bias, activation="silu"), dtype, what=f"empty {mnk}")


def test_sm80_cuda_graph_replay_with_serial_split_k(monkeypatch):
    use(monkeypatch, split="serial:3")
    dt = torch.float16
    a, b = make((192, 4096), dt, "cuda"), make((4096, 200), dt, "cuda", "col")
    cg.mm(a, b)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = cg.mm(a, b)
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        g.replay()
        torch.cuda.synchronize()
        check(out, ref_gemm(a, b), dt, what="graph replay, serial split-K")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_sm80_agrees_with_simt(monkeypatch, dtype):
    a, b = make((384, 320), dtype, "cuda"), make((320, 512), dtype, "cuda", "col")
    fast = cg.mm(a, b, out_dtype=torch.float32)
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "simt")
    slow = cg.mm(a, b, out_dtype=torch.float32)
    assert torch.allclose(fast, slow, rtol=1e-4, atol=1e-3 * fast.abs().max().item())
