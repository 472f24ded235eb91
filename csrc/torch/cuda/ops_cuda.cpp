// CUDA implementations of mm, gemm, bmm and grouped_mm: tensors -> GemmArgs (pointers, extents,
// strides; no copies of a or b) -> heuristic plan -> kernel launch on the current stream under a
// device guard; and the registration of every op's CUDA kernel.
#include <torch/library.h>

#include "../epilogue_cpu.h"
#include "cuda_common.h"
#include "cutorch_gemm/device/grouped_tail.h"

namespace cutorch_gemm::binding {

namespace {

// gemm's launch, its checks' errors naming `op` (gemm.gemm, or gemm.mm for mm's 16-bit and fp32 / fp64 operands).
at::Tensor gemm_cuda_as(const char* op, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                        const std::optional<at::Tensor>& c, double alpha, double beta, c10::string_view activation,
                        std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_gemm(op, a, b, bias, c, std::string(activation), out_dtype);
  check_extents(op, {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.m, s.n}, a.options().dtype(s.out_dtype));
  GemmArgs g = base_args(a, b, s.out_dtype, s.act);
  g.batch = 1;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.d = d.data_ptr();
  g.alpha = alpha;
  g.beta = beta;
  at::Tensor bias_c;
  if (bias.has_value()) {
    bias_c = bias->contiguous();
    g.bias = bias_c.data_ptr();
  }
  if (c.has_value() && beta != 0.0) {  // BLAS convention: beta == 0 never reads C
    g.c = c->data_ptr();
    g.shape.c_sm = c->stride(0);
    g.shape.c_sn = c->stride(1);
  }
  run_gemm(g, a, b);
  return d;
}

}  // namespace

at::Tensor gemm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& c, double alpha, double beta,
                     c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  return gemm_cuda_as("gemm.gemm", a, b, bias, c, alpha, beta, activation, out_dtype);
}

at::Tensor mm_cuda(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  if (a.scalar_type() != at::kChar)
    return gemm_cuda_as("gemm.mm", a, b, std::nullopt, std::nullopt, 1.0, 0.0, "none", out_dtype);
  // int8 x int8 -> int32 (torch._int_mm): the sm80 family's IMMA kernels, no epilogue fusion.
  const DenseSpec s = check_mm(a, b, out_dtype);
  check_extents("gemm.mm", {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.m, s.n}, a.options().dtype(at::kInt));
  GemmArgs g = base_args(a, b, at::kInt, Activation::kNone);
  g.batch = 1;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.d = d.data_ptr();
  run_gemm(g, a, b);
  return d;
}

at::Tensor bmm_cuda(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_bmm(a, b, out_dtype);
  check_extents("gemm.bmm", {s.m, s.n, s.k, s.batch});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.batch, s.m, s.n}, a.options().dtype(s.out_dtype));
  GemmArgs g = base_args(a, b, s.out_dtype, Activation::kNone);
  g.batch = int(s.batch);
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.shape.a_sb = a.stride(0);
  g.shape.b_sb = b.stride(0);
  g.shape.d_sb = d.stride(0);
  g.d = d.data_ptr();
  run_gemm(g, a, b);
  return d;
}

// One grouped launch: its GemmArgs (output d) and the contiguous offs / bias they point into.
struct GroupedLaunch {
  GemmArgs g;
  at::Tensor offs_c, bias_c;
};

GroupedLaunch grouped_launch(const GroupedSpec& s, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                             const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias) {
  GroupedLaunch l;
  GemmArgs& g = l.g;
  g = base_args(a, b, s.out_dtype, s.act);
  g.batch = int(s.groups);
  g.shape.mode = s.mode;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.shape.a_sb = a.dim() == 3 ? a.stride(0) : 0;
  g.shape.b_sb = b.dim() == 3 ? b.stride(0) : 0;
  g.shape.d_sb = d.dim() == 3 ? d.stride(0) : 0;
  g.d = d.data_ptr();
  if (offs.has_value()) {
    l.offs_c = offs->contiguous();
    g.shape.offs = l.offs_c.data_ptr<int32_t>();
  }
  if (bias.has_value()) {
    l.bias_c = bias->contiguous();
    g.bias = l.bias_c.data_ptr();
    g.shape.bias_sb = l.bias_c.dim() == 2 ? l.bias_c.stride(0) : 0;
  }
  return l;
}

// grouped_mm's SwiGLU fused into the sm90 kernel's epilogue: fp16/bf16, a K-major, an MN-major
// b's up half 16-byte aligned, the sm90 family's rules otherwise. False: not taken, nothing ran.
// explain() mirrors this rule.
bool sm90_swiglu_ran(const GroupedSpec& s, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                     const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias) {
  if (a.scalar_type() != at::kHalf && a.scalar_type() != at::kBFloat16) return false;
  if (s.groups == 0 || s.m == 0 || s.n == 0) return false;
  const GroupedLaunch l = grouped_launch(s, a, b, d, offs, bias);
  const DeviceInfo& dev = device_info();
  const Sm90Operand oa = sm90_a(l.g, a), ob = sm90_b(l.g, b);
  const FamilyChoice fc = choose_family(FamilyQuery{dev.major, l.g.dtype, oa, ob, s.mode, s.k > 0, dev.sm90, dev.sm80,
                                                    at::globalContext().allowTF32CuBLAS(), forced_arch()});
  if (fc.family != GemmFamily::kSm90 || oa.mn_major) return false;
  // NOTE: the up half's TMA boxes start at column F of b. In an MN-major b that is the contiguous
  // dimension, where a box must start on a 16-byte boundary: F = 20 in bf16 faulted (illegal
  // instruction, H100).
  if (ob.mn_major && (b.size(-1) / 2 * b.element_size()) % 16 != 0) return false;
  const HeuristicExtents e = heuristic_extents(l.g);
  const Sm90ConfigId config = choose_sm90_config(e.m, e.n, l.g.shape.k, l.g.batch, dev.sms,
                                                 env_lower("CUTORCH_GEMM_SM90_CONFIG"));
  const cudaError_t err = sm90_swiglu(l.g, config, ob.mn_major, dev.sms, c10::cuda::getCurrentCUDAStream().stream());
  if (err == cudaErrorNotSupported) return false;  // the driver refused the tensor maps
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm90 SwiGLU launch failed (", sm90_config_name(config), "): ",
              cudaGetErrorString(err));
  return true;
}

at::Tensor grouped_mm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                           const std::optional<at::Tensor>& bias, c10::string_view activation,
                           std::optional<at::ScalarType> out_dtype) {
  const GroupedSpec s = check_grouped(a, b, offs, bias, std::string(activation), out_dtype);
  check_extents("gemm.grouped_mm", {s.m, s.n, s.k, s.groups});
  const c10::cuda::CUDAGuard guard(a.device());
  const auto opts = a.options().dtype(s.out_dtype);
  at::Tensor d = at::empty(s.out_shape, opts);
  const GroupedLaunch l = grouped_launch(s, a, b, d, offs, bias);
  // MoE decode (a few rows, 2D x 3D): the grouped skinny kernel, the SwiGLU fused too; it also
  // stores the rows past offs[-1].
  if (d.numel() > 0 && run_grouped_skinny(l.g, a, b, s.swiglu)) return d;
  if ((s.mode == GroupMode::kGroupedM || s.mode == GroupMode::kGroupedN) && d.numel() > 0) {
    // Rows (columns) past offs[-1] are in no group: zeroed first, on the device (the groups'
    // tiles then write everything else; out-of-order offsets included, see device/grouped_tail.h).
    const at::Tensor o = offs->contiguous();
    const int32_t* last = o.numel() > 0 ? o.data_ptr<int32_t>() + (o.numel() - 1) : nullptr;
    const cudaError_t err = zero_past_last_offset(d.data_ptr(), d.size(0), d.size(1), d.stride(0), int(d.element_size()),
                                                  last, s.mode == GroupMode::kGroupedM, device_info().sms,
                                                  c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: grouped_mm tail zeroing failed: ", cudaGetErrorString(err));
  }
  if (s.swiglu) {
    if (sm90_swiglu_ran(s, a, b, d, offs, bias)) return d;
    // Unfused: z = a @ b + bias in fp32 (fp64 for fp64), then silu(gate) * up and one rounding.
    // Rows past offs[-1] have z = 0, so they stay 0.
    const at::ScalarType acc = acc_dtype(a.scalar_type());
    return swiglu_halves(grouped_mm_cuda(a, b, offs, bias, "none", acc)).to(s.out_dtype).contiguous();
  }
  run_gemm(l.g, a, b);
  return d;
}

}  // namespace cutorch_gemm::binding

TORCH_LIBRARY_IMPL(gemm, CUDA, m) {
  using namespace cutorch_gemm::binding;
  m.impl("mm", &mm_cuda);
  m.impl("gemm", &gemm_cuda);
  m.impl("bmm", &bmm_cuda);
  m.impl("grouped_mm", &grouped_mm_cuda);
  m.impl("grouped_gemm", &grouped_gemm_cuda);
  m.impl("scaled_mm", &scaled_mm_cuda);
  m.impl("swiglu", &swiglu_cuda);
  m.impl("swiglu_backward", &swiglu_backward_cuda);
  m.impl("moe_combine", &moe_combine_cuda);
  m.impl("moe_combine_backward", &moe_combine_backward_cuda);
}
