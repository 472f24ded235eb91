#pragma once
// The skinny GEMM (kernel/sm80_skinny_kernel.cuh): its named configs, the rule that gives it a
// launch, and the host entry points (definitions in csrc/instantiations/sm80_skinny_*.cu).
// The rule is torch-free and CUDA-free (the binding and `explain` share it; CPU-tested).
//
// Why a separate kernel for small M: the time of such a GEMM is W's bytes read from DRAM (and,
// for small problems, the launch). The tile kernels put M on their 64- or 128-row side (mostly
// padding) and, with N / 128 tiles, need split-K and a second launch to occupy the GPU; this
// kernel streams W straight into mma.sync fragments, 32 rows of W per CTA, K split over the
// CTA's warps, in one launch.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm90_pdl_rule.h"

namespace cutorch_gemm {

// Named configs: 32 rows of W per CTA, T tokens (rows of x) per warp (M <= T), W warps per CTA
// (K slices). Sm80_Skinny_32xT16_W8: M <= 16, 8 warps.
enum class SkinnyConfigId : int { kT8W8 = 0, kT16W8, kT32W8, kT64W8, kT8W16, kT16W16, kT32W16 };

inline int skinny_tokens(SkinnyConfigId c) {
  switch (c) {
    case SkinnyConfigId::kT8W8: case SkinnyConfigId::kT8W16: return 8;
    case SkinnyConfigId::kT16W8: case SkinnyConfigId::kT16W16: return 16;
    case SkinnyConfigId::kT32W8: case SkinnyConfigId::kT32W16: return 32;
    case SkinnyConfigId::kT64W8: return 64;
  }
  return 0;
}
inline int skinny_warps(SkinnyConfigId c) { return int(c) >= int(SkinnyConfigId::kT8W16) ? 16 : 8; }

inline const char* skinny_config_name(SkinnyConfigId c) {
  switch (c) {
    case SkinnyConfigId::kT8W8:   return "Sm80_Skinny_32xT8_W8";
    case SkinnyConfigId::kT16W8:  return "Sm80_Skinny_32xT16_W8";
    case SkinnyConfigId::kT32W8:  return "Sm80_Skinny_32xT32_W8";
    case SkinnyConfigId::kT64W8:  return "Sm80_Skinny_32xT64_W8";
    case SkinnyConfigId::kT8W16:  return "Sm80_Skinny_32xT8_W16";
    case SkinnyConfigId::kT16W16: return "Sm80_Skinny_32xT16_W16";
    case SkinnyConfigId::kT32W16: return "Sm80_Skinny_32xT32_W16";
  }
  return "?";
}

constexpr int64_t kSkinnyMaxM = 64;      // the largest config (CUTORCH_GEMM_SKINNY=force)
constexpr int64_t kSkinnyAutoMaxM = 32;  // the rule's limit (measured: see skinny_refusal)
// The K up to which the launcher asks for programmatic dependent launch where the kernel's sm_90 build runs
// (device/sm80_skinny_launch.cuh). H200, bf16, % less time with it (fifty-seventh session): 16x4096x1024 12,
// 16x2048x2048 9, 8x4096x2048 7.5, 1x4096x4096 5.2, 16x4096x4096 4.9, 16x2816x2048 (88 CTAs) 2, 16x3072x4096 1.2;
// beyond, 16x4096x8192 0.5, within noise, so left off (the Hopper tile kernels lose with it on long launches over
// more than half the SMs: device/sm90_pdl_rule.h).
constexpr int64_t kSkinnyPdlMaxK = 4096;

// Whether a launch of the kernel's sm_90 build asks for programmatic dependent launch (`forced`:
// CUTORCH_GEMM_SM90_PDL, device/sm90_pdl_rule.h).
inline bool skinny_pdl_wanted(int64_t k, const std::string& forced) {
  const int f = sm90_pdl_forced(forced);
  return f >= 0 ? f == 1 : k <= kSkinnyPdlMaxK;
}

// The knob's values that send every launch the operand rule accepts to the kernel.
inline bool skinny_forced(const std::string& knob) { return knob == "force" || knob == "w8" || knob == "w16"; }
// The knob's values that pick this kernel over the Hopper one (device/sm90_skinny.h).
inline bool skinny_sm80_named(const std::string& knob) { return skinny_forced(knob) || knob == "sm80"; }

// Tokens from M; warps: 16 when the N / 32 CTAs are at most one per SM (the DRAM bytes in
// flight per SM set the speed: 8 warps of one CTA keep too few), else 8. T64 has 8 (its registers allow no 16).
// knob "w8" / "w16" picks the warps (experiments, tests).
inline SkinnyConfigId choose_skinny_config(int64_t m, int64_t n, int num_sms, const std::string& knob = "") {
  if (m > 32) return SkinnyConfigId::kT64W8;
  const int t = m <= 8 ? 0 : m <= 16 ? 1 : 2;
  const bool w16 = knob == "w16" || (knob != "w8" && (n + 31) / 32 <= int64_t(num_sms));
  return SkinnyConfigId(t + (w16 ? int(SkinnyConfigId::kT8W16) : 0));
}

struct SkinnyQuery {
  int sm_major;
  bool sm80_built;        // this build has sm_80-family code the device runs
  DType dtype;
  GroupMode mode;
  int64_t batch, m, n, k;
  int64_t a_sm, a_sk;     // a's strides (as set_2d reports them: a single row has a_sm >= K)
  int64_t b_sk, b_sn;
  bool a_aligned, b_aligned;  // 16-byte aligned base pointers
  int num_sms;
  std::string forced_arch;    // CUTORCH_GEMM_ARCH ("", "auto", "simt", "sm80", "sm90")
  std::string knob;           // CUTORCH_GEMM_SKINNY: "" / "auto" (the rules), "off", "force", "w8", "w16",
                              // "sm80" (this kernel under its rule), "sm90" (device/sm90_skinny.h)
  bool sm90_built = false;    // this build has sm_90a code the device runs (device/sm90_skinny.h)
  int64_t b_sb = 0;           // b's group stride (grouped_mm 2D x 3D: device/sm90_skinny.h's grouped rule)
  bool swiglu = false;        // grouped_mm's fused SwiGLU (the grouped rule)
};

// The operands both skinny kernels read: "" when they can, else why not (M up to max_m).
inline std::string skinny_operand_refusal(const SkinnyQuery& q, int64_t max_m) {
  if (q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16) return "fp16 / bf16 only";
  if (q.mode != GroupMode::kBatched || q.batch != 1) return "one dense problem only";
  if (q.m < 1 || q.m > max_m) return "M outside 1.." + std::to_string(max_m);
  if (q.n < 1 || q.k < 1) return "empty problem";
  if (q.a_sk != 1 || q.b_sk != 1) return "needs K-contiguous a and b (x and the nn.Linear weight W, b = W.t())";
  if (q.k % 8 != 0 || q.a_sm % 8 != 0 || q.b_sn % 8 != 0 || !q.a_aligned || !q.b_aligned)
    return "16-byte loads need K, the row strides and the base pointers in 16-byte units";
  return "";
}

// "" when the skinny kernel takes the launch, else the reason it does not.
inline std::string skinny_refusal(const SkinnyQuery& q) {
  if (q.knob == "off") return "CUTORCH_GEMM_SKINNY=off";
  if (!q.forced_arch.empty() && q.forced_arch != "auto") return "CUTORCH_GEMM_ARCH names a family";
  if (q.knob == "sm90") return "CUTORCH_GEMM_SKINNY=sm90 names the Hopper skinny kernel";
  if (q.sm_major < 8 || !q.sm80_built) return "needs an sm_80+ GPU and sm_80-family code in the build";
  const std::string operands = skinny_operand_refusal(q, kSkinnyMaxM);
  if (!operands.empty()) return operands;
  if (skinny_forced(q.knob)) return "";
  // Measured on an H100 against the tile kernels (benchmarks/RESULTS.md): up to 16 tokens this
  // kernel is faster at every size tried (512^2 to 14336x4096: one launch, no split-K); with
  // 17..32 tokens only while its 32-row CTAs are at most one per SM (16 warps each): past that
  // the x fragments each warp reads again cost more than the tiles' padding (32x14336x4096:
  // 0.82x cuBLAS here, 0.98x tiled).
  if (q.m > kSkinnyAutoMaxM) return "M > 32: the tile kernels serve it";
  if (q.m > 16 && (q.n + 31) / 32 > q.num_sms) return "17 <= M <= 32 with N / 32 > SMs: the tile kernels serve it";
  return "";
}

cudaError_t sm80_skinny_f16(const GemmArgs&, SkinnyConfigId, cudaStream_t);
cudaError_t sm80_skinny_bf16(const GemmArgs&, SkinnyConfigId, cudaStream_t);

inline cudaError_t sm80_skinny(const GemmArgs& g, SkinnyConfigId c, cudaStream_t stream) {
  return g.dtype == DType::kFloat16 ? sm80_skinny_f16(g, c, stream) : sm80_skinny_bf16(g, c, stream);
}

}  // namespace cutorch_gemm
