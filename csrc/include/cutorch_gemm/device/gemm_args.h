#pragma once
// The plain description of one GEMM launch that the torch binding builds from tensors. Torch-
// and CUDA-free: pointers, extents, strides in elements, scalars.

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/epilogue/fusion.h"
#include "cutorch_gemm/scheduler/problem_visitor.h"

namespace cutorch_gemm {

struct GemmArgs {
  DType dtype;          // A, B, C and bias element type (scaled launches: D's 16-bit type)
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
  // gemm.scaled_mm (8-bit operands, no C, no activation): D = sa * sb * acc + bias[n] in fp32,
  // sa = scale_a[m] (scale_a_rows) or scale_a[0], sb = scale_b[n] (scale_b_cols) or
  // scale_b[0]; the bias is then float32. Unused (nullptr) by every other launch.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  bool scale_a_rows;
  bool scale_b_cols;
  // sm90 split-K partial launches: batch entry z is the K range [z * k_chunk, (z + 1) * k_chunk)
  // of one dense problem (a multiple of the config's K slice; 0: batch entries are problems).
  int k_chunk;
  // sm90 stream-K (device/sm90_cluster_streamk.h, choose_sm90_streamk): room for `sk_slots` CTAs' fp32
  // partial tiles (128 x 256 each) and two ready flags per CTA, the flags zeroed by the caller.
  // nullptr: no stream-K for this launch.
  float* sk_partials = nullptr;
  int* sk_flags = nullptr;
  int sk_slots = 0;
};

}  // namespace cutorch_gemm
