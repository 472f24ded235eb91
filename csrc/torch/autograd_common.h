// What the C++ Autograd kernels (autograd_kernels.cpp: mm, bmm, gemm; autograd_grouped.cpp: grouped_mm;
// autograd_pointwise.cpp: swiglu, moe_combine) share:
// accumulator dtypes, activation derivatives, tangents, node construction and compiled autograd's functional call
// (the ops themselves are called through op_calls.h).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/FunctionsManual.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/library.h>

#include "op_calls.h"

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

namespace cutorch_gemm::autograd {

using torch::autograd::CompiledNodeArgs;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::SwapSavedVariables;
using torch::autograd::variable_list;
using calls::call_bmm;
using calls::call_gemm;
using calls::call_grouped_mm;
using calls::call_mm;
using calls::OptDt;
using calls::OptT;

inline bool defined(const OptT& t) { return t.has_value() && t->defined(); }

// The accumulator dtype of `dtype`'s products, and the out_dtype that makes an op return it.
inline at::ScalarType acc(at::ScalarType dtype) { return dtype == at::kDouble ? at::kDouble : at::kFloat; }
inline OptDt acc_out(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble ? OptDt() : OptDt(at::kFloat);
}

// nn.Linear's W.t(): a transposed view of a row-major matrix.
// (sym_stride: under torch.compile's dynamic shapes, a condition on the strides, not their values)
inline bool b_transposed(const at::Tensor& b) { return b.dim() == 2 && b.sym_stride(0) == 1 && b.sym_stride(1) != 1; }

// x + y where either may be undefined (an absent term).
inline at::Tensor add_terms(const at::Tensor& x, const at::Tensor& y) {
  if (!x.defined()) return y;
  return y.defined() ? x + y : x;
}

// d act(z) / dz in z's dtype (_autograd_util.act_grad).
inline at::Tensor act_grad(const at::Tensor& z, const std::string& act) {
  if (act == "relu") return (z > 0).to(z.scalar_type());
  if (act == "gelu") {
    const at::Tensor cdf = 0.5 * (1.0 + at::erf(z * (1.0 / std::sqrt(2.0))));
    const at::Tensor pdf = at::exp(-0.5 * z * z) * (1.0 / std::sqrt(2.0 * M_PI));
    return cdf + z * pdf;
  }
  if (act == "gelu_tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    const at::Tensor t = at::tanh(k * (z + 0.044715 * z * z * z));
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * z * z);
  }
  if (act == "silu") {
    const at::Tensor s = at::sigmoid(z);
    return s * (1.0 + z * (1.0 - s));
  }
  TORCH_CHECK_VALUE(false, "gemm.gemm: unknown activation '", act, "'");
}

// dL/dz for D = silu(gate) * up, z = [gate | up] (recomputed, accumulator dtype).
inline at::Tensor swiglu_grad(const at::Tensor& grad, const at::Tensor& z) {
  const auto halves = z.chunk(2, -1);
  const at::Tensor& gate = halves[0];
  const at::Tensor& up = halves[1];
  const at::Tensor s = at::sigmoid(gate);
  const at::Tensor g = grad.to(z.scalar_type());
  return at::cat({g * up * (s * (1.0 + gate * (1.0 - s))), g * gate * s}, -1);
}

// The tangent of silu(gate) * up for z = [gate | up] and its tangent dz (same dtype).
inline at::Tensor swiglu_tangent(const at::Tensor& dz, const at::Tensor& z) {
  const auto zh = z.chunk(2, -1);
  const auto dh = dz.chunk(2, -1);
  const at::Tensor s = at::sigmoid(zh[0]);
  return dh[0] * zh[1] * (s * (1.0 + zh[0] * (1.0 - s))) + dh[1] * zh[0] * s;
}

// A tangent term summed in `t` (undefined: no term, zeros) as the output's tangent: its shape and dtype.
inline at::Tensor tangent_out(const at::Tensor& t, const at::Tensor& out) {
  if (!t.defined()) return at::zeros_like(out);
  return t.expand_symint(out.sym_sizes()).to(out.scalar_type());
}

// compiled autograd (torch._dynamo.compiled_autograd) calls a node's backward as a function of its saved state
// (`args`, packed as IValues) that it binds and traces; `fn` unpacks them in the order they were packed.
inline variable_list compiled_apply(const Node& node, const variable_list& grads, SwapSavedVariables& saved,
                             const std::vector<c10::IValue>& args, torch::autograd::functional_apply_t fn) {
  namespace cad = torch::dynamo::autograd;
  std::vector<at::TypePtr> schema;
  schema.reserve(args.size());
  for (const c10::IValue& v : args) schema.emplace_back(v.isTensor() ? at::TensorType::get() : v.type());
  const auto& py = cad::getPyCompilerInterface();
  // Bound anew on each trace, as the compiler does for C++ autograd Functions ("custom": it numbers the name);
  // the name is code in the traced graph (no "::").
  std::string name = node.name();
  name.replace(name.find("::"), 2, "_");
  const std::string fn_name = py->bind_function(saved.get_py_compiler(), name, std::move(fn), schema,
                                                /*is_custom_function=*/true, /*is_traceable=*/true);
  const c10::IValue metadata = cad::IValuePacker<std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
      cad::get_input_metadata(node.next_edges()));
  return py->call_function(saved.get_py_compiler(), "apply_functional", fn_name, grads, args, metadata);
}

// A new node. PyTorch 2.12 made Node a c10::intrusive_ptr_target; before, nodes were std::shared_ptrs deleted
// through torch::autograd::deleteNode (found by argument-dependent lookup, so that newer headers, which lack it,
// never look for it), which frees a long chain of nodes without deep recursion.
template <class T>
auto make_node() {
  if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, T>) {
    return c10::make_intrusive<T>();
  } else {
    return std::shared_ptr<T>(new T(), [](T* node) { deleteNode(node); });
  }
}

inline std::vector<bool> needs(const Node& node, size_t n) {
  std::vector<bool> need(n);
  for (size_t i = 0; i < n; ++i) need[i] = node.task_should_compute_output(i);
  return need;
}

}  // namespace cutorch_gemm::autograd
