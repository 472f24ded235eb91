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
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/FunctionsManual.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

namespace cutorch_gemm::autograd {
namespace {

using torch::autograd::CompiledNodeArgs;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::SwapSavedVariables;
using torch::autograd::variable_list;
using OptT = std::optional<at::Tensor>;
using OptDt = std::optional<at::ScalarType>;

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

at::Tensor call_mm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::mm");
  return h.call(a, b, out_dtype);
}

at::Tensor call_bmm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::bmm");
  return h.call(a, b, out_dtype);
}

at::Tensor call_gemm(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c, double alpha,
                     double beta, c10::string_view activation, OptDt out_dtype) {
  static auto h = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, const OptT&, double, double,
                                    c10::string_view, OptDt)>("gemm::gemm");
  return h.call(a, b, bias, c, alpha, beta, activation, out_dtype);
}

bool defined(const OptT& t) { return t.has_value() && t->defined(); }

// The accumulator dtype of `dtype`'s products, and the out_dtype that makes an op return it.
at::ScalarType acc(at::ScalarType dtype) { return dtype == at::kDouble ? at::kDouble : at::kFloat; }
OptDt acc_out(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble ? OptDt() : OptDt(at::kFloat);
}

// nn.Linear's W.t(): a transposed view of a row-major matrix.
// (sym_stride: under torch.compile's dynamic shapes, a condition on the strides, not their values)
bool b_transposed(const at::Tensor& b) { return b.dim() == 2 && b.sym_stride(0) == 1 && b.sym_stride(1) != 1; }

// x + y where either may be undefined (an absent term).
at::Tensor add_terms(const at::Tensor& x, const at::Tensor& y) {
  if (!x.defined()) return y;
  return y.defined() ? x + y : x;
}

// d act(z) / dz in z's dtype (_autograd_util.act_grad).
at::Tensor act_grad(const at::Tensor& z, const std::string& act) {
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

// A tangent term summed in `t` (undefined: no term, zeros) as the output's tangent: its shape and dtype.
at::Tensor tangent_out(const at::Tensor& t, const at::Tensor& out) {
  if (!t.defined()) return at::zeros_like(out);
  return t.expand_symint(out.sym_sizes()).to(out.scalar_type());
}

// compiled autograd (torch._dynamo.compiled_autograd) calls a node's backward as a function of its saved state
// (`args`, packed as IValues) that it binds and traces; `fn` unpacks them in the order they were packed.
variable_list compiled_apply(const Node& node, const variable_list& grads, SwapSavedVariables& saved,
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

std::vector<bool> needs(const Node& node, size_t n) {
  std::vector<bool> need(n);
  for (size_t i = 0; i < n; ++i) need[i] = node.task_should_compute_output(i);
  return need;
}

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
  at::Tensor dz = grad;  // in D's dtype (fp32 where out_dtype asked for it)
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
