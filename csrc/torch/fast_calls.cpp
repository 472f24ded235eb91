// Direct entry points for the Python wrappers' common calls (cutorch_gemm/ops.py, _call): mm, bmm, gemm,
// grouped_mm and scaled_mm called through the dispatcher from C++, and dropin.linear's and dropin.matmul's whole
// common calls (reshapes, transposed weight, mm / bmm / gemm, activation) as one entry each. Calls that record a
// graph do so in the ops' C++ Autograd kernels (autograd_kernels.cpp, autograd_grouped.cpp, autograd_scaled.cpp).
//
// Why: host time. torch.ops.gemm.*'s Python binding parses every argument against the schema; for a small,
// host-bound linear (2 x 4 x 3 on the CPU reference) a no-grad gemm took 7.8 us through the binding and 3.4
// from here. What the wrappers send here (ops._call): plain tensors (no subclass), no torch function mode,
// tracer, autocast or torch.func transform, no forward-mode tangent.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/extension.h>

#include <optional>
#include <string>
#include <vector>

#include "fast_calls.h"
#include "op_calls.h"

namespace cutorch_gemm::fast {
namespace {

using namespace cutorch_gemm::calls;  // NOLINT: the op calls and their option types

bool defined(const OptT& t) { return t.has_value() && t->defined(); }

// Whether this call records a graph (what the ops' Autograd kernels check).
bool records(std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : ts)
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  return false;
}

// A call that records a graph goes through the op's Autograd kernel (autograd_kernels.cpp); one that does not
// goes below it directly.
at::Tensor mm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  if (records({&a, &b})) return call_mm(a, b, out_dtype);
  at::AutoDispatchBelowAutograd below;
  return call_mm(a, b, out_dtype);
}

at::Tensor bmm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
  if (records({&a, &b})) return call_bmm(a, b, out_dtype);
  at::AutoDispatchBelowAutograd below;
  return call_bmm(a, b, out_dtype);
}

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c, double alpha, double beta,
                const std::string& activation, OptDt out_dtype) {
  if (records({&a, &b, defined(bias) ? &*bias : nullptr, defined(c) ? &*c : nullptr})) {
    return call_gemm(a, b, bias, c, alpha, beta, activation, out_dtype);
  }
  at::AutoDispatchBelowAutograd below;
  return call_gemm(a, b, bias, c, alpha, beta, activation, out_dtype);
}

// dropin.matmul's common call, which the wrapper has checked (plain tensors our ops take, neither 0-d, not
// both 1-d): torch.matmul's semantics on mm (b of at most 2 dimensions: a's batch folded into rows) or bmm
// (batches broadcast; stride-0 batches stay views where they collapse), as dropin.matmul's Python steps.
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const at::Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  at::Tensor out;
  if (b2.dim() <= 2) {
    // (..., M, K) @ (K, N): the batch folded into rows (a view when a's rows are uniform)
    std::vector<int64_t> shape(a2.sizes().begin(), a2.sizes().end() - 1);
    int64_t rows = 1;
    for (int64_t d : shape) rows *= d;
    out = mm(a2.reshape({rows, a2.size(-1)}), b2, std::nullopt);
    shape.push_back(b2.size(-1));
    out = out.view(shape);
  } else {
    const auto a_batch = a2.sizes().slice(0, a2.dim() - 2);
    const auto b_batch = b2.sizes().slice(0, b2.dim() - 2);
    std::vector<int64_t> batch = at::infer_size(a_batch, b_batch);
    int64_t nb = 1;
    for (int64_t d : batch) nb *= d;
    auto expanded = [&](const at::Tensor& t) {
      std::vector<int64_t> full(batch);
      full.push_back(t.size(-2));
      full.push_back(t.size(-1));
      return t.expand(full).reshape({nb, t.size(-2), t.size(-1)});
    };
    out = bmm(expanded(a2), expanded(b2), std::nullopt);
    batch.push_back(a2.size(-2));
    batch.push_back(b2.size(-1));
    out = out.view(batch);
  }
  if (a.dim() == 1) out = out.squeeze(-2);
  if (b.dim() == 1) out = out.squeeze(-1);
  return out;
}

// dropin.linear's common call, which the wrapper has checked (plain tensors our ops take, x of at least one
// dimension, weight (N, K), bias (N,) or none): x's leading dimensions as rows, weight read through its
// transposed view, the result in x's leading shape. The activation fused into the epilogue where nothing
// records a graph; when something does, applied after the GEMM as PyTorch's own op (its backward reads the
// saved output, where the fused op's backward would recompute the pre-activation with a second GEMM).
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const OptT& bias, const std::string& activation) {
  const int64_t k = x.size(-1);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  const bool two_d = x.dim() == 2;
  const at::Tensor x2 = two_d ? x : x.reshape({rows, k});
  const at::Tensor wt = weight.t();
  const bool recorded = records({&x, &weight, defined(bias) ? &*bias : nullptr});
  const std::string fused = recorded ? "none" : activation;
  at::Tensor out = (!defined(bias) && fused == "none")
                       ? mm(x2, wt, std::nullopt)  // (mm: the same kernels, fewer arguments)
                       : gemm(x2, wt, bias, std::nullopt, 1.0, 0.0, fused, std::nullopt);
  if (recorded && activation != "none") {
    if (activation == "relu") out = at::relu(out);
    else if (activation == "gelu") out = at::gelu(out, "none");
    else if (activation == "gelu_tanh") out = at::gelu(out, "tanh");
    else if (activation == "silu") out = at::silu(out);
    else TORCH_CHECK_VALUE(false, "linear: unknown activation '", activation, "'");
  }
  if (two_d) return out;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = weight.size(0);
  return out.view(shape);
}

// grouped_mm: through its Autograd kernel (autograd_grouped.cpp) when the call records a graph, as mm.
at::Tensor grouped_mm(const at::Tensor& a, const at::Tensor& b, const OptT& offs, const OptT& bias,
                      const std::string& activation, OptDt out_dtype) {
  if (records({&a, &b, defined(bias) ? &*bias : nullptr})) {
    return call_grouped_mm(a, b, offs, bias, activation, out_dtype);
  }
  at::AutoDispatchBelowAutograd below;
  return call_grouped_mm(a, b, offs, bias, activation, out_dtype);
}

at::Tensor scaled_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a, const at::Tensor& scale_b,
                     const OptT& bias, OptDt out_dtype, bool use_fast_accum) {
  const at::ScalarType out_t = out_dtype.value_or(at::kBFloat16);
  if (records({&a, &b, &scale_a, &scale_b, defined(bias) ? &*bias : nullptr})) {
    return call_scaled_mm(a, b, scale_a, scale_b, bias, out_t, use_fast_accum);
  }
  at::AutoDispatchBelowAutograd below;
  return call_scaled_mm(a, b, scale_a, scale_b, bias, out_t, use_fast_accum);
}

}  // namespace

void register_fast_calls(pybind11::module_& m) {
  namespace py = pybind11;
  // The GIL released while the op runs, as torch.ops' calls and ATen's bindings release it (the arguments are
  // converted before, the result after): a long CPU op or a launch does not stall the process's other Python
  // threads. Nothing below touches Python objects; Python kernels and dispatch modes take the GIL themselves.
  const auto nogil = py::call_guard<py::gil_scoped_release>();
  m.def("fast_mm", &mm, nogil, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("out_dtype") = py::none(),
        "gemm.mm for ops._call: below autograd, or through its Autograd kernel when it records a graph.");
  m.def("fast_bmm", &bmm, nogil, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("out_dtype") = py::none(),
        "gemm.bmm for ops._call (as fast_mm).");
  m.def("fast_gemm", &gemm, nogil, py::arg("a"), py::arg("b"), py::arg("bias") = py::none(), py::arg("c") = py::none(),
        py::kw_only(), py::arg("alpha") = 1.0, py::arg("beta") = 0.0, py::arg("activation") = "none",
        py::arg("out_dtype") = py::none(),
        "gemm.gemm for ops._call (as fast_mm).");
  m.def("fast_matmul", &matmul, nogil, py::arg("a"), py::arg("b"),
        "dropin.matmul's checked common call: torch.matmul's semantics on mm (a's batch folded into rows) or bmm "
        "(broadcast batches).");
  m.def("fast_linear", &linear, nogil, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
        py::arg("activation") = "none",
        "dropin.linear's checked common call: x (..., K) as rows @ weight.t() (+ bias), activation fused unless "
        "the call records a graph.");
  m.def("fast_grouped_mm", &grouped_mm, nogil, py::arg("a"), py::arg("b"), py::arg("offs") = py::none(),
        py::arg("bias") = py::none(), py::kw_only(), py::arg("activation") = "none", py::arg("out_dtype") = py::none(),
        "gemm.grouped_mm for ops._call (as fast_mm).");
  m.def("fast_scaled_mm", &scaled_mm, nogil, py::arg("a"), py::arg("b"), py::arg("scale_a"), py::arg("scale_b"),
        py::arg("bias") = py::none(), py::kw_only(), py::arg("out_dtype") = py::none(),
        py::arg("use_fast_accum") = false,
        "gemm.scaled_mm for ops._call (as fast_mm).");
}

}  // namespace cutorch_gemm::fast
