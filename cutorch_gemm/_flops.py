"""FLOP formulas for torch.utils.flop_counter.FlopCounterMode (what training scripts use to
compute MFU): without them it counts our GEMMs as zero FLOPs. 2 * M * N * K per product, as
torch counts aten.mm / addmm / bmm (epilogues, bias and activations are not counted, as there).

grouped_mm is counted over its whole grouped extent (offs[-1] would need a device read; rows or
columns past it are zero-filled, not computed, so the count is an upper bound there; MoE routing
places every token, where it is exact).

Registered when torch.utils.flop_counter is imported (now, if it already is; else by a one-shot
import hook): importing it here cost `import cutorch_gemm` 70 ms (27 -> 97 ms on the CPU machine).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys

import torch

_MODULE = "torch.utils.flop_counter"


def _mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    m, k = a_shape
    return 2 * m * k * b_shape[1]


def _bmm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    batch, m, k = a_shape
    return 2 * batch * m * k * b_shape[2]


def _grouped_mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    if len(a_shape) == 2 and len(b_shape) == 3:  # (T, K) x (G, K, N): each row against its group's weight
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 3 and len(b_shape) == 2:  # (G, M, K) x (K, T): each column against its group's a
        return 2 * a_shape[1] * a_shape[2] * b_shape[1]
    if len(a_shape) == 2 and len(b_shape) == 2:  # (M, T) x (T, N): the reduction split into groups
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]  # (G, M, K) x (G, K, N)


def _grouped_gemm_flops(a_shapes, b_shapes, *args, out_shape=None, **kwargs) -> int:
    return sum(2 * a[0] * a[1] * b[1] for a, b in zip(a_shapes, b_shapes))


def _register(flop_counter) -> None:
    ops = torch.ops.gemm
    if ops.mm in flop_counter.flop_registry:
        return
    register = flop_counter.register_flop_formula
    register([ops.mm, ops.gemm, ops.scaled_mm])(_mm_flops)
    register(ops.bmm)(_bmm_flops)
    register(ops.grouped_mm)(_grouped_mm_flops)
    register(ops.grouped_gemm)(_grouped_gemm_flops)


class _OnImport(importlib.abc.MetaPathFinder):
    """Finds torch.utils.flop_counter through the other finders and registers the formulas right
    after the module runs; removes itself on first use."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _register(module)

        spec.loader.exec_module = exec_module
        return spec


if _MODULE in sys.modules:
    _register(sys.modules[_MODULE])
else:
    sys.meta_path.insert(0, _OnImport())
