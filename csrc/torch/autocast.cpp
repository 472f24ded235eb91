// Autocast for the gemm ops: under torch.autocast the float operands are cast to the autocast
// dtype first, exactly as torch.matmul / F.linear are (a "lower precision" op), so
// mixed-precision training works with replace_linear and enable(). Offsets are untouched.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace cutorch_gemm::binding {
namespace {

template <c10::DeviceType kDevice>
at::Tensor cast(const at::Tensor& t) {
  return at::autocast::cached_cast(at::autocast::get_autocast_dtype(kDevice), t, kDevice);
}
template <c10::DeviceType kDevice>
std::optional<at::Tensor> cast(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  return cast<kDevice>(*t);
}

template <class Sig>
c10::TypedOperatorHandle<Sig> op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

template <c10::DeviceType kDevice, c10::DispatchKey kKey>
struct Autocast {
  using OptT = std::optional<at::Tensor>;
  using OptDt = std::optional<at::ScalarType>;

  static at::Tensor mm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
    static auto h = op<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::mm");
    return h.call(cast<kDevice>(a), cast<kDevice>(b), out_dtype);
  }
  static at::Tensor bmm(const at::Tensor& a, const at::Tensor& b, OptDt out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
    static auto h = op<at::Tensor(const at::Tensor&, const at::Tensor&, OptDt)>("gemm::bmm");
    return h.call(cast<kDevice>(a), cast<kDevice>(b), out_dtype);
  }
  static at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const OptT& bias, const OptT& c, double alpha,
                         double beta, c10::string_view act, OptDt out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
    static auto h = op<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, const OptT&, double, double,
                                  c10::string_view, OptDt)>("gemm::gemm");
    return h.call(cast<kDevice>(a), cast<kDevice>(b), cast<kDevice>(bias), cast<kDevice>(c), alpha, beta, act,
                  out_dtype);
  }
  static at::Tensor grouped_mm(const at::Tensor& a, const at::Tensor& b, const OptT& offs, const OptT& bias,
                               c10::string_view act, OptDt out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
    static auto h = op<at::Tensor(const at::Tensor&, const at::Tensor&, const OptT&, const OptT&, c10::string_view,
                                  OptDt)>("gemm::grouped_mm");
    return h.call(cast<kDevice>(a), cast<kDevice>(b), offs, cast<kDevice>(bias), act, out_dtype);
  }
};

}  // namespace
}  // namespace cutorch_gemm::binding

#define CUTORCH_GEMM_AUTOCAST(KEY, DEVICE)                                                     \
  TORCH_LIBRARY_IMPL(gemm, KEY, m) {                                                           \
    using A = cutorch_gemm::binding::Autocast<c10::DeviceType::DEVICE, c10::DispatchKey::KEY>; \
    m.impl("mm", &A::mm);                                                                      \
    m.impl("bmm", &A::bmm);                                                                    \
    m.impl("gemm", &A::gemm);                                                                  \
    m.impl("grouped_mm", &A::grouped_mm);                                                      \
  }

CUTORCH_GEMM_AUTOCAST(AutocastCUDA, CUDA)
CUTORCH_GEMM_AUTOCAST(AutocastCPU, CPU)
