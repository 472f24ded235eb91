#pragma once
// Fusion functors: the element-wise part of every epilogue,
//   D = convert(act(alpha * acc + beta * C + bias)),
// evaluated in the accumulator type (float or double). Host-device and torch-free: the CUDA
// epilogues and the CPU reference both call these, and CPU tests check them against PyTorch.

#include <cmath>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

enum class Activation : int { kNone = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3, kSilu = 4 };

inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone:     return "none";
    case Activation::kRelu:     return "relu";
    case Activation::kGelu:     return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSilu:     return "silu";
  }
  return "?";
}

// Returns false for an unknown name (the binding turns that into a ValueError).
inline bool parse_activation(const char* name, Activation* out) {
  static const Activation all[] = {Activation::kNone, Activation::kRelu, Activation::kGelu,
                                   Activation::kGeluTanh, Activation::kSilu};
  for (Activation a : all) {
    const char* n = activation_name(a);
    int i = 0;
    while (n[i] && name[i] == n[i]) ++i;
    if (n[i] == 0 && name[i] == 0) { *out = a; return true; }
  }
  return false;
}

namespace detail {
// Overloads rather than std:: so device code picks the single-precision intrinsics.
CG_HOST_DEVICE float  erf_(float x)  { return erff(x); }
CG_HOST_DEVICE double erf_(double x) { return erf(x); }
CG_HOST_DEVICE float  tanh_(float x)  { return tanhf(x); }
CG_HOST_DEVICE double tanh_(double x) { return tanh(x); }
CG_HOST_DEVICE float  exp_(float x)  { return expf(x); }
CG_HOST_DEVICE double exp_(double x) { return exp(x); }
}  // namespace detail

template <typename Acc>
CG_HOST_DEVICE Acc apply_activation(Activation act, Acc x) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      // NOTE: NaN stays NaN, like torch.relu (a comparison-select would turn it into 0).
      return x < Acc(0) ? Acc(0) : x;
    case Activation::kGelu:  // x * Phi(x), the erf form (torch's default gelu)
      return Acc(0.5) * x * (Acc(1) + detail::erf_(x * Acc(0.70710678118654752440)));
    case Activation::kGeluTanh: {  // tanh approximation, torch's gelu(approximate="tanh")
      const Acc inner = Acc(0.79788456080286535588) * (x + Acc(0.044715) * x * x * x);
      return Acc(0.5) * x * (Acc(1) + detail::tanh_(inner));
    }
    case Activation::kSilu:
      return x / (Acc(1) + detail::exp_(-x));
  }
  return x;
}

// The linear-combination-with-bias-and-activation functor. `has_c` is false when C is absent
// or beta == 0 (BLAS convention: C is then not read, so NaN in C does not propagate).
template <typename Acc>
struct LinearCombinationBiasAct {
  Acc alpha;
  Acc beta;
  Activation act;

  CG_HOST_DEVICE Acc operator()(Acc acc, Acc c, Acc bias) const {
    return apply_activation(act, alpha * acc + beta * c + bias);
  }
  CG_HOST_DEVICE Acc operator()(Acc acc, Acc bias) const {
    return apply_activation(act, alpha * acc + bias);
  }
};

}  // namespace cutorch_gemm
