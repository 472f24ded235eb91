#pragma once
// SIMT epilogue: applies the fusion functor to each accumulator and stores D once, in place
// from registers (a SIMT thread already owns 4 consecutive columns, so a row-major D gets
// vector stores without a shared-memory round trip). Split-K slices instead store raw partial
// accumulators to the workspace; the reduction kernel runs this same functor afterwards.

#include "cutorch_gemm/core/numeric.cuh"
#include "cutorch_gemm/device/simt_params.h"
#include "cutorch_gemm/epilogue/fusion.h"

namespace cutorch_gemm {

template <typename T>
struct SimtEpilogue {
  using Acc = typename AccumulatorFor<T>::type;

  // alpha * acc + beta * C[m, n] + bias[n] for one in-bounds element of problem `prob`.
  CG_DEVICE static Acc linear(const GemmArgs& g, const Problem& prob, int m, int n, Acc acc) {
    const LinearCombinationBiasAct<Acc> f{Acc(g.alpha), Acc(g.beta), Activation::kNone};
    const Acc bias = g.bias ? to_acc<Acc>(static_cast<const T*>(g.bias)[prob.bias_off + n]) : Acc(0);
    if (g.c == nullptr) return f(acc, bias);
    const index_t off = prob.c_off + index_t(m) * g.shape.c_sm + index_t(n) * g.shape.c_sn;
    return f(acc, to_acc<Acc>(static_cast<const T*>(g.c)[off]), bias);
  }

  // scaled_mm's sa * sb * acc + bias[n] (fp32 bias), one rounding as in the sm90 kernel's
  // epilogue: the sum of sm90_scaled_mm_split's partials (dense: m, n are D's row and column).
  CG_DEVICE static Acc scaled(const GemmArgs& g, int m, int n, Acc acc) {
    const float sa = g.scale_a[g.scale_a_rows ? m : 0], sb = g.scale_b[g.scale_b_cols ? n : 0];
    return Acc(fmaf(float(acc), sa * sb, g.bias ? static_cast<const float*>(g.bias)[n] : 0.0f));
  }

  // act(alpha * acc + beta * C[m, n] + bias[n]) for one element of problem `prob`.
  CG_DEVICE static Acc value(const GemmArgs& g, const Problem& prob, int m, int n, Acc acc) {
    return apply_activation(g.act, linear(g, prob, m, n, acc));
  }

  template <typename Out>
  CG_DEVICE static void store_row4(void* d, index_t off, const Acc (&v)[4]) {
    Vec<Out, 4> x;
#pragma unroll
    for (int e = 0; e < 4; ++e) x.v[e] = from_acc<Out>(v[e]);
    *reinterpret_cast<Vec<Out, 4>*>(static_cast<Out*>(d) + off) = x;
  }

  template <typename Out>
  CG_DEVICE static void store_one(void* d, index_t off, Acc v) {
    static_cast<Out*>(d)[off] = from_acc<Out>(v);
  }

  // Four consecutive columns n..n+3 of row m. `vals` are raw accumulators.
  CG_DEVICE static void store4(const GemmArgs& g, const Problem& prob, int m, int n, const Acc (&acc)[4]) {
    if (m >= prob.m) return;
    Acc v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      v[e] = n + e >= prob.n ? Acc(0) : g.scale_a ? scaled(g, m, n + e, acc[e]) : linear(g, prob, m, n + e, acc[e]);
    }
    // NOTE: one uniform branch per four values skips the activation code entirely for plain
    // products; a switch per element made every CTA fetch and branch through five activations
    // (instruction-fetch stalls dominated short-K problems).
    if (g.act != Activation::kNone) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = apply_activation(g.act, v[e]);
    }
    const index_t off = prob.d_off + index_t(m) * g.shape.d_sm + index_t(n) * g.shape.d_sn;
    const bool row_vec = g.shape.d_sn == 1 && n + 3 < prob.n;
    if (g.out_f32) {
      if (row_vec && is_aligned<float, 4>(static_cast<float*>(g.d) + off)) return store_row4<float>(g.d, off, v);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (n + e < prob.n) store_one<float>(g.d, off + e * g.shape.d_sn, v[e]);
    } else {
      if (row_vec && is_aligned<T, 4>(static_cast<T*>(g.d) + off)) return store_row4<T>(g.d, off, v);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (n + e < prob.n) store_one<T>(g.d, off + e * g.shape.d_sn, v[e]);
    }
  }

  // Split-K: raw partials, workspace[split][z][m][n], only in-bounds elements.
  CG_DEVICE static void store_partial4(const SimtParams& p, int split, int z, int m, int n,
                                       const Acc (&acc)[4]) {
    const GemmArgs& g = p.args;
    if (m >= g.shape.m) return;
    Acc* ws = static_cast<Acc*>(p.workspace) +
              ((index_t(split) * g.batch + z) * g.shape.m + m) * g.shape.n;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (n + e < g.shape.n) ws[n + e] = acc[e];
  }
};

}  // namespace cutorch_gemm
