#pragma once
// SwiGLU as a stand-alone element-wise pass over a [gate | up] matrix (the layout of the grouped
// kernels' fused SwiGLU): forward h = silu(gate) * up, backward d[gate | up] from dh. The GEMM
// epilogues fuse the forward where nothing needs gate and up afterwards (inference); training
// keeps the GEMM output [gate | up] for the backward and runs these two passes, each one read
// and one write of every element (PyTorch's silu, mul and their backward take 14 passes over an
// F-wide matrix; nn.GatedMLP measures the difference). Kernel: kernel/swiglu_pointwise_kernel.cuh.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cutorch_gemm/core/types.h"

namespace cutorch_gemm {

struct SwigluArgs {
  DType dtype;            // of every tensor (fp16, bf16, fp32, fp64)
  int64_t rows = 0;
  int64_t f = 0;          // width of gate (and of up, h, dh)
  const void* gate_up;    // rows x 2f, column stride 1, row stride ld_gate_up
  int64_t ld_gate_up = 0;
  const void* dh;         // backward: rows x f, column stride 1, row stride ld_dh
  int64_t ld_dh = 0;
  void* out;              // forward: h, rows x f contiguous; backward: d[gate | up], rows x 2f contiguous
};

cudaError_t swiglu_forward(const SwigluArgs& args, int num_sms, cudaStream_t stream);
cudaError_t swiglu_backward(const SwigluArgs& args, int num_sms, cudaStream_t stream);

}  // namespace cutorch_gemm
