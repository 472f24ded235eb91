"""cutorch_gemm: CUTLASS-style GEMM, grouped GEMM and fused-epilogue kernels as PyTorch ops.

The ops live in ``torch.ops.gemm`` (registered by the native module ``cutorch_gemm._C``);
this package adds their fake (meta) kernels, typed wrappers and ``explain`` (their autograd and vmap kernels are
C++: csrc/torch/autograd_*.cpp, vmap_kernels.cpp).
"""
from __future__ import annotations

import torch  # noqa: F401  (the native module links against torch's libraries)

from . import _C  # noqa: F401  registers torch.ops.gemm.*
from . import _fake  # noqa: F401  register_fake for every op
from . import _flops  # noqa: F401  FLOP formulas for torch.utils.flop_counter
from . import nn  # noqa: F401  Linear, replace_linear
from .dropin import linear, matmul
from .enable import enable
from .explain import Explanation, explain
from .ops import ACTIVATIONS, bmm, gemm, grouped_gemm, grouped_mm, mm, moe_combine, scaled_mm, swiglu

__version__ = "0.1.0"

__all__ = ["mm", "gemm", "bmm", "matmul", "linear", "grouped_mm", "grouped_gemm", "scaled_mm", "swiglu", "moe_combine", "enable", "nn",
           "explain", "Explanation", "ACTIVATIONS", "__version__"]
