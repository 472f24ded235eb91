// CPU implementations: the correct reference of every op. Products run in the accumulator
// dtype (fp32, or fp64 for fp64 inputs) through ATen; the epilogue is the same fusion functor
// the GPU kernels use; one rounding to out_dtype at the end.
#include <torch/library.h>

#include "checks.h"
#include "epilogue_cpu.h"

namespace cutorch_gemm::binding {
namespace {

at::Tensor up(const at::Tensor& t) { return t.to(acc_dtype(t.scalar_type())); }

// act(alpha * acc + beta * c + bias), rounded once to out_dtype, contiguous.
at::Tensor finish(const at::Tensor& acc, double alpha, double beta, const std::optional<at::Tensor>& c,
                  const std::optional<at::Tensor>& bias, Activation act, at::ScalarType out_dtype) {
  const bool trivial = alpha == 1.0 && (beta == 0.0 || !c.has_value()) && !bias.has_value() &&
                       act == Activation::kNone;
  const at::Tensor r = trivial ? acc : epilogue_cpu(acc, alpha, beta, c, bias, act);
  return r.to(out_dtype).contiguous();
}

at::Tensor mm_cpu(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_mm(a, b, out_dtype);
  if (a.scalar_type() == at::kChar) return at::mm(a.to(at::kInt), b.to(at::kInt)).contiguous();  // exact
  return at::mm(up(a), up(b)).to(s.out_dtype).contiguous();
}

at::Tensor gemm_cpu(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    const std::optional<at::Tensor>& c, double alpha, double beta,
                    c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_gemm("gemm.gemm", a, b, bias, c, std::string(activation), out_dtype);
  return finish(at::mm(up(a), up(b)), alpha, beta, c, bias, s.act, s.out_dtype);
}

at::Tensor bmm_cpu(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_bmm(a, b, out_dtype);
  return at::bmm(up(a), up(b)).to(s.out_dtype).contiguous();
}

at::Tensor grouped_mm_cpu(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                          const std::optional<at::Tensor>& bias, c10::string_view activation,
                          std::optional<at::ScalarType> out_dtype) {
  const GroupedSpec s = check_grouped(a, b, offs, bias, std::string(activation), out_dtype);
  const at::ScalarType acc = acc_dtype(a.scalar_type());
  if (s.swiglu) {  // z = a @ b + bias in the accumulator type, then silu(gate) * up, one rounding
    return swiglu_halves(grouped_mm_cpu(a, b, offs, bias, "none", acc)).to(s.out_dtype).contiguous();
  }
  const auto epi = [&](const at::Tensor& prod, const std::optional<at::Tensor>& bias_g) {
    return finish(prod, 1.0, 0.0, std::nullopt, bias_g, s.act, acc);
  };
  const auto bias_row = [&](int64_t g) -> std::optional<at::Tensor> {
    if (!bias.has_value()) return std::nullopt;
    return (*bias)[g];
  };
  if (s.mode == GroupMode::kBatched) {
    std::optional<at::Tensor> bias3;
    if (bias.has_value()) bias3 = bias->unsqueeze(1);  // (G, 1, N) broadcasts over rows
    return epi(at::bmm(up(a), up(b)), bias3).to(s.out_dtype).contiguous();
  }

  const at::Tensor o = offs->contiguous();
  const int64_t extent = s.mode == GroupMode::kGroupedM ? s.m : s.mode == GroupMode::kGroupedN ? s.n : s.k;
  check_offsets_values_cpu(o, extent, s.mode == GroupMode::kGroupedM ? "row (M)"
                                      : s.mode == GroupMode::kGroupedN ? "column (N)" : "reduction (K)");
  const int32_t* ends = o.data_ptr<int32_t>();
  at::Tensor out = at::zeros(s.out_shape, a.options().dtype(acc));
  const at::Tensor ua = up(a), ub = up(b);
  for (int64_t g = 0; g < s.groups; ++g) {
    const int64_t begin = g == 0 ? 0 : ends[g - 1];
    const int64_t len = ends[g] - begin;
    switch (s.mode) {
      case GroupMode::kGroupedM:  // rows [begin, end) of a and out, expert g of b
        out.narrow(0, begin, len).copy_(epi(at::mm(ua.narrow(0, begin, len), ub[g]), bias_row(g)));
        break;
      case GroupMode::kGroupedN: {  // columns [begin, end) of b and out, expert g of a
        std::optional<at::Tensor> bias_cols;
        if (bias.has_value()) bias_cols = bias->narrow(0, begin, len);
        out.narrow(1, begin, len).copy_(epi(at::mm(ua[g], ub.narrow(1, begin, len)), bias_cols));
        break;
      }
      case GroupMode::kGroupedK:  // reduction slice [begin, end): an empty group gives act(bias)
        out[g].copy_(epi(at::mm(ua.narrow(1, begin, len), ub.narrow(0, begin, len)), bias_row(g)));
        break;
      case GroupMode::kBatched:
        break;
    }
  }
  return out.to(s.out_dtype).contiguous();
}

std::vector<at::Tensor> grouped_gemm_cpu(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                                         const std::optional<std::vector<at::Tensor>>& bias,
                                         c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  return grouped_gemm_by_problem(a, b, bias, std::string(activation), out_dtype,
                                 [&](const at::Tensor& ai, const at::Tensor& bi, const std::optional<at::Tensor>& biasi) {
                                   return gemm_cpu(ai, bi, biasi, std::nullopt, 1.0, 0.0, activation, out_dtype);
                                 });
}

// Exact fp32 upcasts of the 8-bit operands, fp32 products and sums, then sa * sb * acc + bias in
// fp32 and one rounding: the definition the GPU kernels implement.
at::Tensor scaled_mm_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                         const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                         bool /*use_fast_accum: the reference is exact*/) {
  const ScaledSpec s = check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype);
  at::Tensor acc = at::mm(a.to(at::kFloat), b.to(at::kFloat));
  const at::Tensor sa = s.scale_a_rows ? scale_a.reshape({s.m, 1}) : scale_a.reshape({});
  const at::Tensor sb = s.scale_b_cols ? scale_b.reshape({1, s.n}) : scale_b.reshape({});
  acc = acc * (sa * sb);
  if (bias.has_value()) acc = acc + bias->to(at::kFloat);
  return acc.to(s.out_dtype).contiguous();
}

// h = silu(gate) * up in the accumulator dtype, one rounding (the CUDA kernel's definition).
at::Tensor swiglu_cpu(const at::Tensor& gate_up) {
  check_swiglu("gemm.swiglu", gate_up, nullptr);
  const at::Tensor z = up(gate_up);
  const std::vector<at::Tensor> gu = z.chunk(2, -1);
  return (at::silu(gu[0]) * gu[1]).to(gate_up.scalar_type()).contiguous();
}

at::Tensor swiglu_backward_cpu(const at::Tensor& grad, const at::Tensor& gate_up) {
  check_swiglu("gemm.swiglu_backward", gate_up, &grad);
  const at::Tensor z = up(gate_up), d = up(grad);
  const std::vector<at::Tensor> gu = z.chunk(2, -1);
  const at::Tensor s = at::sigmoid(gu[0]);
  const at::Tensor dgate = d * gu[1] * s * (1.0 + gu[0] * (1.0 - s));
  return at::cat({dgate, d * gu[0] * s}, -1).to(gate_up.scalar_type()).contiguous();
}

// The combine's definition: rows gathered by inv, weighted and summed over the k slots in the
// accumulator dtype, one rounding. An inv entry outside [0, T * k) contributes nothing.
at::Tensor moe_combine_cpu(const at::Tensor& y, const at::Tensor& inv, const std::optional<at::Tensor>& weights,
                           int64_t k) {
  const MoeCombineSpec s = check_moe_combine("gemm.moe_combine", y, inv, weights, k, nullptr);
  const at::Tensor idx = inv.to(at::kLong);
  const at::Tensor valid = (idx >= 0).logical_and(idx < y.size(0));
  const at::Tensor rows = up(y).index_select(0, idx.clamp(0, std::max<int64_t>(y.size(0) - 1, 0)));
  at::Tensor w = valid.to(rows.scalar_type());
  if (weights.has_value()) w = w * weights->reshape({-1}).to(at::kFloat).to(rows.scalar_type());
  return (rows * w.unsqueeze(1)).reshape({s.tokens, k, s.h}).sum(1).to(y.scalar_type()).contiguous();
}

std::tuple<at::Tensor, at::Tensor> moe_combine_backward_cpu(const at::Tensor& grad, const at::Tensor& y,
                                                            const at::Tensor& inv,
                                                            const std::optional<at::Tensor>& weights, int64_t k) {
  const MoeCombineSpec s = check_moe_combine("gemm.moe_combine_backward", y, inv, weights, k, &grad);
  const at::Tensor idx = inv.to(at::kLong);
  const at::Tensor valid = (idx >= 0).logical_and(idx < y.size(0));
  const at::Tensor g = up(grad).repeat_interleave(k, 0);  // (T * k, H): pair q's token row
  at::Tensor w = valid.to(g.scalar_type());
  if (weights.has_value()) w = w * weights->reshape({-1}).to(at::kFloat).to(g.scalar_type());
  at::Tensor grad_y = at::zeros_like(y);
  const at::Tensor vi = idx.masked_select(valid);
  grad_y.index_copy_(0, vi, (g * w.unsqueeze(1)).index_select(0, valid.nonzero().reshape({-1})).to(y.scalar_type()));
  at::Tensor grad_w = at::empty({0}, y.options().dtype(at::kFloat));
  if (weights.has_value()) {
    const at::Tensor rows = up(y).index_select(0, idx.clamp(0, std::max<int64_t>(y.size(0) - 1, 0)));
    grad_w = ((rows * g).sum(1) * valid.to(g.scalar_type())).to(at::kFloat).reshape({s.tokens, k});
  }
  return {grad_y, grad_w};
}

}  // namespace
}  // namespace cutorch_gemm::binding

TORCH_LIBRARY_IMPL(gemm, CPU, m) {
  using namespace cutorch_gemm::binding;
  m.impl("mm", &mm_cpu);
  m.impl("gemm", &gemm_cpu);
  m.impl("bmm", &bmm_cpu);
  m.impl("grouped_mm", &grouped_mm_cpu);
  m.impl("grouped_gemm", &grouped_gemm_cpu);
  m.impl("scaled_mm", &scaled_mm_cpu);
  m.impl("swiglu", &swiglu_cpu);
  m.impl("swiglu_backward", &swiglu_backward_cpu);
  m.impl("moe_combine", &moe_combine_cpu);
  m.impl("moe_combine_backward", &moe_combine_backward_cpu);
}
