// gemm.swiglu / gemm.swiglu_backward on CUDA: the element-wise kernels of
// device/swiglu_pointwise.h over 2-D views (leading extents flattened, unit column stride).
#include "cutorch_gemm/device/swiglu_pointwise.h"

#include "cuda_common.h"

namespace cutorch_gemm::binding {
namespace {

// `t` as (rows, cols) with column stride 1 (a copy only where no such view exists); its row stride.
std::pair<at::Tensor, int64_t> rows_view(const at::Tensor& t, int64_t rows, int64_t cols) {
  at::Tensor v = t.reshape({rows, cols});
  if (cols > 1 && v.stride(1) != 1) v = v.contiguous();
  return {v, rows > 1 ? v.stride(0) : cols};
}

std::vector<int64_t> with_last(const at::Tensor& t, int64_t last) {
  std::vector<int64_t> s(t.sizes().begin(), t.sizes().end());
  s.back() = last;
  return s;
}

}  // namespace

at::Tensor swiglu_cuda(const at::Tensor& gate_up) {
  const SwigluSpec s = check_swiglu("gemm.swiglu", gate_up, nullptr);
  at::Tensor out = at::empty(with_last(gate_up, s.f), gate_up.options());
  if (out.numel() == 0) return out;
  const c10::cuda::CUDAGuard guard(gate_up.device());
  const auto [gu, ld] = rows_view(gate_up, s.rows, 2 * s.f);
  SwigluArgs a{to_dtype(gate_up.scalar_type()), s.rows, s.f, gu.data_ptr(), ld, nullptr, 0, out.data_ptr()};
  const cudaError_t err = swiglu_forward(a, device_info().sms, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: swiglu launch failed: ", cudaGetErrorString(err));
  return out;
}

at::Tensor swiglu_backward_cuda(const at::Tensor& grad, const at::Tensor& gate_up) {
  const SwigluSpec s = check_swiglu("gemm.swiglu_backward", gate_up, &grad);
  at::Tensor out = at::empty(gate_up.sizes(), gate_up.options());
  if (out.numel() == 0) return out;
  const c10::cuda::CUDAGuard guard(gate_up.device());
  const auto [gu, ld] = rows_view(gate_up, s.rows, 2 * s.f);
  const auto [dh, ld_dh] = rows_view(grad, s.rows, s.f);
  SwigluArgs a{to_dtype(gate_up.scalar_type()), s.rows, s.f, gu.data_ptr(), ld, dh.data_ptr(), ld_dh, out.data_ptr()};
  const cudaError_t err = swiglu_backward(a, device_info().sms, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: swiglu_backward launch failed: ", cudaGetErrorString(err));
  return out;
}

}  // namespace cutorch_gemm::binding
