// The op schemas of namespace `gemm` (ARCHITECTURE.md, Ops). Implementations register per
// device in ops_cpu.cpp and cuda/ops_cuda.cpp; fake kernels in Python; autograd in autograd_kernels.cpp (mm,
// bmm, gemm) and Python (the others).
//
// NOTE: the optional tensors (bias, c) are positional-or-keyword, not keyword-only as in
// ARCHITECTURE.md: autograd.Functions and torch.library.register_vmap reject kwarg-only tensors, and gradients
// must flow to bias and c. Every call written with keywords (bias=..., c=...) is unchanged.
#include <torch/library.h>

TORCH_LIBRARY(gemm, m) {
  m.def("mm(Tensor a, Tensor b, *, ScalarType? out_dtype=None) -> Tensor");
  m.def("gemm(Tensor a, Tensor b, Tensor? bias=None, Tensor? c=None, *, float alpha=1., "
        "float beta=0., str activation=\"none\", ScalarType? out_dtype=None) -> Tensor");
  m.def("bmm(Tensor a, Tensor b, *, ScalarType? out_dtype=None) -> Tensor");
  m.def("grouped_mm(Tensor a, Tensor b, Tensor? offs=None, Tensor? bias=None, *, "
        "str activation=\"none\", ScalarType? out_dtype=None) -> Tensor");
  m.def("grouped_gemm(Tensor[] a, Tensor[] b, Tensor[]? bias=None, *, str activation=\"none\", "
        "ScalarType? out_dtype=None) -> Tensor[]");
  // fp8 e4m3 / e5m2 operands with per-tensor or per-row (scale_a) / per-column (scale_b) fp32
  // scales: D = scale_a * scale_b * (a @ b) + bias. NOTE: the default 15 is ScalarType::BFloat16
  // (schemas take no dtype names as defaults).
  // use_fast_accum: as torch._scaled_mm's (the GPU kernel may chain the products over all of K in
  // the tensor core, faster and less accurate); the CPU reference is exact either way.
  m.def("scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, *, "
        "ScalarType out_dtype=15, bool use_fast_accum=False) -> Tensor");
  // SwiGLU over a [gate | up] last dimension (the layout of grouped_mm(activation="swiglu")):
  // silu(gate) * up, and its backward d[gate | up] from grad. The element-wise half of a gated
  // MLP in training, where the GEMM must keep gate and up for the backward (nn.GatedMLP).
  m.def("swiglu(Tensor gate_up) -> Tensor");
  m.def("swiglu_backward(Tensor grad, Tensor gate_up) -> Tensor");
  // The Mixture-of-Experts combine: y holds T * k rows (each token's k expert outputs, in any
  // order, e.g. sorted by expert), inv (T * k) integer the row of pair (t, j) at t * k + j;
  // out[t] = sum_j weights[t, j] * y[inv[t * k + j]] (weights absent: 1). The backward returns
  // (grad_y, grad_weights (T, k) fp32, empty without weights). nn.GroupedExperts.
  m.def("moe_combine(Tensor y, Tensor inv, Tensor? weights, int k) -> Tensor");
  m.def("moe_combine_backward(Tensor grad, Tensor y, Tensor inv, Tensor? weights, int k) -> (Tensor, Tensor)");
}
