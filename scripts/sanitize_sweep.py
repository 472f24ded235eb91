"""A small sweep over every kernel family and config, meant to run under compute-sanitizer:

    compute-sanitizer --tool memcheck  python scripts/sanitize_sweep.py
    compute-sanitizer --tool racecheck python scripts/sanitize_sweep.py --quick
    compute-sanitizer --tool synccheck python scripts/sanitize_sweep.py --quick

Each case is small (edge tiles, odd sizes, empty groups, offsets that decrease or pass the end),
runs once, synchronizes, and is compared with a float64 reference so a case that "passes" the
sanitizer but writes garbage still fails. Exit status 1 when a result is wrong; the sanitizer's own exit status reports memory
errors and hazards.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ref(a, b, bias=None, act=None, c=None, beta=0.0):
    z = a.double() @ b.double()
    if c is not None:
        z = z + beta * c.double()
    if bias is not None:
        z = z + bias.double()
    if act == "gelu":
        z = torch.nn.functional.gelu(z)
    elif act == "gelu_tanh":
        z = torch.nn.functional.gelu(z, approximate="tanh")
    elif act == "silu":
        z = torch.nn.functional.silu(z)
    elif act == "relu":
        z = torch.relu(z)
    else:
        assert act in (None, "none"), f"no reference for activation {act}"
    return z


def _close(out, ref, tol):
    ref = ref.to(out.device)
    err = float((out.double() - ref).norm() / ref.norm().clamp_min(1e-30))
    return err <= tol, err


def cases(quick: bool):
    """(name, env overrides, fn returning (out, ref, tol))."""
    dev = "cuda"
    bf16 = torch.bfloat16

    def mm(m, n, k, dtype=bf16, act=None, layout_b="k", plain=False, c=False, a_mn=False):
        def run():
            # a_mn: an M-contiguous a (with an MN-major b: the dW = dY^T X form)
            a = torch.randn(k, m, device=dev, dtype=dtype).t() if a_mn else torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(n, k, device=dev, dtype=dtype).t() if layout_b == "k" else \
                torch.randn(k, n, device=dev, dtype=dtype)
            # plain: no bias, no activation (the register-direct / compact TMA-store epilogues)
            bias = None if plain else torch.randn(n, device=dev, dtype=dtype)
            # c: a row-major (M, N) C, beta = 0.5 (loaded by TMA where the launch can)
            cm = torch.randn(m, n, device=dev, dtype=dtype) if c else None
            out = cg.mm(a, b) if plain and not c else \
                cg.gemm(a, b, bias=bias, c=cm, beta=0.5 if c else 0.0, activation=act or "none")
            return out, _ref(a, b, bias, act, cm, 0.5), 2e-2 if dtype != torch.float64 else 1e-10
        return run

    def grouped(sizes, extra_rows=3, k=72, k_major=False):
        def run():
            t, n = sum(sizes) + extra_rows, 136
            a = torch.randn(t, k, device=dev, dtype=bf16)
            b = (torch.randn(len(sizes), n, k, device=dev, dtype=bf16).transpose(1, 2) if k_major
                 else torch.randn(len(sizes), k, n, device=dev, dtype=bf16))
            offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
            out = cg.grouped_mm(a, b, offs)
            ref = torch.zeros(t, n, dtype=torch.float64)
            s = 0
            for g, e in enumerate(offs.tolist()):
                ref[s:e] = a[s:e].double().cpu() @ b[g].double().cpu()
                s = e
            return out, ref, 2e-2
        return run

    def grouped_k(sizes, m=130, n=136):
        # ragged along K (the dW form): groups whose K is not a k-block multiple zero their last
        # slice's tail in shared memory before its wgmma (the mainloop's one general-loop k-block)
        def run():
            t = sum(sizes)
            a = torch.randn(m, t, device=dev, dtype=bf16)
            b = torch.randn(t, n, device=dev, dtype=bf16)
            offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
            out = cg.grouped_mm(a, b, offs)
            ref = torch.zeros(len(sizes), m, n, dtype=torch.float64)
            s = 0
            for g, e in enumerate(offs.tolist()):
                ref[g] = a[:, s:e].double().cpu() @ b[s:e].double().cpu()
                s = e
            return out, ref, 2e-2
        return run

    def grouped_swiglu(sizes, k=72, f=72):
        def run():
            t = sum(sizes) + 1
            a = torch.randn(t, k, device=dev, dtype=bf16)
            b = torch.randn(len(sizes), k, 2 * f, device=dev, dtype=bf16)  # (G, K, 2F): [gate | up]
            offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
            out = cg.grouped_mm(a, b, offs, activation="swiglu")
            ref = torch.zeros(t, f, dtype=torch.float64)
            s = 0
            for g, e in enumerate(offs.tolist()):
                z = a[s:e].double().cpu() @ b[g].double().cpu()
                ref[s:e] = torch.nn.functional.silu(z[:, :f]) * z[:, f:]
                s = e
            return out, ref, 2e-2
        return run

    def bad_offsets():
        def run():
            # Decreasing and past-the-end offsets: clamped on the GPU, never an out-of-bounds
            # access (what the sanitizer checks); the values of invalid groups are unspecified,
            # so only finiteness is compared.
            a = torch.randn(40, 64, device=dev, dtype=bf16)
            b = torch.randn(3, 64, 24, device=dev, dtype=bf16)
            offs = torch.tensor([30, 10, 99], device=dev, dtype=torch.int32)
            out = cg.grouped_mm(a, b, offs)
            assert bool(torch.isfinite(out).all()), "non-finite output"
            return out, out.double(), 1.0
        return run

    def swiglu():
        def run():
            a = torch.randn(70, 64, device=dev, dtype=bf16)
            b = torch.randn(2, 64, 2 * 136, device=dev, dtype=bf16)
            offs = torch.tensor([33, 70], device=dev, dtype=torch.int32)
            out = cg.grouped_mm(a, b, offs, activation="swiglu")
            z = torch.cat([a[:33].double() @ b[0].double(), a[33:].double() @ b[1].double()]).cpu()
            return out, torch.nn.functional.silu(z[:, :136]) * z[:, 136:], 2e-2
        return run

    def scaled(m, n, k):
        def run():
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            sa, sb = torch.rand(m, 1, device=dev) + 0.5, torch.rand(1, n, device=dev) + 0.5
            out = cg.scaled_mm(a, b, sa, sb)
            return out, (a.double() @ b.double()) * sa.double() * sb.double(), 2e-2
        return run

    def pointer_array():
        def run():
            shapes = [(130, 264, 72), (1, 64, 64), (0, 64, 64), (65, 72, 136)]
            a = [torch.randn(m, k, device=dev, dtype=bf16) for m, _, k in shapes]
            b = [torch.randn(n, k, device=dev, dtype=bf16).t() for _, n, k in shapes]
            outs = cg.grouped_gemm(a, b)
            out = torch.cat([o.reshape(-1) for o in outs])
            ref = torch.cat([(x.double() @ y.double()).reshape(-1) for x, y in zip(a, b)])
            return out, ref, 2e-2
        return run

    out = []
    for cfg in ("coop", "pingpong"):
        env = {"CUTORCH_GEMM_SM90_CONFIG": cfg}
        out += [(f"sm90 {cfg} bf16 129x257x72", env, mm(129, 257, 72)),
                (f"sm90 {cfg} bf16 gelu 700x300x400 b MN-major", env, mm(700, 300, 400, act="gelu", layout_b="mn")),
                (f"sm90 {cfg} grouped-M with empty groups", env, grouped([5, 0, 130, 1])),
                (f"sm90 {cfg} fp8 scaled_mm 200x264x96", env, scaled(200, 264, 96)),
                (f"sm90 {cfg} tf32 130x264x72", {**env, "TF32": "1"}, mm(130, 264, 72, dtype=torch.float32)),
                (f"sm90 {cfg} fused swiglu", env, swiglu()),
                (f"sm90 {cfg} pointer-array grouped_gemm", env, pointer_array()),
                (f"sm90 {cfg} split-K 16x1024x4096", env, mm(16, 1024, 4096))]
    # grouped-K (dW) groups whose K leaves a partial last k-block, per config
    out += [(f"sm90 {c} grouped-K tails", {"CUTORCH_GEMM_SM90_CONFIG": c}, grouped_k([100, 0, 37, 200]))
            for c in ("coop", "pingpong", "pingpong128")]
    # cooperative half tiles (a warpgroup's rows past a group's end): K long enough for the ring's
    # phases to wrap inside such tiles
    out += [("sm90 coop grouped-M half tiles K 1000", {"CUTORCH_GEMM_SM90_CONFIG": "coop"},
             grouped([40, 300, 64, 0, 190, 1], k=1000))]
    # MoE decode: a few rows over many experts take the 64x128 config by the rule (not forced)
    out += [("sm90 grouped-M decode 64x128", {"CUTORCH_GEMM_SKINNY": "off"},
             grouped([1, 0, 0, 2, 0, 0, 0, 1] * 4, extra_rows=1, k=264))]
    # ... and (not forced off) the grouped skinny kernel: a persistent grid over the groups' W tiles,
    # then two slots running the groups in turn with a K split over clusters of 2; both weight layouts
    decode = grouped([1, 0, 0, 2, 0, 0, 0, 1] * 4, extra_rows=1, k=264, k_major=True)
    out += [("sm90 grouped skinny decode", {}, decode),
            ("sm90 grouped skinny decode slots 2 splits 2",
             {"CUTORCH_GEMM_SKINNY_SLOTS": "2", "CUTORCH_GEMM_SKINNY_SPLITS": "2"}, decode),
            ("sm90 grouped skinny decode N-contiguous weights", {},
             grouped([1, 0, 0, 2, 0, 0, 0, 1] * 4, extra_rows=1, k=264)),
            ("sm90 grouped skinny decode swiglu", {}, grouped_swiglu([1, 0, 0, 2, 0, 0, 0, 1] * 4, k=264))]
    # the deferred store: capped grids give a CTA several tiles, each stored under the next one's
    # first k-blocks (K of 1 and 3 k-blocks: the rest after the mainloop), with bias + gelu_tanh
    # and plain (the cooperative compact kernel; the general kernel's copy too); grouped-M (whole
    # tiles deferred, partial ones from registers)
    dgrid = {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_GRID": "3"}
    out += [("sm90 deferred store plain 1000x1000x64 grid 3", dgrid, mm(1000, 1000, 64, plain=True)),
            ("sm90 deferred store plain general kernel 1000x1000x64 grid 3",
             {**dgrid, "CUTORCH_GEMM_SM90_EPILOGUE": "general"}, mm(1000, 1000, 64, plain=True)),
            ("sm90 deferred store gelu_tanh 700x1000x136 grid 3", dgrid, mm(700, 1000, 136, act="gelu_tanh")),
            ("sm90 deferred store grouped-M grid 3", dgrid, grouped([300, 0, 129, 256, 1], k=200))]
    # the 240-wide tile (its last slice overlaps the one before): bias, plain, an unaligned K (2x1 clusters), an
    # 8-column last tile column, a capped grid (several tiles per CTA)
    w240 = {"CUTORCH_GEMM_SM90_CONFIG": "coop240"}
    out += [("sm90 coop240 bias 300x488x1000", w240, mm(300, 488, 1000)),
            ("sm90 coop240 plain 1000x1400x1024 grid 3", {**w240, "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(1000, 1400, 1024, plain=True)),
            ("sm90 coop240 fp16 bias 129x680x40", w240, mm(129, 680, 40, dtype=torch.float16)),
            ("sm90 coop240 bias + gelu_tanh 700x1000x136 grid 3", {**w240, "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(700, 1000, 136, act="gelu_tanh"))]
    # the big tiles (choose_sm90_big): 320 wide (B in two 160-row boxes) and 192x192 (three consumer warpgroups, their
    # named barriers; always 2x1 pairs, 450 rows an odd tile-row count). D by TMA (bias; bias + an activation) and
    # from registers (C), 2x1 clusters (K = 1000), several tiles per CTA.
    for big, rows, act in (("coop320", 300, "gelu_tanh"), ("coop192x192", 450, "silu")):
        env = {"CUTORCH_GEMM_SM90_CONFIG": big}
        out += [(f"sm90 {big} bias {rows}x700x128", env, mm(rows, 700, 128)),
                (f"sm90 {big} C 1000x1000x1000 clusters", env, mm(1000, 1000, 1000, plain=True, c=True)),
                (f"sm90 {big} plain 2304x3000x200 grid 3", {**env, "CUTORCH_GEMM_SM90_GRID": "3"},
                 mm(2304, 3000, 200, plain=True)),
                (f"sm90 {big} bias + {act} {rows}x704x128 grid 2", {**env, "CUTORCH_GEMM_SM90_GRID": "2"},
                 mm(rows, 704, 128, act=act))]
    # a fit width's deferring twin (144: slices from columns 0, 64 and 80), several tiles per CTA
    out += [("sm90 coop144 deferring twin bias 1000x1400x1024 grid 3",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop144", "CUTORCH_GEMM_SM90_GRID": "3"}, mm(1000, 1400, 1024))]
    # the narrow twins (two slices, the second over the first) and a CTA's last tile from the idle stages
    out += [("sm90 coop112 deferring twin 700x904x320 grid 3",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop112", "CUTORCH_GEMM_SM90_GRID": "3"}, mm(700, 904, 320)),
            ("sm90 coop80 deferring twin fp16 129x328x72", {"CUTORCH_GEMM_SM90_CONFIG": "coop80"},
             mm(129, 328, 72, dtype=torch.float16))]
    # the twins and 192 with an activation in the packing (exact GELU's one-MUFU erf, SiLU), 2x1 clusters (K = 1000)
    out += [("sm90 coop144 deferring twin bias + gelu 1000x1400x1024 grid 3",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop144", "CUTORCH_GEMM_SM90_GRID": "3"}, mm(1000, 1400, 1024, act="gelu")),
            ("sm90 coop192 bias + gelu 700x904x320", {"CUTORCH_GEMM_SM90_CONFIG": "coop192"},
             mm(700, 904, 320, act="gelu")),
            ("sm90 coop112 deferring twin bias + silu 1000x1400x1000 clusters", {"CUTORCH_GEMM_SM90_CONFIG": "coop112"},
             mm(1000, 1400, 1000, act="silu"))]
    # beta * C loaded by TMA: each general config, several tiles per CTA (the barriers' parities carried from tile to
    # tile; N = 392 leaves the last tile column's last slices unloaded), clusters, stream-K pieces
    for cfg in ("coop", "pingpong", "pingpong128", "pingpong64"):
        cenv = {"CUTORCH_GEMM_SM90_CONFIG": cfg, "CUTORCH_GEMM_SM90_GRID": "3", "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"}
        out += [(f"sm90 C by TMA {cfg} bias + silu 700x392x136 grid 3", cenv, mm(700, 392, 136, act="silu", c=True))]
    out += [("sm90 C by TMA coop clusters fp16 300x520x200", {"CUTORCH_GEMM_SM90_CONFIG": "coop"},
             mm(300, 520, 200, dtype=torch.float16, plain=True, c=True)),
            ("sm90 C by TMA stream-K 1000x1000x1000 grid 5",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_STREAMK": "on", "CUTORCH_GEMM_SM90_GRID": "5",
              "CUTORCH_GEMM_SM90_CLUSTER": "1", "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
             mm(1000, 1000, 1000, c=True))]
    # beta * C read as column pairs by the fit-width tiles (edge tiles, several tiles per CTA)
    out += [("sm90 C fit144 700x904x320 grid 3", {"CUTORCH_GEMM_SM90_CONFIG": "coop144", "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(700, 904, 320, c=True)),
            ("sm90 C fit80 fp16 129x298x40", {"CUTORCH_GEMM_SM90_CONFIG": "coop80"},
             mm(129, 298, 40, dtype=torch.float16, plain=True, c=True))]
    # the fit widths with an MN-major B in whole 64-column boxes (Sm90MnB): boxes past the tile and wholly past N,
    # several tiles per CTA, the deferring twin and the direct store, both operands MN-major
    out += [("sm90 MN fit144 b_mn 192x320x64 grid 3", {"CUTORCH_GEMM_SM90_CONFIG": "coop144", "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(192, 320, 64, layout_b="n", plain=True)),
            ("sm90 MN fit208 both_mn 704x832x200 grid 3", {"CUTORCH_GEMM_SM90_CONFIG": "coop208",
                                                          "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(704, 832, 200, layout_b="n", plain=True, a_mn=True)),
            ("sm90 MN fit80 b_mn bias 129x320x64", {"CUTORCH_GEMM_SM90_CONFIG": "coop80"},
             mm(129, 320, 64, layout_b="n"))]
    # tf32 and 8-bit cooperative tiles in 2x1 pairs on 128-byte-multiple rows (the K rules' pairs since the fifty-ninth
    # session; the rule itself needs more tiles than a sanitizer run affords, so forced), edge tiles in both dimensions
    pairs = {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_CLUSTER": "2"}
    out += [("sm90 coop cluster tf32 aligned rows 300x520x256", {**pairs, "TF32": "1"},
             mm(300, 520, 256, dtype=torch.float32)),
            ("sm90 coop cluster fp8 aligned rows 300x520x256", pairs, scaled(300, 520, 256))]
    # the 8-bit 128x192 cooperative config (scaled_mm only)
    out += [("sm90 coop192 fp8 scaled_mm 200x264x96", {"CUTORCH_GEMM_SM90_CONFIG": "coop192"}, scaled(200, 264, 96))]
    # the 8-bit 64x64 ping-pong config (small M), whole and as split-K (partials + scaled sum)
    out += [("sm90 pingpong64 fp8 scaled_mm 200x264x96", {"CUTORCH_GEMM_SM90_CONFIG": "pingpong64"},
             scaled(200, 264, 96)),
            ("sm90 fp8 scaled_mm split-K 33x520x2000", {}, scaled(33, 520, 2000))]
    # the narrow 64x128 config (fp16 / bf16 dense and batched only)
    narrow = {"CUTORCH_GEMM_SM90_CONFIG": "pingpong128"}
    out += [("sm90 pingpong128 bf16 129x257x72", narrow, mm(129, 257, 72)),
            ("sm90 pingpong128 bf16 gelu 700x300x400 b MN-major", narrow,
             mm(700, 300, 400, act="gelu", layout_b="mn")),
            ("sm90 pingpong128 split-K 16x1024x4096", narrow, mm(16, 1024, 4096))]
    # the 16-bit 64x64 config (small problems), plain (compact kernel), with an epilogue, as split-K
    narrow64 = {"CUTORCH_GEMM_SM90_CONFIG": "pingpong64"}
    out += [("sm90 pingpong64 compact bf16 300x200x136", narrow64, mm(300, 200, 136, plain=True)),
            ("sm90 pingpong64 bf16 gelu 129x257x72 b MN-major", narrow64, mm(129, 257, 72, act="gelu", layout_b="mn")),
            ("sm90 pingpong64 split-K 16x1024x4096", narrow64, mm(16, 1024, 4096))]
    # plain ping-pong launches with a 16-byte aligned D take the compact kernel (kPlainTma)
    out += [("sm90 pingpong compact bf16 200x264x136", {"CUTORCH_GEMM_SM90_CONFIG": "pingpong"},
             mm(200, 264, 136, plain=True)),
            ("sm90 pingpong128 compact bf16 130x136x520 b MN-major", narrow,
             mm(130, 136, 520, layout_b="mn", plain=True)),
            ("sm90 coop plain bf16 200x264x136", {"CUTORCH_GEMM_SM90_CONFIG": "coop"},
             mm(200, 264, 136, plain=True))]
    # D = A B alone on those configs takes the bare compact kernel (kBare): several tiles per CTA, edge tiles; and the
    # compact kernel it replaces (CUTORCH_GEMM_SM90_BARE=off)
    out += [("sm90 bare coop bf16 1000x1000x200 grid 3",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_GRID": "3"}, mm(1000, 1000, 200, plain=True)),
            ("sm90 bare pingpong128 fp16 520x1000x136 grid 3", {**narrow, "CUTORCH_GEMM_SM90_GRID": "3"},
             mm(520, 1000, 136, dtype=torch.float16, plain=True)),
            ("sm90 bare pingpong64 bf16 300x520x72 grid 2", {**narrow64, "CUTORCH_GEMM_SM90_GRID": "2"},
             mm(300, 520, 72, plain=True)),
            ("sm90 bare off: coop compact bf16 1000x1000x200",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_BARE": "off"}, mm(1000, 1000, 200, plain=True))]
    # the fit-width cooperative tiles (both operands K-major, D from registers): edge tiles and the early start,
    # and 2x1 clusters (K = 200: rows of 400 bytes), 300 rows (the last pair's second CTA past M)
    out += [("sm90 fit144 bf16 129x298x64", {"CUTORCH_GEMM_SM90_CONFIG": "coop144"}, mm(129, 298, 64)),
            ("sm90 fit80 bf16 129x100x64", {"CUTORCH_GEMM_SM90_CONFIG": "coop80"}, mm(129, 100, 64)),
            ("sm90 fit224 fp16 300x520x200 clusters", {"CUTORCH_GEMM_SM90_CONFIG": "coop224"},
             mm(300, 520, 200, dtype=torch.float16, plain=True))]
    # coop launches take 2x1 clusters by default (B multicast); 300 rows: the last pair's second
    # CTA is past M. The same without clusters:
    out += [("sm90 coop cluster bf16 300x520x200 (odd tile rows)", {"CUTORCH_GEMM_SM90_CONFIG": "coop"},
             mm(300, 520, 200, layout_b="mn")),
            ("sm90 coop no cluster bf16 300x257x72",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_CLUSTER": "1"}, mm(300, 257, 72)),
            # ping-pong clusters only when forced; 5 tile rows of 64: the last pair's second CTA past M
            ("sm90 pingpong128 forced cluster bf16 300x520x200",
             {"CUTORCH_GEMM_SM90_CONFIG": "pingpong128", "CUTORCH_GEMM_SM90_CLUSTER": "2"}, mm(300, 520, 200)),
            ("sm90 pingpong forced cluster bf16 gelu 300x520x200 b MN-major",
             {"CUTORCH_GEMM_SM90_CONFIG": "pingpong", "CUTORCH_GEMM_SM90_CLUSTER": "2"},
             mm(300, 520, 200, act="gelu", layout_b="mn"))]
    out += [("sm90 grouped-M decreasing / past-the-end offsets", {}, bad_offsets()),
            ("sm80 bf16 129x257x72", {"CUTORCH_GEMM_ARCH": "sm80"}, mm(129, 257, 72)),
            ("sm80 fp64 65x33x129", {"CUTORCH_GEMM_ARCH": "sm80"}, mm(65, 33, 129, dtype=torch.float64)),
            ("sm80 split-K 64x64x8192", {"CUTORCH_GEMM_ARCH": "sm80"}, mm(64, 64, 8192)),
            # parallel split-K summed in the kernel (arrival counters, uneven row bands, N % 4 != 0)
            # and by the reduction kernel
            ("sm80 split-K fused x7 fp16 silu 129x135x2048",
             {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SPLIT_K": "parallel:7"},
             mm(129, 135, 2048, dtype=torch.float16, act="silu")),
            ("sm80 split-K fused sliced-K x5 gelu 200x136x3000",
             {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SPLIT_K": "parallel:5",
              "CUTORCH_GEMM_SM80_CONFIG": "Sm80_128x128x64_S3_K2"}, mm(200, 136, 3000, act="gelu")),
            ("sm80 sliced-K fp16 129x257x72", {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SM80_CONFIG": "Sm80_128x128x64_S3_K2"},
             mm(129, 257, 72, dtype=torch.float16)),
            ("sm80 split-K reduction kernel x7 129x135x2048",
             {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SPLIT_K": "parallel:7", "CUTORCH_GEMM_SM80_SPLIT_REDUCE": "kernel"},
             mm(129, 135, 2048)),
            # rows of eight (no C, 16-byte aligned D rows): full-width tiles, then the general
            # path for the last tile column
            ("sm80 bf16 rows8 plain 200x264x136", {"CUTORCH_GEMM_ARCH": "sm80"}, mm(200, 264, 136, plain=True)),
            ("sm80 bf16 rows8 gelu 300x520x200 128x256",
             {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SM80_CONFIG": "128x256x64"}, mm(300, 520, 200, act="gelu")),
            ("sm80 tf32 rows8 130x264x72", {"CUTORCH_GEMM_ARCH": "sm80", "TF32": "1"},
             mm(130, 264, 72, dtype=torch.float32, plain=True)),
            ("sm80 tf32 128x256x32 gelu 300x520x200",
             {"CUTORCH_GEMM_ARCH": "sm80", "CUTORCH_GEMM_SM80_CONFIG": "128x256x32", "TF32": "1"},
             mm(300, 520, 200, dtype=torch.float32, act="gelu")),
            ("simt fp32 65x33x129", {"CUTORCH_GEMM_ARCH": "simt"}, mm(65, 33, 129, dtype=torch.float32))]
    # the skinny kernel (M <= 64), both warp counts, N past the last CTA's 32 rows, a short K step
    out += [("skinny w8 bf16 gelu 13x301x392", {"CUTORCH_GEMM_SKINNY": "w8"}, mm(13, 301, 392, act="gelu")),
            ("skinny w16 fp16 7x1000x264", {"CUTORCH_GEMM_SKINNY": "w16"}, mm(7, 1000, 264, dtype=torch.float16)),
            ("skinny T64 40x129x1000", {"CUTORCH_GEMM_SKINNY": "force"}, mm(40, 129, 1000))]
    # the Hopper skinny kernel: every token config, clusters of 1, 3 and 8 (DSMEM sums), N past
    # the last CTA's 64 rows, M past x's rows in the box, K past the last block
    # (ring: CUTORCH_GEMM_SKINNY_RING, the 64-token launch's 12-stage deep ring or 6-stage short one)
    sk90 = lambda s, ring="": {"CUTORCH_GEMM_SKINNY": "sm90", "CUTORCH_GEMM_SKINNY_SPLITS": s,  # noqa: E731
                               "CUTORCH_GEMM_SKINNY_RING": ring}
    out += [("sm90 skinny T16 splits 3 gelu 13x301x392", sk90("3"), mm(13, 301, 392, act="gelu")),
            ("sm90 skinny T32 splits 1 fp16 17x65x72", sk90("1"), mm(17, 65, 72, dtype=torch.float16)),
            ("sm90 skinny T64 splits 8 40x129x1000", sk90("8"), mm(40, 129, 1000)),
            ("sm90 skinny T128 splits 2 100x200x136", sk90("2"), mm(100, 200, 136, act="silu")),
            # more K blocks per CTA than stages (the ring wraps; then the partial tile overwrites the ring's first
            # bytes, except in the deep ring, where it has its own), a partial last block
            ("sm90 skinny T64 wrap deep splits 2 40x129x1608", sk90("2", "deep"), mm(40, 129, 1608, act="gelu")),
            ("sm90 skinny T64 wrap deep splits 1 fp16 33x65x904", sk90("1", "deep"),
             mm(33, 65, 904, dtype=torch.float16)),
            ("sm90 skinny T64 wrap short splits 2 40x129x1608", sk90("2", "short"), mm(40, 129, 1608, act="gelu")),
            ("sm90 skinny T64 wrap short splits 1 fp16 33x65x904", sk90("1", "short"),
             mm(33, 65, 904, dtype=torch.float16)),
            ("sm90 skinny T32 wrap splits 1 fp16 29x65x904", sk90("1"), mm(29, 65, 904, dtype=torch.float16)),
            ("sm90 skinny T16 wrap splits 1 9x130x1400", sk90("1"), mm(9, 130, 1400, act="silu"))]
    # sm90 stream-K: a capped grid cuts tiles into pieces (partials, flags, the owner's add); SPLIT_FILL keeps
    # the few tiles off split-K, which the binding decides first
    out += [("sm90 stream-K wide 640x512x320 grid 7",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_STREAMK": "on", "CUTORCH_GEMM_SM90_GRID": "7",
              "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
             mm(640, 512, 320)),
            # stream-K in 2x1 clusters (by default past K = 4096; forced here): a cluster's two CTAs cut the same K
            # ranges, each with its own partial slot; 9 tile rows leave the last pair's second tile past M
            ("sm90 stream-K in pairs 1152x1000x1000 grid 6",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_STREAMK": "on", "CUTORCH_GEMM_SM90_GRID": "6",
              "CUTORCH_GEMM_SM90_CLUSTER": "2", "CUTORCH_GEMM_SM90_STREAMK_PAIRS": "on",
              "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
             mm(1152, 1000, 1000, act="gelu_tanh")),
            # (rows of 1000 elements are not 128-byte multiples: without CLUSTER=1 it would take 2x1 clusters,
            # whose stream-K is off at this K)
            ("sm90 stream-K last gelu 1000x1000x1000 grid 5",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_STREAMK": "last", "CUTORCH_GEMM_SM90_GRID": "5",
              "CUTORCH_GEMM_SM90_CLUSTER": "1", "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
             mm(1000, 1000, 1000, act="gelu")),
            # by the rule (132 SMs): 140 tiles, a last round of 8, all of them cut ("wide")
            ("sm90 stream-K sparse last round gelu_tanh 1280x3584x4096", {}, mm(1280, 3584, 4096, act="gelu_tanh")),
            # "full": one partial round spread over every SM (forced; 6 tiles of 65 k-blocks, ~22 pieces a
            # tile, split-K kept off), and by the rule (132 SMs: 72 tiles of 96 k-blocks)
            ("sm90 stream-K full 320x512x4160",
             {"CUTORCH_GEMM_SM90_CONFIG": "coop", "CUTORCH_GEMM_SM90_STREAMK": "full", "CUTORCH_GEMM_SM90_SPLIT_FILL": "1000"},
             mm(320, 512, 4160)),
            ("sm90 stream-K full round silu 768x3072x6144", {}, mm(768, 3072, 6144, act="silu"))]
    # the SwiGLU element-wise passes: 16-byte vectors (F = 64) and single elements (odd F, a
    # row-sliced [gate | up])
    def swiglu_pointwise(rows, f, pad):
        def run():
            base = torch.randn(rows, 2 * f + pad, device=dev, dtype=bf16)
            gu = base[:, pad:]
            grad = torch.randn(rows, f, device=dev, dtype=bf16)
            h = cg.swiglu(gu)
            dgu = torch.ops.gemm.swiglu_backward(grad, gu)
            g64 = gu.double().cpu().requires_grad_()
            ref = torch.nn.functional.silu(g64[:, :f]) * g64[:, f:]
            ref.backward(grad.double().cpu())
            return torch.cat([h, dgu], 1), torch.cat([ref.detach(), g64.grad], 1), 2e-2
        return run

    out += [("swiglu pointwise 130x64", {}, swiglu_pointwise(130, 64, 0)),
            ("swiglu pointwise 33x13 sliced", {}, swiglu_pointwise(33, 13, 3))]

    # the MoE combine and its backward: 16-byte vectors (H = 64) and single elements (H = 13), and
    # a broken permutation (one index negative, one past the rows: nothing read or written there)
    def moe_combine(tokens, k, h, broken):
        def run():
            rows = tokens * k
            y = torch.randn(rows, h, device=dev, dtype=bf16)
            inv = torch.randperm(rows, device=dev)
            keep = torch.ones(rows, device=dev)
            if broken:
                inv[0], inv[-1] = -1, rows + 7
                keep[0] = keep[-1] = 0
            w = torch.rand(tokens, k, device=dev)
            grad = torch.randn(tokens, h, device=dev, dtype=bf16)
            out = cg.ops.moe_combine(y, inv, w, k)
            gy, gw = torch.ops.gemm.moe_combine_backward(grad, y, inv, w, k)
            safe = inv.clamp(0, rows - 1)
            wk = (w.reshape(-1) * keep).double()
            ref = (y.double()[safe] * wk[:, None]).reshape(tokens, k, h).sum(1)
            ref_gw = (y.double()[safe] * grad.double().repeat_interleave(k, 0)).sum(1) * keep.double()
            return (torch.cat([out.double().reshape(-1), gw.double().reshape(-1)]),
                    torch.cat([ref.reshape(-1), ref_gw]), 2e-2)
        return run

    out += [("moe combine 37x4x64", {}, moe_combine(37, 4, 64, False)),
            ("moe combine 9x2x13 broken permutation", {}, moe_combine(9, 2, 13, True))]
    if quick:  # racecheck / synccheck are slow: one case per family
        keep = ("sm90 coop bf16", "sm90 fit", "sm90 pingpong bf16", "sm90 pingpong128 bf16 129", "compact", "coop cluster", "fp8", "swiglu", "pointer-array", "split-K 16",
                "sm80 bf16", "sm80 tf32 rows8", "sm80 split-K fused", "sm80 sliced-K", "simt", "skinny w8", "sm90 skinny T16", "sm90 skinny T64 wrap", "swiglu pointwise", "stream-K", "moe combine", "half tiles", "deferred store plain", "deferred store grouped", "decode", "grouped-K tails")
        out = [c for c in out if any(k in c[0] for k in keep)]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one case per family (racecheck / synccheck)")
    p.add_argument("--only", default="", help="run only the cases whose name contains this text")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("sanitize_sweep: no CUDA GPU; nothing to run")
        return 0
    failed = 0
    torch.manual_seed(0)
    for name, env, fn in cases(args.quick):
        if args.only and args.only not in name:
            continue
        old = {k: os.environ.get(k) for k in env}
        tf32 = torch.backends.cuda.matmul.allow_tf32
        os.environ.update({k: v for k, v in env.items() if k != "TF32"})
        torch.backends.cuda.matmul.allow_tf32 = env.get("TF32") == "1"
        try:
            out, ref, tol = fn()
            torch.cuda.synchronize()
            ok, err = _close(out, ref, tol)
            print(f"{'ok  ' if ok else 'FAIL'} {name}: rel err {err:.1e}", flush=True)
            failed += not ok
        except Exception as exc:  # a launch error belongs to this case
            print(f"FAIL {name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
            failed += 1
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            for k, v in old.items():
                if k == "TF32":
                    continue
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    print(f"sanitize_sweep: {failed} wrong result(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    import cutorch_gemm as cg  # noqa: E402  (after the path: run from anywhere)
    sys.exit(main())
