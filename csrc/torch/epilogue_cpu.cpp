#include "epilogue_cpu.h"

#include <ATen/Parallel.h>

namespace cutorch_gemm::binding {

namespace {

template <typename Acc>
void apply(const Acc* acc, const Acc* c, const Acc* bias, Acc* out, int64_t n, double alpha,
           double beta, Activation act) {
  const LinearCombinationBiasAct<Acc> f{Acc(alpha), Acc(beta), act};
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Acc b = bias ? bias[i] : Acc(0);
      out[i] = c ? f(acc[i], c[i], b) : f(acc[i], b);
    }
  });
}

}  // namespace

at::Tensor epilogue_cpu(const at::Tensor& acc_in, double alpha, double beta,
                        const std::optional<at::Tensor>& c, const std::optional<at::Tensor>& bias,
                        Activation act) {
  TORCH_CHECK_TYPE(acc_in.scalar_type() == at::kFloat || acc_in.scalar_type() == at::kDouble,
                   "epilogue: acc must be float32 or float64, got ", acc_in.scalar_type());
  const at::Tensor acc = acc_in.contiguous();
  const auto prep = [&](const std::optional<at::Tensor>& t) -> at::Tensor {
    if (!t.has_value()) return at::Tensor();
    return t->to(acc.scalar_type()).expand(acc.sizes()).contiguous();
  };
  const at::Tensor cc = beta != 0.0 ? prep(c) : at::Tensor();
  const at::Tensor bb = prep(bias);
  at::Tensor out = at::empty_like(acc);
  AT_DISPATCH_FLOATING_TYPES(acc.scalar_type(), "epilogue_cpu", [&] {
    apply<scalar_t>(acc.data_ptr<scalar_t>(), cc.defined() ? cc.data_ptr<scalar_t>() : nullptr,
                    bb.defined() ? bb.data_ptr<scalar_t>() : nullptr, out.data_ptr<scalar_t>(),
                    acc.numel(), alpha, beta, act);
  });
  return out;
}

at::Tensor swiglu_halves(const at::Tensor& z) {
  const int64_t f = z.size(-1) / 2;
  return at::silu(z.narrow(-1, 0, f)) * z.narrow(-1, f, f);
}

}  // namespace cutorch_gemm::binding
