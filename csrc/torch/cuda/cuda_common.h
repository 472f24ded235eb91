#pragma once
// The CUDA side of the binding, shared by its files: device facts, environment overrides,
// tensors -> GemmArgs, and the family dispatch of one GEMM launch (cuda_common.cpp); the ops'
// CUDA implementations (ops_cuda.cpp: mm / gemm / bmm / grouped_mm; grouped_gemm_cuda.cpp;
// scaled_mm_cuda.cpp; swiglu_cuda.cpp; moe_combine_cuda.cpp), registered in ops_cuda.cpp.
// NOTE: only c10/cuda headers (CUDA runtime API): ATen/cuda/CUDAContext.h pulls in cuBLAS and
// cuSPARSE headers, which a toolkit with just the compiler does not ship.
#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#include <string>
#include <vector>

#include "../checks.h"
#include "cutorch_gemm/device/family.h"
#include "cutorch_gemm/device/sm90_gemm.h"

namespace cutorch_gemm::binding {

// Extents above 2^31 - 1025 (int32 in the kernels, with a tile's headroom) are refused with a ValueError naming
// the op.
void check_extents(const char* op, std::initializer_list<int64_t> extents);

// Size-1 dimensions have meaningless strides; reporting 1 lets such an operand take the
// contiguous (vectorized) variant.
int64_t stride_of(const at::Tensor& t, int64_t dim);

struct DeviceInfo {
  int major = 0, minor = 0, sms = 0;
  int smem_optin = 0;  // dynamic shared memory a block may opt in to
  bool sm90 = false;   // this build has sm_90a code this device runs
  bool sm80 = false;   // this build has sm_80-family code this device runs
};

// Compute capability, SM count and kernel availability of the current device (queried once).
const DeviceInfo& device_info();

// Environment overrides, read at every call so tests can force a path: the lower-cased value of
// `name`; CUTORCH_GEMM_ARCH.
std::string env_lower(const char* name);
std::string forced_arch();
int split_fill();
int sm90_skinny_forced_splits();
int sm90_skinny_forced_slots();  // CUTORCH_GEMM_SKINNY_SLOTS (grouped skinny: grid z cap; tests)

bool aligned16(const at::Tensor& t);

// How the sm90 kernels would read a and b (strides as set_2d reported them).
Sm90Operand sm90_a(const GemmArgs& g, const at::Tensor& a);
Sm90Operand sm90_b(const GemmArgs& g, const at::Tensor& b);

// The extents the heuristics see: one problem; for grouped launches the average group along the
// grouped dimension (the group sizes stay on the device). `problems`: the groups that can have
// tiles. Grouped along M, at most one group per row: MoE decode (8 rows over 128 experts) has at
// most 8 non-empty groups, not 128, so its tiles may fill only a few SMs.
struct HeuristicExtents {
  int m;
  int n;
  int problems;
};
HeuristicExtents heuristic_extents(const GemmArgs& g);

// grouped_mm 2D x 3D at decode sizes on the grouped skinny kernel, rows past offs[-1] included;
// false: its rule refused the launch (nothing ran).
// swiglu: grouped_mm's fused SwiGLU (d holds N / 2 columns).
bool run_grouped_skinny(const GemmArgs& g, const at::Tensor& a, const at::Tensor& b, bool swiglu = false);

// Runs any GEMM launch (dense, batched, grouped) on the family choose_family names.
void run_gemm(const GemmArgs& g, const at::Tensor& a, const at::Tensor& b);

// GemmArgs of a call: dtype, out_f32, pointers of a and b, epilogue defaults; set_2d adds the
// 2-D strides of a, b and d (with the single row / column / k conventions the kernels expect).
GemmArgs base_args(const at::Tensor& a, const at::Tensor& b, at::ScalarType out_dtype, Activation act);
void set_2d(GemmArgs& g, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d);

// The ops' CUDA implementations (schemas in schema.cpp).
at::Tensor gemm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& c, double alpha, double beta, c10::string_view activation,
                     std::optional<at::ScalarType> out_dtype);
at::Tensor grouped_mm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                           const std::optional<at::Tensor>& bias, c10::string_view activation,
                           std::optional<at::ScalarType> out_dtype);
std::vector<at::Tensor> grouped_gemm_cuda(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                                          const std::optional<std::vector<at::Tensor>>& bias,
                                          c10::string_view activation, std::optional<at::ScalarType> out_dtype);
at::Tensor scaled_mm_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                          bool use_fast_accum);
at::Tensor swiglu_cuda(const at::Tensor& gate_up);                                   // swiglu_cuda.cpp
at::Tensor swiglu_backward_cuda(const at::Tensor& grad, const at::Tensor& gate_up);
at::Tensor moe_combine_cuda(const at::Tensor& y, const at::Tensor& inv,  // moe_combine_cuda.cpp
                            const std::optional<at::Tensor>& weights, int64_t k);
std::tuple<at::Tensor, at::Tensor> moe_combine_backward_cuda(const at::Tensor& grad, const at::Tensor& y,
                                                             const at::Tensor& inv,
                                                             const std::optional<at::Tensor>& weights, int64_t k);

}  // namespace cutorch_gemm::binding
