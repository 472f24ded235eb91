// The Autograd kernels of the element-wise ops gemm::swiglu and gemm::moe_combine, as autograd_kernels.cpp's for
// mm / bmm / gemm (which says why: torch.func runs such a kernel level by level, in C++; a Python autograd.Function
// under a transform costs a Python pass over every level per apply). Their vmap kernels are in vmap_kernels.cpp.
//
// swiglu: D = silu(gate) * up over z = [gate | up] (last dimension). Backward: gemm::swiglu_backward (one pass);
//   when the backward is itself recorded (create_graph: double backward, hessian), the same formula from ATen's
//   differentiable ops in the accumulator dtype, rounded once. Tangent: the formula's forward-mode twin.
// moe_combine: out[t] = sum_j w[t, j] * y[inv[t*k + j]] (w = 1 without weights; inv entries outside [0, rows) add
//   nothing). Backward: gemm::moe_combine_backward, grad_y[inv[t*k + j]] = w[t, j] * grad[t] and grad_w[t, j] =
//   <grad[t], y[inv[t*k + j]]> (sums in fp32); recorded, the same from ATen's ops. y is kept only where the weights'
//   gradient needs it (otherwise its shape and dtype): it is the experts' output, as large as the layer's
//   activations. Tangent: moe_combine(dy, inv, w) + moe_combine(y, inv, dw).
#include "autograd_common.h"

#include <ATen/ATen.h>

#include <tuple>
#include <vector>

namespace cutorch_gemm::autograd {
namespace {

using calls::call_moe_combine;
using calls::call_moe_combine_backward;
using calls::call_swiglu;
using calls::call_swiglu_backward;

// ---- swiglu -----------------------------------------------------------------------------------------------------

at::Tensor swiglu_backward_any(const at::Tensor& grad, const at::Tensor& gate_up, at::ScalarType dtype) {
  if (!grad.defined()) return at::Tensor();
  if (at::GradMode::is_enabled()) {  // the backward is recorded: differentiable ops
    const at::ScalarType a = acc(dtype);
    return swiglu_grad(grad.to(a), gate_up.to(a)).to(dtype);
  }
  return call_swiglu_backward(grad.to(dtype).contiguous(), gate_up);
}

struct SwigluBackward : Node {
  std::string name() const override { return "cutorch_gemm::SwigluBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    gate_up_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    if (!task_should_compute_output(0)) return {at::Tensor()};
    return {swiglu_backward_any(grads[0], gate_up_.unpack(), dtype_)};
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(gate_up_, false);
    args.collect(dtype_);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    saved.before(gate_up_);
    torch::dynamo::autograd::PackedArgs p;
    p.pack(gate_up_.unpack());
    p.pack(dtype_);
    p.pack(needs(*this, 1));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor gate_up = q.unpack<at::Tensor>();
      const at::ScalarType dtype = q.unpack<at::ScalarType>();
      const std::vector<bool> need = q.unpack<std::vector<bool>>();
      return variable_list{need[0] ? swiglu_backward_any(g[0], gate_up, dtype) : at::Tensor()};
    });
    saved.after(gate_up_);
    return out;
  }

  SavedVariable gate_up_;
  at::ScalarType dtype_ = at::kFloat;
};

at::Tensor swiglu(const at::Tensor& gate_up) {
  decltype(make_node<SwigluBackward>()) node;
  if (torch::autograd::compute_requires_grad(gate_up)) {
    node = make_node<SwigluBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(gate_up));
    node->gate_up_ = SavedVariable(gate_up, false);
    node->dtype_ = gate_up.scalar_type();
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_swiglu(gate_up);
  }
  if (node) torch::autograd::set_history(out, node);
  if (torch::autograd::isFwGradDefined(gate_up)) {
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor z = toNonOptPrimal(gate_up);
    const at::Tensor t = gate_up._fw_grad(0);
    const at::ScalarType a = acc(z.scalar_type());
    const at::Tensor dz = t.defined() ? swiglu_tangent(t.to(a), z.to(a)) : at::Tensor();
    out._set_fw_grad(tangent_out(dz, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

// ---- moe_combine ------------------------------------------------------------------------------------------------

struct CombineState {
  int64_t k = 1;
  at::ScalarType y_dtype = at::kFloat;
  int64_t w_dtype = -1;  // -1: no weights
};

// The backward from ATen's differentiable ops (sums in the accumulator dtype); `y` may be a stand-in without
// weights (only its shape and dtype are read then).
std::tuple<at::Tensor, at::Tensor> combine_backward_composite(const at::Tensor& grad, const at::Tensor& y,
                                                              const at::Tensor& inv, const at::Tensor& weights,
                                                              int64_t k) {
  const at::ScalarType a = acc(y.scalar_type());
  const at::Tensor valid = at::logical_and(at::ge(inv, 0), at::lt(inv, c10::Scalar(y.sym_size(0))));
  const at::Tensor idx = at::where(valid, inv, at::zeros_like(inv)).to(at::kLong);
  const at::Tensor valid_a = valid.to(a);
  const at::Tensor g_slot = grad.to(a).repeat_interleave_symint(c10::SymInt(k), 0);  // token t's gradient per slot
  const at::Tensor w = weights.defined() ? weights.to(at::kFloat).to(a).reshape(-1) * valid_a : valid_a;
  const at::Tensor grad_y = at::zeros_symint(y.sym_sizes(), grad.options().dtype(a))
                                .index_add(0, idx, g_slot * w.unsqueeze(1));
  at::Tensor grad_w;
  if (weights.defined()) grad_w = ((g_slot * y.to(a).index_select(0, idx)).sum(-1) * valid_a).reshape({-1, k});
  return {grad_y.to(y.scalar_type()), grad_w};
}

// need: {y, weights}. `y` undefined: not kept (no weights); `y_sizes` gives its shape then.
variable_list combine_backward(const at::Tensor& grad, at::Tensor y, c10::SymIntArrayRef y_sizes,
                               const at::Tensor& inv, const at::Tensor& weights, const CombineState& st,
                               const std::vector<bool>& need) {
  variable_list out(2);
  if (!grad.defined()) return out;
  if (!y.defined()) y = grad.new_zeros({}, grad.options().dtype(st.y_dtype)).expand_symint(y_sizes);  // (stride 0)
  at::Tensor grad_y, grad_w;
  if (at::GradMode::is_enabled()) {
    std::tie(grad_y, grad_w) = combine_backward_composite(grad, y, inv, weights, st.k);
  } else {
    std::tie(grad_y, grad_w) = call_moe_combine_backward(grad.to(st.y_dtype).contiguous(), y, inv,
                                                         weights.defined() ? OptT(weights) : OptT(), st.k);
  }
  if (need[0]) out[0] = grad_y;
  if (need[1] && st.w_dtype >= 0) out[1] = grad_w.to(at::ScalarType(st.w_dtype));
  return out;
}

struct MoeCombineBackward : Node {
  std::string name() const override { return "cutorch_gemm::MoeCombineBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    y_.reset_data();
    inv_.reset_data();
    weights_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    return combine_backward(grads[0], y_.unpack(), y_sizes_, inv_.unpack(), weights_.unpack(), st_, needs(*this, 2));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(y_, false);
    args.collect(inv_, false);
    args.collect(weights_, false);
    args.collect(y_sizes_);
    args.collect(st_.k);
    args.collect(st_.y_dtype);
    args.collect(st_.w_dtype);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    for (SavedVariable* v : {&y_, &inv_, &weights_}) saved.before(*v);
    saved.before(y_sizes_);
    torch::dynamo::autograd::PackedArgs p;
    for (const SavedVariable* v : {&y_, &inv_, &weights_}) p.pack(v->unpack());
    p.pack(y_sizes_);
    p.pack(st_.k);
    p.pack(st_.y_dtype);
    p.pack(st_.w_dtype);
    p.pack(needs(*this, 2));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor y = q.unpack<at::Tensor>(), inv = q.unpack<at::Tensor>(), w = q.unpack<at::Tensor>();
      const std::vector<c10::SymInt> y_sizes = q.unpack<std::vector<c10::SymInt>>();
      CombineState st;
      st.k = q.unpack<int64_t>();
      st.y_dtype = q.unpack<at::ScalarType>();
      st.w_dtype = q.unpack<int64_t>();
      return combine_backward(g[0], y, y_sizes, inv, w, st, q.unpack<std::vector<bool>>());
    });
    for (SavedVariable* v : {&y_, &inv_, &weights_}) saved.after(*v);
    saved.after(y_sizes_);
    return out;
  }

  SavedVariable y_, inv_, weights_;
  std::vector<c10::SymInt> y_sizes_;
  CombineState st_;
};

at::Tensor moe_combine(const at::Tensor& y, const at::Tensor& inv, const OptT& weights, int64_t k) {
  decltype(make_node<MoeCombineBackward>()) node;
  if (torch::autograd::compute_requires_grad(y, weights)) {
    node = make_node<MoeCombineBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(y, weights));
    if (defined(weights)) {
      node->y_ = SavedVariable(y, false);  // (for the weights' gradient)
      node->weights_ = SavedVariable(*weights, false);
    }
    node->inv_ = SavedVariable(inv, false);
    node->y_sizes_ = y.sym_sizes().vec();
    node->st_ = {k, y.scalar_type(), defined(weights) ? int64_t(weights->scalar_type()) : -1};
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_moe_combine(y, inv, weights, k);
  }
  if (node) torch::autograd::set_history(out, node);
  using torch::autograd::isFwGradDefined;
  if (isFwGradDefined(y) || isFwGradDefined(weights)) {
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor yp = toNonOptPrimal(y), wp = toNonOptPrimal(weights);
    const at::Tensor ty = y._fw_grad(0);
    const at::Tensor tw = defined(weights) ? weights->_fw_grad(0) : at::Tensor();
    const OptT wo = wp.defined() ? OptT(wp) : OptT();
    const at::Tensor t = add_terms(ty.defined() ? call_moe_combine(ty, inv, wo, k) : at::Tensor(),
                                   tw.defined() ? call_moe_combine(yp, inv, OptT(tw), k) : at::Tensor());
    out._set_fw_grad(tangent_out(t, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, Autograd, m) {
  m.impl("swiglu", &swiglu);
  m.impl("moe_combine", &moe_combine);
}

}  // namespace cutorch_gemm::autograd
