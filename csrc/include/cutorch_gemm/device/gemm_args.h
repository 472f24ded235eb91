#pragma once
// The plain description of one GEMM launch that the torch binding builds from tensors. Torch-
// and CUDA-free: pointers, extents, strides in elements, scalars.

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/epilogue/fusion.h"
#include "cutorch_gemm/scheduler/problem_visitor.h"

namespace cutorch_gemm {

struct GemmArgs {
  DType dtype;          // A, B, C and bias element type
  bool out_f32;         // D is float32 (16-bit inputs only); else D has `dtype`
  int batch;            // batch entries or groups (grid z)
  ProblemShape shape;   // extents, strides, group mode and offsets
  const void* a;
  const void* b;
  const void* c;        // nullptr when absent or beta == 0 (then never read)
  const void* bias;     // nullptr when absent; bias[n] at bias + problem.bias_off
  void* d;
  double alpha;
  double beta;
  Activation act;
};

}  // namespace cutorch_gemm
