#pragma once
// What the Hopper GEMM kernel (kernel/sm90_gemm_ws_kernel.cuh) lays out in shared memory, its variant flags and
// the template arguments each variant takes (sm90_kernel_variant_ok), and which configs take its variants: the
// fit-width tiles, the deferred store, C by TMA (launch_sm90 asks these too).

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/collective/sm90_mma.cuh"
#include "cutorch_gemm/device/sm90_configs.h"
#include "cutorch_gemm/epilogue/sm90_epilogue.cuh"
#include "cutorch_gemm/scheduler/sm90_tile_scheduler.cuh"

namespace cutorch_gemm {

// The kernel's variant flags (sm90_gemm_ws_kernel's template parameters besides the config and operands):
// kSwiGlu: grouped_mm's fused SwiGLU. Output tiles are kBlockN / 2 wide; the B tile holds their
// gate columns [n0, n0 + kBlockN / 2) and then their up columns F + [n0, ...) (F = N / 2), and
// the epilogue writes silu(gate) * up (epilogue/sm90_epilogue.cuh).
// kPtrArray: grouped_gemm's pointer-array launch. Problem g has its own GemmArgs and tensor maps
// (p.ptr_problems, p.ptr_maps: global memory, not the tma_a / tma_b parameters); tiles are
// found by the scheduler's scan over host-computed tile counts; D is written from registers
// (direct or staged, per problem).
// kPlainTma: the compact variant, with one epilogue compiled in (launch_sm90 picks it). Ping-pong:
// plain launches on fixed tile grids whose D takes the TMA store, that store, and a scheduler
// without the grouped scan or stream-K pieces. Cooperative (16-bit): dense, batched and
// grouped-K launches with the deferred store (stream-K pieces included), that store, and a scheduler
// without the grouped scan. Why: the general kernel inlines every epilogue path (direct, staged, fused C,
// activations, scaled, stream-K), ~3x the code, and a launch on cold caches stalls on instruction
// fetch (H100, ping-pong 128x128x64: 11.1 us -> 7.6 us with caches flushed; benchmarks/RESULTS.md,
// eleventh session; H200, 1024^3: 21% of the warps' samples were instruction fetch, nineteenth).
// kBare: a compact kernel for D = A B alone (sm90_has_bare's configs, K-major operands; launch_sm90 picks it for
// dense and batched launches with no bias, alpha 1 and a 16-bit D): no bias staging, no alpha, no activation
// switch, no stream-K pieces, no grouped-K tail. Why: a launch of one tile per CTA runs every instruction of its
// path once, from cold caches, and the compact kernel's path jumped between ~20 places in 13 K instructions of
// code (the other epilogues' copies in between). H200, ncu source counters, 2048x2048x128 (128x256 tiles): half of
// the warps' samples were instruction fetch (`no_inst`), cuBLAS's 1.2 K-instruction kernel 7%; the kernel times'
// fixed part (K -> 0) was 1.9 us over cuBLAS's at 2048x2048, 1.0 us at 1024x1024 (benchmarks/RESULTS.md,
// forty-second session).
// kGroupEnds: the grouped-M variant of the cooperative 16-bit kernels with a K-major A (launch_sm90
// picks it for grouped-M forwards with the deferred store): a group's last, partial tile is deferred
// too, its slices stored from registers (sm90_store_packed_slice_direct). Every tile of such a launch
// defers, so, like the compact kernels, it has no other epilogue compiled in. Why a variant: that path,
// compiled into the dense kernels, cost them at fixed clocks (H100): 4096x4096x512 60.1 K -> 63.7 K
// cycles, 8192x14336x4096 +1%, and a Qwen3-down-like grouped dW (MN-major A) 361 K -> 389 K.

// The columns of B a pipeline stage holds: the tile's, or (kPadB: device/sm90_configs.h, Sm90MnB) whole 64-column
// boxes of an MN-major B.
template <class Cfg>
constexpr int sm90_b_cols() {
  return Cfg::kPadB ? (Cfg::kBlockN + 63) / 64 * 64 : Cfg::kBlockN;
}

template <class Cfg, typename T>
struct Sm90SharedStorage {
  alignas(1024) T a[Cfg::kStages][Cfg::kBlockM * Cfg::kBlockK];  // 128B-swizzled by TMA
  alignas(1024) T b[Cfg::kStages][sm90_b_cols<Cfg>() * Cfg::kBlockK];
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
  // Per consumer, one per TMA-store buffer: a slice of C loaded into it by TMA (Sm90Params::tma_load_c).
  // (Inside the 1 KB round-up of the struct's size: the cooperative storage stays at the limit, not over it.)
  alignas(8) uint64_t c_full[Cfg::kConsumers][Cfg::kEpiBuffers];
  // ... and their parities, one word per warp (Sm90CSlices::phase): kept here between tiles, so that the mainloop
  // holds no register for them.
  uint32_t c_phase[Cfg::kConsumers][4];
  // The cooperative kernels' tile bias, column pairs, per consumer (staged by the compact one). NOTE: with
  // it the cooperative storage plus launch_sm90's 1 KB alignment slack is exactly the 227 KB limit.
  uint32_t bias_stage[Cfg::kPingpong ? 1 : Cfg::kConsumers][Cfg::kPingpong ? 1 : Cfg::kBlockN / 2];
  // The CTA's first work item, looked up by thread 0 (the kernel's kFirstShared).
  Sm90Work first_work;
};

// The fit-width cooperative configs that store D from registers (device/sm90_configs.h: 128 x 80 ... 224,
// 16-bit operands, but the 192-wide one, which defers its store; the 128x256 one and the 8-bit 128x192 one
// are not).
template <class Cfg, class Mma>
constexpr bool sm90_is_fit() {
  return !Cfg::kPingpong && !Mma::kPromote && Mma::kNarrowOk && Cfg::kDirectStore;
}

// The big tiles among them (choose_sm90_big: 128x320, 192x192), which also store D by TMA (the kernel's kFit branch).
template <class Cfg, class Mma>
constexpr bool sm90_is_big() {
  return sm90_is_fit<Cfg, Mma>() && (Cfg::kBlockN > 256 || Cfg::kConsumers > 2);
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

// The configs and types with a bare compact kernel (the kernel's kBare): device/sm90_configs.h's Sm90BareConfigs, with
// 16-bit K-major operands.
template <class Cfg, class Mma, typename T, bool kAMn, bool kBMn>
constexpr bool sm90_has_bare() {
  return !kAMn && !kBMn && std::is_same_v<Mma, Sm90Mma16<T>> && Sm90BareConfigs::has<Cfg>();
}

// The configs with the K-split pair in their compact ping-pong kernels (collective/sm90_ksplit_pair.cuh; the launch
// rule: sm90_ksplit_ok): 64-wide ping-pong tiles with an even number of stages, not the promoting 8-bit mainloop.
template <class Cfg, class Mma>
constexpr bool sm90_has_ksplit() {
  return Cfg::kPingpong && Cfg::kBlockN == 64 && Cfg::kStages % 2 == 0 && !Mma::kPromote;
}

// The kernel's template arguments that make a variant it has (sm90_gemm_ws_kernel asserts this; each
// static_assert names what the failing one needs). Fit-width tiles (device/sm90_configs.h; rule:
// device/sm90_fit_rules.h): 128 x 80 ... 224, both operands K-major, B MN-major (Sm90MnB) or both MN-major,
// plain dense launches, D stored from registers (sm90_store_tile_direct) and no other epilogue. (Not the
// 192-wide one: three 64-column slices, it defers its store as the 128x256 tile does. Nor the fit tiles'
// deferring twins, Sm90Deferring, or the 128x240 tile: compact kernels whose last slice overlaps the one
// before, sm90_slice_first_col.)
template <class Cfg, class Mma, bool kAMn, bool kBMn, bool kSwiGlu, bool kPtrArray, bool kPlainTma, bool kGroupEnds,
          bool kBare>
constexpr bool sm90_kernel_variant_ok() {
  using E = typename Mma::Element;
  constexpr bool kFit = sm90_is_fit<Cfg, Mma>();
  static_assert(Cfg::kBlockK * sizeof(E) == 128, "a tile row of K is one 128-byte swizzle row");
  static_assert(Mma::kInstrK * sizeof(E) == 32, "the descriptors' K step is 32 bytes (K-major)");
  static_assert(Mma::kMnMajorOk || (!kAMn && !kBMn), "this operand type reads K-major tiles only");
  static_assert(!(kSwiGlu && kPtrArray), "one variant at a time");
  static_assert(!kPlainTma || (!kSwiGlu && !kPtrArray && !Mma::kScaled && !kGroupEnds &&
                                (Cfg::kPingpong || sm90_defers<Cfg, Mma>())),
                "the compact variants: plain ping-pong launches; deferring cooperative ones");
  static_assert(!kBare || (kPlainTma && !kAMn && !kBMn && !Mma::kPromote), "bare: a compact kernel, K-major 16-bit");
  static_assert(!kFit || (Cfg::kBlockN % 16 == 0 && !kSwiGlu && !kPtrArray && !kPlainTma &&
                          !kGroupEnds && (kBMn || !kAMn)),
                "fit-width tiles: fp16 / bf16, a K-major A only with a K-major B, the general kernel's plain launches");
  static_assert(!Cfg::kPadB || (kBMn && !kSwiGlu && !kPtrArray && !kGroupEnds),
                "whole 64-column B boxes (Sm90MnB): an MN-major B, dense launches");
  static_assert(Cfg::kBlockN == 256 || kFit || (Cfg::kBlockN == 128 && Mma::kNarrowOk && !kSwiGlu && !kPtrArray) ||
                    (Cfg::kBlockN == 192 && Mma::kPromote && !Cfg::kPingpong) ||
                    (Cfg::kBlockN == 192 && sm90_defers<Cfg, Mma>() && !kSwiGlu && !kPtrArray && !kGroupEnds) ||
                    (sm90_defer_only<Cfg, Mma>() && kPlainTma) ||
                    (Cfg::kBlockN == 64 && Cfg::kPingpong && (Mma::kPromote || (Mma::kNarrowOk && !kSwiGlu && !kPtrArray))),
                "128-column tiles: 16-bit operands, plain launches; 192: the promoting 8-bit cooperative one "
                "and the deferring 16-bit one (dense and batched launches); 240: the compact deferring kernel only; "
                "64: the ping-pong ones (8-bit promoting; 16-bit plain launches)");
  static_assert(!kGroupEnds || (sm90_defers<Cfg, Mma>() && !kAMn && !kSwiGlu && !kPtrArray),
                "kGroupEnds: the deferring cooperative kernels with a K-major A");
  return true;
}

// Cfg with kBuffers TMA-store buffers (an epilogue writing to buffers outside the epilogue slots: the one-tile
// ping-pong launches' idle stages, Sm90Params::one_tile).
template <class Cfg, int kBuffers>
struct Sm90WithBuffers : Cfg {
  static constexpr int kEpiBuffers = kBuffers;
};

// The configs and types whose general kernels load C by TMA (Sm90Params::tma_load_c; sm90_store_tile_tma's kC):
// 16-bit operands and D, tiles of whole 64-column slices, not the fit-width tiles (which read C as column pairs into
// registers: sm90_direct_c).
template <class Cfg, class Mma, typename T>
constexpr bool sm90_loads_c() {
  return sizeof(T) == 2 && !Mma::kScaled && !Mma::kPromote && Cfg::kBlockN % 64 == 0 && !sm90_is_fit<Cfg, Mma>();
}

// ... and whether those kernels take C with an activation too (sm90_store_tile_tma_act's kActs), or C alone. NOTE:
// the cooperative ones with an MN-major B spilled 4 bytes (a tile-invariant index, one LDL per tile) with a second
// unrolled copy of the C epilogue, whichever activation it was; one copy, any activation, did not (bf16, ptxas -v).
template <class Cfg, bool kBMn>
constexpr bool sm90_c_acts() {
  return Cfg::kPingpong || !kBMn;
}

}  // namespace cutorch_gemm
