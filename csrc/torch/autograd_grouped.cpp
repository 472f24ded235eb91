// The Autograd kernel of gemm::grouped_mm, as autograd_kernels.cpp's for mm / bmm / gemm (which says why: torch.func
// runs such a kernel level by level, in C++). Its vmap kernel is in vmap_kernels.cpp.
//
// D = act(Z), Z = A @ B per group (+ bias, placed per group as the op places it); the forms (ops.grouped_mm):
// 2D x 3D (MoE forward: rows of A grouped by offs), 3D x 2D, 2D x 2D (grouped along the reduction: the MoE weight
// gradient), 3D x 3D. Backward, as the Python Function it replaces (formulas in _autograd_grouped.py's history):
//   dZ = dD * act'(Z) (SwiGLU: of silu(gate) * up over Z's halves; Z recomputed in fp32, one grouped GEMM);
//   dA = grouped_mm(dZ, B^T, offs), dB = grouped_mm(A^T, dZ, offs): 2D x 3D <-> 2D x 2D and 3D x 2D <-> 2D x 2D;
//   dbias = dZ summed per group in fp32 (2D x 3D: rows by group, rows past offs[-1] excluded; 3D x 2D: columns,
//   those past offs[-1] zero; 3D outputs: over M).
// Tangent: act'(Z) * (grouped_mm(dA, B, offs, bias=dbias) + grouped_mm(A, dB, offs)).
#include "autograd_common.h"

#include <ATen/ATen.h>

#include <vector>

namespace cutorch_gemm::autograd {
namespace {

// Group of each index along the grouped extent (offs.size(0) past the last group), on the device.
at::Tensor group_ids(const at::Tensor& offs, const c10::SymInt& extent) {
  return at::searchsorted(offs, at::arange(c10::Scalar(extent), offs.options()), /*out_int32=*/false, /*right=*/true);
}

struct GroupedState {
  std::string activation;
  at::ScalarType dtype = at::kFloat;  // a's and b's
  int64_t bias_dtype = -1;            // -1: no bias
  int64_t a_dim = 2, b_dim = 3;       // the form
};

variable_list grouped_backward(const at::Tensor& grad, const at::Tensor& a, const at::Tensor& b, const at::Tensor& offs,
                               const at::Tensor& bias, const GroupedState& st, const std::vector<bool>& need) {
  variable_list out(3);  // a, b, bias
  if (!grad.defined()) return out;
  const OptT o = offs.defined() ? OptT(offs) : OptT();
  at::Tensor dz = grad;
  if (st.activation != "none") {
    const OptT bo = bias.defined() ? OptT(bias) : OptT();
    const at::Tensor z = call_grouped_mm(a, b, o, bo, "none", acc_out(st.dtype));
    dz = st.activation == "swiglu" ? swiglu_grad(grad, z) : grad.to(acc(st.dtype)) * act_grad(z, st.activation);
  }
  const at::Tensor g = dz.to(st.dtype);
  if (need[0]) out[0] = call_grouped_mm(g, b.transpose(-2, -1), o, std::nullopt, "none", std::nullopt);
  if (need[1]) out[1] = call_grouped_mm(a.transpose(-2, -1), g, o, std::nullopt, "none", std::nullopt);
  if (st.bias_dtype >= 0 && need[2]) {
    const at::Tensor d = dz.to(acc(st.dtype));  // bias sums accumulate in fp32
    at::Tensor gbias;
    if (st.a_dim == 2 && st.b_dim == 3) {  // per-group sums of rows; rows past offs[-1] excluded
      const at::Tensor ids = group_ids(offs, d.sym_size(0));
      gbias = d.new_zeros_symint({offs.sym_size(0) + 1, d.sym_size(1)}).index_add(0, ids, d);
      gbias = gbias.narrow_symint(0, 0, offs.sym_size(0));
    } else if (st.a_dim == 3 && st.b_dim == 2) {  // per output column; columns past offs[-1] zero
      const at::Tensor ids = group_ids(offs, d.sym_size(1));
      gbias = d.sum(0) * at::lt(ids, c10::Scalar(offs.sym_size(0))).to(d.scalar_type());
    } else {  // (G, M, N) outputs
      gbias = d.sum(1);
    }
    out[2] = gbias.to(at::ScalarType(st.bias_dtype));
  }
  return out;
}

struct GroupedMmBackward : Node {
  std::string name() const override { return "cutorch_gemm::GroupedMmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    a_.reset_data();
    b_.reset_data();
    offs_.reset_data();
    bias_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    return grouped_backward(grads[0], a_.unpack(), b_.unpack(), offs_.unpack(), bias_.unpack(), st_, needs(*this, 3));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(a_, false);
    args.collect(b_, false);
    args.collect(offs_, false);
    args.collect(bias_, false);
    args.collect(st_.activation);
    args.collect(st_.dtype);
    args.collect(st_.bias_dtype);
    args.collect(st_.a_dim);
    args.collect(st_.b_dim);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    for (SavedVariable* v : {&a_, &b_, &offs_, &bias_}) saved.before(*v);
    torch::dynamo::autograd::PackedArgs p;
    for (const SavedVariable* v : {&a_, &b_, &offs_, &bias_}) p.pack(v->unpack());
    p.pack(st_.activation);
    p.pack(st_.dtype);
    p.pack(st_.bias_dtype);
    p.pack(st_.a_dim);
    p.pack(st_.b_dim);
    p.pack(needs(*this, 3));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor a = q.unpack<at::Tensor>(), b = q.unpack<at::Tensor>();
      const at::Tensor offs = q.unpack<at::Tensor>(), bias = q.unpack<at::Tensor>();
      GroupedState st;
      st.activation = q.unpack<std::string>();
      st.dtype = q.unpack<at::ScalarType>();
      st.bias_dtype = q.unpack<int64_t>();
      st.a_dim = q.unpack<int64_t>();
      st.b_dim = q.unpack<int64_t>();
      return grouped_backward(g[0], a, b, offs, bias, st, q.unpack<std::vector<bool>>());
    });
    for (SavedVariable* v : {&a_, &b_, &offs_, &bias_}) saved.after(*v);
    return out;
  }

  SavedVariable a_, b_, offs_, bias_;
  GroupedState st_;
};

at::Tensor grouped_mm(const at::Tensor& a, const at::Tensor& b, const OptT& offs, const OptT& bias,
                      c10::string_view activation, OptDt out_dtype) {
  const std::string act(activation);
  decltype(make_node<GroupedMmBackward>()) node;
  if (torch::autograd::compute_requires_grad(a, b, bias)) {
    node = make_node<GroupedMmBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(a, b, bias));
    // Without an activation a product's rule (A for B's gradient, B for A's); with one, everything, for Z.
    const bool all = act != "none";
    if (all || b.requires_grad()) node->a_ = SavedVariable(a, false);
    if (all || a.requires_grad()) node->b_ = SavedVariable(b, false);
    if (defined(offs)) node->offs_ = SavedVariable(*offs, false);
    if (all && defined(bias)) node->bias_ = SavedVariable(*bias, false);
    node->st_ = {act, a.scalar_type(), defined(bias) ? int64_t(bias->scalar_type()) : -1, a.dim(), b.dim()};
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_grouped_mm(a, b, offs, bias, activation, out_dtype);
  }
  if (node) torch::autograd::set_history(out, node);
  using torch::autograd::isFwGradDefined;
  if (isFwGradDefined(a) || isFwGradDefined(b) || isFwGradDefined(bias)) {
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor ap = toNonOptPrimal(a), bp = toNonOptPrimal(b), biasp = toNonOptPrimal(bias);
    at::Tensor ta = a._fw_grad(0);
    const at::Tensor tb = b._fw_grad(0);
    const at::Tensor tbias = defined(bias) ? bias->_fw_grad(0) : at::Tensor();
    if (tbias.defined() && !ta.defined()) ta = at::zeros_like(ap);  // (the bias term rides on the dA @ B call)
    const OptDt od = acc_out(a.scalar_type());
    const OptT tbo = tbias.defined() ? OptT(tbias) : OptT();
    at::Tensor dz = add_terms(ta.defined() ? call_grouped_mm(ta, bp, offs, tbo, "none", od) : at::Tensor(),
                              tb.defined() ? call_grouped_mm(ap, tb, offs, std::nullopt, "none", od) : at::Tensor());
    if (dz.defined() && act != "none") {
      const at::Tensor z = call_grouped_mm(ap, bp, offs, biasp.defined() ? OptT(biasp) : OptT(), "none", od);
      dz = act == "swiglu" ? swiglu_tangent(dz, z) : dz * act_grad(z, act);
    }
    out._set_fw_grad(tangent_out(dz, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, Autograd, m) { m.impl("grouped_mm", &grouped_mm); }

}  // namespace cutorch_gemm::autograd
