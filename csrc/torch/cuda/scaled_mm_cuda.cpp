// scaled_mm on CUDA: the sm90 8-bit wgmma kernels for K-major operands, else exact bf16
// upcasts through our GEMM with the scales applied in fp32.
#include "cuda_common.h"

namespace cutorch_gemm::binding {
namespace {

// scaled_mm on any GPU and layout: exact bf16 upcasts of the 8-bit operands (e4m3 and e5m2 values
// are all bf16 values), our fp32-output GEMM on whatever family that picks, then the scales and
// bias in fp32 and one rounding.
at::Tensor scaled_mm_upcast(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, const ScaledSpec& s) {
  at::Tensor acc = gemm_cuda(a.to(at::kBFloat16), b.to(at::kBFloat16), std::nullopt, std::nullopt, 1.0, 0.0, "none",
                             at::kFloat);
  const at::Tensor sa = s.scale_a_rows ? scale_a.reshape({s.m, 1}) : scale_a.reshape({});
  const at::Tensor sb = s.scale_b_cols ? scale_b.reshape({1, s.n}) : scale_b.reshape({});
  acc.mul_(sa * sb);
  if (bias.has_value()) acc.add_(bias->to(at::kFloat));
  return acc.to(s.out_dtype).contiguous();
}

// Why the sm90 fp8 kernels cannot take a scaled_mm call ("" when they can): the Python
// explain() mirrors this rule.
std::string scaled_mm_sm90_refusal(const at::Tensor& a, const at::Tensor& b, const ScaledSpec& s, int64_t a_sm,
                                   int64_t b_sn) {
  const DeviceInfo& d = device_info();
  const std::string forced = forced_arch();
  if (forced == "simt" || forced == "sm80") return "CUTORCH_GEMM_ARCH=" + forced;
  if (!d.sm90) return "no sm_90a kernels for this GPU";
  if (s.m == 0 || s.n == 0 || s.k == 0) return "an empty extent";
  const Sm90Operand oa = sm90_operand(stride_of(a, 1), a_sm, 0, aligned16(a), 1);
  const Sm90Operand ob = sm90_operand(stride_of(b, 0), b_sn, 0, aligned16(b), 1);
  if (!oa.ok || oa.mn_major) return "a is not K-major (row-major) with 16-byte aligned rows";
  if (!ob.ok || ob.mn_major) return "b is not K-major (column-major) with 16-byte aligned columns";
  return "";
}

}  // namespace

at::Tensor scaled_mm_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                          bool use_fast_accum) {
  const ScaledSpec s = check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype);
  check_extents("gemm.scaled_mm", {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  // A single row of a (column of b) has no real row stride: a 16-byte multiple >= K lets TMA read it.
  const int64_t k16 = (s.k + 15) / 16 * 16;
  const int64_t a_sm = s.m == 1 ? k16 : a.stride(0);
  const int64_t b_sn = s.n == 1 ? k16 : b.stride(1);
  if (!scaled_mm_sm90_refusal(a, b, s, a_sm, b_sn).empty()) return scaled_mm_upcast(a, b, scale_a, scale_b, bias, s);

  // sm90: TMA + 8-bit wgmma, scales and bias applied to the fp32 accumulators in the epilogue.
  const DeviceInfo& d = device_info();
  at::Tensor out = at::empty({s.m, s.n}, a.options().dtype(s.out_dtype));
  const at::Tensor sa = scale_a.contiguous(), sb = scale_b.contiguous();
  at::Tensor bias_f32;
  GemmArgs g{};
  g.dtype = s.out_dtype == at::kHalf ? DType::kFloat16 : DType::kBFloat16;  // D's 16-bit type
  g.out_f32 = s.out_dtype == at::kFloat;
  g.batch = 1;
  g.shape.mode = GroupMode::kBatched;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  g.shape.a_sm = a_sm; g.shape.a_sk = 1;
  g.shape.b_sn = b_sn; g.shape.b_sk = 1;
  g.shape.d_sm = out.stride(0); g.shape.d_sn = 1;
  g.a = a.data_ptr();
  g.b = b.data_ptr();
  g.d = out.data_ptr();
  g.alpha = 1.0;
  g.act = Activation::kNone;
  if (bias.has_value()) {
    bias_f32 = bias->to(at::kFloat).contiguous();
    g.bias = bias_f32.data_ptr();
  }
  g.scale_a = sa.data_ptr<float>();
  g.scale_b = sb.data_ptr<float>();
  g.scale_a_rows = s.scale_a_rows;
  g.scale_b_cols = s.scale_b_cols;
  const std::string forced = env_lower("CUTORCH_GEMM_SM90_CONFIG");
  const Sm90ConfigId config =
      choose_sm90_f8_config(choose_sm90_config(int(s.m), int(s.n), int(s.k), 1, d.sms, forced), use_fast_accum, forced,
                            int(s.m), int(s.n), d.sms);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  // Split-K when the tiles leave most SMs idle (small M): the 16-bit rule with 8-bit K slices
  // (explain() mirrors it).
  const Sm90Split split = config == Sm90ConfigId::kCoop128x192
                              ? Sm90Split{1, 0}
                              : choose_sm90_split(config, int(s.m), int(s.n), int(s.k), d.sms, split_fill(), 128);
  at::Tensor ws;
  if (split.splits > 1) ws = at::empty({int64_t(split.splits) * s.m * s.n}, a.options().dtype(at::kFloat));
  const cudaError_t err =
      split.splits > 1
          ? sm90_scaled_mm_split(g, s.ka, s.kb, config, use_fast_accum, split, ws.data_ptr(), d.sms, stream)
          : sm90_scaled_mm(g, s.ka, s.kb, config, use_fast_accum, d.sms, stream);
  if (err == cudaErrorNotSupported) return scaled_mm_upcast(a, b, scale_a, scale_b, bias, s);  // maps refused
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm90 scaled_mm launch failed (", sm90_config_name(config, 1),
              "): ", cudaGetErrorString(err));
  return out;
}

}  // namespace cutorch_gemm::binding
