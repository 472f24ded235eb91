// The op schemas of namespace `gemm` (ARCHITECTURE.md, Ops). Implementations register per
// device in ops_cpu.cpp and cuda/ops_cuda.cpp; fake kernels and autograd in Python.
//
// NOTE: the optional tensors (bias, c) are positional-or-keyword, not keyword-only as in
// ARCHITECTURE.md: torch.library.register_autograd rejects kwarg-only tensors, and gradients
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
}
