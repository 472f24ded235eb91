"""Programmatic dependent launch on the Hopper kernels (arch/sm90_grid_dependency.cuh; device/sm90_pdl_launch.cuh sets
the attribute on the tile and skinny kernels' short launches; here CUTORCH_GEMM_SM90_PDL=on sets it on every launch,
except where a case compares with =off or the default rule): a launch may place its CTAs
while the kernel before it in the stream still runs,
and every thread waits for that kernel's completion before it touches global memory. These cases put launches that
depend on each other through memory back to back with nothing between them: each reads the output the one before
wrote (read after write), writes the block the one before read (write after read, through the caching allocator's
reuse), in a CUDA graph, with a torch kernel between, and gives the same bits as plain launches. Shapes cover one
tile per CTA (64x128 ping-pong, 128x256 cooperative: the launches PDL shortens), several rounds, the big tiles in
2x1 pairs and unaligned rows (2x1 clusters); and the skinny kernels (small M, K-split clusters), the grouped
skinny kernel (decode-size grouped_mm, offsets read on the device) and the mma.sync skinny kernel's sm_90 build.
Skipped without an sm_90 GPU."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import capture, check, gpu, offs_from_sizes, ref_gemm, ref_grouped_mm, requires_sm90

pytestmark = [gpu, requires_sm90]
ENV = "CUTORCH_GEMM_SM90_PDL"


@pytest.fixture(autouse=True)
def _pdl_on_every_launch(monkeypatch):
    monkeypatch.setenv(ENV, "on")


tiles = pytest.mark.usefixtures("tile_kernels_only")  # (small M would take the skinny kernels)

# (M, K): square weights (N = K), so each output is the next launch's A
SHAPES = [(1024, 1024), (2048, 2048), (3072, 3072), (4096, 4096), (1000, 1000), (2560, 4096)]
LINKS = 6


def _weights(k, dtype, count=LINKS):
    # scaled by 1 / sqrt(K): outputs stay ~N(0, 1) along the chain (b = W.t(): the nn.Linear layout)
    return [(torch.randn(k, k, device="cuda") / k ** 0.5).to(dtype).t() for _ in range(count)]


def _chain(x, ws):
    outs = [x]
    for w in ws:
        outs.append(cg.mm(outs[-1], w))
    return outs


@tiles
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_pdl_chain_reads_each_previous_output(shape, dtype):
    m, k = shape
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    ws = _weights(k, dtype)
    outs = _chain(x, ws)  # (no synchronisation between the launches)
    torch.cuda.synchronize()
    for i, w in enumerate(ws):  # each link against its input as finally written
        check(outs[i + 1], ref_gemm(outs[i], w), dtype, what=f"{m}x{k} link {i + 1}")
    # the same bits as launches without the attribute, and as the default rule's (PDL on short launches only)
    pdl_bits = [o.clone() for o in outs]
    for mode in ("off", None):
        with pytest.MonkeyPatch.context() as mp:
            if mode is None:
                mp.delenv(ENV)
            else:
                mp.setenv(ENV, mode)
            other = _chain(x, ws)
        for i, (a, b) in enumerate(zip(pdl_bits[1:], other[1:])):
            assert torch.equal(a, b), f"{m}x{k} link {i + 1}: PDL and {mode or 'default'} launches differ"


@tiles
@pytest.mark.parametrize("shape", SHAPES[:4], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pdl_write_after_read(shape):
    """The next launch's D lands in the block the launch before it reads as A, repeated; each launch must finish
    reading first. The caching allocator hands x's block, freed right after the first call, to the second call's output
    unless another free block of that size is cached at a lower address; so a round retries with the failed attempt's
    outputs kept alive (a different set of free blocks) until it does (every attempt is checked), and fails if it
    never does."""
    m, k = shape
    dtype = torch.bfloat16
    w1, w2 = _weights(k, dtype, 2)
    for rep in range(4):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        held = []
        for _ in range(8):
            keep = torch.randn(m, k, device="cuda", dtype=dtype)
            x = keep.clone()
            x_ptr = x.data_ptr()
            y = cg.mm(x, w1)  # reads x
            del x
            z = cg.mm(y, w2)  # writes into x's block (when reused) while, with PDL, y's launch may still be finishing
            reused = z.data_ptr() == x_ptr
            torch.cuda.synchronize()
            check(y, ref_gemm(keep, w1), dtype, what=f"{m}x{k} rep {rep}: y")
            check(z, ref_gemm(y, w2), dtype, what=f"{m}x{k} rep {rep}: z")
            if reused:
                break
            held.append((keep, y, z))
        del held
        assert reused, f"premise: in 8 attempts the allocator never handed A's block to the next output ({m}x{k})"


@tiles
@pytest.mark.parametrize("shape", [(1024, 1024), (2048, 2048), (1000, 1000)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pdl_chain_in_a_cuda_graph(shape):
    """A captured chain (programmatic edges between its kernel nodes) replays correctly after its input changes."""
    m, k = shape
    dtype = torch.bfloat16
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    ws = _weights(k, dtype)
    graph, outs = capture(lambda: _chain(x, ws))
    for rep in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        for i, w in enumerate(ws):
            check(outs[i + 1], ref_gemm(outs[i], w), dtype, what=f"{m}x{k} replay {rep} link {i + 1}")


@tiles
def test_pdl_torch_kernel_between():
    """A torch kernel between two launches (it does not signal early; ours waits for it all the same)."""
    dtype = torch.bfloat16
    x = torch.randn(1024, 1024, device="cuda", dtype=dtype)
    w1, w2 = _weights(1024, dtype, 2)
    y = cg.mm(x, w1)
    y.mul_(-2.0)  # torch: in place, between the two launches
    z = cg.mm(y, w2)
    y2 = y.clone()
    torch.cuda.synchronize()
    check(y2, -2.0 * ref_gemm(x, w1), dtype, what="y after torch's mul_")
    check(z, ref_gemm(y2, w2), dtype, what="z after torch's mul_")


# (M, K, the kernel explain names): the Hopper skinny kernels (K split over a cluster where N / 64 leaves SMs idle)
# and, for M <= 16 against a W of at most half the SMs' 64-row tiles, the mma.sync skinny kernel, whose sm_90 build
# waits for the kernel before it (device/sm80_skinny_launch.cuh asks for PDL where that build runs).
SKINNY = [(48, 4096, "sm90"), (32, 4096, "sm90"), (64, 2048, "sm90"), (24, 2048, "sm90"),
          (16, 2048, "sm80"), (8, 1024, "sm80"), (1, 4096, "sm80"), (13, 4096, "sm80")]


@pytest.mark.parametrize("case", SKINNY, ids=lambda c: f"{c[2]}-{c[0]}x{c[1]}")
def test_pdl_skinny_chain(case):
    """Small M: each link reads the one before, directly and in a CUDA graph, with the same bits as plain launches."""
    m, k, kernel = case
    dtype = torch.bfloat16
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    ws = _weights(k, dtype)
    e = cg.explain("mm", x, ws[0])
    family = "Sm90_Skinny_" if kernel == "sm90" else "Sm80_Skinny_"
    assert e.kernel == kernel and e.config.startswith(family), str(e)
    outs = _chain(x, ws)
    torch.cuda.synchronize()
    for i, w in enumerate(ws):
        check(outs[i + 1], ref_gemm(outs[i], w), dtype, what=f"{kernel} skinny {m}x{k} link {i + 1}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, "off")
        plain = _chain(x, ws)
    for i, (a, b) in enumerate(zip(outs[1:], plain[1:])):
        assert torch.equal(a, b), f"{kernel} skinny {m}x{k} link {i + 1}: PDL and plain launches differ"
    graph, g_outs = capture(lambda: _chain(x, ws))
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    for i, w in enumerate(ws):
        check(g_outs[i + 1], ref_gemm(g_outs[i], w), dtype, what=f"{kernel} skinny {m}x{k} replay link {i + 1}")


def test_pdl_grouped_skinny_chain():
    """Decode-size grouped_mm (the grouped skinny kernel reads the offsets on the device): offsets a torch kernel
    writes right before the launch, and each launch reading the one before's output (empty groups included)."""
    dtype = torch.bfloat16
    k, experts = 2048, 8
    sizes = [1, 0, 3, 2, 0, 0, 1, 1]
    x = torch.randn(sum(sizes), k, device="cuda", dtype=dtype)
    ws = [(torch.randn(experts, k, k, device="cuda") / k ** 0.5).to(dtype) for _ in range(4)]
    e = cg.explain("grouped_mm", x, ws[0], offs_from_sizes(sizes, "cuda"))
    assert e.kernel == "sm90" and e.config.startswith("Sm90_Skinny_"), str(e)
    counts = torch.tensor(sizes, device="cuda", dtype=torch.int32)
    offs = torch.cumsum(counts, 0, dtype=torch.int32)  # (a torch kernel right before the first launch)
    outs = [x]
    for w in ws:
        outs.append(cg.grouped_mm(outs[-1], w, offs))
    torch.cuda.synchronize()
    for i, w in enumerate(ws):
        check(outs[i + 1], ref_grouped_mm(outs[i], w, offs), dtype, what=f"grouped skinny link {i + 1}")
