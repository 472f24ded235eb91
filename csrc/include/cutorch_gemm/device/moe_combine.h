#pragma once
// The Mixture-of-Experts combine: each token's k expert outputs, stored in expert-sorted order,
// weighted and summed back into the token's row, and its backward. Replaces a weighting pass
// plus index_add_ (atomics into a zeroed (T, H) output) in the forward and a sort-based
// index_put in the backward (nn.GroupedExperts; H100, Qwen3-30B-A3B layer: those three were a
// quarter of the layer's fwd+bwd time). Kernel: kernel/moe_combine_kernel.cuh.
//
//   combine:  out[t] = sum_j w[t, j] * y[inv[t * k + j]]            (w absent: 1)
//   backward: grad_y[inv[q]] = w[q] * grad[q / k],  grad_w[q] = <y[inv[q]], grad[q / k]>
//
// inv maps a (token, slot) pair q = t * k + j to its row in y; a row index outside [0, rows)
// contributes nothing (and receives nothing). The backward first inverts inv into `order`
// (row -> pair, -1 where no valid entry names the row), then writes every row of grad_y once:
// rows no pair names get zeros, so grad_y needs no memset of its own.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cutorch_gemm/core/types.h"

namespace cutorch_gemm {

struct MoeCombineArgs {
  DType dtype;              // of y, grad, out, grad_y (fp16, bf16, fp32, fp64)
  int64_t tokens = 0;       // T
  int64_t k = 0;            // slots per token
  int64_t h = 0;            // row width
  const void* y;            // T * k rows x h, contiguous
  const int64_t* inv;       // T * k row indices
  const float* w;           // T * k weights (fp32), or null
  const void* grad;         // backward: T x h, contiguous
  void* out;                // combine: T x h contiguous; backward: grad_y, T * k x h contiguous
  float* grad_w;            // backward: T * k (zeroed by the caller), or null (no weight gradient)
  int64_t* order;           // backward: T * k entries of workspace, filled with -1 by the caller
};

cudaError_t moe_combine(const MoeCombineArgs& args, int num_sms, cudaStream_t stream);
cudaError_t moe_combine_backward(const MoeCombineArgs& args, int num_sms, cudaStream_t stream);

}  // namespace cutorch_gemm
