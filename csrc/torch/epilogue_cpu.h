#pragma once
// CPU evaluation of the fusion functor (epilogue/fusion.h) over a whole accumulator tensor:
// the CPU reference of every op and the `_C.epilogue_ref` test hook both use it, so the CPU
// tests check the same functor the CUDA epilogues run.

#include <ATen/ATen.h>

#include <optional>

#include "cutorch_gemm/epilogue/fusion.h"

namespace cutorch_gemm::binding {

// acc: float32/float64 tensor of any shape (..., N). c and bias are broadcast to acc's shape
// (c read only when beta != 0). Returns act(alpha * acc + beta * c + bias) in acc's dtype.
at::Tensor epilogue_cpu(const at::Tensor& acc, double alpha, double beta,
                        const std::optional<at::Tensor>& c, const std::optional<at::Tensor>& bias,
                        Activation act);

// SwiGLU of a pre-activation z (..., 2F) laid out [gate | up] along its last dimension:
// silu(gate) * up, (..., F), in z's dtype. ATen ops, so on z's device (the grouped_mm reference,
// and its CUDA path where the fused kernel epilogue does not apply).
at::Tensor swiglu_halves(const at::Tensor& z);

}  // namespace cutorch_gemm::binding
