// The vmap kernels (dispatch key FuncTorchBatched) of every gemm op (mm, bmm, gemm, grouped_mm, grouped_gemm,
// scaled_mm, swiglu, moe_combine): torch.vmap's batching rules in C++, as ATen's own ops have them, so that a
// vmapped call, per-sample gradients (vmap of grad) and jacrev / hessian (which vmap the backward) stay one launch
// per op and out of Python. (torch.library's register_vmap rules, their Python predecessors, cost ~150 us of host
// time per call on the H200 host.)
//
// Each kernel takes the operands at the current vmap level: an operand batched there is unwrapped to its
// value and batch dimension, the others are shared by every entry. The rules:
// - mm: one bmm over the batch, a shared operand broadcast with a zero batch stride (no copy); int8 (no
//   batched int8 product here): one mm per entry.
// - bmm: the vmapped batch and bmm's own batch flattened into one bmm.
// - gemm with one weight and bias: the batch folded into M (a, and c where given, as batch * M rows); a batch
//   of weights or biases: one gemm per entry.
// - grouped_mm, grouped_gemm, scaled_mm, moe_combine: one call per entry.
// - swiglu: the batch as one more leading dimension (the op takes any).
// The results are wrapped back as batched at this level, batch dimension 0. The calls below go through the
// dispatcher with this level's batching key excluded, so the levels beneath (grad, another vmap) see them.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/functorch/BatchedTensorImpl.h>
#include <torch/library.h>

#include "op_calls.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

namespace cutorch_gemm::vmap {
namespace {

using namespace cutorch_gemm::calls;  // NOLINT: the op calls and their option types
using Bdim = std::optional<int64_t>;
using at::functorch::makeBatched;
using at::functorch::maybeGetBatchedImpl;

int64_t level_of(const at::Tensor& t) {
  const auto* impl = t.defined() ? maybeGetBatchedImpl(t) : nullptr;
  return impl != nullptr ? impl->level() : -1;
}
int64_t level_of(const OptT& t) { return t.has_value() ? level_of(*t) : -1; }

template <class... Ts>
int64_t batched_level(const Ts&... ts) {
  const int64_t level = std::max({level_of(ts)...});
  TORCH_INTERNAL_ASSERT(level >= 0, "a batched kernel without a batched operand");
  return level;
}

struct Operand {
  at::Tensor value;  // undefined: an absent optional operand
  Bdim bdim;         // batched at the level: its batch dimension in value
};

Operand unwrap(const OptT& t, int64_t level) {  // (an at::Tensor converts)
  if (!t.has_value() || !t->defined()) return {};
  const auto* impl = maybeGetBatchedImpl(*t);
  if (impl == nullptr || impl->level() != level) return {*t, std::nullopt};
  return {impl->value(), impl->bdim()};
}

// The batch size: the size of the first batched operand's batch dimension.
c10::SymInt batch_size(std::initializer_list<const Operand*> ops) {
  for (const Operand* o : ops)
    if (o->bdim.has_value()) return o->value.sym_size(*o->bdim);
  TORCH_INTERNAL_ASSERT(false, "no batched operand");
}

// The operand with its batch dimension first; a shared one broadcast to n entries (stride 0, no copy).
at::Tensor batch_first(const Operand& o, const c10::SymInt& n) {
  if (o.bdim.has_value()) return o.value.movedim(*o.bdim, 0);
  std::vector<c10::SymInt> shape{n};
  for (const c10::SymInt& s : o.value.sym_sizes()) shape.push_back(s);
  return o.value.unsqueeze(0).expand_symint(shape);
}

// A shared operand's value (absent: nullopt).
OptT shared(const Operand& o) { return o.value.defined() ? OptT(o.value) : std::nullopt; }

// Entry i of an operand (a shared one: itself); an absent one stays absent.
OptT entry(const Operand& o, int64_t i) {
  if (!o.value.defined()) return std::nullopt;
  return o.bdim.has_value() ? o.value.select(*o.bdim, i) : o.value;
}

// An entry of an operand as a meta tensor (its shape and dtype, no data); an absent one stays absent.
OptT meta_entry(const Operand& o) {
  if (!o.value.defined()) return std::nullopt;
  std::vector<int64_t> shape = o.value.sizes().vec();
  if (o.bdim.has_value()) shape.erase(shape.begin() + *o.bdim);
  return at::empty(shape, o.value.options().device(at::kMeta));
}

// One call per batch entry, stacked. `call(pick)` calls the op on pick(operand) for each operand; an empty batch
// takes one entry's result shape and dtype from the op's meta kernel.
template <class Call>
at::Tensor per_entry(const c10::SymInt& n_sym, const at::Device& device, Call call) {
  const int64_t n = n_sym.guard_int(__FILE__, __LINE__);
  if (n == 0) {
    at::AutoDispatchBelowAutograd below;
    const at::Tensor one = call(meta_entry);
    std::vector<int64_t> shape{0};
    shape.insert(shape.end(), one.sizes().begin(), one.sizes().end());
    return at::empty(shape, one.options().device(device));
  }
  std::vector<at::Tensor> outs;
  outs.reserve(n);
  for (int64_t i = 0; i < n; ++i) outs.push_back(call([i](const Operand& o) { return entry(o, i); }));
  return at::stack(outs);
}

at::Tensor mm_batched(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(a, b);
  const Operand A = unwrap(a, level), B = unwrap(b, level);
  const c10::SymInt n = batch_size({&A, &B});
  at::Tensor out;
  if (A.value.scalar_type() == at::kChar) {
    out = per_entry(n, A.value.device(), [&](auto pick) { return call_mm(*pick(A), *pick(B), out_dtype); });
  } else {
    out = call_bmm(batch_first(A, n), batch_first(B, n), out_dtype);
  }
  return makeBatched(out, 0, level);
}

at::Tensor bmm_batched(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(a, b);
  const Operand A = unwrap(a, level), B = unwrap(b, level);
  const c10::SymInt n = batch_size({&A, &B});
  const at::Tensor a4 = batch_first(A, n), b4 = batch_first(B, n);  // (n, g, m, k), (n, g, k, p)
  const c10::SymInt g = a4.sym_size(1);
  const at::Tensor out = call_bmm(a4.reshape_symint({n * g, a4.sym_size(2), a4.sym_size(3)}),
                                  b4.reshape_symint({n * g, b4.sym_size(2), b4.sym_size(3)}), out_dtype);
  return makeBatched(out.reshape_symint({n, g, out.sym_size(1), out.sym_size(2)}), 0, level);
}

at::Tensor gemm_batched(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c, double alpha,
                        double beta, c10::string_view activation, OptDt out_dtype) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(a, b, bias, c);
  const Operand A = unwrap(a, level), B = unwrap(b, level), Bias = unwrap(bias, level), C = unwrap(c, level);
  const c10::SymInt n = batch_size({&A, &B, &Bias, &C});
  at::Tensor out;
  if (B.bdim.has_value() || Bias.bdim.has_value()) {  // a batch of weights or biases: one gemm each
    out = per_entry(n, A.value.device(), [&](auto pick) {
      return call_gemm(*pick(A), *pick(B), pick(Bias), pick(C), alpha, beta, activation, out_dtype);
    });
  } else {  // one weight: the batch folded into M
    const at::Tensor a3 = batch_first(A, n);  // (n, m, k)
    const c10::SymInt m = a3.sym_size(1);
    const c10::SymInt cols = B.value.sym_size(1);
    OptT c2;
    if (C.value.defined()) c2 = batch_first(C, n).reshape_symint({n * m, cols});
    out = call_gemm(a3.reshape_symint({n * m, a3.sym_size(2)}), B.value, shared(Bias), c2, alpha, beta,
                    activation, out_dtype)
              .reshape_symint({n, m, cols});
  }
  return makeBatched(out, 0, level);
}

at::Tensor grouped_mm_batched(const at::Tensor& a, const at::Tensor& b, const OptT& offs, const OptT& bias,
                              c10::string_view activation, OptDt out_dtype) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(a, b, offs, bias);
  const Operand A = unwrap(a, level), B = unwrap(b, level), Offs = unwrap(offs, level), Bias = unwrap(bias, level);
  const at::Tensor out = per_entry(batch_size({&A, &B, &Offs, &Bias}), A.value.device(), [&](auto pick) {
    return call_grouped_mm(*pick(A), *pick(B), pick(Offs), pick(Bias), activation, out_dtype);
  });
  return makeBatched(out, 0, level);
}

at::Tensor swiglu_batched(const at::Tensor& gate_up) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(gate_up);
  const Operand Z = unwrap(gate_up, level);
  return makeBatched(call_swiglu(Z.value.movedim(*Z.bdim, 0)), 0, level);  // (the op takes any leading dims)
}

at::Tensor moe_combine_batched(const at::Tensor& y, const at::Tensor& inv, const OptT& weights, int64_t k) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(y, inv, weights);
  const Operand Y = unwrap(y, level), Inv = unwrap(inv, level), W = unwrap(weights, level);
  const at::Tensor out = per_entry(batch_size({&Y, &Inv, &W}), Y.value.device(), [&](auto pick) {
    return call_moe_combine(*pick(Y), *pick(Inv), pick(W), k);
  });
  return makeBatched(out, 0, level);
}

at::Tensor scaled_mm_batched(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const OptT& bias, at::ScalarType out_dtype,
                             bool use_fast_accum) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const int64_t level = batched_level(a, b, scale_a, scale_b, bias);
  const Operand A = unwrap(a, level), B = unwrap(b, level), Sa = unwrap(scale_a, level), Sb = unwrap(scale_b, level),
                Bias = unwrap(bias, level);
  const at::Tensor out = per_entry(batch_size({&A, &B, &Sa, &Sb, &Bias}), A.value.device(), [&](auto pick) {
    return call_scaled_mm(*pick(A), *pick(B), *pick(Sa), *pick(Sb), pick(Bias), out_dtype, use_fast_accum);
  });
  return makeBatched(out, 0, level);
}

// grouped_gemm: one call per batch entry over the lists' entries; each problem's outputs stacked.
TensorVec grouped_gemm_batched(const TensorVec& a, const TensorVec& b, const std::optional<TensorVec>& bias,
                               c10::string_view activation, OptDt out_dtype) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  int64_t level = -1;
  for (const TensorVec* list : {&a, &b, bias.has_value() ? &*bias : nullptr})
    if (list != nullptr)
      for (const at::Tensor& t : *list) level = std::max(level, level_of(t));
  TORCH_INTERNAL_ASSERT(level >= 0, "a batched kernel without a batched operand");
  auto unwrap_all = [level](const TensorVec& list) {
    std::vector<Operand> ops;
    ops.reserve(list.size());
    for (const at::Tensor& t : list) ops.push_back(unwrap(t, level));
    return ops;
  };
  const std::vector<Operand> A = unwrap_all(a), B = unwrap_all(b), Bias = bias.has_value() ? unwrap_all(*bias)
                                                                                         : std::vector<Operand>();
  std::vector<const Operand*> all;
  for (const std::vector<Operand>* list : {&A, &B, &Bias})
    for (const Operand& o : *list) all.push_back(&o);
  c10::SymInt n_sym;
  for (const Operand* o : all)
    if (o->bdim.has_value()) {
      n_sym = o->value.sym_size(*o->bdim);
      break;
    }
  const int64_t n = n_sym.guard_int(__FILE__, __LINE__);
  auto call = [&](auto pick) {
    auto lists = [&](const std::vector<Operand>& ops) {
      TensorVec out;
      out.reserve(ops.size());
      for (const Operand& o : ops) out.push_back(*pick(o));
      return out;
    };
    const std::optional<TensorVec> bias_list = bias.has_value() ? std::optional<TensorVec>(lists(Bias)) : std::nullopt;
    return call_grouped_gemm(lists(A), lists(B), bias_list, activation, out_dtype);
  };
  TensorVec out;
  if (n == 0) {  // each problem's shape and dtype from the op's meta kernel
    at::AutoDispatchBelowAutograd below;
    for (const at::Tensor& one : call(meta_entry)) {
      std::vector<int64_t> shape{0};
      shape.insert(shape.end(), one.sizes().begin(), one.sizes().end());
      out.push_back(makeBatched(at::empty(shape, one.options().device(A[0].value.device())), 0, level));
    }
    return out;
  }
  std::vector<TensorVec> per(a.size());
  for (int64_t i = 0; i < n; ++i) {
    const TensorVec r = call([i](const Operand& o) { return entry(o, i); });
    for (size_t p = 0; p < r.size(); ++p) per[p].push_back(r[p]);
  }
  for (const TensorVec& entries : per) out.push_back(makeBatched(at::stack(entries), 0, level));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gemm, FuncTorchBatched, m) {
  m.impl("mm", &mm_batched);
  m.impl("bmm", &bmm_batched);
  m.impl("gemm", &gemm_batched);
  m.impl("grouped_mm", &grouped_mm_batched);
  m.impl("swiglu", &swiglu_batched);
  m.impl("moe_combine", &moe_combine_batched);
  m.impl("scaled_mm", &scaled_mm_batched);
  m.impl("grouped_gemm", &grouped_gemm_batched);
}

}  // namespace cutorch_gemm::vmap
