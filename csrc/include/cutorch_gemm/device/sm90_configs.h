#pragma once
// Named Hopper configurations (TMA + wgmma, warp-specialized, persistent) and the family
// choice shared by the binding and `explain`. Torch- and CUDA-free.

#include <string>

#include "cutorch_gemm/core/types.h"

namespace cutorch_gemm {

// 128x256 output tile per CTA, K in 64-element (128-byte) slices, 4-stage TMA ring; one
// producer warpgroup and two cooperative consumer warpgroups, each owning 64x256 of the tile.
struct Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x256x64_Coop_S4";
  static constexpr bool kPingpong = false;
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 256;
  static constexpr int kBlockK = 64;
  static constexpr int kStages = 4;
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static_assert(kBlockM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file");
};

// Ping-pong: 64x256 tiles, the two consumer warpgroups take alternate tiles of the CTA's
// sequence, so one's epilogue runs while the other's wgmma keep the tensor cores busy (the
// stage ring hands them their tiles in turn, which staggers them by one mainloop).
struct Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x256x64_Pingpong_S5";
  static constexpr bool kPingpong = true;
  static constexpr int kBlockM = 64;
  static constexpr int kBlockN = 256;
  static constexpr int kBlockK = 64;
  static constexpr int kStages = 5;
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file");
};

enum class Sm90ConfigId : int { kCoop128x256 = 0, kPingpong64x256 = 1 };

inline const char* sm90_config_name(Sm90ConfigId id) {
  return id == Sm90ConfigId::kCoop128x256 ? Sm90_128x256x64_Coop_S4::kName : Sm90_64x256x64_Pingpong_S5::kName;
}

// The sm90 heuristic (pure). `forced` is CUTORCH_GEMM_SM90_CONFIG ("", "coop", "pingpong"):
// the override the tests and benchmarks use to run every config.
// Measured on an H200 (benchmarks/RESULTS.md): cooperative 128x256 wins once its tiles fill
// the GPU (less B traffic per FLOP); ping-pong 64x256 wins for M <= 128 and for problems whose
// 128x256 tiles leave SMs idle (its tiles are half as tall, and epilogues overlap wgmma).
inline Sm90ConfigId choose_sm90_config(int m, int n, int k, int num_sms, const std::string& forced) {
  (void)k;
  if (forced == "coop") return Sm90ConfigId::kCoop128x256;
  if (forced == "pingpong") return Sm90ConfigId::kPingpong64x256;
  const long long coop_tiles = (long long)((m + 127) / 128) * ((n + 255) / 256);
  if (m <= 128 || coop_tiles < num_sms) return Sm90ConfigId::kPingpong64x256;
  return Sm90ConfigId::kCoop128x256;
}

enum class GemmFamily : int { kSimt = 0, kSm90 = 1 };

struct FamilyChoice {
  GemmFamily family;
  std::string reason;
};

// forced: the CUTORCH_GEMM_ARCH value ("", "auto", "simt", "sm80", "sm90").
// a_k_major / b_k_major: the reduction dimension is contiguous; tma_ok: base addresses and
// row strides are 16-byte aligned (TMA's requirement); sm90_built: this build has sm_90a code.
inline FamilyChoice choose_family(int sm_major, DType dtype, bool a_k_major, bool b_k_major,
                                  bool tma_ok, bool dense, bool k_positive, bool sm90_built,
                                  const std::string& forced) {
  if (forced == "simt") return {GemmFamily::kSimt, "CUTORCH_GEMM_ARCH=simt forces the SIMT family"};
  if (sm_major != 9) return {GemmFamily::kSimt, "not an sm_90 GPU: SIMT (the sm80 tensor-core path is issue 3)"};
  if (!sm90_built) return {GemmFamily::kSimt, "this build has no sm_90a code (TORCH_CUDA_ARCH_LIST)"};
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    return {GemmFamily::kSimt, "sm90 kernels take fp16/bf16 (tf32/fp64 come later): SIMT"};
  if (!dense) return {GemmFamily::kSimt, "batched/grouped problems run on SIMT for now"};
  if (!k_positive) return {GemmFamily::kSimt, "K = 0: nothing to multiply, SIMT writes the epilogue"};
  if (!a_k_major || !b_k_major)
    return {GemmFamily::kSimt, "sm90 kernel needs K-major a and b (x @ W.t()); MN-major comes later: SIMT"};
  if (!tma_ok) return {GemmFamily::kSimt, "TMA needs 16-byte aligned bases and row strides: SIMT"};
  return {GemmFamily::kSm90, "sm_90 fp16/bf16 with K-major operands: TMA + wgmma warp-specialized persistent kernel"};
}

}  // namespace cutorch_gemm
