// Hopper (sm_90a) entry points: config id -> the instantiation files sm90_<type>_<config>.cu.
#include "cutorch_gemm/device/sm90_launch.cuh"
#include "cutorch_gemm/kernel/simt_gemm_kernel.cuh"  // splitk_reduce_kernel (shared by every family)

namespace cutorch_gemm {

cudaError_t sm90_f16_coop(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_pingpong(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_coop(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_pingpong(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_pingpong128(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_pingpong128(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_pingpong64(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_pingpong64(const GemmArgs&, bool, bool, int, cudaStream_t);

cudaError_t sm90_tf32_coop(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_tf32_pingpong(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f8_bf16_coop(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_bf16_pingpong(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_f16_coop(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_f16_pingpong(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_bf16_coop192(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_f16_coop192(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_bf16_pingpong64(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8_f16_pingpong64(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8fast_bf16_coop(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8fast_bf16_pingpong(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8fast_f16_coop(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
cudaError_t sm90_f8fast_f16_pingpong(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);

cudaError_t sm90_f16_fit80(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit96(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit112(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit128(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit144(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit160(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit176(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit192(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit208(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_fit224(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit80(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit96(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit112(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit128(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit144(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit160(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit176(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit192(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit208(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_bf16_fit224(const GemmArgs&, bool, bool, int, cudaStream_t);
cudaError_t sm90_f16_coop240(const GemmArgs&, int, cudaStream_t);
cudaError_t sm90_bf16_coop240(const GemmArgs&, int, cudaStream_t);
cudaError_t sm90_f16_coop320(const GemmArgs&, int, cudaStream_t);
cudaError_t sm90_bf16_coop320(const GemmArgs&, int, cudaStream_t);
cudaError_t sm90_f16_coop192x192(const GemmArgs&, int, cudaStream_t);
cudaError_t sm90_bf16_coop192x192(const GemmArgs&, int, cudaStream_t);

using Sm90Entry = cudaError_t (*)(const GemmArgs&, bool, bool, int, cudaStream_t);
using Sm90FitEntry = cudaError_t (*)(const GemmArgs&, bool, bool, int, cudaStream_t);

// The fit-width configs of one 16-bit type, by width (80, 96, ..., 224); both operands K-major, B MN-major or both
// MN-major (launch_sm90_fit).
static cudaError_t run_fit(const Sm90FitEntry (&entries)[kSm90FitWidths], const GemmArgs& args, Sm90ConfigId config,
                           bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  const int w = sm90_fit_width(config);
  if (w == 0 || (a_mn && !b_mn)) return cudaErrorInvalidValue;  // (choose_sm90_fit, sm90_fit_launch_ok)
  return entries[(w - 80) / 16](args, a_mn, b_mn, num_sms, stream);
}

// The entry of `config` among one type's instantiations (`narrow` / `narrow64`: its 64x128 / 64x64
// configs; types without them run ping-pong 64x256 there).
static cudaError_t run_config(Sm90Entry coop, Sm90Entry pingpong, Sm90Entry narrow, Sm90Entry narrow64,
                              const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                              cudaStream_t stream) {
  switch (config) {
    case Sm90ConfigId::kCoop128x256:    return coop(args, a_mn, b_mn, num_sms, stream);
    case Sm90ConfigId::kPingpong64x256: return pingpong(args, a_mn, b_mn, num_sms, stream);
    case Sm90ConfigId::kPingpong64x128: return (narrow ? narrow : pingpong)(args, a_mn, b_mn, num_sms, stream);
    case Sm90ConfigId::kPingpong64x64:  return (narrow64 ? narrow64 : pingpong)(args, a_mn, b_mn, num_sms, stream);
    case Sm90ConfigId::kCoop128x192:    break;  // (8-bit only)
    default:                            break;  // (fit widths: run_fit)
  }
  return cudaErrorInvalidValue;
}

cudaError_t sm90_gemm_f16(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                          cudaStream_t stream) {
  static const Sm90FitEntry fit[kSm90FitWidths] = {sm90_f16_fit80, sm90_f16_fit96, sm90_f16_fit112, sm90_f16_fit128,
                                                   sm90_f16_fit144, sm90_f16_fit160, sm90_f16_fit176,
                                                   sm90_f16_fit192, sm90_f16_fit208, sm90_f16_fit224};
  if (sm90_fit_width(config) > 0) return run_fit(fit, args, config, a_mn, b_mn, num_sms, stream);
  if (config == Sm90ConfigId::kCoop240) {  // (choose_sm90_pairs: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_f16_coop240(args, num_sms, stream);
  }
  if (config == Sm90ConfigId::kCoop320) {  // (choose_sm90_big: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_f16_coop320(args, num_sms, stream);
  }
  if (config == Sm90ConfigId::kCoop192x192) {  // (choose_sm90_big: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_f16_coop192x192(args, num_sms, stream);
  }
  return run_config(sm90_f16_coop, sm90_f16_pingpong, sm90_f16_pingpong128, sm90_f16_pingpong64, args, config, a_mn,
                    b_mn, num_sms, stream);
}

cudaError_t sm90_gemm_bf16(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                           cudaStream_t stream) {
  static const Sm90FitEntry fit[kSm90FitWidths] = {sm90_bf16_fit80, sm90_bf16_fit96, sm90_bf16_fit112, sm90_bf16_fit128,
                                                   sm90_bf16_fit144, sm90_bf16_fit160, sm90_bf16_fit176,
                                                   sm90_bf16_fit192, sm90_bf16_fit208, sm90_bf16_fit224};
  if (sm90_fit_width(config) > 0) return run_fit(fit, args, config, a_mn, b_mn, num_sms, stream);
  if (config == Sm90ConfigId::kCoop240) {  // (choose_sm90_pairs: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_bf16_coop240(args, num_sms, stream);
  }
  if (config == Sm90ConfigId::kCoop320) {  // (choose_sm90_big: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_bf16_coop320(args, num_sms, stream);
  }
  if (config == Sm90ConfigId::kCoop192x192) {  // (choose_sm90_big: both operands K-major)
    return a_mn || b_mn ? cudaErrorInvalidValue : sm90_bf16_coop192x192(args, num_sms, stream);
  }
  return run_config(sm90_bf16_coop, sm90_bf16_pingpong, sm90_bf16_pingpong128, sm90_bf16_pingpong64, args, config,
                    a_mn, b_mn, num_sms, stream);
}

cudaError_t sm90_gemm_tf32(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                           cudaStream_t stream) {
  return run_config(sm90_tf32_coop, sm90_tf32_pingpong, nullptr, nullptr, args, config, a_mn, b_mn, num_sms, stream);
}

// The partial launch of split-K: batch entry z is K range z, its raw fp32 sums written to
// [z][M][N] of `workspace`, without bias (the sum applies the epilogue of `args`).
static GemmArgs split_partial_args(const GemmArgs& args, Sm90Split split, void* workspace) {
  GemmArgs part = args;
  part.batch = split.splits;
  part.k_chunk = split.k_chunk;
  part.shape.mode = GroupMode::kBatched;
  part.shape.a_sb = part.shape.b_sb = part.shape.c_sb = part.shape.bias_sb = 0;
  part.shape.d_sm = args.shape.n;
  part.shape.d_sn = 1;
  part.shape.d_sb = index_t(args.shape.m) * args.shape.n;
  part.d = workspace;
  part.out_f32 = true;
  part.bias = nullptr;
  return part;
}

cudaError_t sm90_gemm_split(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, Sm90Split split,
                            void* workspace, int num_sms, cudaStream_t stream) {
  GemmArgs part = split_partial_args(args, split, workspace);
  part.c = nullptr;
  part.act = Activation::kNone;
  part.alpha = 1.0;
  part.beta = 0.0;
  cudaError_t err = sm90_gemm(part, config, a_mn, b_mn, num_sms, stream);
  if (err != cudaSuccess) return err;
  const SimtParams rp{args, 0, 0, split.splits, 0, workspace, 0};
  if (args.dtype == DType::kBFloat16) return launch_splitk_reduce<__nv_bfloat16>(rp, stream);
  if (args.dtype == DType::kFloat16) return launch_splitk_reduce<__half>(rp, stream);
  return launch_splitk_reduce<float>(rp, stream);
}

cudaError_t sm90_swiglu_bf16(const GemmArgs&, Sm90ConfigId, bool, int, cudaStream_t);
cudaError_t sm90_swiglu_f16(const GemmArgs&, Sm90ConfigId, bool, int, cudaStream_t);

cudaError_t sm90_swiglu(const GemmArgs& args, Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  return args.dtype == DType::kBFloat16 ? sm90_swiglu_bf16(args, config, b_mn, num_sms, stream)
                                        : sm90_swiglu_f16(args, config, b_mn, num_sms, stream);
}

cudaError_t sm90_ptr_fill_bf16(void*, const GemmArgs*, int, Sm90ConfigId, bool, int*);
cudaError_t sm90_ptr_fill_f16(void*, const GemmArgs*, int, Sm90ConfigId, bool, int*);
cudaError_t sm90_ptr_run_bf16(const GemmArgs&, const void*, int, int, Sm90ConfigId, bool, int, cudaStream_t);
cudaError_t sm90_ptr_run_f16(const GemmArgs&, const void*, int, int, Sm90ConfigId, bool, int, cudaStream_t);

size_t sm90_ptr_blob_size(int count) { return sm90_ptr_blob_bytes(count); }

cudaError_t sm90_ptr_fill(void* host_blob, const GemmArgs* problems, int count, Sm90ConfigId config, bool b_mn,
                          int* total_tiles) {
  if (count <= 0) return cudaErrorInvalidValue;
  return problems[0].dtype == DType::kBFloat16 ? sm90_ptr_fill_bf16(host_blob, problems, count, config, b_mn, total_tiles)
                                               : sm90_ptr_fill_f16(host_blob, problems, count, config, b_mn, total_tiles);
}

cudaError_t sm90_ptr_run(const GemmArgs& common, const void* dev_blob, int count, int total_tiles,
                         Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  return common.dtype == DType::kBFloat16
             ? sm90_ptr_run_bf16(common, dev_blob, count, total_tiles, config, b_mn, num_sms, stream)
             : sm90_ptr_run_f16(common, dev_blob, count, total_tiles, config, b_mn, num_sms, stream);
}

cudaError_t sm90_scaled_mm(const GemmArgs& args, Fp8Kind ka, Fp8Kind kb, Sm90ConfigId config, bool fast_accum,
                           int num_sms, cudaStream_t stream) {
  using Entry = cudaError_t (*)(const GemmArgs&, Fp8Kind, Fp8Kind, int, cudaStream_t);
  // [fast][bf16 (or float) D][coop]
  static const Entry entries[2][2][2] = {
      {{sm90_f8_f16_pingpong, sm90_f8_f16_coop}, {sm90_f8_bf16_pingpong, sm90_f8_bf16_coop}},
      {{sm90_f8fast_f16_pingpong, sm90_f8fast_f16_coop}, {sm90_f8fast_bf16_pingpong, sm90_f8fast_bf16_coop}}};
  if (config == Sm90ConfigId::kCoop128x192 && !fast_accum) {  // (choose_sm90_f8_config)
    return args.dtype == DType::kBFloat16 ? sm90_f8_bf16_coop192(args, ka, kb, num_sms, stream)
                                          : sm90_f8_f16_coop192(args, ka, kb, num_sms, stream);
  }
  if (config == Sm90ConfigId::kPingpong64x64 && !fast_accum) {  // (choose_sm90_f8_config)
    return args.dtype == DType::kBFloat16 ? sm90_f8_bf16_pingpong64(args, ka, kb, num_sms, stream)
                                          : sm90_f8_f16_pingpong64(args, ka, kb, num_sms, stream);
  }
  return entries[fast_accum][args.dtype == DType::kBFloat16][config == Sm90ConfigId::kCoop128x256](args, ka, kb,
                                                                                                 num_sms, stream);
}

// The unit scale of split-K's partial launches (device memory: the epilogue reads scales by pointer).
__device__ const float kUnitScale = 1.0f;

cudaError_t sm90_scaled_mm_split(const GemmArgs& args, Fp8Kind ka, Fp8Kind kb, Sm90ConfigId config, bool fast_accum,
                                 Sm90Split split, void* workspace, int num_sms, cudaStream_t stream) {
  void* unit = nullptr;
  cudaError_t err = cudaGetSymbolAddress(&unit, kUnitScale);
  if (err != cudaSuccess) return err;
  GemmArgs part = split_partial_args(args, split, workspace);  // (raw sums: unit scales)
  part.scale_a = part.scale_b = static_cast<const float*>(unit);
  part.scale_a_rows = part.scale_b_cols = false;
  err = sm90_scaled_mm(part, ka, kb, config, fast_accum, num_sms, stream);
  if (err != cudaSuccess) return err;
  // The sum applies args' scales and bias (SimtEpilogue::scaled).
  const SimtParams rp{args, 0, 0, split.splits, 0, workspace, 0};
  if (args.dtype == DType::kFloat16) return launch_splitk_reduce<__half>(rp, stream);
  return launch_splitk_reduce<__nv_bfloat16>(rp, stream);
}

bool sm90_kernels_available() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, sm90_gemm_ws_kernel<Sm90_128x256x64_Coop_S4, Sm90Mma16<__nv_bfloat16>, __nv_bfloat16,
                                                        false, false>) !=
      cudaSuccess) {
    cudaGetLastError();  // clear the error of a missing image
    return false;
  }
  return attr.binaryVersion == 90;
}

}  // namespace cutorch_gemm
