// The Autograd kernel of gemm::scaled_mm, as autograd_kernels.cpp's for mm / bmm / gemm (which says why). Its vmap
// kernel is in vmap_kernels.cpp.
//
// D = sa * sb * (a @ b) + bias. Gradients flow to the scales and the bias; the 8-bit operands get none (like
// torch._scaled_mm, which has no backward at all): fp8 training recipes quantize the upstream gradient themselves
// and call scaled_mm on it. Backward, in fp32 (g = dD):
//   d sa = sum over columns of g * (sb * (a @ b)) (a per-tensor scale: over everything), d sb likewise over rows,
//   each product recomputed by scaled_mm with the other scale (detached) and fp32 out; d bias = g summed over rows.
// Tangent: scaled_mm(a, b, dsa, sb) + scaled_mm(a, b, sa, dsb) + dbias, in fp32.
#include "autograd_common.h"

#include <ATen/ATen.h>

#include <vector>

namespace cutorch_gemm::autograd {
namespace {

using calls::call_scaled_mm;

constexpr const char* kNoFp8Grad =
    "gemm.scaled_mm: no gradient for the 8-bit operands a and b (quantize the upstream gradient and call scaled_mm "
    "on it); gradients flow to scale_a, scale_b and bias only";

// sa * sb * (a @ b) in fp32; an undefined scale: one.
at::Tensor scaled_product(const at::Tensor& a, const at::Tensor& b, const at::Tensor& sa, const at::Tensor& sb,
                          bool fast) {
  const at::Tensor one = at::ones({}, a.options().dtype(at::kFloat));
  return call_scaled_mm(a, b, sa.defined() ? sa : one, sb.defined() ? sb : one, std::nullopt, at::kFloat, fast);
}

struct ScaledState {
  bool fast = false;
  int64_t bias_dtype = -1;  // -1: no bias
};

// need: {a, b, scale_a, scale_b, bias}.
variable_list scaled_backward(const at::Tensor& grad, const at::Tensor& a, const at::Tensor& b, const at::Tensor& sa,
                              const at::Tensor& sb, const ScaledState& st, const std::vector<bool>& need) {
  variable_list out(5);
  if (!grad.defined()) return out;
  TORCH_CHECK(!need[0] && !need[1], kNoFp8Grad);
  const at::Tensor g = grad.to(at::kFloat);
  // d/d scale of sum(g * scale * product): per row / column, or over everything.
  auto scale_grad = [&](const at::Tensor& scale, const at::Tensor& product, int64_t dim) {
    const at::Tensor gp = g * product;
    return scale.sym_numel() == 1 ? gp.sum().reshape_symint(scale.sym_sizes()) : gp.sum(dim, /*keepdim=*/true);
  };
  if (need[2]) out[2] = scale_grad(sa, scaled_product(a, b, at::Tensor(), sb.detach(), st.fast), 1);
  if (need[3]) out[3] = scale_grad(sb, scaled_product(a, b, sa.detach(), at::Tensor(), st.fast), 0);
  if (need[4] && st.bias_dtype >= 0) out[4] = g.sum(0).to(at::ScalarType(st.bias_dtype));
  return out;
}

struct ScaledMmBackward : Node {
  std::string name() const override { return "cutorch_gemm::ScaledMmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    a_.reset_data();
    b_.reset_data();
    scale_a_.reset_data();
    scale_b_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    return scaled_backward(grads[0], a_.unpack(), b_.unpack(), scale_a_.unpack(), scale_b_.unpack(), st_,
                           needs(*this, 5));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(a_, false);
    args.collect(b_, false);
    args.collect(scale_a_, false);
    args.collect(scale_b_, false);
    args.collect(st_.fast);
    args.collect(st_.bias_dtype);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    for (SavedVariable* v : {&a_, &b_, &scale_a_, &scale_b_}) saved.before(*v);
    torch::dynamo::autograd::PackedArgs p;
    for (const SavedVariable* v : {&a_, &b_, &scale_a_, &scale_b_}) p.pack(v->unpack());
    p.pack(st_.fast);
    p.pack(st_.bias_dtype);
    p.pack(needs(*this, 5));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor a = q.unpack<at::Tensor>(), b = q.unpack<at::Tensor>();
      const at::Tensor sa = q.unpack<at::Tensor>(), sb = q.unpack<at::Tensor>();
      ScaledState st;
      st.fast = q.unpack<bool>();
      st.bias_dtype = q.unpack<int64_t>();
      return scaled_backward(g[0], a, b, sa, sb, st, q.unpack<std::vector<bool>>());
    });
    for (SavedVariable* v : {&a_, &b_, &scale_a_, &scale_b_}) saved.after(*v);
    return out;
  }

  SavedVariable a_, b_, scale_a_, scale_b_;
  ScaledState st_;
};

at::Tensor scaled_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a, const at::Tensor& scale_b,
                     const OptT& bias, at::ScalarType out_dtype, bool use_fast_accum) {
  decltype(make_node<ScaledMmBackward>()) node;
  if (torch::autograd::compute_requires_grad(a, b, scale_a, scale_b, bias)) {
    node = make_node<ScaledMmBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(a, b, scale_a, scale_b, bias));
    // The scales' gradients recompute the product (a and b, and the other scale); the bias's needs none.
    if (scale_a.requires_grad() || scale_b.requires_grad()) {
      node->a_ = SavedVariable(a, false);
      node->b_ = SavedVariable(b, false);
      node->scale_a_ = SavedVariable(scale_a, false);
      node->scale_b_ = SavedVariable(scale_b, false);
    }
    node->st_ = {use_fast_accum, defined(bias) ? int64_t(bias->scalar_type()) : -1};
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum);
  }
  if (node) torch::autograd::set_history(out, node);
  using torch::autograd::isFwGradDefined;
  if (isFwGradDefined(a) || isFwGradDefined(b) || isFwGradDefined(scale_a) || isFwGradDefined(scale_b) ||
      isFwGradDefined(bias)) {
    TORCH_CHECK(!isFwGradDefined(a) && !isFwGradDefined(b), kNoFp8Grad);
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor ap = toNonOptPrimal(a), bp = toNonOptPrimal(b);
    const at::Tensor sap = toNonOptPrimal(scale_a), sbp = toNonOptPrimal(scale_b);
    const at::Tensor t_sa = scale_a._fw_grad(0), t_sb = scale_b._fw_grad(0);
    const at::Tensor t_bias = defined(bias) ? bias->_fw_grad(0) : at::Tensor();
    at::Tensor t;
    if (t_sa.defined()) t = scaled_product(ap, bp, t_sa, sbp, use_fast_accum);
    if (t_sb.defined()) t = add_terms(t, scaled_product(ap, bp, sap, t_sb, use_fast_accum));
    if (t_bias.defined()) t = add_terms(t, t_bias.to(at::kFloat));
    out._set_fw_grad(tangent_out(t, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, Autograd, m) { m.impl("scaled_mm", &scaled_mm); }

}  // namespace cutorch_gemm::autograd
