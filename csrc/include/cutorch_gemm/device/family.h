#pragma once
// Which kernel family runs a call: the rule the binding and `explain` share. Torch- and
// CUDA-free.
//
//   sm90  TMA + wgmma (fp16 / bf16, sm_90, operands TMA can read)
//   sm80  cp.async + ldmatrix + mma.sync (fp16 / bf16 / tf32 / fp64; sm_80 and newer; any
//         strides: the fallback on Hopper for what TMA cannot read, and Hopper's tf32 / fp64)
//   simt  CUDA-core FMA (fp32 when tf32 is not allowed, GPUs below sm_80, CUTORCH_GEMM_ARCH=simt);
//         it has no int8 kernels: int8 answered with kSimt is an error for the binding to raise

#include <string>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/device/sm90_configs.h"
#include "cutorch_gemm/scheduler/problem_visitor.h"

namespace cutorch_gemm {

enum class GemmFamily : int { kSimt = 0, kSm90 = 1, kSm80 = 2 };

inline const char* family_name(GemmFamily f) {
  return f == GemmFamily::kSm90 ? "sm90" : f == GemmFamily::kSm80 ? "sm80" : "simt";
}

struct FamilyChoice {
  GemmFamily family;
  std::string reason;
};

struct FamilyQuery {
  int sm_major;
  DType dtype;
  Sm90Operand a, b;   // how TMA would read the operands
  GroupMode mode;     // the launch's group mode
  bool k_positive;
  bool sm90_built;    // this build has sm_90a code the device runs
  bool sm80_built;    // this build has sm_80-family code the device runs
  bool tf32_allowed;  // PyTorch's float32 matmul precision allows tf32
  std::string forced; // CUTORCH_GEMM_ARCH: "", "auto", "simt", "sm80", "sm90"
};

// Why the Hopper kernels cannot take a call ("" when they can).
inline std::string sm90_refusal(const FamilyQuery& q) {
  if (q.sm_major != 9) return "not an sm_90 GPU";
  if (!q.sm90_built) return "this build has no sm_90a code (TORCH_CUDA_ARCH_LIST)";
  const bool tf32 = q.dtype == DType::kFloat32;
  if (q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16 && !tf32)
    return "the sm90 kernels take fp16/bf16 (and tf32)";
  if (!q.k_positive) return "K = 0: nothing to multiply";
  if (!q.a.ok || !q.b.ok)
    return std::string(!q.a.ok ? "a" : "b") +
           ": TMA needs a K- or MN-contiguous operand with 16-byte aligned base, row and batch strides";
  if (tf32 && (q.a.mn_major || q.b.mn_major))
    return "tf32 wgmma reads K-major operands only (a row-major, b column-major)";
  // A TMA box may start anywhere along an operand's strided dimension but only on 16-byte
  // boundaries along its contiguous one (else the copy faults), and group offsets are
  // arbitrary: the grouped dimension must not be an operand's contiguous one.
  if (q.mode == GroupMode::kGroupedM && q.a.mn_major)
    return "groups along M need a K-major a (rows of a group start anywhere)";
  if (q.mode == GroupMode::kGroupedN && q.b.mn_major)
    return "groups along N need a K-major b (b = y.t() of a row-major y)";
  if (q.mode == GroupMode::kGroupedK && (!q.a.mn_major || !q.b.mn_major))
    return "groups along K need MN-major a and b (a = x.t(), b = dy of row-major x, dy)";
  return "";
}

inline FamilyChoice choose_family(const FamilyQuery& q) {
  if (q.forced == "simt") return {GemmFamily::kSimt, "CUTORCH_GEMM_ARCH=simt forces the SIMT family"};
  if (q.dtype == DType::kFloat32 && !q.tf32_allowed)
    return {GemmFamily::kSimt, "fp32 with tf32 not allowed (torch.backends.cuda.matmul.allow_tf32 / "
                               "float32_matmul_precision 'highest'): SIMT fp32"};
  const bool sm80_ok = q.sm_major >= 8 && q.sm80_built;
  const char* sm80_what = q.dtype == DType::kFloat64   ? "fp64 DMMA"
                          : q.dtype == DType::kFloat32 ? "tf32 mma.sync"
                          : q.dtype == DType::kInt8    ? "int8 mma.sync (int32 accumulate)"
                                                       : "fp16/bf16 mma.sync";
  if (q.forced == "sm80") {
    if (sm80_ok) return {GemmFamily::kSm80, std::string("CUTORCH_GEMM_ARCH=sm80 forces the sm80 family: ") + sm80_what};
    return {GemmFamily::kSimt, "CUTORCH_GEMM_ARCH=sm80, but the GPU is below sm_80 or the build has no sm_80 code: SIMT"};
  }
  const std::string no90 = sm90_refusal(q);
  if (no90.empty()) {
    std::string why = std::string("sm_90 ") + (q.dtype == DType::kFloat32 ? "tf32" : "fp16/bf16") +
                      ": TMA + wgmma warp-specialized persistent kernel, a ";
    why += q.a.mn_major ? "MN-major" : "K-major";
    why += q.b.mn_major ? ", b MN-major" : ", b K-major";
    return {GemmFamily::kSm90, why};
  }
  if (sm80_ok) {
    std::string why = std::string("sm80 family (cp.async + ldmatrix + mma.sync), ") + sm80_what;
    if (q.sm_major >= 9) why += "; not sm90: " + no90;
    return {GemmFamily::kSm80, why};
  }
  return {GemmFamily::kSimt, q.sm_major < 8 ? "GPU below sm_80: SIMT" : "this build has no sm_80-family code: SIMT"};
}

}  // namespace cutorch_gemm
