#pragma once
// Named SIMT configurations: the closed list the heuristic chooses from and the instantiation
// files compile. A name seen in a profiler maps to one struct here.
//
// Hierarchy (seeds: threadblock tile -> warp tile -> thread tile): 8 warps as 2 (M) x 4 (N);
// lanes as 8 (M) x 4 (N); each thread owns ThreadM x ThreadN accumulators made of 4x4
// sub-blocks strided by 32 rows / 16 columns so that every shared-memory fragment read is a
// conflict-free 128-bit broadcast.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

enum class SimtConfigId : int { k128x128x8 = 0, k64x64x8 = 1 };

template <int BlockM, int BlockN, int BlockK, int MinBlocksPerSM>
struct SimtTileShape {
  static constexpr int kMinBlocksPerSM = MinBlocksPerSM;  // __launch_bounds__: caps registers
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kBlockK = BlockK;
  static constexpr int kWarpsM = 2;
  static constexpr int kWarpsN = 4;
  static constexpr int kLanesM = 8;
  static constexpr int kLanesN = 4;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWarpTileM = BlockM / kWarpsM;
  static constexpr int kWarpTileN = BlockN / kWarpsN;
  static constexpr int kThreadM = kWarpTileM / kLanesM;  // accumulator rows per thread
  static constexpr int kThreadN = kWarpTileN / kLanesN;  // accumulator columns per thread
  static constexpr int kSubM = kThreadM / 4;             // 4-wide sub-blocks per thread
  static constexpr int kSubN = kThreadN / 4;
  static constexpr int kSubStrideM = kLanesM * 4;        // distance between a thread's sub-blocks
  static constexpr int kSubStrideN = kLanesN * 4;
  static_assert(kLanesM * kLanesN == 32, "a warp is 32 lanes");
  static_assert(kThreadM % 4 == 0 && kThreadN % 4 == 0, "thread tile is made of 4x4 sub-blocks");
};

// Large tiles for problems that fill the GPU: 8x8 accumulators per thread, 64 FMA per 4
// shared-memory vector loads (fp32/fp16/bf16). Two CTAs per SM (<= 128 registers) so one
// CTA's barrier wait overlaps the other's FMAs.
struct Simt_128x128x8_T8x8 : SimtTileShape<128, 128, 8, 2> {
  static constexpr SimtConfigId kId = SimtConfigId::k128x128x8;
  static constexpr const char* kName = "Simt_128x128x8_T8x8";
};

// Small tiles: more CTAs for small outputs, and the fp64 config (4x4 doubles keep the
// register count low).
struct Simt_64x64x8_T4x4 : SimtTileShape<64, 64, 8, 2> {
  static constexpr SimtConfigId kId = SimtConfigId::k64x64x8;
  static constexpr const char* kName = "Simt_64x64x8_T4x4";
};

inline const char* simt_config_name(SimtConfigId id) {
  return id == SimtConfigId::k128x128x8 ? Simt_128x128x8_T8x8::kName : Simt_64x64x8_T4x4::kName;
}

inline int simt_block_m(SimtConfigId id) { return id == SimtConfigId::k128x128x8 ? 128 : 64; }
inline int simt_block_n(SimtConfigId id) { return id == SimtConfigId::k128x128x8 ? 128 : 64; }
inline int simt_block_k(SimtConfigId) { return 8; }

}  // namespace cutorch_gemm
