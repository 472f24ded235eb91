"""FLOP formulas for torch.utils.flop_counter.FlopCounterMode (what training scripts use to
compute MFU): without them it counts our GEMMs as zero FLOPs. 2 * M * N * K per product, as
torch counts aten.mm / addmm / bmm (epilogues, bias and activations are not counted, as there).

grouped_mm is counted over its whole grouped extent (offs[-1] would need a device read; rows or
columns past it are zero-filled, not computed, so the count is an upper bound there; MoE routing
places every token, where it is exact).
"""
from __future__ import annotations

import torch
from torch.utils.flop_counter import register_flop_formula

_ops = torch.ops.gemm


@register_flop_formula([_ops.mm, _ops.gemm, _ops.scaled_mm])
def _mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    m, k = a_shape
    return 2 * m * k * b_shape[1]


@register_flop_formula(_ops.bmm)
def _bmm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    batch, m, k = a_shape
    return 2 * batch * m * k * b_shape[2]


@register_flop_formula(_ops.grouped_mm)
def _grouped_mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    if len(a_shape) == 2 and len(b_shape) == 3:  # (T, K) x (G, K, N): each row against its group's weight
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 3 and len(b_shape) == 2:  # (G, M, K) x (K, T): each column against its group's a
        return 2 * a_shape[1] * a_shape[2] * b_shape[1]
    if len(a_shape) == 2 and len(b_shape) == 2:  # (M, T) x (T, N): the reduction split into groups
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]  # (G, M, K) x (G, K, N)


@register_flop_formula(_ops.grouped_gemm)
def _grouped_gemm_flops(a_shapes, b_shapes, *args, out_shape=None, **kwargs) -> int:
    return sum(2 * a[0] * a[1] * b[1] for a, b in zip(a_shapes, b_shapes))
