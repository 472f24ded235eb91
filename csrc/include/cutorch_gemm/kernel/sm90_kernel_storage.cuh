#pragma once
// What the Hopper GEMM kernel (kernel/sm90_gemm_ws_kernel.cuh) lays out in shared memory, and which configs
// take its variants: the fit-width tiles and the deferred store (launch_sm90 asks these too).

#include <cstdint>

#include "cutorch_gemm/epilogue/sm90_epilogue.cuh"

namespace cutorch_gemm {

template <class Cfg, typename T>
struct Sm90SharedStorage {
  alignas(1024) T a[Cfg::kStages][Cfg::kBlockM * Cfg::kBlockK];  // 128B-swizzled by TMA
  alignas(1024) T b[Cfg::kStages][Cfg::kBlockN * Cfg::kBlockK];
  // Per consumer warpgroup, one of (chosen per tile, so both can occur in one launch):
  union EpilogueBuffers {
    // the staged epilogue's 64 x 32 fp32 slice of accumulators (padded rows: the fragment
    // writes and the row-wise reads stay conflict-free);
    float epi[64][Sm90EpilogueCols + 4];
    // the TMA-store epilogue's 64 rows x 128 bytes of D per buffer, in D's 128-byte swizzle.
    uint8_t out[Cfg::kEpiBuffers][64 * 128];
  };
  struct alignas(1024) EpilogueSlot {
    EpilogueBuffers u;
  };
  EpilogueSlot epi_slot[Cfg::kConsumers];
  alignas(8) uint64_t full[Cfg::kStages];
  alignas(8) uint64_t empty[Cfg::kStages];
  // ping-pong: the consumers' turns and release gate (collective/sm90_pingpong_turns.cuh)
  alignas(8) uint64_t order[Cfg::kPingpong ? 4 : 2];
  // The cooperative kernels' tile bias, column pairs, per consumer (staged by the compact one). NOTE: with
  // it the cooperative storage plus launch_sm90's 1 KB alignment slack is exactly the 227 KB limit.
  uint32_t bias_stage[Cfg::kPingpong ? 1 : Cfg::kConsumers][Cfg::kPingpong ? 1 : Cfg::kBlockN / 2];
};

// The fit-width cooperative configs that store D from registers (device/sm90_configs.h: 128 x 80 ... 224,
// 16-bit operands, but the 192-wide one, which defers its store; the 128x256 one and the 8-bit 128x192 one
// are not).
template <class Cfg, class Mma>
constexpr bool sm90_is_fit() {
  return !Cfg::kPingpong && !Mma::kPromote && Mma::kNarrowOk && Cfg::kDirectStore;
}

// The configs and operand types whose kernels defer the store (the kernel's kDefer): cooperative, 16-bit,
// 256- or 192-column tiles (four or three 64-column slices), and widths that are not multiples of 64 (240, the
// fit widths' deferring twins, Sm90Deferring: their last slice overlaps the one before, sm90_slice_first_col).
// (launch_sm90 asks too, to pick the kGroupEnds variant, which only the 256-column tiles have.)
template <class Cfg, class Mma>
constexpr bool sm90_defers() {
  return !Cfg::kPingpong && !Mma::kScaled && !Mma::kPromote && Mma::kNarrowOk && !Cfg::kDirectStore &&
         (Cfg::kBlockN == 256 || Cfg::kBlockN == 192 ||
          (Cfg::kBlockN > 64 && Cfg::kBlockN % 64 != 0 && Cfg::kBlockN % 16 == 0));
}

// A tile width that is not a multiple of 64 (240, the fit widths' twins): its kernel has the deferred store only
// (the compact variant; the other epilogues step in 64-column slices and would cross into the next tile).
template <class Cfg, class Mma>
constexpr bool sm90_defer_only() {
  return sm90_defers<Cfg, Mma>() && Cfg::kBlockN % 64 != 0;
}

}  // namespace cutorch_gemm
