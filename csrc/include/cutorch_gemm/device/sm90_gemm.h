#pragma once
// Host entry points of the Hopper family (definitions in csrc/instantiations/sm90_*.cu).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm90_configs.h"

namespace cutorch_gemm {

// True when this build carries sm_90a machine code that the current device can run.
bool sm90_kernels_available();

// fp16/bf16 GEMM of any group mode (dense, batched, grouped M/N/K). Each operand is K-major
// (a_sk == 1 / b_sk == 1) or MN-major (a_mn: a_sm == 1; b_mn: b_sn == 1), with 16-byte aligned
// base and strides (TMA). cudaErrorNotSupported: the driver refused the tensor maps, nothing ran.
cudaError_t sm90_gemm_f16(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                          cudaStream_t stream);
cudaError_t sm90_gemm_bf16(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                           cudaStream_t stream);
// fp32 operands as tf32 (both K-major: a_mn / b_mn give cudaErrorNotSupported).
cudaError_t sm90_gemm_tf32(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                           cudaStream_t stream);

// gemm.scaled_mm: a (M, K) and b (N rows of K) both K-major, 8-bit kinds ka / kb, with the
// scales and fp32 bias of GemmArgs; D's type: args.dtype (16-bit) or float (args.out_f32).
// fast_accum: the products chained in the tensor core over all of K (torch's use_fast_accum).
cudaError_t sm90_scaled_mm(const GemmArgs& args, Fp8Kind ka, Fp8Kind kb, Sm90ConfigId config, bool fast_accum,
                           int num_sms, cudaStream_t stream);
// The same as split-K (choose_sm90_split with 128-element K slices): each K range's raw fp32 sums
// into `workspace` (splits x M x N floats), then their sum in split order with scaled_mm's
// epilogue (scales, fp32 bias, one rounding).
cudaError_t sm90_scaled_mm_split(const GemmArgs& args, Fp8Kind ka, Fp8Kind kb, Sm90ConfigId config, bool fast_accum,
                                 Sm90Split split, void* workspace, int num_sms, cudaStream_t stream);

// One dense problem (fp16/bf16, or fp32 as tf32) as split-K partials (choose_sm90_split): fp32
// partials of each K range into `workspace` (splits x M x N floats), then their sum in split order
// with the epilogue of `args` (alpha, beta * C, bias, activation, out_dtype).
cudaError_t sm90_gemm_split(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, Sm90Split split,
                            void* workspace, int num_sms, cudaStream_t stream);

// grouped_mm with the fused SwiGLU (groups along M or batched; fp16/bf16): b's N is [gate | up],
// D (..., N / 2) gets silu(gate) * up. a K-major; b K-major or (b_mn) MN-major.
cudaError_t sm90_swiglu(const GemmArgs& args, Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream);

// grouped_gemm's pointer-array launch (fp16/bf16, one type for all problems, each problem's a
// K-major and b K-major or (b_mn) MN-major): the size of the blob for `count` problems, filling
// it on the host (tensor maps, records; *total_tiles), and the launch over its device copy.
// cudaErrorNotSupported from the fill: a tensor map was refused (run the problems one by one).
size_t sm90_ptr_blob_size(int count);
cudaError_t sm90_ptr_fill(void* host_blob, const GemmArgs* problems, int count, Sm90ConfigId config, bool b_mn,
                          int* total_tiles);
cudaError_t sm90_ptr_run(const GemmArgs& common, const void* dev_blob, int count, int total_tiles,
                         Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream);

// C (if any) readable as 4-byte aligned column pairs, row-major: what the fit-width tiles' sm90_direct_c loads.
inline bool sm90_c_pairs(const GemmArgs& g) {
  const ProblemShape& s = g.shape;
  return g.c == nullptr || (s.c_sn == 1 && s.c_sm % 2 == 0 && reinterpret_cast<uintptr_t>(g.c) % 4 == 0);
}

// Whether one launch can take a fit-width config (choose_sm90_fit): one dense fp16 / bf16 problem, both
// operands K-major, B MN-major or both MN-major (the layouts launch_sm90_fit has), D = alpha * acc (+ bias)
// (+ beta * C) stored from registers (no activation; row-major D, its pairs aligned: the kernel's direct epilogue,
// which launch_sm90 checks again; C read as 4-byte aligned pairs). An MN-major B only on rows that are 128-byte
// multiples: elsewhere the pair rule's 2x1 clusters, which its 64-column boxes do not split into for the 192-wide
// tile (launch_sm90), so it keeps the rules it had (choose_sm90_pairs without the 192-wide pairs).
inline bool sm90_fit_launch_ok(const GemmArgs& g, bool a_mn, bool b_mn) {
  const ProblemShape& s = g.shape;
  const size_t pair = g.out_f32 ? 8 : 4;
  const bool layout_ok = b_mn ? sm90_operands_rows_128b(s, 2) : !a_mn;
  return (g.dtype == DType::kFloat16 || g.dtype == DType::kBFloat16) && layout_ok &&
         s.mode == GroupMode::kBatched && g.batch == 1 && g.k_chunk == 0 && g.act == Activation::kNone &&
         sm90_c_pairs(g) && s.d_sn == 1 && s.d_sm % 2 == 0 && reinterpret_cast<uintptr_t>(g.d) % pair == 0;
}

// Whether one launch defers its store in every tile, as the 240-wide tiles need (choose_sm90_fit's defer_ok): one
// dense fp16 / bf16 problem, both operands K-major (the only layout instantiated), no C, plain or bias + any
// activation (the packing has them all; exact GELU defers on every width but 256, which these tiles are not), and
// launch_sm90's defer_store: a 16-bit D by TMA (16-byte aligned base and rows), a bias read as 4-byte column
// pairs; no forced epilogue path and CUTORCH_GEMM_SM90_DEFER not off (the caller's `forced_off`).
inline bool sm90_defer_launch_ok(const GemmArgs& g, bool a_mn, bool b_mn, bool forced_off) {
  const ProblemShape& s = g.shape;
  const bool bias_pairs = g.bias == nullptr || (reinterpret_cast<uintptr_t>(g.bias) % 4 == 0 && s.bias_sb % 2 == 0 &&
                                                s.n % 2 == 0);
  return !forced_off && (g.dtype == DType::kFloat16 || g.dtype == DType::kBFloat16) && !a_mn && !b_mn &&
         s.mode == GroupMode::kBatched && g.batch == 1 && g.k_chunk == 0 && g.c == nullptr && !g.out_f32 &&
         s.d_sn == 1 && reinterpret_cast<uintptr_t>(g.d) % 16 == 0 && (s.d_sm * 2) % 16 == 0 && bias_pairs;
}

// Whether a launch with an activation (relu, GELU, GELU-tanh, SiLU; bias or not) takes the fit-width rule too: every
// tile defers its store (defer_ok, sm90_defer_launch_ok), so each width the rule can pick runs a deferring kernel
// (the twins of the widths that are not multiples of 64, and the 192-wide tile, which defers itself; the rule
// never picks 128, whose direct-store tile has no activation), and on operand rows that are not 128-byte
// multiples the pair rule may take the 192-wide pairs. Not with the twins switched off
// (CUTORCH_GEMM_SM90_FIT_DEFER=off: launch_sm90_fit would run the direct-store tiles) nor the 128-wide tile forced
// (forced: CUTORCH_GEMM_SM90_CONFIG). explain() mirrors this.
inline bool sm90_fit_act_ok(const GemmArgs& g, bool defer_ok, bool fit_defer_off, const std::string& forced) {
  return g.act != Activation::kNone && defer_ok && !fit_defer_off && forced != "coop128";
}

inline cudaError_t sm90_gemm(const GemmArgs& args, Sm90ConfigId config, bool a_mn, bool b_mn, int num_sms,
                             cudaStream_t stream) {
  if (args.dtype == DType::kFloat32) return sm90_gemm_tf32(args, config, a_mn, b_mn, num_sms, stream);
  return args.dtype == DType::kBFloat16 ? sm90_gemm_bf16(args, config, a_mn, b_mn, num_sms, stream)
                                        : sm90_gemm_f16(args, config, a_mn, b_mn, num_sms, stream);
}

}  // namespace cutorch_gemm
