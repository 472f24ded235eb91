// The gemm ops called from C++ through the dispatcher (every key from the top: autocast, autograd, torch.func,
// then the device kernel), for the wrappers' entry points (fast_calls.cpp) and the autograd / vmap kernels.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace cutorch_gemm::calls {

using OptT = std::optional<at::Tensor>;
using OptDt = std::optional<at::ScalarType>;
using TensorVec = std::vector<at::Tensor>;  // (a Tensor[] argument or result, as the ops' kernels take it)

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

inline at::Tensor call_mm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::mm");
  return h.call(a, b, out_dtype);
}

inline at::Tensor call_bmm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::bmm");
  return h.call(a, b, out_dtype);
}

inline at::Tensor call_gemm(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c,
                            double alpha, double beta, c10::string_view activation, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, const OptT&, double, double,
                                    c10::string_view, OptDt)>("gemm::gemm");
  return h.call(a, b, bias, c, alpha, beta, activation, out_dtype);
}

inline at::Tensor call_grouped_mm(const at::Tensor& a, const at::Tensor& b, const OptT& offs, const OptT& bias,
                                  c10::string_view activation, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, const OptT&, c10::string_view,
                                    OptDt)>("gemm::grouped_mm");
  return h.call(a, b, offs, bias, activation, out_dtype);
}

// Boxed: the dispatcher's unboxed calls take their dispatch keys from Tensor, optional Tensor and ArrayRef<Tensor>
// arguments only, not from the std::vector<Tensor> ones grouped_gemm's kernels take (with nothing found, the call
// fails: "There were no tensor arguments"); a boxed call reads the keys from the stack's tensor lists.
inline TensorVec call_grouped_gemm(const TensorVec& a, const TensorVec& b, const std::optional<TensorVec>& bias,
                                   c10::string_view activation, OptDt out_dtype) {
  static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("gemm::grouped_gemm", "");
  std::vector<c10::IValue> stack;
  stack.reserve(5);
  stack.emplace_back(a);
  stack.emplace_back(b);
  stack.emplace_back(bias.has_value() ? c10::IValue(*bias) : c10::IValue());
  stack.emplace_back(std::string(activation));
  stack.emplace_back(out_dtype.has_value() ? c10::IValue(*out_dtype) : c10::IValue());
  op.callBoxed(stack);
  return stack[0].toTensorVector();
}

inline at::Tensor call_scaled_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                                 const at::Tensor& scale_b, const OptT& bias, at::ScalarType out_dtype,
                                 bool use_fast_accum) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const OptT&, at::ScalarType, bool)>("gemm::scaled_mm");
  return h.call(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum);
}

inline at::Tensor call_swiglu(const at::Tensor& gate_up) {
  static auto h = handle<at::Tensor(const at::Tensor&)>("gemm::swiglu");
  return h.call(gate_up);
}

inline at::Tensor call_swiglu_backward(const at::Tensor& grad, const at::Tensor& gate_up) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&)>("gemm::swiglu_backward");
  return h.call(grad, gate_up);
}

inline at::Tensor call_moe_combine(const at::Tensor& y, const at::Tensor& inv, const OptT& weights, int64_t k) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, int64_t)>("gemm::moe_combine");
  return h.call(y, inv, weights, k);
}

inline std::tuple<at::Tensor, at::Tensor> call_moe_combine_backward(const at::Tensor& grad, const at::Tensor& y,
                                                                    const at::Tensor& inv, const OptT& weights,
                                                                    int64_t k) {
  static auto h = handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                            const OptT&, int64_t)>("gemm::moe_combine_backward");
  return h.call(grad, y, inv, weights, k);
}

}  // namespace cutorch_gemm::calls
