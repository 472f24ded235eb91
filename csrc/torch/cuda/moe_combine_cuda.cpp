// gemm.moe_combine / gemm.moe_combine_backward on CUDA: the kernels of device/moe_combine.h over
// contiguous y / grad, int64 indices and fp32 weights (converted here where needed: T * k
// elements).
#include "cutorch_gemm/device/moe_combine.h"

#include "cuda_common.h"

namespace cutorch_gemm::binding {
namespace {

MoeCombineArgs combine_args(const MoeCombineSpec& s, const at::Tensor& y, const at::Tensor& idx, const at::Tensor& w) {
  MoeCombineArgs a{};
  a.dtype = to_dtype(y.scalar_type());
  a.tokens = s.tokens;
  a.k = s.k;
  a.h = s.h;
  a.y = y.data_ptr();
  a.inv = idx.data_ptr<int64_t>();
  a.w = w.defined() ? w.data_ptr<float>() : nullptr;
  return a;
}

at::Tensor fp32_weights(const std::optional<at::Tensor>& weights) {
  return weights.has_value() ? weights->to(at::kFloat).contiguous() : at::Tensor();
}

}  // namespace

at::Tensor moe_combine_cuda(const at::Tensor& y, const at::Tensor& inv, const std::optional<at::Tensor>& weights,
                            int64_t k) {
  const MoeCombineSpec s = check_moe_combine("gemm.moe_combine", y, inv, weights, k, nullptr);
  at::Tensor out = at::empty({s.tokens, s.h}, y.options());
  if (out.numel() == 0) return out;
  const c10::cuda::CUDAGuard guard(y.device());
  const at::Tensor yc = y.contiguous(), idx = inv.to(at::kLong).contiguous(), w = fp32_weights(weights);
  MoeCombineArgs a = combine_args(s, yc, idx, w);
  a.out = out.data_ptr();
  const cudaError_t err = moe_combine(a, device_info().sms, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: moe_combine launch failed: ", cudaGetErrorString(err));
  return out;
}

std::tuple<at::Tensor, at::Tensor> moe_combine_backward_cuda(const at::Tensor& grad, const at::Tensor& y,
                                                             const at::Tensor& inv,
                                                             const std::optional<at::Tensor>& weights, int64_t k) {
  const MoeCombineSpec s = check_moe_combine("gemm.moe_combine_backward", y, inv, weights, k, &grad);
  // Every row of grad_y is written (zeros where no valid inv entry names it); grad_w is zeroed
  // for the pairs whose row is out of range (a broken permutation; T * k floats).
  at::Tensor grad_y = at::empty({s.tokens * s.k, s.h}, y.options());
  at::Tensor grad_w = weights.has_value() ? at::zeros({s.tokens, s.k}, y.options().dtype(at::kFloat))
                                          : at::empty({0}, y.options().dtype(at::kFloat));
  if (grad_y.numel() == 0) return {grad_y, grad_w};
  at::Tensor order = at::full({s.tokens * s.k}, -1, y.options().dtype(at::kLong));
  const c10::cuda::CUDAGuard guard(y.device());
  // (y is read only for the weights' gradient: without weights it may be a stride-0 stand-in.)
  const at::Tensor yc = weights.has_value() ? y.contiguous() : y;
  const at::Tensor gc = grad.contiguous(), idx = inv.to(at::kLong).contiguous();
  const at::Tensor w = fp32_weights(weights);
  MoeCombineArgs a = combine_args(s, yc, idx, w);
  a.grad = gc.data_ptr();
  a.out = grad_y.data_ptr();
  a.grad_w = weights.has_value() ? grad_w.data_ptr<float>() : nullptr;
  a.order = order.data_ptr<int64_t>();
  const cudaError_t err = moe_combine_backward(a, device_info().sms, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: moe_combine_backward launch failed: ", cudaGetErrorString(err));
  return {grad_y, grad_w};
}

}  // namespace cutorch_gemm::binding
