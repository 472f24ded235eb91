#pragma once
// Input validation shared by the CPU and CUDA implementations. Every check names the argument
// and what was expected; shape / device / value problems raise ValueError, dtype problems
// TypeError (TORCH_CHECK_VALUE / TORCH_CHECK_TYPE).

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/epilogue/fusion.h"
#include "cutorch_gemm/scheduler/problem_visitor.h"

namespace cutorch_gemm::binding {

// The validated description of one dense call (mm, gemm, bmm: batch = 1 unless bmm).
struct DenseSpec {
  int64_t batch;
  int64_t m, n, k;
  at::ScalarType out_dtype;
  Activation act;
};

// The validated description of a grouped_mm call.
struct GroupedSpec {
  GroupMode mode;          // kBatched for 3D x 3D
  int64_t groups;          // G
  int64_t m, n, k;         // per-problem extents; the grouped one is the total (T)
  std::vector<int64_t> out_shape;
  at::ScalarType out_dtype;
  Activation act;          // kNone for swiglu
  bool swiglu = false;     // activation "swiglu": N is [gate | up], out_shape's last extent N / 2
};

// The validated description of a scaled_mm call.
struct ScaledSpec {
  int64_t m, n, k;
  Fp8Kind ka, kb;          // 8-bit formats of a and b
  bool scale_a_rows;       // scale_a has one value per row of a (else one for all)
  bool scale_b_cols;       // scale_b has one value per column of b (else one for all)
  at::ScalarType out_dtype;
};

DType to_dtype(at::ScalarType t);
at::ScalarType acc_dtype(at::ScalarType t);  // fp32, or fp64 for fp64
std::string shape_str(const at::Tensor& t);

// out_dtype: None -> input dtype; the input dtype itself; float32 for 16-bit inputs.
at::ScalarType check_out_dtype(const char* op, at::ScalarType in, std::optional<at::ScalarType> out);
Activation check_activation(const char* op, const std::string& name);

DenseSpec check_gemm(const char* op, const at::Tensor& a, const at::Tensor& b,
                     const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& c,
                     const std::string& activation, std::optional<at::ScalarType> out_dtype);
// gemm.mm: check_gemm's rules, plus int8 x int8 -> int32 (out_dtype None or int32).
DenseSpec check_mm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype);
DenseSpec check_bmm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype);
GroupedSpec check_grouped(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                          const std::optional<at::Tensor>& bias, const std::string& activation,
                          std::optional<at::ScalarType> out_dtype);
// gemm.scaled_mm: a (M, K) and b (K, N) of float8_e4m3fn / float8_e5m2 (each its own), fp32
// scale_a of one element or (M, 1), fp32 scale_b of one element or (1, N), bias (N,) of bf16,
// fp16 or fp32, out_dtype bf16, fp16 or fp32; one device.
ScaledSpec check_scaled_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                           const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                           at::ScalarType out_dtype);
// gemm.swiglu / gemm.swiglu_backward: gate_up (..., 2F) of fp16, bf16, fp32 or fp64; grad (...,
// F) of the same dtype, leading extents and device (backward; nullptr for the forward).
struct SwigluSpec {
  int64_t rows;  // product of the leading extents
  int64_t f;
};
SwigluSpec check_swiglu(const char* op, const at::Tensor& gate_up, const at::Tensor* grad);

// gemm.moe_combine / gemm.moe_combine_backward: y (T * k, H) of fp16, bf16, fp32 or fp64, inv
// (T * k) int32 / int64, weights (T, k) floating or absent, k >= 1; grad (T, H) of y's dtype; one
// device for all.
struct MoeCombineSpec {
  int64_t tokens;
  int64_t k;
  int64_t h;
};
MoeCombineSpec check_moe_combine(const char* op, const at::Tensor& y, const at::Tensor& inv,
                                 const std::optional<at::Tensor>& weights, int64_t k, const at::Tensor* grad);

// Checks every problem (shapes, dtypes, one device for all) before anything runs.
void check_grouped_gemm_lists(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                              const std::optional<std::vector<at::Tensor>>& bias,
                              const std::string& activation, std::optional<at::ScalarType> out_dtype);

// grouped_gemm's shape on every device: check all problems, then run `gemm(a_i, b_i, bias_i)`
// for each (the per-device implementations pass their dense gemm).
template <class Gemm>
std::vector<at::Tensor> grouped_gemm_by_problem(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                                                const std::optional<std::vector<at::Tensor>>& bias,
                                                const std::string& activation,
                                                std::optional<at::ScalarType> out_dtype, Gemm gemm) {
  check_grouped_gemm_lists(a, b, bias, activation, out_dtype);
  std::vector<at::Tensor> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::optional<at::Tensor> bi;
    if (bias.has_value()) bi = (*bias)[i];
    out.push_back(gemm(a[i], b[i], bi));
  }
  return out;
}

// CPU only: offsets must be non-decreasing, within [0, extent]. (The GPU clamps instead, to
// avoid a host synchronisation.)
void check_offsets_values_cpu(const at::Tensor& offs, int64_t extent, const char* along);

}  // namespace cutorch_gemm::binding
