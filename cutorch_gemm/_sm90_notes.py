"""explain's notes on which build of the Hopper kernel runs a launch and what its epilogue does (mirrors of
device/sm90_launch.cuh's choices: the compact and bare kernels, the deferred store, C by TMA), and the tile width a
config's name gives."""
from __future__ import annotations

import os
import re

import torch

from . import _C


def _tile_width(config: str) -> int:
    """The tile's columns from a Hopper config's name (Sm90_<rows>x<columns>x<k>_...)."""
    match = re.match(r"Sm90_\d+x(\d+)x\d+_", config)
    return int(match.group(1)) if match else 256


def _variant_note(mode: str, a_mn_major: bool, defer_note: str, swiglu: bool) -> str:
    """Which build of the cooperative kernel runs a deferring launch (sm90_launch.cuh): the compact one on
    fixed tile grids (dense, batched, grouped-K), kGroupEnds for grouped-M forwards with a K-major A."""
    if not defer_note or swiglu:
        return ""
    if mode in ("none", "k"):
        if os.environ.get("CUTORCH_GEMM_SM90_EPILOGUE", "").strip() == "general":
            return ""
        return "; the compact kernel (only the deferred-store epilogue and a fixed-grid scheduler compiled in)"
    if mode == "m" and not a_mn_major and \
            os.environ.get("CUTORCH_GEMM_SM90_GROUP_ENDS", "").strip().lower() != "off":
        return "; the kGroupEnds kernel (the deferred store only; a group's partial last tile from registers)"
    return ""


def _pingpong_compact(n: int, out_bytes: int) -> bool:
    """Whether a plain dense or batched ping-pong launch takes the compact build (sm90_launch.cuh: p.tma_store, D by
    TMA with 16-byte aligned rows; not with CUTORCH_GEMM_SM90_EPILOGUE=staged / direct / general)."""
    return (n * out_bytes) % 16 == 0 and os.environ.get("CUTORCH_GEMM_SM90_EPILOGUE", "").strip() in ("", "fused")


def _bare_note(config: str, a: torch.Tensor, k_major: bool, mode: str, n: int, splits: int, streamk_note: str,
               variant_note: str, kwargs) -> str:
    """The bare compact kernel (sm90_launch.cuh's bare, the kernel's kBare; the configs of sm90_configs.h's
    Sm90BareConfigs, asked through the binding): D = A B alone, dense or batched, both operands K-major, a 16-bit D by
    TMA, no bias, alpha 1, no stream-K or split-K."""
    if not _C.sm90_bare_config(config) or a.dtype not in (torch.float16, torch.bfloat16) or not k_major:
        return ""
    if mode != "none" or splits > 1 or streamk_note or kwargs.get("out_dtype") not in (None, a.dtype):
        return ""
    if kwargs.get("bias") is not None or kwargs.get("activation", "none") not in (None, "none"):
        return ""
    if (kwargs.get("c") is not None and float(kwargs.get("beta", 0.0)) != 0.0) or float(kwargs.get("alpha", 1.0)) != 1.0:
        return ""
    if os.environ.get("CUTORCH_GEMM_SM90_BARE", "").strip().lower() == "off":
        return ""
    if "_Coop_" in config:
        ok = "compact kernel" in variant_note  # (the deferring launch's compact build, _variant_note)
    else:
        ok = _pingpong_compact(n, 2)
    return ("; bare: the compact kernel with D = A B alone compiled in (no bias, alpha, activation or stream-K "
            "code, so a launch of one tile per CTA fetches less cold code)") if ok else ""


def _ksplit_note(config: str, a: torch.Tensor, mode: str, m: int, n: int, k: int, batch: int, splits: int,
                 chunk: int, cluster_note: str, num_sms: int, kwargs) -> str:
    """The K-split pair (sm90_launch.cuh's p.ksplit, the rule sm90_configs.h's sm90_ksplit_ok, asked through the
    binding): the compact 64x64 ping-pong kernel (D by TMA, no activation or C) where every CTA has one tile at most."""
    if "_Pingpong_" not in config or a.dtype not in (torch.float16, torch.bfloat16) or mode != "none":
        return ""
    if kwargs.get("activation", "none") not in (None, "none") or (
            kwargs.get("c") is not None and float(kwargs.get("beta", 0.0)) != 0.0):
        return ""
    if not _pingpong_compact(n, 4 if kwargs.get("out_dtype") == torch.float32 else 2):
        return ""
    shape = re.match(r"Sm90_(\d+)x(\d+)x(\d+)_Pingpong_S(\d+)$", config)
    if not shape:
        return ""
    tile_m, tile_n, block_k, stages = (int(v) for v in shape.groups())
    items = -(-m // tile_m) * -(-n // tile_n) * batch * splits
    ctas = min(items, num_sms)
    env_p = os.environ.get("CUTORCH_GEMM_SM90_PRODUCERS", "").strip()
    # (sm90_producer_warps: std::atoi of the variable, clamped to 1..4; the config's 4 when unset)
    producers = 4 if not env_p else min(max(int(env_p) if env_p.lstrip("-").isdigit() else 0, 1), 4)
    k_blocks = -(-(chunk if splits > 1 else k) // block_k)
    ok = _C.sm90_ksplit_ok(items, ctas, 2 if cluster_note else 1, False, tile_n, k_blocks, producers, stages,
                           os.environ.get("CUTORCH_GEMM_SM90_KSPLIT", "").strip().lower())
    return ("; K-split pair: both consumer warpgroups on the CTA's one tile, k-blocks alternating, the second's "
            "fragment added through shared memory") if ok else ""


def _defer_note(config: str, a: torch.Tensor, mode: str, n: int, splits: int, kwargs) -> str:
    """The deferred store (sm90_launch.cuh's defer_store, the kernel's kDefer): cooperative 16-bit
    launches with a 16-bit D. Plain or bias + activation: D takes TMA stores (rows 16-byte aligned,
    not grouped along N), no C, a bias read as 4-byte column pairs. The fused
    SwiGLU: its register epilogue's pairs (F = N / 2 even), the same bias pairs."""
    if "_Coop_" not in config or a.element_size() != 2 or splits > 1 or mode == "n":
        return ""
    if kwargs.get("out_dtype") not in (None, a.dtype):
        return ""
    if os.environ.get("CUTORCH_GEMM_SM90_DEFER", "").strip().lower() == "off":
        return ""
    activation = kwargs.get("activation", "none")
    epilogue = os.environ.get("CUTORCH_GEMM_SM90_EPILOGUE", "").strip()
    bias = kwargs.get("bias")
    pairs = bias is None or (bias.data_ptr() % 4 == 0 and (bias.dim() < 2 or bias.stride(0) % 2 == 0))
    if activation == "swiglu":
        if epilogue == "staged" or n % 4 or not pairs:
            return ""
        return ("; each tile's silu(gate) * up is packed into registers and stored one slice per k-block "
                "under the next tile's wgmma (the deferred store)")
    # Forced epilogue paths (CUTORCH_GEMM_SM90_EPILOGUE): "general" and "fused" keep a plain D's TMA store,
    # so it defers; any forced path takes an activation off the packed registers.
    tma_store = epilogue in ("", "general", "fused") if activation in (None, "none") else not epilogue
    # (exact GELU: not on the 256-wide tiles, sm90_launch.cuh)
    if not tma_store or n % 8 or not pairs or (activation == "gelu" and "x256x" in config):
        return ""
    if kwargs.get("c") is not None and float(kwargs.get("beta", 0.0)) != 0.0:
        return ""
    return ("; each tile's D is packed into registers and TMA-stored one slice per k-block under the next "
            "tile's wgmma (the deferred store)")


def _c_note(config: str, a: torch.Tensor, b_mn: bool, mode: str, batch: int, n: int, splits: int, kwargs,
            direct_fit: bool = False) -> str:
    """beta * C loaded by TMA (sm90_launch.cuh's c_loads, Sm90Params::tma_load_c): one dense 16-bit problem whose
    16-bit D takes TMA stores (N a multiple of 8), C row-major with 16-byte aligned rows and base, tiles of whole
    64-column slices; CUTORCH_GEMM_SM90_EPILOGUE unset; with an activation, not the cooperative tile with an
    MN-major b (sm90_c_acts)."""
    c = kwargs.get("c")
    if c is None or float(kwargs.get("beta", 0.0)) == 0.0 or a.element_size() != 2:
        return ""
    if direct_fit:  # (sm90_direct_c)
        return "; beta * C read as column pairs into registers (the fit-width tile stores D from there)"
    if kwargs.get("activation", "none") not in (None, "none") and "_Coop_" in config and b_mn:
        return ""
    if kwargs.get("out_dtype") not in (None, a.dtype) or mode != "none" or batch != 1 or splits > 1 or n % 8:
        return ""
    if os.environ.get("CUTORCH_GEMM_SM90_EPILOGUE", "").strip() or _tile_width(config) % 64:
        return ""
    if c.dim() != 2 or c.stride(1) != 1 or c.stride(0) <= 0 or c.stride(0) % 8 or c.data_ptr() % 16:
        return ""
    return "; beta * C loaded by TMA into the store's buffers (a tile's first slices under its mainloop)"
