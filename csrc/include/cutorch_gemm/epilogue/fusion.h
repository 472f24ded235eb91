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

// The activation as a compile-time choice, for epilogues that apply it from registers (each
// unrolled copy must be short: 128 per thread per tile) into a 16-bit D (or a tf32 launch's fp32 D,
// whose products carry a relative error of about 2^-11 themselves). Not bit-equal to
// apply_activation:
// - SiLU is x / (1 + exp(-x)): one exp2 and one fast division (two MUFU operations; tanhf and a
//   full-precision division are about 20 instructions each), within a few fp32 ulp;
// - GELU's tanh form on the GPU is h + h tanh(u), h = x / 2, u = sqrt(2/pi) (x + 0.044715 x^3),
//   with the hardware tanh (tanh.approx.f32, relative error about 2^-11; CUTLASS's GELU_taylor
//   uses it too). Why: the MUFU unit does 16 operations per clock per SM, so the 128 values per
//   thread of a 128x256 tile with two MUFU operations each (exp2, division) kept it busy ~4 K
//   cycles per tile while the tensor core waited; one halves that. (The packed tanh.approx.f16x2 /
//   .bf16x2 would not halve it again: sm_90a runs them as two MUFU.TANH.F16 / .BF16, one per
//   half, per nvdisasm.) Its absolute error, about
//   2^-12 |x| where 1 + tanh(u) cancels (x << 0), is below a 16-bit D's rounding of values near
//   |x|. Elsewhere (host) the exp form x / (1 + exp(-2u)).
// Limits: x -> +inf gives +inf, x -> -inf NaN (as PyTorch's formula), NaN stays NaN; exp
// overflowing to +inf gives -0.
template <Activation kAct>
CG_HOST_DEVICE float activation_fast(float x) {
  if constexpr (kAct == Activation::kNone) {
    return x;
  } else if constexpr (kAct == Activation::kRelu) {
    return x < 0.0f ? 0.0f : x;  // NaN stays NaN
  } else if constexpr (kAct == Activation::kGelu) {
#if defined(__CUDA_ARCH__)
    // Phi(x) = (1 + erf(z)) / 2, z = x / sqrt(2), with erf from Abramowitz & Stegun 7.1.28: for z >= 0,
    // 1 - erf(z) = r = p(z)^-16, p = 1 + a1 z + ... + a6 z^6, |error| <= 3e-7. So Phi = 1 - r / 2 for x >= 0 and
    // r / 2 for x < 0 (no cancellation where Phi is small). Six FMA, four squarings and one MUFU.RCP: erff's
    // two polynomials and select held enough registers to spill the deferred packing (16-56 bytes, 128x256).
    const float z = fabsf(x) * 0.70710678118654752440f;
    float p = fmaf(z, 0.0000430638f, 0.0002765672f);
    p = fmaf(p, z, 0.0001520143f);
    p = fmaf(p, z, 0.0092705272f);
    p = fmaf(p, z, 0.0422820123f);
    p = fmaf(p, z, 0.0705230784f);
    p = fmaf(p, z, 1.0f);
    p *= p;
    p *= p;
    p *= p;
    p *= p;  // p^16 (+inf for z past ~26: r = 0)
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(p));
    return x * (x >= 0.0f ? fmaf(-0.5f, r, 1.0f) : 0.5f * r);
#else
    return 0.5f * x * (1.0f + detail::erf_(x * 0.70710678118654752440f));
#endif
  } else {
#if defined(__CUDA_ARCH__)
    if constexpr (kAct == Activation::kGeluTanh) {
      const float u = x * fmaf(x * x, 0.79788456080286535588f * 0.044715f, 0.79788456080286535588f);
      float th;
      asm("tanh.approx.f32 %0, %1;" : "=f"(th) : "f"(u));
      const float h = 0.5f * x;
      return fmaf(h, th, h);
    }
#endif
    // -log2(e) * (2 sqrt(2/pi), 2 sqrt(2/pi) 0.044715) for GELU-tanh; -log2(e) for SiLU.
    constexpr float kLog2e = 1.44269504088896340736f;
    float t;
    if constexpr (kAct == Activation::kGeluTanh) {
      t = x * fmaf(x * x, -kLog2e * 1.59576912160573071176f * 0.044715f, -kLog2e * 1.59576912160573071176f);
    } else {
      static_assert(kAct == Activation::kSilu, "every activation");
      t = -kLog2e * x;
    }
#if defined(__CUDA_ARCH__)
    return __fdividef(x, 1.0f + exp2f(t));
#else
    return x / (1.0f + std::exp2(t));
#endif
  }
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
