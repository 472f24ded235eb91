"""explain's mirrors of the binding's Hopper launch rules (csrc/torch/cuda/cuda_common.cpp, device/sm90_*.h): the
operands' strides and row alignment as the binding reports them, the L2 policy, stream-K and split-K, clusters, the
fit-width / big / pair tiles and the grouped skinny plan, each with the words explain gives it. Split from explain.py
(which keeps the per-op explanations) to keep either file readable."""
from __future__ import annotations

import os
import re

import torch

from . import _C
from ._sm90_notes import _defer_note, _tile_width


def _strides(t: torch.Tensor, k_dim: int, mn_dim: int, k: int):
    """(k_stride, mn_stride) as the binding reports them: size-1 dimensions count as stride 1; a
    single row / column gets a padded stride along the dimension it never steps (set_2d)."""
    def s(d):
        return 1 if t.shape[d] == 1 else t.stride(d)
    k_s, mn_s = s(k_dim), s(mn_dim)
    if t.shape[mn_dim] == 1 and k_s == 1:
        mn_s = (k + 7) // 8 * 8
    mn = t.shape[mn_dim]
    if k == 1 and mn_s == 1 and mn > 1:
        k_s = (mn + 7) // 8 * 8
    return k_s, mn_s


def _rows_128b(t: torch.Tensor, k_dim: int, mn_dim: int) -> bool:
    """The binding's sm90_rows_128b on t's strides (size-1 dimensions count as stride 1, as the
    binding reports them)."""
    def st(d):
        return 1 if t.shape[d] == 1 else t.stride(d)
    return _C.sm90_rows_128b(st(k_dim), st(mn_dim), t.element_size())


def _operands_rows_128b(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The binding's sm90_operands_rows_128b: both operands' TMA rows are 128-byte multiples."""
    return _rows_128b(a, a.dim() - 1, a.dim() - 2) and _rows_128b(b, b.dim() - 2, b.dim() - 1)


_MODE_NAMES = {"none": "batched", "m": "grouped_m", "n": "grouped_n", "k": "grouped_k"}


def _l2_hint_on() -> bool:
    """CUTORCH_GEMM_L2_HINT as the launchers read it (exactly "off" turns the policy off)."""
    return os.environ.get("CUTORCH_GEMM_L2_HINT") != "off"


def _stream_note(config: str, m: int, mode: str, batch: int, b: torch.Tensor, k_chunk: int, cluster_note: str) -> str:
    """The binding's sm90_b_streams: B read once, its TMA loads carry the L2 evict-first policy (not in
    clustered launches, whose B halves are multicast)."""
    block_m = 128 if "_Coop_" in config else 64
    b_3d = b.dim() == 3 and b.shape[0] > 1 and b.stride(0) != 0
    if (_l2_hint_on() and not cluster_note
            and _C.sm90_b_streams((m + block_m - 1) // block_m, _MODE_NAMES[mode], batch, b_3d, k_chunk)):
        return "; B streamed from DRAM: its TMA loads carry the L2 evict-first policy"
    return ""


def _grouped_skinny_plan(a, b, m, n, k, groups, prop, sm90_built, dtype, forced, swiglu=False) -> dict:
    """The binding's sm90_grouped_skinny_refusal for a grouped_mm 2D x 3D call, with its config."""
    a_k, a_m = _strides(a, -1, -2, k)
    b_k, b_n = _strides(b, -2, -1, k)
    knob = os.environ.get("CUTORCH_GEMM_SKINNY", "").strip().lower()
    env = {name: os.environ.get(name, "").strip() for name in ("CUTORCH_GEMM_SKINNY_SPLITS", "CUTORCH_GEMM_SKINNY_SLOTS")}
    splits, slots = (int(v) if v.isdigit() else 0 for v in env.values())
    return _C.sm90_grouped_skinny_plan(prop.major, sm90_built, dtype, groups, m, n, k, a_m, a_k, b_k, b_n,
                                       b.stride(0), a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0,
                                       "" if forced == "auto" else forced, knob, prop.multi_processor_count,
                                       splits, slots, swiglu)


def _decode_note(config: str, mode: str, rows: int, groups: int) -> str:
    """Grouped along M with fewer rows than groups (MoE decode): the binding's rule
    (heuristic_extents) counts at most one group per row, which can pick the 64x128 config."""
    if mode != "m" or rows >= groups:
        return ""
    tiles = ": 64x128 tiles (64x256 would fill under half the SMs)" if "x128x" in config else ""
    return f"; at most {max(1, rows)} of the {groups} groups have rows (decode), the config rule counts those{tiles}"


# explain's words for each mid-size rule (_C.sm90_mid_size_rule; device/sm90_configs.h)
_MID_NOTES = {
    "coop_deep_k": "; cooperative tiles: a mid-size problem with a deep K whose 64x128 tiles would fill one "
                   "partial round without a split",
    "small_64": "; 64x64 tiles: a small problem whose 64x128 tiles would fill under a quarter of the SMs",
    "half_round_64": "; 64x64 tiles: a mid-size problem whose 64x128 tiles would fill at most half of the SMs "
                     "without a split (the 64x64 tiles fill one round)",
}


def _split_fill() -> int:
    """choose_sm90_split's `fill` as the binding reads it (CUTORCH_GEMM_SM90_SPLIT_FILL, default 4)."""
    fill = os.environ.get("CUTORCH_GEMM_SM90_SPLIT_FILL", "").strip()
    return int(fill) if fill.isdigit() and int(fill) > 0 else 4


def _split_kind(config: str) -> str:
    """choose_sm90_split's name for a (16- or 8-bit) sm90 config."""
    if "_Coop_" in config:
        return "coop"
    if "_64x64x" in config:
        return "pingpong64"
    return "pingpong128" if "x128x" in config else "pingpong"


def _cluster_note(config: str, fixed_grid: bool, swiglu: bool, m: int, a: torch.Tensor, b: torch.Tensor,
                  dense: bool = False, n: int = 0, k: int = 0, sms: int = 0, b_mn: bool = False,
                  block_k: int = 64) -> str:
    """The launch's cluster, as the binding's rule (choose_sm90_cluster) picks it (dense: one unsplit
    dense 16-bit (block_k 64), tf32 (32) or 8-bit (128) problem of n columns and depth k, for the K rules). An
    MN-major B (b_mn) takes none where half a tile is not whole 64-column boxes (launch_sm90)."""
    if b_mn and (_tile_width(config) // 2) % 64:
        return ""
    coop = "_Coop_" in config
    block_m = 192 if config.startswith("Sm90_192x") else 128 if coop else 64
    tiles_m = -(-m // block_m)
    forced = os.environ.get("CUTORCH_GEMM_SM90_CLUSTER", "").strip()
    rows = _operands_rows_128b(a, b)
    tiles = tiles_m * -(-n // _tile_width(config))
    if _C.choose_sm90_cluster(coop, fixed_grid, swiglu, tiles_m, rows, forced, dense, k, tiles, sms,
                              _tile_width(config), block_m, block_k) == 1:
        return ""
    if forced == "2":
        why = "forced: CUTORCH_GEMM_SM90_CLUSTER=2"
    elif block_m == 192 and rows:
        why = "192x192 tiles always pair"
    elif not rows:
        why = "operand rows are not 128-byte multiples: each TMA box row spans two L2 lines"
    elif block_k != 32 and k <= 32 * block_k:
        why = f"K <= {32 * block_k} (32 K slices) over 8 or more rounds of tiles"
    else:
        why = (f"K > {32 * block_k} (32 K slices) over 3.5 or more nearly full rounds of tiles: at the power cap, "
               "the halved B reads from L2 leave a higher clock")
    return f"; 2x1 clusters ({why}): the two CTAs of a cluster share each B tile (TMA multicast)"


_FIT_NOTE = ("; fit-width cooperative tiles: the tile width makes the tile count fill the SMs' rounds, D stored "
             "from registers (no stream-K or split-K)")
_BIG_WHY = ("the big-tile rule, choose_sm90_big: K {min_k}-{max_k}, in place of 64x256 ping-pong or fit-width "
            "tiles, filling at least 90% of at most 4 rounds; fewer L2 bytes per FLOP, so a higher clock at the "
            "power cap")
_C320_NOTE = ("; 128x320 cooperative tiles ({why}): two m64n160k16 per k16 step, B in two 160-row boxes, 3 stages; "
              "D by TMA where the launch can (no C), else from registers")
_C192X192_NOTE = ("; 192x192 cooperative tiles ({why}): three consumer warpgroups of 64 rows, 4 stages; D by TMA where "
                  "the launch can (no C), else from registers")
_FIT192_NOTE = ("; fit-width cooperative tiles: the tile width makes the tile count fill the SMs' rounds (no "
                "stream-K or split-K; widths that are not multiples of 64 store their last slice over the "
                "one before)")
_PAIR240_NOTE = ("; 128x240 tiles, which fill the SMs' rounds at least 5% better than 128x256 ones (the last "
                  "64-column slice of a tile overlaps the one before; the compact deferring kernel only, no stream-K "
                  "or split-K)")
_ACT_NOTE = ("; CUTORCH_GEMM_SM90_ACT_PINGPONG=on, an activation, K-major operands, K <= {max_k} and "
             "M*N*K <= 2^{max_mnk}: 64x256 ping-pong tiles, "
             "whose two consumers take turns, so one's epilogue runs under the other's mainloop (the cooperative tiles "
             "apply it with the tensor core idle)")
_PAIRS_NOTE = ("; operand rows are not 128-byte multiples: cooperative tiles in 2x1 clusters (ping-pong tiles over "
               "more than one round fell far behind there), 192 wide where those pairs fill the rounds at least "
               "15% better than 256-wide ones, else 240 wide (launches that defer every tile's store) where they "
               "fill them at least 5% better")


def _fit_config(a, b, op_a, op_b, mode, batch, m, n, k, sms, forced, kwargs, base: str,
                coop_sk: bool = False) -> str:
    """The binding's fit-width rule (cuda_common.cpp, choose_sm90_fit): one dense fp16 / bf16 problem, both
    operands K-major, B MN-major or both MN-major (an MN-major B on 128-byte-multiple rows only: sm90_fit_launch_ok),
    D = alpha * acc (+ bias) (+ beta * C as 4-byte aligned pairs; no activation, even N), no forced
    epilogue path other than
    "direct", or with an activation where every tile defers its store; with rows that are not 128-byte
    multiples, its pair rule (choose_sm90_pairs) instead. The other dense fp16 / bf16 launches on such rows take
    the pair rule's 128x256 pairs where it moves them off ping-pong tiles; the 128x240 tiles serve launches that defer every tile's store (sm90_defer_launch_ok), with or without
    an activation. Then the big-tile rule (choose_sm90_big: 128x320 or 192x192 in place of 64x256 ping-pong or fit
    tiles). base: the heuristic's config. Returns the config's name, or "" where the heuristic's stays."""
    if a.dtype not in (torch.float16, torch.bfloat16) or mode != "none" or batch != 1:
        return ""
    activation = kwargs.get("activation", "none")
    k_major = not (op_a[1] or op_b[1])
    rows_128b = _operands_rows_128b(a, b)
    layout_ok = rows_128b if op_b[1] else not op_a[1]
    has_c = kwargs.get("c") is not None and float(kwargs.get("beta", 0.0)) != 0.0
    c = kwargs.get("c")
    c_pairs = not has_c or (c.dim() == 2 and c.stride(1) == 1 and c.stride(0) % 2 == 0 and c.data_ptr() % 4 == 0)
    epilogue = os.environ.get("CUTORCH_GEMM_SM90_EPILOGUE", "").strip().lower()
    eligible = layout_ok and activation in (None, "none") and not n % 2 and c_pairs and epilogue in ("", "direct")
    # the 240-wide tiles: launches whose every tile defers its store (sm90_defer_launch_ok)
    # (any activation: the packing has them all; "_Coop_": a width that defers exact GELU too)
    defer_ok = k_major and not has_c and not epilogue and bool(_defer_note("_Coop_", a, mode, n, 1, kwargs))
    # the big tiles (choose_sm90_big, after the fit rules): launches with both operands K-major whose D the TMA stores,
    # plain or bias + an activation (defer_ok); forced ("coop320", "coop192x192"), on any rows (unaligned: 2x1
    # clusters), and C, an fp32 D and the direct store too
    big_ok = defer_ok and rows_128b and not epilogue
    big_forced_ok = defer_ok or (eligible and k_major)
    big_on = os.environ.get("CUTORCH_GEMM_SM90_BIG", "").strip().lower() != "off"
    # launches with an activation whose every tile defers its store (sm90_fit_act_ok)
    fit_defer_off = os.environ.get("CUTORCH_GEMM_SM90_FIT_DEFER", "").strip().lower() == "off"
    if activation not in (None, "none") and defer_ok and not fit_defer_off and forced != "coop128":
        eligible = True
    fit = _C.choose_sm90_fit(m, n, k, sms, forced, rows_128b, base, eligible, defer_ok, coop_sk, bool(op_b[1]))
    return _C.choose_sm90_big(fit or base, m, n, k, sms, forced, big_forced_ok, big_ok, big_on) or fit


def _mn_b_note(config: str, b_mn: bool) -> str:
    """A fit width that is not a multiple of 64 with an MN-major B runs as Sm90MnB (device/sm90_configs.h): whole
    64-column B boxes, as many stages as fit (sm90_mn_b_stages), which the config's name (the K-major ring) does not
    say."""
    width = _tile_width(config)
    match = re.search(r"_S(\d+)$", config)
    if not b_mn or width % 64 == 0 or match is None:
        return ""
    stages = _C.sm90_mn_b_stages(width, int(match.group(1)))
    return (f"; b MN-major: B read in whole 64-column boxes ({-(-width // 64) * 64} columns a stage), "
            f"{stages} stages")


def _streamk_note(m: int, n: int, k: int, elem_bytes: int, sms: int, pairs: bool = False) -> str:
    """The binding's stream-K plan for a dense cooperative launch: unclustered (sm90_streamk_plan), or in 2x1 clusters
    (pairs: sm90_streamk_pair_plan, over pair tiles and sms / 2 clusters or the capped grid's, where
    sm90_streamk_pairs allows: by default 16-bit operands with K > 4096, CUTORCH_GEMM_SM90_STREAMK_PAIRS=on / off;
    the GPU's cluster occupancy may hold fewer clusters: then the launch plans over those)."""
    cap = os.environ.get("CUTORCH_GEMM_SM90_GRID", "").strip()
    plan = _C.sm90_streamk_pair_plan if pairs else _C.sm90_streamk_plan
    tiles, units, sk = plan(m, n, k, 32 if elem_bytes == 4 else 64, sms, int(cap) if cap.isdigit() else 0,
                            os.environ.get("CUTORCH_GEMM_SM90_STREAMK", "").strip().lower())
    if sk == 0:
        return ""
    if pairs:
        return (f"; stream-K over the last {sk} of {tiles} pair tiles (their k-blocks split evenly over {units} "
                "clusters, each CTA's fp32 partials added by its tile's last cluster)")
    return (f"; stream-K over the last {sk} of {tiles} tiles (their k-blocks split evenly over the {units} "
            "CTAs, fp32 partials added by each tile's last CTA)")
