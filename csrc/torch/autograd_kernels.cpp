// The Autograd kernels of gemm::mm, gemm::bmm and gemm::gemm: C++ kernels that record a plain autograd Node and
// compute forward-mode tangents, as ATen's own ops do (VariableType), instead of applying an autograd.Function.
//
// Why: torch.func. A transform (grad, vjp, jacrev, jvp, jacfwd) runs an op's Autograd kernel once per level on
// that level's wrapped tensors, and a kernel like this one is all it needs, in C++. An autograd.Function cannot be
// applied inside the dispatcher under a transform (a Python one must be applied from Python, through torch's
// custom_function_call, a pass over every level in Python: ~300 us per apply on the CPU machine; a C++
// torch::autograd::Function refuses transforms outright). With these kernels and the ops' vmap kernels
// (vmap_kernels.cpp), the wrappers and raw torch.ops.gemm.mm / bmm / gemm calls alike go through the dispatcher
// under every transform.
//
// The formulas (tests/test_autograd_paths.py checks them against autograd through torch's own ops):
//   D = act(Z), Z = alpha * (A @ B) + beta * C + bias;  dZ = dD * act'(Z) (Z recomputed in fp32, one GEMM)
//   dA = dZ @ B^T, dB = A^T @ dZ (computed as (dZ^T @ A)^T when B is a transposed row-major view, nn.Linear's
//   W.t(), so W's gradient arrives in W's layout), dbias = dZ's rows summed in fp32, dC = beta * dZ;
//   tangent: act'(Z) * (alpha * (dA @ B + A @ dB) + beta * dC + dbias).
// Backward and tangents call the ops through the dispatcher, so they are differentiable again (double backward,
// hessian) and transform-aware. A product keeps A only where B's gradient needs it and B only where A's does.
#include "autograd_common.h"

namespace cutorch_gemm::autograd {
namespace {

// ---- mm / bmm: D = A @ B ----------------------------------------------------------------------------------------

struct ProductState {
  at::ScalarType dtype = at::kFloat;  // the operands' (the gradient is cast to it)
  bool b_transposed = false;
  bool batched = false;
};

variable_list product_backward(const at::Tensor& grad, const at::Tensor& a, const at::Tensor& b,
                               const ProductState& st, const std::vector<bool>& need) {
  variable_list out(2);
  if (!grad.defined()) return out;
  const at::Tensor g = grad.to(st.dtype);
  if (st.batched) {
    if (need[0]) out[0] = call_bmm(g, b.transpose(1, 2), std::nullopt);
    if (need[1]) out[1] = call_bmm(a.transpose(1, 2), g, std::nullopt);
  } else {
    if (need[0]) out[0] = call_mm(g, b.t(), std::nullopt);
    if (need[1]) out[1] = st.b_transposed ? call_mm(g.t(), a, std::nullopt).t() : call_mm(a.t(), g, std::nullopt);
  }
  return out;
}

struct ProductBackward : Node {
  std::string name() const override { return st_.batched ? "cutorch_gemm::BmmBackward" : "cutorch_gemm::MmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    a_.reset_data();
    b_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    return product_backward(grads[0], a_.unpack(), b_.unpack(), st_, needs(*this, 2));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(a_, false);
    args.collect(b_, false);
    args.collect(st_.dtype);
    args.collect(st_.b_transposed);
    args.collect(st_.batched);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    saved.before(a_);
    saved.before(b_);
    torch::dynamo::autograd::PackedArgs p;
    p.pack(a_.unpack());
    p.pack(b_.unpack());
    p.pack(st_.dtype);
    p.pack(st_.b_transposed);
    p.pack(st_.batched);
    p.pack(needs(*this, 2));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor a = q.unpack<at::Tensor>(), b = q.unpack<at::Tensor>();
      ProductState st;
      st.dtype = q.unpack<at::ScalarType>();
      st.b_transposed = q.unpack<bool>();
      st.batched = q.unpack<bool>();
      return product_backward(g[0], a, b, st, q.unpack<std::vector<bool>>());
    });
    saved.after(a_);
    saved.after(b_);
    return out;
  }

  SavedVariable a_, b_;
  ProductState st_;
};

template <bool kBatched>
at::Tensor product(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  decltype(make_node<ProductBackward>()) node;
  if (torch::autograd::compute_requires_grad(a, b)) {
    node = make_node<ProductBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(a, b));
    if (b.requires_grad()) node->a_ = SavedVariable(a, false);
    if (a.requires_grad()) node->b_ = SavedVariable(b, false);
    node->st_ = {a.scalar_type(), b_transposed(b), kBatched};
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = kBatched ? call_bmm(a, b, out_dtype) : call_mm(a, b, out_dtype);
  }
  if (node) torch::autograd::set_history(out, node);
  if (torch::autograd::isFwGradDefined(a) || torch::autograd::isFwGradDefined(b)) {
    // dA @ B + A @ dB, a term per present tangent, in D's dtype
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor ta = a._fw_grad(0), tb = b._fw_grad(0);
    const at::Tensor ap = toNonOptPrimal(a), bp = toNonOptPrimal(b);
    auto op = [&](const at::Tensor& x, const at::Tensor& y) {
      return kBatched ? call_bmm(x, y, out_dtype) : call_mm(x, y, out_dtype);
    };
    const at::Tensor t = add_terms(ta.defined() ? op(ta, bp) : at::Tensor(), tb.defined() ? op(ap, tb) : at::Tensor());
    out._set_fw_grad(tangent_out(t, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

at::Tensor mm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) { return product<false>(a, b, out_dtype); }
at::Tensor bmm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) { return product<true>(a, b, out_dtype); }

// ---- gemm: D = act(alpha * (A @ B) + beta * C + bias) -----------------------------------------------------------

OptT opt(const at::Tensor& t) { return t.defined() ? OptT(t) : OptT(); }

struct GemmState {
  double alpha = 1.0, beta = 0.0;
  std::string activation;
  at::ScalarType dtype = at::kFloat;  // a's and b's
  int64_t bias_dtype = -1;            // -1: no bias
  int64_t c_dtype = -1;               // -1: no c; c itself is kept only where its value is needed (activation)
  std::vector<c10::SymInt> c_sizes;
  bool b_transposed = false;
};

variable_list gemm_backward(const at::Tensor& grad, const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias,
                            const at::Tensor& c, const GemmState& st, const std::vector<bool>& need) {
  variable_list out(4);  // one per tensor argument: a, b, bias, c
  if (!grad.defined()) return out;
  // in D's dtype (fp32 where out_dtype asked for it); without an activation the gradient as it comes: a round trip
  // through fp32 cost ~0.5 ms per 8192x14336 bf16 gradient (H100) for nothing (the GEMMs read 16 bits either way)
  at::Tensor dz = grad;
  if (st.activation != "none") {
    // the pre-activation recomputed in the accumulator dtype (one GEMM, instead of keeping Z)
    const at::Tensor z = call_gemm(a, b, opt(bias), opt(c), st.alpha, st.beta, "none", acc_out(st.dtype));
    dz = dz.to(acc(st.dtype)) * act_grad(z, st.activation);
  }
  const at::Tensor g = dz.to(st.dtype);
  // alpha 1 (nn.Linear): mm, the same kernels with fewer arguments.
  auto prod = [&st](const at::Tensor& x, const at::Tensor& y) {
    return st.alpha == 1.0 ? call_mm(x, y, std::nullopt)
                           : call_gemm(x, y, std::nullopt, std::nullopt, st.alpha, 0.0, "none", std::nullopt);
  };
  if (need[0]) out[0] = prod(g, b.t());
  if (need[1]) out[1] = st.b_transposed ? prod(g.t(), a).t() : prod(a.t(), g);
  if (st.bias_dtype >= 0 && need[2]) {
    // rows summed in fp32 (fp64 for fp64); one kernel when dz already has the bias's dtype
    const auto bt = at::ScalarType(st.bias_dtype);
    out[2] = dz.scalar_type() == bt ? dz.sum(0) : dz.sum(0, /*keepdim=*/false, acc(dz.scalar_type())).to(bt);
  }
  if (st.c_dtype >= 0 && need[3]) {
    const auto ct = at::ScalarType(st.c_dtype);  // (c is not read at beta 0: a zero gradient)
    out[3] = st.beta != 0.0 ? (dz * st.beta).to(ct) : at::zeros_symint(st.c_sizes, dz.options().dtype(ct));
  }
  return out;
}

struct GemmBackward : Node {
  std::string name() const override { return "cutorch_gemm::GemmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    a_.reset_data();
    b_.reset_data();
    bias_.reset_data();
    c_.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    return gemm_backward(grads[0], a_.unpack(), b_.unpack(), bias_.unpack(), c_.unpack(), st_, needs(*this, 4));
  }

  void compiled_args(CompiledNodeArgs& args) const override {
    args.collect(a_, false);
    args.collect(b_, false);
    args.collect(bias_, false);
    args.collect(c_, false);
    args.collect(st_.alpha);
    args.collect(st_.beta);
    args.collect(st_.activation);
    args.collect(st_.dtype);
    args.collect(st_.bias_dtype);
    args.collect(st_.c_dtype);
    args.collect(st_.c_sizes);
    args.collect(st_.b_transposed);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    saved.before(a_);
    saved.before(b_);
    saved.before(bias_);
    saved.before(c_);
    saved.before(st_.c_sizes);  // (every SymInt compiled_args collected: the compiler's dynamic sizes)
    torch::dynamo::autograd::PackedArgs p;
    for (const SavedVariable* v : {&a_, &b_, &bias_, &c_}) p.pack(v->unpack());
    p.pack(st_.alpha);
    p.pack(st_.beta);
    p.pack(st_.activation);
    p.pack(st_.dtype);
    p.pack(st_.bias_dtype);
    p.pack(st_.c_dtype);
    p.pack(st_.c_sizes);
    p.pack(st_.b_transposed);
    p.pack(needs(*this, 4));
    variable_list out = compiled_apply(*this, grads, saved, p.vec(), [](const variable_list& g,
                                                                      const std::vector<c10::IValue>& packed) {
      torch::dynamo::autograd::PackedArgs q(packed);
      const at::Tensor a = q.unpack<at::Tensor>(), b = q.unpack<at::Tensor>();
      const at::Tensor bias = q.unpack<at::Tensor>(), c = q.unpack<at::Tensor>();
      GemmState st;
      st.alpha = q.unpack<double>();
      st.beta = q.unpack<double>();
      st.activation = q.unpack<std::string>();
      st.dtype = q.unpack<at::ScalarType>();
      st.bias_dtype = q.unpack<int64_t>();
      st.c_dtype = q.unpack<int64_t>();
      st.c_sizes = q.unpack<std::vector<c10::SymInt>>();
      st.b_transposed = q.unpack<bool>();
      return gemm_backward(g[0], a, b, bias, c, st, q.unpack<std::vector<bool>>());
    });
    saved.after(a_);
    saved.after(b_);
    saved.after(bias_);
    saved.after(c_);
    saved.after(st_.c_sizes);
    return out;
  }

  SavedVariable a_, b_, bias_, c_;
  GemmState st_;
};

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c, double alpha, double beta,
                c10::string_view activation, OptDt out_dtype) {
  const std::string act(activation);
  decltype(make_node<GemmBackward>()) node;
  if (torch::autograd::compute_requires_grad(a, b, bias, c)) {
    node = make_node<GemmBackward>();
    node->set_next_edges(torch::autograd::collect_next_edges(a, b, bias, c));
    // Without an activation a product's rule (A for B's gradient, B for A's); with one, everything, for Z.
    const bool all = act != "none";
    if (all || b.requires_grad()) node->a_ = SavedVariable(a, false);
    if (all || a.requires_grad()) node->b_ = SavedVariable(b, false);
    if (all && defined(bias)) node->bias_ = SavedVariable(*bias, false);
    if (all && defined(c)) node->c_ = SavedVariable(*c, false);
    GemmState& st = node->st_;
    st.alpha = alpha;
    st.beta = beta;
    st.activation = act;
    st.dtype = a.scalar_type();
    st.bias_dtype = defined(bias) ? int64_t(bias->scalar_type()) : -1;
    st.c_dtype = defined(c) ? int64_t(c->scalar_type()) : -1;
    if (defined(c)) st.c_sizes = c->sym_sizes().vec();
    st.b_transposed = b_transposed(b);
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    out = call_gemm(a, b, bias, c, alpha, beta, activation, out_dtype);
  }
  if (node) torch::autograd::set_history(out, node);
  using torch::autograd::isFwGradDefined;
  if (isFwGradDefined(a) || isFwGradDefined(b) || isFwGradDefined(bias) || isFwGradDefined(c)) {
    // act'(Z) * (alpha * (dA @ B + A @ dB) + beta * dC + dbias), in the accumulator dtype
    using torch::autograd::generated::details::toNonOptPrimal;
    const at::Tensor ap = toNonOptPrimal(a), bp = toNonOptPrimal(b);
    const at::Tensor ta = a._fw_grad(0), tb = b._fw_grad(0);
    const at::Tensor tbias = defined(bias) ? bias->_fw_grad(0) : at::Tensor();
    const at::Tensor tc = defined(c) ? c->_fw_grad(0) : at::Tensor();
    const OptDt od = acc_out(a.scalar_type());
    auto prod = [&](const at::Tensor& x, const at::Tensor& y) {
      return call_gemm(x, y, std::nullopt, std::nullopt, alpha, 0.0, "none", od);
    };
    at::Tensor dz = add_terms(ta.defined() ? prod(ta, bp) : at::Tensor(), tb.defined() ? prod(ap, tb) : at::Tensor());
    if (tc.defined() && beta != 0.0) dz = add_terms(dz, tc.to(acc(a.scalar_type())) * beta);  // (c unread at beta 0)
    if (tbias.defined()) dz = add_terms(dz, tbias.to(acc(a.scalar_type())));
    if (dz.defined() && act != "none") {
      const at::Tensor z = call_gemm(ap, bp, opt(toNonOptPrimal(bias)), opt(toNonOptPrimal(c)), alpha, beta, "none", od);
      dz = dz * act_grad(z, act);
    }
    out._set_fw_grad(tangent_out(dz, out), /*level=*/0, /*is_inplace_op=*/false);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, Autograd, m) {
  m.impl("mm", &mm);
  m.impl("bmm", &bmm);
  m.impl("gemm", &gemm);
}

}  // namespace cutorch_gemm::autograd
