// The Autograd kernel of gemm::grouped_gemm (lists of independent problems), as autograd_kernels.cpp's for mm / bmm /
// gemm (which says why: torch.func runs such a kernel level by level, in C++). Its vmap kernel is in
// vmap_kernels.cpp.
//
// out[i] = act(Z_i), Z_i = a[i] @ b[i] (+ bias[i]). One node for the whole list (its outputs in problem order).
// Backward: dZ_i = dout_i * act'(Z_i) (Z recomputed in fp32 by one grouped_gemm); da = grouped_gemm(dZ, b^T),
// db = grouped_gemm(a^T, dZ) (transposed views, no copies); dbias_i = dZ_i's rows summed in fp32. Under torch's
// legacy vmap (autograd.functional.jacobian / hessian with vectorize=True, gradcheck's batched-gradient check) the
// gradients are its BatchedTensors, for which a Tensor[] op has no per-entry fallback: one mm per problem there.
// Tangent of problem i: act'(Z_i) * (da_i @ b_i + a_i @ db_i + dbias_i).
#include "autograd_common.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <vector>

namespace cutorch_gemm::autograd {
namespace {

using calls::call_grouped_gemm;
using calls::TensorVec;

struct ListState {
  std::string activation;
  at::ScalarType dtype = at::kFloat;   // a's and b's
  at::ScalarType out_dtype = at::kFloat;
  bool has_bias = false;
  std::vector<c10::SymInt> rows, cols;  // each output's (M_i, N_i): zeros for a gradient that never came
};

// dz summed over its rows into `dtype`, the sum in fp32 (fp64 for fp64); one reduction when dz has `dtype`.
at::Tensor sum_rows(const at::Tensor& dz, at::ScalarType dtype) {
  if (dz.scalar_type() == dtype) return dz.sum(0);
  return dz.sum(0, /*keepdim=*/false, acc(dz.scalar_type())).to(dtype);
}

bool in_legacy_vmap() { return c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::VmapMode); }

// The products of lists xs[i] @ ys[i]: one grouped_gemm, or one mm per problem under the legacy vmap.
TensorVec products(const TensorVec& xs, const TensorVec& ys) {
  if (!in_legacy_vmap()) return call_grouped_gemm(xs, ys, std::nullopt, "none", std::nullopt);
  TensorVec out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out.push_back(calls::call_mm(xs[i], ys[i], std::nullopt));
  return out;
}

// need: {a..., b..., bias...} (n each; bias only with has_bias).
variable_list list_backward(const variable_list& grads, const TensorVec& a, const TensorVec& b, const TensorVec& bias,
                            const ListState& st, const std::vector<bool>& need) {
  const size_t n = a.size();
  variable_list out(need.size());
  bool any = false;
  for (const at::Tensor& g : grads) any = any || g.defined();
  if (!any) return out;
  TensorVec dz(n);
  for (size_t i = 0; i < n; ++i) {  // (an output whose gradient never came: zeros)
    dz[i] = grads[i].defined() ? grads[i]
                               : at::zeros_symint({st.rows[i], st.cols[i]}, a[i].options().dtype(st.out_dtype));
  }
  if (st.activation != "none") {
    const TensorVec z = call_grouped_gemm(a, b, st.has_bias ? std::optional<TensorVec>(bias) : std::nullopt, "none",
                                          acc_out(st.dtype));
    for (size_t i = 0; i < n; ++i) dz[i] = dz[i].to(acc(st.dtype)) * act_grad(z[i], st.activation);
  }
  TensorVec g(n);
  for (size_t i = 0; i < n; ++i) g[i] = dz[i].to(st.dtype);
  auto any_of = [&](size_t from) {
    for (size_t i = from; i < from + n; ++i)
      if (need[i]) return true;
    return false;
  };
  if (any_of(0)) {
    TensorVec bt(n);
    for (size_t i = 0; i < n; ++i) bt[i] = b[i].t();
    const TensorVec ga = products(g, bt);
    for (size_t i = 0; i < n; ++i)
      if (need[i]) out[i] = ga[i];
  }
  if (any_of(n)) {
    TensorVec at_(n);
    for (size_t i = 0; i < n; ++i) at_[i] = a[i].t();
    const TensorVec gb = products(at_, g);
    for (size_t i = 0; i < n; ++i)
      if (need[n + i]) out[n + i] = gb[i];
  }
  if (st.has_bias) {
    for (size_t i = 0; i < n; ++i)
      if (need[2 * n + i]) out[2 * n + i] = sum_rows(dz[i], bias[i].scalar_type());
  }
  return out;
}

TensorVec unpack_all(const std::vector<SavedVariable>& saved) {
  TensorVec out;
  out.reserve(saved.size());
  for (const SavedVariable& v : saved) out.push_back(v.unpack());
  return out;
}

struct GroupedGemmBackward : Node {
  std::string name() const override { return "cutorch_gemm::GroupedGemmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::vector<SavedVariable>* list : {&a_, &b_, &bias_})
      for (SavedVariable& v : *list) v.reset_data();
  }

  size_t inputs() const { return a_.size() * (st_.has_bias ? 3 : 2); }

  variable_list apply(variable_list&& grads) override {
    return list_backward(grads, unpack_all(a_), unpack_all(b_), unpack_all(bias_), st_, needs(*this, inputs()));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(a_, false);
    args.collect(b_, false);
    args.collect(bias_, false);
    args.collect(st_.activation);
    args.collect(st_.dtype);
    args.collect(st_.out_dtype);
    args.collect(st_.has_bias);
    args.collect(st_.rows);
    args.collect(st_.cols);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    for (std::vector<SavedVariable>* list : {&a_, &b_, &bias_}) saved.before(*list);
    saved.before(st_.rows);
    saved.before(st_.cols);
    torch::dynamo::autograd::PackedArgs p;
    p.pack(st_.has_bias);
    p.pack(unpack_all(a_));
    p.pack(unpack_all(b_));
    if (st_.has_bias) p.pack(unpack_all(bias_));
    p.pack(st_.activation);
    p.pack(st_.dtype);
    p.pack(st_.out_dtype);
    p.pack(st_.rows);
    p.pack(st_.cols);
    p.pack(needs(*this, inputs()));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      ListState st;
      st.has_bias = q.unpack<bool>();
      const TensorVec a = q.unpack<TensorVec>(), b = q.unpack<TensorVec>();
      const TensorVec bias = st.has_bias ? q.unpack<TensorVec>() : TensorVec();
      st.activation = q.unpack<std::string>();
      st.dtype = q.unpack<at::ScalarType>();
      st.out_dtype = q.unpack<at::ScalarType>();
      st.rows = q.unpack<std::vector<c10::SymInt>>();
      st.cols = q.unpack<std::vector<c10::SymInt>>();
      return list_backward(g, a, b, bias, st, q.unpack<std::vector<bool>>());
    });
    for (std::vector<SavedVariable>* list : {&a_, &b_, &bias_}) saved.after(*list);
    saved.after(st_.rows);
    saved.after(st_.cols);
    return out;
  }

  std::vector<SavedVariable> a_, b_, bias_;
  ListState st_;
};

TensorVec grouped_gemm(const TensorVec& a, const TensorVec& b, const std::optional<TensorVec>& bias,
                       c10::string_view activation, OptDt out_dtype) {
  const std::string act(activation);
  const bool has_bias = bias.has_value();
  // An empty list, or lists of different lengths: nothing to record (the op raises its own error).
  const bool lists_ok = !a.empty() && a.size() == b.size() && (!has_bias || bias->size() == a.size());
  decltype(make_node<GroupedGemmBackward>()) node;
  if (lists_ok && torch::autograd::compute_requires_grad(a, b, has_bias ? *bias : TensorVec())) {
    node = make_node<GroupedGemmBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(a, b, has_bias ? *bias : TensorVec()));
    for (const at::Tensor& t : a) node->a_.emplace_back(t, false);
    for (const at::Tensor& t : b) node->b_.emplace_back(t, false);
    if (has_bias)
      for (const at::Tensor& t : *bias) node->bias_.emplace_back(t, false);
  }
  TensorVec out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_grouped_gemm(a, b, bias, activation, out_dtype);
  }
  if (node) {
    ListState& st = node->st_;
    st.activation = act;
    st.dtype = a[0].scalar_type();
    st.out_dtype = out[0].scalar_type();
    st.has_bias = has_bias;
    for (const at::Tensor& o : out) {
      st.rows.push_back(o.sym_size(0));
      st.cols.push_back(o.sym_size(1));
    }
    torch::autograd::set_history(out, node);
  }
  bool tangents = false;
  for (const TensorVec* list : {&a, &b})
    for (const at::Tensor& t : *list) tangents = tangents || torch::autograd::isFwGradDefined(t);
  if (has_bias)
    for (const at::Tensor& t : *bias) tangents = tangents || torch::autograd::isFwGradDefined(t);
  if (lists_ok && tangents) {  // (a loop over the problems: forward-mode AD over a problem list is rare)
    using torch::autograd::generated::details::toNonOptPrimal;
    const OptDt od = acc_out(a[0].scalar_type());
    for (size_t i = 0; i < a.size(); ++i) {
      const at::Tensor ap = toNonOptPrimal(a[i]), bp = toNonOptPrimal(b[i]);
      const at::Tensor ta = a[i]._fw_grad(0), tb = b[i]._fw_grad(0);
      const at::Tensor tbias = has_bias ? (*bias)[i]._fw_grad(0) : at::Tensor();
      at::Tensor dz = add_terms(ta.defined() ? calls::call_mm(ta, bp, od) : at::Tensor(),
                                tb.defined() ? calls::call_mm(ap, tb, od) : at::Tensor());
      if (tbias.defined()) dz = add_terms(dz, tbias.to(acc(ap.scalar_type())));
      if (dz.defined() && act != "none") {
        const OptT bias_p = has_bias ? OptT(toNonOptPrimal((*bias)[i])) : OptT();
        dz = dz * act_grad(calls::call_gemm(ap, bp, bias_p, std::nullopt, 1.0, 0.0, "none", od), act);
      }
      out[i]._set_fw_grad(tangent_out(dz, out[i]), /*level=*/0, /*is_inplace_op=*/false);
    }
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, Autograd, m) { m.impl("grouped_gemm", &grouped_gemm); }

}  // namespace cutorch_gemm::autograd
