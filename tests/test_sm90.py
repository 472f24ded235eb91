"""The Hopper family (TMA + wgmma), on sm_90 GPUs only: it must be the kernel that runs for
fp16/bf16 operands that TMA can read (K-major or MN-major, 16-byte aligned), agree with the
float64 reference element by element on awkward shapes (edge tiles, K not a multiple of 64,
M < 64), through every epilogue, every operand-major combination, batched and grouped launches
(odd and empty groups, grouped-K tails), and agree with the SIMT family on the same inputs.
Skipped elsewhere."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, CLUSTER_NOTE, HALF_DTYPES, TF32_BOUND, check, dtype_id, gpu, linear_operands, make, offs_from_sizes,
                      poison, ref_bmm, ref_gemm, ref_grouped_mm, requires_sm90)

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]


SHAPES = [(128, 256, 64), (129, 257, 72), (7, 300, 8), (64, 8, 8), (1000, 1000, 1000), (1, 520, 136),
          (300, 2000, 136), (2049, 520, 4104)]


CONFIGS = {"coop": "Sm90_128x256x64_Coop_S4", "pingpong": "Sm90_64x256x64_Pingpong_S5",
           "pingpong128": "Sm90_64x128x64_Pingpong_S8", "pingpong64": "Sm90_64x64x64_Pingpong_S12"}


def grouped_config(config, layout):
    """The config a forced grouped launch runs: 64x128 / 64x64 only for groups along M (2D x 3D, MoE);
    the other layouts run ping-pong 64x256 when one of them is forced."""
    narrow = config in ("pingpong128", "pingpong64")
    return CONFIGS["pingpong"] if narrow and layout != "2d3d" else CONFIGS[config]


@pytest.mark.parametrize("mnk, streams", [((32, 1000, 520), True), ((128, 600, 264), True), ((257, 600, 264), False),
                                          ((64, 300, 136), True)], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_sm90_streamed_b_takes_the_l2_hint(mnk, streams, monkeypatch):
    """At most two tile rows: B's TMA loads carry the L2 evict-first policy (explain says so); the
    policy changes where lines go in L2, never the result (bit-equal with CUTORCH_GEMM_L2_HINT=off)."""
    a, b = linear_operands(*mnk, torch.bfloat16)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and ("evict-first" in e.reason) == streams, str(e)
    poison(mnk[0] * mnk[1] * 2)
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), torch.bfloat16, what=f"streamed B {mnk}")
    monkeypatch.setenv("CUTORCH_GEMM_L2_HINT", "off")
    assert "evict-first" not in cg.explain("mm", a, b).reason
    assert torch.equal(out, cg.mm(a, b))


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", SHAPES + [(8960, 256, 320), (2048, 2048, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_mm_matches_reference(dtype, mnk, config, monkeypatch):
    # The last two shapes give CTAs several tiles with K >= the ring depth (the ping-pong
    # ordering case).
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    a, b = linear_operands(*mnk, dtype)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == CONFIGS[config], str(e)
    torch.empty(mnk[0] * mnk[1] * 2, device="cuda", dtype=dtype).fill_(float("nan"))
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"sm90 mm {mnk}")


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm90_gemm_epilogue(dtype, activation, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = 257, 520, 200
    a, b = linear_operands(m, n, k, dtype)
    bias = torch.randn(n, device="cuda", dtype=dtype)
    c = torch.randn(n, m, device="cuda", dtype=dtype).t()  # column-major C
    for out_dtype in (None, torch.float32):
        out = cg.gemm(a, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation,
                      out_dtype=out_dtype)
        ref = ref_gemm(a, b, bias, c, 0.75, -0.5, activation)
        check(out, ref, dtype, out_dtype, what=f"sm90 gemm {activation} out={out_dtype}")


@pytest.mark.parametrize("path", ["tma", "fused", "staged"])
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm90_bias_activation(dtype, activation, config, path, monkeypatch):
    # nn.Linear + activation (bias, no C): by default the TMA store applies the activation from
    # registers (activation_fast); "fused" forces the fp32-scratch path, "staged" the functor.
    # Pre-activations reach |z| ~ 60, past every activation's tail (exp overflow included).
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    if path != "tma":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", path)
    for m, n, k in ((257, 520, 200), (64, 136, 64), (1000, 1000, 1000)):
        a, b = linear_operands(m, n, k, dtype)
        bias = 4 * torch.randn(n, device="cuda", dtype=dtype)
        torch.empty(m * n * 2, device="cuda", dtype=dtype).fill_(float("nan"))
        out = cg.gemm(a, b, bias=bias, alpha=1.5, activation=activation)
        check(out, ref_gemm(a, b, bias, None, 1.5, 0.0, activation), dtype,
              what=f"sm90 gemm bias {activation} {path} {(m, n, k)}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_sm90_agrees_with_simt(dtype, monkeypatch):
    a, b = linear_operands(384, 512, 320, dtype)
    fast = cg.mm(a, b, out_dtype=torch.float32)
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "simt")
    assert cg.explain("mm", a, b).kernel == "simt"
    slow = cg.mm(a, b, out_dtype=torch.float32)
    # Both accumulate in fp32 from the same 16-bit inputs; only the summation order differs.
    assert torch.allclose(fast, slow, rtol=1e-4, atol=1e-3 * fast.abs().max().item())


def test_sm90_falls_back_to_sm80_when_not_eligible():
    dt = torch.bfloat16
    x = torch.randn(64, 100, device="cuda", dtype=dt)
    w = torch.randn(96, 100, device="cuda", dtype=dt)
    # Neither dimension of b contiguous: no TMA layout.
    b_strided = torch.randn(200, 192, device="cuda", dtype=dt)[::2, ::2]
    assert cg.explain("mm", x, b_strided).kernel == "sm80"
    check(cg.mm(x, b_strided), ref_gemm(x, b_strided), dt, what="strided fallback")
    # Odd K: rows of 99 elements are 198 bytes apart, not a multiple of 16.
    xs = torch.randn(64, 99, device="cuda", dtype=dt)
    ws = torch.randn(96, 99, device="cuda", dtype=dt)
    assert cg.explain("mm", xs, ws.t()).kernel == "sm80"
    check(cg.mm(xs, ws.t()), ref_gemm(xs, ws.t()), dt, what="misaligned fallback")
    # Groups along M with an M-contiguous a: group starts are arbitrary rows.
    xg, wg = make((128, 64), dt, "cuda", "col"), make((2, 64, 64), dt, "cuda")
    og = offs_from_sizes([37, 91], "cuda")
    assert cg.explain("grouped_mm", xg, wg, og).kernel == "sm80"
    check(cg.grouped_mm(xg, wg, og), ref_grouped_mm(xg, wg, og), dt, what="grouped-M MN-major a fallback")
    # Aligned K-major operands do take the sm90 path.
    x96 = torch.randn(64, 96, device="cuda", dtype=dt)
    w96 = torch.randn(96, 96, device="cuda", dtype=dt)
    assert cg.explain("mm", x96, w96.t()).kernel == "sm90"
    check(cg.mm(x96, w96.t()), ref_gemm(x96, w96.t()), dt, what="aligned sm90")


# --------------------------------------------------------------------------------------
# operand-major combinations: a row (K-major) / col (MN-major), b col (K-major) / row (MN-major)
# --------------------------------------------------------------------------------------

MAJOR_SHAPES = [(128, 256, 64), (136, 264, 72), (8, 8, 8), (1000, 1000, 1000), (1, 520, 136),
                (16, 4096, 1024), (2048, 2048, 1024), (520, 24, 4104)]


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layouts", [("row", "row"), ("col", "col"), ("col", "row")], ids="-".join)
@pytest.mark.parametrize("mnk", MAJOR_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_mm_operand_majors(dtype, layouts, mnk, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = mnk
    a, b = make((m, k), dtype, "cuda", layouts[0]), make((k, n), dtype, "cuda", layouts[1])
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == CONFIGS[config], str(e)
    poison(m * n * 2)
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"sm90 mm {layouts} {mnk}")


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("layouts", [("row", "col"), ("row", "row"), ("col", "row")], ids="-".join)
def test_sm90_bmm(layouts, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    dt = torch.bfloat16
    a, b = make((5, 200, 136), dt, "cuda", layouts[0]), make((5, 136, 264), dt, "cuda", layouts[1])
    assert cg.explain("bmm", a, b).kernel == "sm90"
    poison(5 * 200 * 264 * 2)
    check(cg.bmm(a, b), ref_bmm(a, b), dt, what=f"sm90 bmm {layouts}")
    # a batch-broadcast weight (batch stride 0) reads one 2-D map
    w = make((136, 264), dt, "cuda", layouts[1]).expand(5, 136, 264)
    check(cg.bmm(a, w), ref_bmm(a, w), dt, what="sm90 bmm broadcast b")


# --------------------------------------------------------------------------------------
# grouped: one persistent launch over every group's tiles
# --------------------------------------------------------------------------------------

GROUP_SIZES = {
    "skewed_empty": [900, 0, 17, 1, 0, 2000, 129, 0],
    "many_small": [5, 64, 0, 63, 65, 1, 128, 7] * 5,   # 40 groups: the scan crosses a warp
    "tail": [100, 300, 0, 77],                      # rows past offs[-1]
}


def grouped_operands(layout, sizes, dtype, weight_major):
    G, total = len(sizes), sum(sizes)
    T = (total + 61 + 7) // 8 * 8   # rows past the last group; 16-byte aligned strides
    K, N, M = 136, 264, 200
    w_layout = "row" if weight_major == "mn" else "col"
    if layout == "2d3d":   # tokens sorted by expert x expert weights
        return make((T, K), dtype, "cuda"), make((G, K, N), dtype, "cuda", w_layout), make((G, N), dtype, "cuda")
    if layout == "3d2d":
        return make((G, M, K), dtype, "cuda"), make((K, T), dtype, "cuda", w_layout), make((T,), dtype, "cuda")
    # 2d2d: dW = x^T dY per group; x (T, M) row-major read as x^T (MN-major) or a K-major copy
    a = make((M, T), dtype, "cuda", "col" if weight_major == "mn" else "row")
    return a, make((T, N), dtype, "cuda"), make((G, N), dtype, "cuda")


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "2d2d"])
@pytest.mark.parametrize("scenario", list(GROUP_SIZES))
@pytest.mark.parametrize("weight_major", ["mn", "k"])
def test_sm90_grouped_mm(dtype, layout, scenario, weight_major, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    sizes = GROUP_SIZES[scenario]
    offs = offs_from_sizes(sizes, "cuda")
    a, b, bias = grouped_operands(layout, sizes, dtype, weight_major)
    e = cg.explain("grouped_mm", a, b, offs)
    # The grouped dimension must not be an operand's contiguous one (TMA box starts need 16-byte
    # alignment there): those two forms run on the sm80 family (cp.async takes any start).
    if (layout, weight_major) in (("3d2d", "mn"), ("2d2d", "k")):
        assert e.kernel == "sm80", str(e)
    else:
        assert e.kernel == "sm90" and e.config == grouped_config(config, layout), str(e)
    ref = ref_grouped_mm(a, b, offs, bias, "silu")
    poison(ref.numel() * 2)
    out = cg.grouped_mm(a, b, offs, bias=bias, activation="silu")
    check(out, ref, dtype, what=f"sm90 grouped {layout} {scenario} w={weight_major}")
    total = sum(sizes)
    if layout == "2d3d":
        assert torch.all(out[total:] == 0)
    if layout == "3d2d":
        assert torch.all(out[:, total:] == 0)


@pytest.mark.parametrize("half", ["", "off"])
@pytest.mark.parametrize("weight_major", ["mn", "k"])
@pytest.mark.parametrize("swiglu", [False, True])
def test_sm90_grouped_coop_half_tiles(weight_major, swiglu, half, monkeypatch):
    """Cooperative grouped-M tiles whose second 64 rows lie past the group's end (that warpgroup
    only passes the stages on): many k-blocks, so the ring's phases wrap inside such tiles, and
    groups of 1, 40, 64 (exactly half a tile), 65, 129, 192, empty ones and rows past offs[-1]."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_HALF_TILES", half)
    dt = torch.bfloat16
    sizes = [40, 300, 0, 64, 65, 190, 1, 129, 0, 192]
    T, K, N = sum(sizes) + 24, 1000, 520
    offs = offs_from_sizes(sizes, "cuda")
    x = make((T, K), dt, "cuda")
    w = make((len(sizes), K, N), dt, "cuda", "row" if weight_major == "mn" else "col")
    e = cg.explain("grouped_mm", x, w, offs)
    assert e.config == CONFIGS["coop"]
    assert ("computes only its first 64 rows" in e.reason) == (half == ""), e.reason
    if swiglu:
        poison(T * N)
        out = cg.grouped_mm(x, w, offs, activation="swiglu")
        full = ref_grouped_mm(x, w, offs)
        gate, up = full[:, : N // 2], full[:, N // 2:]
        ref = torch.nn.functional.silu(gate) * up
    else:
        poison(T * N * 2)
        out = cg.grouped_mm(x, w, offs)
        ref = ref_grouped_mm(x, w, offs)
    check(out, ref, dt, what=f"coop grouped half tiles w={weight_major} swiglu={swiglu}")
    assert torch.all(out[sum(sizes):] == 0)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_sm90_grouped_3d3d(config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    dt = torch.bfloat16
    a, b = make((6, 72, 136), dt, "cuda"), make((6, 136, 520), dt, "cuda")
    assert cg.explain("grouped_mm", a, b).kernel == "sm90"
    check(cg.grouped_mm(a, b), ref_grouped_mm(a, b, None), dt, what="sm90 grouped 3d3d")


def test_sm90_grouped_cuda_graph_new_offsets():
    """Offsets stay on the device: a captured launch replays with new group sizes."""
    dt = torch.bfloat16
    T, K, N, G = 1024, 256, 512, 8
    x, w = make((T, K), dt, "cuda"), make((G, K, N), dt, "cuda")
    offs = offs_from_sizes([128] * 8, "cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        cg.grouped_mm(x, w, offs)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = cg.grouped_mm(x, w, offs)
    for sizes in ([128] * 8, [0, 1000, 0, 3, 0, 0, 21, 0], [1, 2, 3, 4, 5, 6, 7, 900]):
        offs.copy_(offs_from_sizes(sizes, "cuda"))
        graph.replay()
        torch.cuda.synchronize()
        check(out, ref_grouped_mm(x, w, offs, None), dt, what=f"replay {sizes}")


# --------------------------------------------------------------------------------------
# epilogue paths: TMA store (default when D allows it), direct register stores, staged functor
# --------------------------------------------------------------------------------------

# "tma": plain ping-pong launches on a fixed tile grid take the compact kernel variant (kPlainTma),
# deferring cooperative ones the cooperative compact variant; both start their first loads before the
# CTA barrier (two k-blocks; "tma_ring": the whole ring, CUTORCH_GEMM_SM90_EARLY=64; "tma_late":
# CUTORCH_GEMM_SM90_EARLY=off, after it); "general": the general kernel.
EPILOGUES = ["tma", "tma_ring", "tma_late", "general", "direct", "staged"]


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("path", EPILOGUES)
@pytest.mark.parametrize("mnk", [(256, 512, 128), (200, 520, 72), (130, 300, 64), (64, 7, 16), (3, 1000, 40)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_epilogue_paths(mnk, path, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    if path == "tma_late":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EARLY", "off")
    elif path == "tma_ring":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EARLY", "64")  # (capped at the ring's stages)
    elif path != "tma":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", path)
    m, n, k = mnk
    dt = torch.bfloat16
    a, b = make((m, k), dt, "cuda"), make((k, n), dt, "cuda", "col")
    bias = make((n,), dt, "cuda")
    for out_dtype in (None, torch.float32):
        poison(m * n * 4)
        check(cg.mm(a, b, out_dtype=out_dtype), ref_gemm(a, b), dt, out_dtype, what=f"{path} mm")
        poison(m * n * 4)
        check(cg.gemm(a, b, bias=bias, alpha=0.5, out_dtype=out_dtype), ref_gemm(a, b, bias, None, 0.5),
              dt, out_dtype, what=f"{path} gemm bias alpha")
    # batched and grouped outputs (3-D TMA maps, group-edge tiles)
    a3, b3 = make((3, m, k), dt, "cuda"), make((3, k, n), dt, "cuda")
    check(cg.bmm(a3, b3), ref_bmm(a3, b3), dt, what=f"{path} bmm")
    sizes = [m // 3, 0, m - m // 3]
    offs = offs_from_sizes(sizes, "cuda")
    check(cg.grouped_mm(a, b3, offs), ref_grouped_mm(a, b3, offs), dt, what=f"{path} grouped-M")
    x, dy = make((k, m), dt, "cuda", "col"), make((m, n), dt, "cuda")
    check(cg.grouped_mm(x, dy, offs), ref_grouped_mm(x, dy, offs), dt, what=f"{path} grouped-K")


# --------------------------------------------------------------------------------------
# split-K for small M
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("mnk", [(16, 4096, 4096), (1, 2048, 2048), (33, 1000, 3000), (64, 520, 8200),
                                 (7, 1001, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_sm90_split_k(mnk, config, monkeypatch):
    # fp32 partials of each K range, summed in range order by a second kernel that applies the
    # epilogue (odd N: no TMA store, the staged epilogue); the same bits every run.
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    dtype = torch.bfloat16
    m, n, k = mnk
    a, b = linear_operands(m, n, k, dtype)
    e = cg.explain("mm", a, b)
    # (64x64 tiles: 16x4096x4096 has 64 of them, more than a quarter of the SMs: no split)
    splits = not (config == "pingpong64" and mnk == (16, 4096, 4096))
    assert e.kernel == "sm90" and (e.splits > 1) == splits and ("split-K" in e.reason) == splits, str(e)
    torch.empty(m * n * 4, device="cuda", dtype=dtype).fill_(float("nan"))
    first = cg.mm(a, b)
    check(first, ref_gemm(a, b), dtype, what=f"split-K mm {mnk}")
    for _ in range(3):  # a fixed sum order: bit-identical
        assert torch.equal(cg.mm(a, b), first), f"split-K {mnk} is not deterministic"
    bias = torch.randn(n, device="cuda", dtype=dtype)
    c = torch.randn(n, m, device="cuda", dtype=dtype).t()
    out = cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=2.0, activation="gelu", out_dtype=torch.float32)
    check(out, ref_gemm(a, b, bias, c, 0.5, 2.0, "gelu"), dtype, torch.float32, what=f"split-K gemm {mnk}")
    torch.backends.cuda.matmul.allow_tf32 = True  # tf32 splits the same way (the fixture restores it)
    a32, b32 = linear_operands(m, n, k, torch.float32)
    out32 = cg.mm(a32, b32)
    err = float((out32.double().cpu() - ref_gemm(a32, b32).cpu()).norm() / ref_gemm(a32, b32).cpu().norm())
    assert err < TF32_BOUND, f"split-K tf32 {mnk}: rel err {err:.2e}"


@pytest.mark.parametrize("mnk, config, word", [((256, 2816, 8192), CONFIGS["coop"], "deep K"),
                                               ((512, 512, 512), CONFIGS["pingpong64"], "64x64 tiles"),
                                               ((300, 600, 1024), CONFIGS["pingpong64"], "64x64 tiles"),
                                               ((500, 1000, 3000), CONFIGS["pingpong64"], "at most half")],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else None)
def test_sm90_mid_size_rules_run_and_say_why(mnk, config, word):
    """One dense problem of at least 256 rows whose 64x128 tiles leave SMs idle: deep K takes the cooperative
    tiles with split-K, a small one or one filling at most half of the SMs the 64x64 tiles
    (device/sm90_configs.h); explain names the rule."""
    dtype = torch.bfloat16
    a, b = linear_operands(*mnk, dtype)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == config and word in e.reason, str(e)
    if config == CONFIGS["coop"]:
        assert e.splits > 1, str(e)
    bias = torch.randn(mnk[1], device="cuda", dtype=dtype)
    poison(mnk[0] * mnk[1] * 2)
    check(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), ref_gemm(a, b, bias, activation="gelu_tanh"), dtype,
          what=f"mid-size {mnk}")
    first = cg.mm(a, b)
    check(first, ref_gemm(a, b), dtype, what=f"mid-size mm {mnk}")
    assert torch.equal(first, cg.mm(a, b)), "a fixed sum order: the same bits every run"


def test_sm90_split_k_not_for_full_grids(monkeypatch):
    a, b = linear_operands(4096, 4096, 4096, torch.bfloat16)
    assert cg.explain("mm", a, b).splits == 1
    # 64 tiles (half the GPU): two splits measured slower than none (choose_sm90_split)
    assert cg.explain("mm", *linear_operands(128, 8192, 8192, torch.bfloat16)).splits == 1
    assert cg.explain("mm", *linear_operands(16, 4096, 4096, torch.bfloat16)).splits > 1


# --------------------------------------------------------------------------------------
# 2x1 clusters (cooperative config): B tiles multicast to the two CTAs of a cluster
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", ["coop", "pingpong", "pingpong128"])
@pytest.mark.parametrize("cluster", ["2", "1"])
@pytest.mark.parametrize("layouts", [("row", "col"), ("row", "row"), ("col", "row"), ("col", "col")],
                         ids=lambda s: "a" + s[0] + "-b" + s[1])
@pytest.mark.parametrize("mnk", [(256, 512, 128), (304, 520, 200), (136, 8, 64), (1000, 1000, 1000),
                                 (2048, 2048, 1024), (8960, 256, 320)], ids=lambda s: "x".join(map(str, s)))
def test_sm90_cluster(mnk, layouts, cluster, config, monkeypatch):
    # An odd tile-row count (304 -> 3 coop / 5 ping-pong tile rows) leaves the last pair's second
    # CTA a tile past M; several pair tiles per cluster test the shared ring across tiles (ping-pong:
    # both CTAs' warpgroups alternate over the same pairs). (Extents keep every layout's strides
    # 16-byte aligned: TMA-readable.)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", cluster)
    m, n, k = mnk
    dt = torch.bfloat16
    a, b = make((m, k), dt, "cuda", layouts[0]), make((k, n), dt, "cuda", layouts[1])
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and (CLUSTER_NOTE in e.reason) == (cluster == "2"), str(e)
    torch.empty(m * n * 2, device="cuda", dtype=dt).fill_(float("nan"))
    check(cg.mm(a, b), ref_gemm(a, b), dt, what=f"cluster {cluster} mm")
    bias = make((n,), dt, "cuda")
    check(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), ref_gemm(a, b, bias, activation="gelu_tanh"), dt,
          what=f"cluster {cluster} gemm")


@pytest.mark.parametrize("cluster", ["2", "1"])
def test_sm90_cluster_batched_grouped_k_split(cluster, monkeypatch):
    # The other launches with a fixed tile grid: batched (3-D maps), grouped-K (dW; empty and
    # short groups, K tails patched in each CTA's copy of the shared B tile), split-K partials.
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", cluster)
    dt = torch.float16
    a3, b3 = make((3, 384, 136), dt, "cuda"), make((3, 136, 264), dt, "cuda", "col")
    check(cg.bmm(a3, b3), ref_bmm(a3, b3), dt, what=f"cluster {cluster} bmm")
    x, dy = make((520, 300), dt, "cuda", "col"), make((300, 264), dt, "cuda")
    offs = offs_from_sizes([0, 100, 3, 197], "cuda")
    check(cg.grouped_mm(x, dy, offs), ref_grouped_mm(x, dy, offs), dt, what=f"cluster {cluster} grouped-K")
    a, b = linear_operands(256, 512, 8192, dt)  # 2 x 2 tiles: split-K partials
    e = cg.explain("mm", a, b)
    assert e.splits > 1, str(e)
    check(cg.mm(a, b), ref_gemm(a, b), dt, what=f"cluster {cluster} split-K")


# The mid-K rule (device/sm90_cluster_streamk.h, choose_sm90_cluster), unforced, aligned rows: (M, N, K), pairs on 132 SMs.
MID_K_CASES = [((4096, 4096, 4096), True),    # 512 tiles of 128x256: 3.9 rounds, 3% idle
               ((4096, 4096, 3072), True),    # 48 K slices
               ((2176, 8192, 4096), False),   # 544 tiles: 18% of 5 rounds idle, stream-K's (now 192x192 pairs)
               ((4096, 4096, 2048), False),   # 32 K slices: the short-K rule's 8 rounds
               ((4096, 4096, 4160), True),    # 65 K slices: stream-K in pairs may cut (here it plans none)
               ((8192, 8192, 8192), True),    # 1024 pair tiles over 66 clusters: stream-K in pairs on the last 34
               ((2608, 14336, 4096), False),  # 21 tile rows: pairs would take 10 rounds, the tiles alone 9
               ((4224, 4096, 4096), False)]   # 33 tile rows: 5 rounds against 4


@pytest.mark.parametrize("case", MID_K_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_sm90_mid_k_cluster_rule(case, monkeypatch):
    """One dense 16-bit problem with K > 2048 over 3.5+ rounds of 128x256 tiles, at most 1/16 of their slots idle,
    takes 2x1 clusters on aligned rows, plain and with bias + GELU-tanh (K <= 4096: no stream-K then; deeper, stream-K
    over pair tiles where its plan cuts some); the others keep their tiles unclustered. The rule's reading is checked
    on 132 SMs, the results everywhere."""
    for var in ("CUTORCH_GEMM_SM90_CONFIG", "CUTORCH_GEMM_SM90_CLUSTER", "CUTORCH_GEMM_SM90_STREAMK",
                "CUTORCH_GEMM_SM90_GRID", "CUTORCH_GEMM_SM90_ACT_PINGPONG", "CUTORCH_GEMM_SM90_STREAMK_PAIRS"):
        monkeypatch.delenv(var, raising=False)
    (m, n, k), pairs = case
    dt = torch.bfloat16
    a, b = linear_operands(m, n, k, dt)
    bias = make((n,), dt, "cuda")
    explained = (cg.explain("mm", a, b), cg.explain("gemm", a, b, bias=bias, activation="gelu_tanh"))
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        for e in explained:
            if "big-tile rule" in e.reason:  # 2176x8192x4096: choose_sm90_big's 192x192 tiles, in pairs
                assert (m, n, k) == (2176, 8192, 4096) and "192x192" in e.config, str(e)
                assert CLUSTER_NOTE in e.reason and "192x192 tiles always pair" in e.reason, str(e)
                continue
            assert (CLUSTER_NOTE in e.reason) == pairs, str(e)
            if pairs:
                # (the bare note names stream-K code as left out: look for the stream-K plan's own note)
                assert e.config == "Sm90_128x256x64_Coop_S4", str(e)
                assert ("; stream-K over the last 34 of 1024 pair tiles" in e.reason) == (k == 8192), str(e)
                assert k == 8192 or "; stream-K over" not in e.reason, str(e)
    poison(m * n * 2)
    check(cg.mm(a, b), ref_gemm(a, b), dt, what=f"mid-K rule mm {m}x{n}x{k}")
    poison(m * n * 2)
    check(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), ref_gemm(a, b, bias, activation="gelu_tanh"), dt,
          what=f"mid-K rule gemm {m}x{n}x{k}")


@pytest.mark.parametrize("cluster", ["2", "1"])
def test_sm90_cluster_tf32_fp8(cluster, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", cluster)
    torch.backends.cuda.matmul.allow_tf32 = True  # the autouse fixture restores it
    a, b = linear_operands(300, 264, 136, torch.float32)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and "x32_" in e.config and (CLUSTER_NOTE in e.reason) == (cluster == "2"), str(e)
    out = cg.mm(a, b)
    ref = ref_gemm(a, b)
    assert (out.double() - ref).abs().max() <= 4e-3 * ref.abs().max(), "tf32 clustered"
    f8 = torch.float8_e4m3fn
    a8 = (torch.randn(300, 256, device="cuda") / 2).to(f8)
    b8 = (torch.randn(264, 256, device="cuda") / 2).to(f8).t()
    one = torch.ones((), device="cuda")
    e = cg.explain("scaled_mm", a8, b8, one, one)
    assert e.kernel == "sm90" and (CLUSTER_NOTE in e.reason) == (cluster == "2"), str(e)
    out = cg.scaled_mm(a8, b8, one, one, out_dtype=torch.float32)
    ref = a8.double() @ b8.double()
    assert (out.double() - ref).abs().max() <= 1e-3 * ref.abs().max(), "fp8 clustered"


# ---- the deferred store (cooperative 16-bit launches: a tile's D goes out under the next tile) --
# Capped grids (CUTORCH_GEMM_SM90_GRID) give each CTA many tiles; K of 1, 3, 4 and 16 k-blocks
# (fewer k-blocks than slices: the rest are stored after the mainloop; rows of K 16-byte aligned,
# which TMA needs); each case (M, N, K, grid).
DEFER_CASES = [(1000, 1000, 64, 3), (640, 1024, 136, 4), (520, 600, 200, 2), (1000, 2000, 1000, 5)]


# kernel "": the cooperative compact variant (kPlainTma: the deferred store only, no grouped scan), every
# layout; "general": CUTORCH_GEMM_SM90_EPILOGUE=general keeps the general kernel's deferred store.
@pytest.mark.parametrize("kernel", ["", "general"])
@pytest.mark.parametrize("defer", ["", "off"])
@pytest.mark.parametrize("case", DEFER_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("layouts", [("row", "col"), ("row", "row"), ("col", "row"), ("col", "col")], ids="-".join)
def test_sm90_deferred_store(case, layouts, defer, kernel, monkeypatch):
    m, n, k, grid = case
    dt = torch.bfloat16
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_DEFER", defer)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", kernel)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", str(grid))
    a = make((m, k), dt, "cuda", layouts[0])
    b = make((k, n), dt, "cuda", layouts[1])
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and ("the deferred store" in e.reason) == (defer == ""), str(e)
    assert ("the compact kernel" in e.reason) == (defer == "" and kernel == ""), str(e)
    poison(m * n * 2)
    check(cg.mm(a, b), ref_gemm(a, b), dt, what=f"deferred store mm {case} {layouts}")
    poison(m * n * 2)
    check(cg.gemm(a, b, alpha=-0.75), ref_gemm(a, b, None, None, -0.75), dt, what=f"alpha {case} {layouts}")
    if k == 1000:  # with stream-K pieces in the last round (rows of 1000 elements would take 2x1 clusters,
        # which have no stream-K)
        monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "on")
        monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")
        assert "; stream-K over the last" in cg.explain("mm", a, b).reason
        check(cg.mm(a, b), ref_gemm(a, b), dt, what=f"deferred store + stream-K {case} {layouts}")


@pytest.mark.parametrize("kernel", ["compact", "compact_streamk", "mn_major_streamk"])
@pytest.mark.parametrize("defer", ["", "off"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias_kind", ["none", "aligned", "odd_start", "odd_n"])
def test_sm90_deferred_store_bias_activation(activation, bias_kind, defer, kernel, monkeypatch):
    """Bias and activation applied in the packing (bias pairs that are not 4-byte aligned, an odd
    start or an odd N, take the general kernel's non-deferred epilogue; where the store
    defers, the cooperative compact kernel runs). "compact": 3 CTAs over 24 tiles, no stream-K;
    "*_streamk": 5 CTAs with stream-K pieces in the last rounds; "mn_major_*": an MN-major A."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_DEFER", defer)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "3" if kernel == "compact" else "5")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "off" if kernel == "compact" else "on")
    dt = torch.bfloat16
    # (stream-K: rows of A and B 128-byte multiples, so no 2x1 clusters; M a multiple of 8 for an MN-major A's TMA)
    m, n, k = (700, 1000, 136) if kernel == "compact" else (704, 1000, 192)
    n += bias_kind == "odd_n"
    a, b = linear_operands(m, n, k, dt)
    if kernel.startswith("mn_major"):
        a = make((m, k), dt, "cuda", "col")
    assert ("; stream-K over the last" in cg.explain("mm", a, b).reason) == kernel.endswith("streamk")
    bias = None
    if bias_kind != "none":
        buf = torch.randn(n + 1, device="cuda", dtype=dt)
        bias = buf[1:] if bias_kind == "odd_start" else buf[:n]
    poison(m * n * 2)
    out = cg.gemm(a, b, bias=bias, alpha=1.5, activation=activation)
    check(out, ref_gemm(a, b, bias, None, 1.5, 0.0, activation), dt, what=f"deferred {activation} bias={bias_kind}")


@pytest.mark.parametrize("defer", ["", "off"])
@pytest.mark.parametrize("form", ["bmm", "grouped_m", "grouped_m_row_w", "grouped_m_ends_off", "grouped_k", "swiglu",
                                  "swiglu_odd_bias"])
def test_sm90_deferred_store_batched_grouped(form, defer, monkeypatch):
    """3-D D (batched), grouped-M tiles (whole ones deferred, a group's partial last tile stored
    from registers by the kGroupEnds variant, or by the normal epilogue with
    CUTORCH_GEMM_SM90_GROUP_ENDS=off; half tiles flushing what is pending) and grouped-K (dW,
    empty groups)."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GROUP_ENDS", "off" if form == "grouped_m_ends_off" else "")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_DEFER", defer)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "3")
    dt = torch.bfloat16
    if form == "bmm":
        a, b = make((5, 300, 136), dt, "cuda"), make((5, 136, 520), dt, "cuda", "col")
        poison(5 * 300 * 520 * 2)
        check(cg.bmm(a, b), ref_bmm(a, b), dt, what="deferred store bmm")
        return
    sizes = [40, 300, 0, 64, 65, 190, 1, 129, 0, 256, 192]
    offs = offs_from_sizes(sizes, "cuda")
    T = sum(sizes) + 24
    if form.startswith("swiglu"):  # bias (G, 2F): 4-byte pairs, or an odd start (not deferred)
        G, F = len(sizes), 260
        x, w = make((T, 200), dt, "cuda"), make((G, 200, 2 * F), dt, "cuda", "col")
        buf = torch.randn(G * 2 * F + 1, device="cuda", dtype=dt)
        bias = (buf[1:] if form == "swiglu_odd_bias" else buf[:-1]).view(G, 2 * F)
        e = cg.explain("grouped_mm", x, w, offs, bias=bias, activation="swiglu")
        assert ("the deferred store" in e.reason) == (defer == "" and form == "swiglu"), e.reason
        poison(T * F * 2)
        out = cg.grouped_mm(x, w, offs, bias=bias, activation="swiglu")
        full = ref_grouped_mm(x, w, offs, bias)
        ref = torch.nn.functional.silu(full[:, :F]) * full[:, F:]
        check(out, ref, dt, what=f"deferred store {form}")
        assert torch.all(out[sum(sizes):] == 0)
        return
    if form.startswith("grouped_m"):
        w_layout = "row" if form == "grouped_m_row_w" else "col"
        x, w = make((T, 200), dt, "cuda"), make((len(sizes), 200, 520), dt, "cuda", w_layout)
        poison(T * 520 * 2)
        out = cg.grouped_mm(x, w, offs)
        check(out, ref_grouped_mm(x, w, offs), dt, what=f"deferred store {form}")
        assert torch.all(out[sum(sizes):] == 0)
    else:
        x, dy = make((200, T), dt, "cuda", "col"), make((T, 520), dt, "cuda")
        poison(len(sizes) * 200 * 520 * 2)
        out = cg.grouped_mm(x, dy, offs)
        check(out, ref_grouped_mm(x, dy, offs), dt, what="deferred store grouped-K")
        assert torch.all(out[2] == 0) and torch.all(out[8] == 0)


# Stream-K: tests/test_sm90_streamk.py.


@pytest.mark.parametrize("activation", ["none", "relu", "gelu_tanh", "silu"])
def test_sm90_bias_staged_early_is_bit_equal(activation, monkeypatch):
    """The compact cooperative kernel stages each tile's bias in shared memory under the tile's last
    wgmma group (CUTORCH_GEMM_SM90_BIAS_EARLY): the same values into the same FMAs as loading them at
    packing time, so bit-equal D. Dense edge tiles, many tiles per CTA, and grouped-K (an empty group:
    D = act(bias))."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    dt = torch.bfloat16
    cases = []
    for m, n, k, grid in ((1000, 1000, 1000, ""), (2048, 2048, 256, "13")):
        a, b = linear_operands(m, n, k, dt)
        cases.append((grid, (a, b), {"bias": torch.randn(n, device="cuda", dtype=dt)}))
    x = torch.randn(200, 256, device="cuda", dtype=dt).t()
    dy = torch.randn(200, 264, device="cuda", dtype=dt)
    offs = torch.tensor([50, 50, 130, 200], device="cuda", dtype=torch.int32)
    cases.append(("", (x, dy, offs), {"bias": torch.randn(4, 264, device="cuda", dtype=dt)}))
    for grid, args, kwargs in cases:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", grid)
        op = cg.grouped_mm if len(args) == 3 else cg.gemm
        outs = []
        for early in ("", "off"):
            monkeypatch.setenv("CUTORCH_GEMM_SM90_BIAS_EARLY", early)
            outs.append(op(*args, activation=activation, **kwargs))
        torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)
        ref = ref_grouped_mm(*args, kwargs["bias"], activation) if len(args) == 3 else \
            ref_gemm(*args, kwargs["bias"], activation=activation)
        check(outs[0], ref, dt, what=f"{op.__name__} {activation} grid={grid or 'auto'}")
