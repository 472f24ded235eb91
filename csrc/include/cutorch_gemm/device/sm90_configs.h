#pragma once
// Named Hopper configurations (TMA + wgmma, warp-specialized, persistent) and the family
// choice shared by the binding and `explain`. Torch- and CUDA-free.

#include <cstddef>
#include <string>
#include <type_traits>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/device/sm90_cluster_streamk.h"  // (the cluster and stream-K rules)
#include "cutorch_gemm/scheduler/problem_visitor.h"

namespace cutorch_gemm {

// The registers a CTA of `threads` threads holds for its whole life: __launch_bounds__(threads, 1) lets ptxas give each
// thread 65536 / threads, rounded down to a multiple of 8 (168 at 384 threads, 128 at 512). setmaxnreg moves
// registers between the warpgroups only within this pool: a setmaxnreg.inc that the pool cannot serve blocks forever
// (a 32 / 240 split at 384 threads hung the GPU tests: 32 x 128 + 240 x 256 = 65536 > 168 x 384 = 64512).
constexpr int sm90_register_pool(int threads) { return 65536 / threads / 8 * 8 * threads; }

// 128x256 output tile per CTA, K in 64-element (128-byte) slices, 4-stage TMA ring; one
// producer warpgroup and two cooperative consumer warpgroups, each owning 64x256 of the tile.
struct Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x256x64_Coop_S4";
  static constexpr bool kPingpong = false;
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 256;
  static constexpr int kBlockK = 64;
  static constexpr int kStages = 4;
  static constexpr int kEpiBuffers = 2;  // TMA-store staging: 64 x 128-byte slices per consumer
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  // Warps issuing k-blocks in turn (collective/sm90_producer.cuh: ~0.2 us per k-block per issuer).
  static constexpr int kProducerWarps = 2;
  // D from registers only (the fit-width tiles, whose 64-column TMA boxes would cross into the next tile).
  static constexpr bool kDirectStore = false;
  // An MN-major B read in whole 64-column boxes, past the tile's width (Sm90MnB, below).
  static constexpr bool kPadB = false;
  static_assert(kBlockM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= sm90_register_pool(kThreads),
                "setmaxnreg: the warpgroups' registers must fit the CTA's launch allocation (else .inc waits forever)");
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
  static constexpr int kEpiBuffers = 1;  // (a second would not fit next to 5 stages)
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static constexpr int kProducerWarps = 2;
  static constexpr bool kDirectStore = false;
  static constexpr bool kPadB = false;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= sm90_register_pool(kThreads),
                "setmaxnreg: the warpgroups' registers must fit the CTA's launch allocation (else .inc waits forever)");
};

// Narrow ping-pong for fp16 / bf16: 64x128 tiles (m64n128k16, 64 accumulator registers), twice
// as many tiles as 64x256 on a small problem, 8 stages of 24 KB. For problems whose 64x256
// tiles leave SMs idle (cuBLAS picks 64- and 128-wide tiles there too).
struct Sm90_64x128x64_Pingpong_S8 : Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x128x64_Pingpong_S8";
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 8;  // (kEpiBuffers 1: a 64 x 128 16-bit tile is two 128-byte slices)
};

// Narrowest 16-bit ping-pong: 64x64 tiles (m64n64k16, 32 accumulator registers), 12 stages of
// 16 KB. For mid-size problems whose 64x128 tiles leave most SMs idle (512x1024x4096: 64 tiles of
// 64x128 on 132 SMs; cuBLAS runs such shapes on 64- and 128-wide tiles with split-K).
struct Sm90_64x64x64_Pingpong_S12 : Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x64x64_Pingpong_S12";
  static constexpr int kBlockN = 64;
  static constexpr int kStages = 12;
  // ~0.07 us of math per k-block: four issuers (H200 512x1024x4096: 1 19.6 us, 2 13.6, 4 12.2).
  static constexpr int kProducerWarps = 4;
};

// The same two schedules for 8-bit operands (scaled_mm): a K slice is still one 128-byte row,
// now 128 elements, so tiles, stages and shared memory are those of the 16-bit configs.
struct Sm90_128x256x128_Coop_S4 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x256x128_Coop_S4";
  static constexpr int kBlockK = 128;
};
struct Sm90_64x256x128_Pingpong_S5 : Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x256x128_Pingpong_S5";
  static constexpr int kBlockK = 128;
};

// 8-bit cooperative with 192-column tiles: a consumer's 64 x 192 accumulator (96 registers) and
// two 64 x 96 partial tiles (48 each) for the promotion, so a k-block's two groups are issued
// back to back and the first half's adds run while the second half's wgmma do. 40 KB stages:
// five fit beside one 8 KB epilogue buffer per consumer.
struct Sm90_128x192x128_Coop_S5 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x192x128_Coop_S5";
  static constexpr int kBlockN = 192;
  static constexpr int kBlockK = 128;
  static constexpr int kStages = 5;
  static constexpr int kEpiBuffers = 1;
};

// 8-bit ping-pong with 64x64 tiles and 12 stages of 16 KB (scaled_mm, small M): a problem whose
// 64x256 tiles would leave most SMs idle is a stream of the weight from DRAM; four times as many
// tiles put four times as many SMs on it, each with 192 KB in flight. (cuBLAS picks 64x64 and
// 48x64 tiles with 13-15 stages there.) A consumer's 64 x 64 accumulator is 32 registers.
struct Sm90_64x64x128_Pingpong_S12 : Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x64x128_Pingpong_S12";
  static constexpr int kBlockN = 64;
  static constexpr int kBlockK = 128;
  static constexpr int kStages = 12;
  static constexpr int kProducerWarps = 4;  // (as Sm90_64x64x64_Pingpong_S12: the same math per k-block)
};

// ... and for tf32 (32 fp32 elements per 128-byte K row).
struct Sm90_128x256x32_Coop_S4 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x256x32_Coop_S4";
  static constexpr int kBlockK = 32;
};
struct Sm90_64x256x32_Pingpong_S5 : Sm90_64x256x64_Pingpong_S5 {
  static constexpr const char* kName = "Sm90_64x256x32_Pingpong_S5";
  static constexpr int kBlockK = 32;
};

// Fit-width cooperative tiles for fp16 / bf16: 128 x N with N = 80 ... 224 (steps of 16), chosen so that
// a problem's tiles fill the SMs' rounds (choose_sm90_fit); cuBLAS does the same (nvjet 144x128 at 1536^3:
// 11 x 12 = 132 tiles on 132 SMs). Both operands K-major, D = alpha * acc (+ bias) from registers (the
// direct epilogue), no stream-K, no split-K; every width but 128 runs its deferring twin (Sm90Deferring, below)
// where every tile defers its store (launch_sm90_fit). Stages: as many as fit beside the two epilogue slots in
// 227 KB.
#define CG_SM90_FIT_CONFIG(N, S)                                            \
  struct Sm90_128x##N##x64_Coop_S##S : Sm90_128x256x64_Coop_S4 {            \
    static constexpr const char* kName = "Sm90_128x" #N "x64_Coop_S" #S;    \
    static constexpr int kBlockN = N;                                       \
    static constexpr int kStages = S;                                       \
    static constexpr int kEpiBuffers = 1;                                   \
    static constexpr bool kDirectStore = true;                              \
  };
CG_SM90_FIT_CONFIG(80, 7)
CG_SM90_FIT_CONFIG(96, 7)
CG_SM90_FIT_CONFIG(112, 6)
CG_SM90_FIT_CONFIG(128, 6)
CG_SM90_FIT_CONFIG(144, 6)
CG_SM90_FIT_CONFIG(160, 5)
CG_SM90_FIT_CONFIG(176, 5)
CG_SM90_FIT_CONFIG(208, 4)
CG_SM90_FIT_CONFIG(224, 4)
#undef CG_SM90_FIT_CONFIG
// A fit width's deferring twin (the widths that are not multiples of 64): the same tile and stages, D rounded at once
// and stored one 64-column slice per k-block of the next tile, the last slice overlapping the one before
// (sm90_slice_first_col); the compact kernel only. launch_sm90_fit runs it where every tile defers its store and
// the direct-store tile elsewhere (an fp32 D, D rows that TMA cannot store).
template <class Fit>
struct Sm90Deferring : Fit {
  static constexpr bool kDirectStore = false;
};

// A fit width that is not a multiple of 64 with an MN-major B (training's dX = dY W and dW = dY^T X forms). An
// N-contiguous B row reaches wgmma's MN-major descriptor in 64-column blocks with the 128-byte swizzle, so such a
// width loads its last box whole: 144 loads 192 columns, the last 48 the next tile's (or zeros past N), which no
// wgmma reads. Fewer stages fit beside the epilogue slots where the stage grew (the storage's static_assert in
// launch_sm90 checks the 227 KB): 80 - 112 six, 144 - 176 five, 208, 224 four. Tried, not kept: 32-column boxes
// with the 64-byte swizzle (144 loads 160, 160 no more than its width), slower at every width (H200, 5 interleaved
// rounds, ratio to torch.mm, b MN-major, 1536x1536x4096 forced, 64- / 32-column boxes: 160 0.794 / 0.778, 176 0.878 /
// 0.687, 208 0.772 / 0.709; 144 0.706 / 0.682, where the K-major forward's 144 ran 0.945-0.963: choose_sm90_fit's
// mn_b rule).
constexpr int sm90_mn_b_stages(int block_n, int stages) {
  const int stage_kb = 16 + (block_n + 63) / 64 * 8;  // A: 128 x 64, B: 64-column boxes of 64 K rows (16-bit)
  return stages < 206 / stage_kb ? stages : 206 / stage_kb;
}
template <class Fit>
struct Sm90MnB : Fit {
  static_assert(Fit::kBlockN % 64 != 0, "widths of whole 64-column blocks need no padding");
  static constexpr bool kPadB = true;
  static constexpr int kStages = sm90_mn_b_stages(Fit::kBlockN, Fit::kStages);
};

// The 192-wide one is three 64-column TMA boxes: it takes the 128x256 tile's deferred store (the tile's D
// rounded at once, one slice stored per k-block of the next tile, by TMA) instead of the direct epilogue,
// and so also 2x1 clusters (operand rows that are not 128-byte multiples: choose_sm90_fit's pair rule).
// No stream-K (its workspace is the 128x256 tiles'). One epilogue buffer per consumer beside 5 stages.
struct Sm90_128x192x64_Coop_S5 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x192x64_Coop_S5";
  static constexpr int kBlockN = 192;
  static constexpr int kStages = 5;
  static constexpr int kEpiBuffers = 1;
};

// The 240-wide tile: where 128x256 tiles leave the last round partly empty and 240-wide ones fill the same number
// of rounds better, as 2x1 pairs on operand rows that are not 128-byte multiples (choose_sm90_pairs;
// 3000x5000x1000: 12 x 20 = 240 pairs of 256 and 12 x 21 = 252 of 240 on 66 clusters, both four rounds, 7% less
// work per round) and on aligned rows (choose_sm90_wide: unclustered unless choose_sm90_cluster's mid-K rule pairs
// them). 240 is not a multiple of 64: the tile's fourth 64-column slice starts at column 176 and stores columns
// 176-191 again with the same values (sm90_slice_first_col), so it runs only where every tile defers its store
// (the compact kernel; launch_sm90 refuses the rest). Each CTA of a pair loads 120 B rows (15 swizzle atoms).
// 4 stages of 46 KB beside the two 8 KB slots per consumer.
struct Sm90_128x240x64_Coop_S4 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x240x64_Coop_S4";
  static constexpr int kBlockN = 240;
};

// The 320-wide tile (choose_sm90_big; forced: CUTORCH_GEMM_SM90_CONFIG=coop320). cuBLAS's mid-size tile (nvjet
// 320x128, 3 stages, 1x2 clusters at 2560x4096x4096 and 4096x3584x4096): 2560x4096 in 20 x 13 = 260 tiles, 1.97
// rounds of 132, where 128x256 tiles take 2.42. A consumer's 64 x 320 fragment is two m64n160k16 per k16 step
// (Sm90Mma16's 160-register form, B's second half 160 rows on), 160 accumulator registers; B arrives in two boxes
// of 160 rows (a TMA box is at most 256 rows). 3 stages of 56 KB. The fit tiles' kernel (kDirectStore): D by TMA
// through two 8 KB buffers per consumer where the launch can (no C; the kernel's kFit branch), else from registers (its
// column pairs follow the fragment, whatever its width). Both operands K-major, no stream-K or split-K.
struct Sm90_128x320x64_Coop_S3 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_128x320x64_Coop_S3";
  static constexpr int kBlockN = 320;
  static constexpr int kStages = 3;
  static constexpr int kEpiBuffers = 2;
  static constexpr bool kDirectStore = true;
};

// The 192 x 192 tile (choose_sm90_big, in 2x1 pairs; forced: CUTORCH_GEMM_SM90_CONFIG=coop192x192). cuBLAS's tile at
// 3072^3 (nvjet 192x192, 4 stages, 2x1 clusters): 16 x 16 = 256 tiles, 1.94 rounds of 132, at 96 FLOP per loaded byte
// per k step against 77 for 128x192. Three consumer warpgroups of 64 rows each (m64n192k16, 96 accumulator registers),
// 512 threads: the producer keeps 32 registers, each consumer 160, exactly the CTA's 64 K (ptxas: no spills; at 40 / 152
// the SiLU copy spilled 4 bytes, at 144 the consumers spilled 344). The sixty-first session saw one GPU test run stall
// at 32 / 160 (2176x8192x4096, pairs); the sixty-second's could not repeat it in part a of the tests, the forced
// 192x192 tests, 24 processes of 20 launches each under a time limit or compute-sanitizer's three tools
// (benchmarks/RESULTS.md). 4 stages of 48 KB beside three epilogue slots of one buffer. The fit tiles' kernel: D by
// TMA where the launch can (no C), else from registers.
struct Sm90_192x192x64_Coop_S4 : Sm90_128x256x64_Coop_S4 {
  static constexpr const char* kName = "Sm90_192x192x64_Coop_S4";
  static constexpr int kBlockM = 192;
  static constexpr int kBlockN = 192;
  static constexpr int kStages = 4;
  static constexpr int kEpiBuffers = 1;
  static constexpr int kConsumers = 3;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 32;
  static constexpr int kConsumerRegs = 160;
  static constexpr bool kDirectStore = true;
  static_assert(kBlockM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= sm90_register_pool(kThreads),
                "setmaxnreg: the warpgroups' registers must fit the CTA's launch allocation (else .inc waits forever)");
};

// A closed list of configs, asked by type (the kernels' compile-time choices) or by name (the binding, for explain):
// one list serves both.
template <class... Cfgs>
struct Sm90ConfigSet {
  template <class Cfg>
  static constexpr bool has() { return (std::is_same_v<Cfg, Cfgs> || ...); }
  static bool has_name(const std::string& name) { return ((name == Cfgs::kName) || ...); }
};

// The configs with a bare compact kernel (the kernel's kBare; kernel/sm90_kernel_storage.cuh's sm90_has_bare adds its
// type conditions): the one-tile-per-CTA launches of the dense suite's small shapes (2048^3: 128x256; 1024^3: 64x128;
// the 512-row mid shapes: 64x64). Each is one more instantiation per 16-bit type in the CI build.
using Sm90BareConfigs = Sm90ConfigSet<Sm90_128x256x64_Coop_S4, Sm90_64x128x64_Pingpong_S8, Sm90_64x64x64_Pingpong_S12>;

enum class Sm90ConfigId : int {
  kCoop128x256 = 0,
  kPingpong64x256 = 1,
  kPingpong64x128 = 2,
  kCoop128x192 = 3,   // 8-bit only, forced
  kPingpong64x64 = 4,  // 8-bit (promoted, small M) and fp16 / bf16 (mid-size problems)
  // fp16 / bf16 fit-width cooperative tiles (choose_sm90_fit): widths 80, 96, ..., 224
  kCoopFit80 = 5,
  kCoopFit96 = 6,
  kCoopFit112 = 7,
  kCoopFit128 = 8,
  kCoopFit144 = 9,
  kCoopFit160 = 10,
  kCoopFit176 = 11,
  kCoopFit192 = 12,
  kCoopFit208 = 13,
  kCoopFit224 = 14,
  kCoop240 = 15,  // fp16 / bf16, the pair rule only, deferring launches only (Sm90_128x240x64_Coop_S4)
  kCoop320 = 16,  // fp16 / bf16, choose_sm90_big or "coop320", both operands K-major (Sm90_128x320x64_Coop_S3)
  kCoop192x192 = 17  // fp16 / bf16, choose_sm90_big or "coop192x192", both operands K-major (Sm90_192x192x64_Coop_S4)
};
constexpr int kSm90FitWidths = 10;  // 80 + 16 i, i < kSm90FitWidths

// The tile width of a fit-width config; 0 for the others.
inline int sm90_fit_width(Sm90ConfigId id) {
  const int i = int(id) - int(Sm90ConfigId::kCoopFit80);
  return i >= 0 && i < kSm90FitWidths ? 80 + 16 * i : 0;
}

// The config's name for operands of elem_bytes bytes (2: fp16/bf16, 1: fp8, 4: tf32).
inline const char* sm90_config_name(Sm90ConfigId id, int elem_bytes = 2) {
  switch (id) {  // (fp16 / bf16 only)
    case Sm90ConfigId::kCoopFit80:  return Sm90_128x80x64_Coop_S7::kName;
    case Sm90ConfigId::kCoopFit96:  return Sm90_128x96x64_Coop_S7::kName;
    case Sm90ConfigId::kCoopFit112: return Sm90_128x112x64_Coop_S6::kName;
    case Sm90ConfigId::kCoopFit128: return Sm90_128x128x64_Coop_S6::kName;
    case Sm90ConfigId::kCoopFit144: return Sm90_128x144x64_Coop_S6::kName;
    case Sm90ConfigId::kCoopFit160: return Sm90_128x160x64_Coop_S5::kName;
    case Sm90ConfigId::kCoopFit176: return Sm90_128x176x64_Coop_S5::kName;
    case Sm90ConfigId::kCoopFit192: return Sm90_128x192x64_Coop_S5::kName;
    case Sm90ConfigId::kCoopFit208: return Sm90_128x208x64_Coop_S4::kName;
    case Sm90ConfigId::kCoopFit224: return Sm90_128x224x64_Coop_S4::kName;
    case Sm90ConfigId::kCoop240: return Sm90_128x240x64_Coop_S4::kName;
    case Sm90ConfigId::kCoop320: return Sm90_128x320x64_Coop_S3::kName;
    case Sm90ConfigId::kCoop192x192: return Sm90_192x192x64_Coop_S4::kName;
    default: break;
  }
  const bool coop = id == Sm90ConfigId::kCoop128x256 || id == Sm90ConfigId::kCoop128x192;
  if (id == Sm90ConfigId::kPingpong64x128 && elem_bytes == 2) return Sm90_64x128x64_Pingpong_S8::kName;
  if (id == Sm90ConfigId::kCoop128x192 && elem_bytes == 1) return Sm90_128x192x128_Coop_S5::kName;
  if (id == Sm90ConfigId::kPingpong64x64 && elem_bytes == 1) return Sm90_64x64x128_Pingpong_S12::kName;
  if (id == Sm90ConfigId::kPingpong64x64 && elem_bytes == 2) return Sm90_64x64x64_Pingpong_S12::kName;
  if (elem_bytes == 1) return coop ? Sm90_128x256x128_Coop_S4::kName : Sm90_64x256x128_Pingpong_S5::kName;
  if (elem_bytes == 4) return coop ? Sm90_128x256x32_Coop_S4::kName : Sm90_64x256x32_Pingpong_S5::kName;
  return coop ? Sm90_128x256x64_Coop_S4::kName : Sm90_64x256x64_Pingpong_S5::kName;
}

// The mid-size rules for one dense fp16 / bf16 problem of at least 256 rows whose 64x128 tiles
// (`slim` of them) leave SMs idle (choose_sm90_config applies them; explain names the one that acted):
// - kCoopDeepK: K >= 8192 and the 64x128 tiles fill more than a quarter and at most two thirds of
//   the SMs (for K < 12288 only past half: kHalfRound64 takes the rest): cooperative 128x256 tiles,
//   which then take split-K (choose_sm90_split). Each CTA streams a quarter of the 64x128 tiles'
//   operand bytes per FLOP, and all SMs run. H200, 3 interleaved rounds (before the 64x64 config's
//   four producer warps), ratio to cuBLAS, 64x128 / cooperative + split-K: 256x1536x8960 0.656 /
//   0.873, 384x1024x8192 0.624 / 0.806, 384x1536x12288 0.681 / 0.848, 512x1024x8192 0.639 / 0.755,
//   256x2048x8192 0.680 / 0.797, 256x2816x8192 0.815 / 0.856; past two thirds it lost
//   (512x1536x8192, 96 tiles: 0.804 / 0.790; 1024x1024x8192, 128: 0.883 / 0.786), and at K = 4096
//   too (512x1024x4096 0.656 / 0.553).
// - kSmall64: K <= 1024 and the 64x128 tiles within a quarter of the SMs: 64x64 tiles, twice as
//   many CTAs. H200, same method, 64x128 / 64x64: 512^3 0.531 / 0.789, 512x512x1024 0.603 / 0.750,
//   256x1024x1024 0.604 / 0.789, 256x512x512 0.515 / 0.544, 256^3 0.866 / 0.922; at K = 4096 the
//   64x128 tiles' split-K kept the lead (256x1024x4096 0.730 / 0.642).
// - kHalfRound64: 2048 <= K < 12288 and the 64x128 tiles fill more than a quarter (no split-K then)
//   and at most half of the SMs: 64x64 tiles, one round of at most num_sms CTAs. Since the ping-pong
//   kernels' lean mainloop (collective/sm90_lean_mainloop.cuh) a 64x64 CTA keeps up. H100, 7
//   interleaved rounds, ratio to cuBLAS, 64x128 / 64x64: 512x1024x4096 0.708 / 0.730, 512x896x4864
//   0.730 / 0.767, 512x1024x2048 0.728 / 0.769, 384x1024x4096 0.698 / 0.756, 256x2048x4096 0.774 /
//   0.826, 320x1536x4096 0.776 / 0.820, 512x768x2048 0.763 / 0.777, 448x1024x6144 0.756 / 0.813,
//   512x1024x7168 0.722 / 0.778 (the same kernel against itself moved up to 5% in that run). K < 2048
//   was not measured (the earlier 384x768x512 preferred 64x128: H200 0.883 / 0.846). K >= 8192 took
//   the cooperative tiles until the 64x64 config got four producer warps (thirtieth session). H200,
//   5 interleaved rounds, ratio to cuBLAS, cooperative + split-K / 64x64: 512x1024x8192 0.749 /
//   0.902, 384x1024x8192 0.828 / 0.914, 256x2048x8192 0.783 / 0.896, 256x1536x8960 0.891 / 0.924;
//   320x1536x8192 0.753 / 0.922; past half the SMs the 64x64 tiles take two rounds (384x1536x12288
//   0.841 / 0.555, 256x2816x8192 0.854 / 0.681), and deeper K favours the split cooperative tiles
//   (448x1024x16384 0.942 / 0.904, 512x768x14336 0.789 / 0.748): the rule stops at 12288, between
//   the deepest win (8960) and the first loss (14336).
enum class Sm90MidRule { kNone = 0, kCoopDeepK = 1, kSmall64 = 2, kHalfRound64 = 3 };
inline Sm90MidRule sm90_mid_size_rule(int m, int n, int k, int num_sms) {
  if (m < 256 || num_sms <= 0) return Sm90MidRule::kNone;
  const long long slim = (long long)((m + 63) / 64) * ((n + 127) / 128);
  if (k <= 1024 && 4 * slim <= num_sms) return Sm90MidRule::kSmall64;
  if (k >= 2048 && k < 12288 && 4 * slim > num_sms && 2 * slim <= num_sms) return Sm90MidRule::kHalfRound64;
  if (k >= 8192 && 4 * slim > num_sms && 3 * slim <= 2LL * num_sms) return Sm90MidRule::kCoopDeepK;
  return Sm90MidRule::kNone;
}

// The sm90 heuristic (pure). `forced` is CUTORCH_GEMM_SM90_CONFIG ("", "coop", "pingpong"):
// the override the tests and benchmarks use to run every config. m, n: one problem's extents
// (grouped launches: the average group); problems: batch entries or groups.
// Cooperative 128x256 has less B traffic per FLOP; ping-pong 64x256 wins for M <= 128 and for
// problems whose 128x256 tiles fill under half the SMs (its tiles are half as tall, and
// epilogues overlap wgmma). Measured on an H100 (ratio to cuBLAS, eager / CUDA graph; coop vs
// ping-pong): 1024^3 (32 coop tiles) 0.51/0.27 vs 0.91/0.53; 1536^3 (72) 0.68/0.73 vs
// 0.63/0.65; 2048^3 (128) 0.92/0.93 vs 0.83/0.85. (The first rule, from an H200, switched at
// a full wave of coop tiles.)
// `narrow`: the launch can take the 64x128 config (fp16 / bf16 dense, batched or grouped-M GEMM);
// others never get it ("pingpong128" forces it where allowed, else ping-pong).
// `coop_streamk`: the cooperative config would cut this launch's last round with stream-K, or spread
// its one partial round over every SM (sm90_coop_streamk, below); the wave rules then keep it.
inline Sm90ConfigId choose_sm90_config(int m, int n, int k, int problems, int num_sms, const std::string& forced,
                                       bool narrow = false, bool coop_streamk = false) {
  if (forced == "coop" || forced == "coop192") return Sm90ConfigId::kCoop128x256;  // (192: 8-bit, see below)
  if (forced == "pingpong") return Sm90ConfigId::kPingpong64x256;
  if (forced == "pingpong128") return narrow ? Sm90ConfigId::kPingpong64x128 : Sm90ConfigId::kPingpong64x256;
  // (8-bit: choose_sm90_f8_config below turns it into its own 64x64 config)
  if (forced == "pingpong64") return narrow ? Sm90ConfigId::kPingpong64x64 : Sm90ConfigId::kPingpong64x256;
  const long long p = problems > 0 ? problems : 1;
  const long long coop_tiles = (long long)((m + 127) / 128) * ((n + 255) / 256) * p;
  const long long wide = (long long)((m + 63) / 64) * ((n + 255) / 256) * p;  // ping-pong 64x256 tiles
  if (m <= 128 || 2 * coop_tiles < num_sms) {
    // 64x128 when the 64x256 tiles fill under half the SMs; for M <= 32 not where that costs a
    // split-K the wide tiles would get (choose_sm90_split's quarter rule). Measured on an H100
    // (CUDA graphs, ratio to cuBLAS, 64x256 vs 64x128): 128x8192x8192 0.85 vs 0.96; 1024^3 0.61
    // vs 0.69; 64x4096x14336 (8 vs 4 splits) 0.88 vs 0.92; 32x14336x4096 0.96 vs 0.97;
    // 1x8192x8192 (4 splits vs none) 0.89 vs 0.82, hence the exception; 2048^3 (coop's) 0.88 vs
    // 0.58. Above 32 rows the split loses (eager, 3 interleaved rounds, 64x256 with 4 splits vs
    // 64x128 without): 48x8192x8192 0.87 vs 0.95, 64x8192x8192 0.85 vs 0.95, 96x4096x4096 0.70
    // vs 0.76, 128x4096x4096 0.69 vs 0.78.
    // (Several problems, batched or grouped, never split: there the exception does not apply.)
    const long long slim = (long long)((m + 63) / 64) * ((n + 127) / 128) * p;
    if (narrow && p == 1) {
      const Sm90MidRule rule = sm90_mid_size_rule(m, n, k, num_sms);
      if (rule == Sm90MidRule::kCoopDeepK) return Sm90ConfigId::kCoop128x256;
      if (rule != Sm90MidRule::kNone) return Sm90ConfigId::kPingpong64x64;
    }
    if (narrow && 2 * wide < num_sms && (p > 1 || m > 32 || 4 * slim <= num_sms || 4 * wide > num_sms)) {
      return Sm90ConfigId::kPingpong64x128;
    }
    return Sm90ConfigId::kPingpong64x256;
  }
  // Wave quantization (one problem): the persistent grid runs ceil(tiles / SMs) rounds, so a
  // last round that is mostly empty idles the GPU. Ping-pong's half-height tiles quantize finer
  // and run ~10% slower per tile: it wins where its rounds fill better by more than that.
  // Measured on an H100 (CUDA graphs, ratio to cuBLAS, coop vs ping-pong): 3072^3 (288 coop tiles:
  // rounds 73% full) 0.73 vs 0.80; 1536x6144x4096 0.72 vs 0.77; 6144x1536x4096 0.72 vs 0.80;
  // 5120^3 0.87 vs 0.86; 2560^3 0.82 vs 0.76; 4608^3 0.98 vs 0.89; 2816^3 0.96 vs 0.88.
  if (p == 1 && num_sms > 0) {
    auto fill = [num_sms](long long tiles) {
      const long long rounds = (tiles + num_sms - 1) / num_sms;
      return double(tiles) / double(rounds * num_sms);
    };
    // Not where the cooperative launch takes stream-K. H200, interleaved with torch.mm, ratio, the
    // ping-pong rule / cooperative with the sparse-round stream-K: 2432x7168x4096 0.958 / 1.026,
    // 2176x8192x4096 0.958 / 0.997, 3072x4352x4096 0.906 / 0.973, 1536x6144x4096 0.821 / 0.881,
    // 6144x1536x4096 0.884 / 0.921, 4352x4096x8192 0.981 / 1.033, 2944x6144x4096 0.958 / 0.982; tf32
    // (ratio to cuBLAS tf32) 3072x4352x4096 0.927 / 1.023, 2432x7168x4096 0.952 / 1.042, 3072^3 (96 K
    // slices of 32) 0.952 / 1.016, 2176x8192x4096 1.044 / 1.096, 1536x6144x4096 0.968 / 1.025;
    // without stream-K the cooperative config still loses there (3072^3 0.838 / 0.752, 2048x5120x4096
    // 0.913 / 0.827, 1280x8192x4096 0.885 / 0.827).
    if (0.9 * fill(wide) > fill(coop_tiles) && !coop_streamk) return Sm90ConfigId::kPingpong64x256;
    // One partial round of cooperative tiles (half to three quarters of the SMs: neither stream-K nor
    // the 64x256 tiles fill it better): 64x128 tiles, whose two to three rounds do. H200, 5 interleaved
    // rounds, ratio to cuBLAS, cooperative / 64x128 (thirtieth session, two producer warps):
    // 768x3072x2048 (72 tiles) 0.689 / 0.751, 1536^3 0.675 / 0.729; a full round keeps the
    // cooperative tiles (1024x4096x1024, 128 tiles: 0.947 / 0.874). Checked with the rule in place:
    // 1280x2048x2048 0.744 / 0.790, 1152x2304x1152 0.808 / 0.846, 1024x2304x2304 0.684 / 0.725,
    // 2048x1280x4096 0.722 / 0.746, 1536x1536x4096 0.651 / 0.681, 1024x2560x4096 0.752 / 0.770,
    // 896x3584x4096 0.995 / 0.994, 768x3072x8192 0.642 / 0.630.
    const long long slim = (long long)((m + 63) / 64) * ((n + 127) / 128);
    if (narrow && coop_tiles <= num_sms && 0.9 * fill(slim) > fill(coop_tiles) && !coop_streamk) {
      return Sm90ConfigId::kPingpong64x128;
    }
  }
  return Sm90ConfigId::kCoop128x256;
}

// The fit-width and pair rules (choose_sm90_fit, choose_sm90_pairs): device/sm90_fit_rules.h.

// 8-bit operands (scaled_mm, promoted accumulation): the cooperative 128x256 tile; 128x192
// (Sm90_128x192x128_Coop_S5: one drain per k-block instead of two, five stages) only when forced
// (CUTORCH_GEMM_SM90_CONFIG=coop192). Measured on an H100 (ratio of its time to 128x256's, two
// runs of nine interleaved rounds): 8192^3 0.954 / 1.021, 8192x14336x4096 1.026 / 0.989,
// 16384x8192x8192 1.002 / 0.983, 6144^3 1.054 / 0.991, 3072x5120x1024 0.992 / 0.997: no gain
// beyond the noise; 4096^3 (6 rounds of its tiles against 4) 1.118 / 1.129. (A first, shorter
// A/B had suggested 2-5% on the large shapes.)
// Small M (the heuristic's ping-pong) whose 64x256 tiles fill under half the SMs: 64x64 tiles
// (Sm90_64x64x128_Pingpong_S12; promoted accumulation only; CUTORCH_GEMM_SM90_CONFIG=pingpong64
// forces it, pingpong keeps 64x256). H100, ncu with caches flushed: 64x8192x8192 32 tiles of
// 64x256 39.4 us (53% of DRAM bandwidth), split-K x4 over 128 CTAs 34.5 + 7.2 us, cuBLAS
// (nvjet 64x64, 13 stages) 28.0 us (72%).
// m, n, num_sms: the problem and the GPU (0: the size rule is not applied).
inline Sm90ConfigId choose_sm90_f8_config(Sm90ConfigId config, bool fast_accum, const std::string& forced, int m = 0,
                                          int n = 0, int num_sms = 0) {
  if (fast_accum) return config;  // (no chained 192- or 64-column kernel)
  if (forced == "pingpong64") return Sm90ConfigId::kPingpong64x64;
  if (config == Sm90ConfigId::kPingpong64x256 && forced.empty() && num_sms > 0) {
    const long long wide = (long long)((m + 63) / 64) * ((n + 255) / 256);
    if (2 * wide < num_sms) return Sm90ConfigId::kPingpong64x64;
  }
  if (config != Sm90ConfigId::kCoop128x256) return config;
  return forced == "coop192" ? Sm90ConfigId::kCoop128x192 : config;
}

// Split-K for one dense problem whose tiles leave SMs idle (small M: decode shapes): K is cut
// into `splits` ranges of `k_chunk` (a multiple of the K slice), every (tile, range) is one work
// item of the persistent grid, the fp32 partials are summed in split order by a second kernel
// that applies the epilogue (deterministic). None (splits 1) when the tiles fill a quarter of the
// GPU, when a range would be under 4 K slices, or when the partials would pass 64 MB.
// Measured on an H100 (bench small_m, vs the same kernel unsplit): 16x4096x4096 (16 tiles, 8
// splits) 0.65x -> 0.80x cuBLAS; 128x8192x8192 (64 tiles, 2 splits) 0.88x -> 0.80x: two splits
// do not pay for writing and re-reading the fp32 partials.
struct Sm90Split {
  int splits;
  int k_chunk;
};

// `fill` (CUTORCH_GEMM_SM90_SPLIT_FILL, experiments): split only when tiles * fill <= SMs.
// block_k: the K slice in elements (64: 16-bit operands; 128: 8-bit, scaled_mm).
// scaled_mm's 8-bit kernels take the same rule (sm90_scaled_mm_split): H100, 64x8192x8192 e4m3
// ran 32 ping-pong tiles on 132 SMs at 0.81x torch._scaled_mm unsplit.
// The tile (rows, columns) of the heuristic's configs (choose_sm90_config): 128x256 cooperative, 64x128 and 64x64
// ping-pong, else 64x256 ping-pong (for the rules that take one of those: split-K, the fit rule's base score).
struct Sm90Tile {
  int m, n;
};
inline Sm90Tile sm90_heuristic_tile(Sm90ConfigId config) {
  if (config == Sm90ConfigId::kCoop128x256) return {128, 256};
  if (config == Sm90ConfigId::kPingpong64x128) return {64, 128};
  if (config == Sm90ConfigId::kPingpong64x64) return {64, 64};
  return {64, 256};
}

inline Sm90Split choose_sm90_split(Sm90ConfigId config, int m, int n, int k, int num_sms, int fill = 4,
                                   int block_k = 64) {
  // (the fit-width tiles and the 240-wide pairs fill the SMs themselves)
  if (sm90_fit_width(config) > 0 || config == Sm90ConfigId::kCoop240 || config == Sm90ConfigId::kCoop320 ||
      config == Sm90ConfigId::kCoop192x192) {
    return {1, 0};
  }
  const Sm90Tile tile = sm90_heuristic_tile(config);  // (never the forced 128x192 one)
  const int block_m = tile.m, block_n = tile.n;
  const long long tiles = (long long)((m + block_m - 1) / block_m) * ((n + block_n - 1) / block_n);
  if (tiles <= 0 || fill < 1 || tiles * fill > num_sms) return {1, 0};
  int splits = int(num_sms / tiles);
  const int max_by_k = k / (4 * block_k);
  if (splits > max_by_k) splits = max_by_k;
  if (splits > 16) splits = 16;
  while (splits > 1 && (long long)splits * m * n * 4 > (64LL << 20)) --splits;
  if (splits < 2) return {1, 0};
  const int per = (k + splits - 1) / splits;
  const int chunk = (per + block_k - 1) / block_k * block_k;
  return {(k + chunk - 1) / chunk, chunk};
}

// Half tiles: in a grouped-M cooperative launch, the warpgroup whose 64 rows of a group's last
// tile lie past the group's end skips its wgmma (sm90_gemm_ws_kernel). Only where one group's B
// (k x n elements) fits L2 many times over: a CTA whose tile loses half its work runs ahead of
// the others in K, and where they all stream one large B from DRAM in step, that costs more than
// it saves. H100, interleaved with torch._grouped_mm, half tiles on / off (bench_grouped's
// shapes, skewed routing, two runs): Qwen3 down (B 3 MiB per group) 1.251 / 1.136 and 1.136 /
// 1.068, Qwen3 up (6 MiB) 1.215 / 1.180 and 1.213 / 1.156, OLMoE up (8 MiB) 1.219 / 1.179 and
// 1.199 / 1.166; DeepSeek-V3 up (56 MiB) 0.848 / 0.934 and 0.920 / 0.946, Mixtral up with
// empty experts (112 MiB) 1.064 / 1.216. `forced` is CUTORCH_GEMM_SM90_HALF_TILES ("on", "off").
inline bool choose_sm90_half_tiles(long long k, long long n, int elem_bytes, const std::string& forced) {
  if (forced == "on" || forced == "off") return forced == "on";
  return k * n * elem_bytes <= (16LL << 20);
}

// The K-split pair of the compact ping-pong kernels (collective/sm90_ksplit_pair.cuh: what and why): 64-wide tiles,
// where every CTA of the launch has one tile at most (items <= ctas), without clusters or grouped-K ranges, with at
// least kSm90KSplitMinKBlocks k-blocks and at most kStages / 2 producer warps (the producers' parity argument).
// `forced` is CUTORCH_GEMM_SM90_KSPLIT: "off", or "on" (from 2 k-blocks).
// Measured (H200, kernel time with the operands in L2, 64x64 tiles, pair / one warpgroup): 512x1024xK at K = 256 4.26 /
// 4.06 us, 512 4.77 / 4.77, 1024 5.70 / 5.95, 2048 7.55 / 8.32, 4096 11.14 / 13.12 (cuBLAS 10.11), 8192 18.40 / 22.40;
// so from 12 k-blocks. NOTE: not the 64x128 tiles: there the pair gained nothing in the loop and its hand-over cost
// 0.45 us (1024 x 1024 x 256 ... 2048: 4.29 -> 4.80 us, 6.59 -> 7.04 at 1024^3); the 64x64 tiles' loop runs at the
// warpgroup's own pace, not the loads'.
constexpr int kSm90KSplitMinKBlocks = 12;
inline bool sm90_ksplit_ok(long long items, int ctas, int cluster, bool grouped_k, int block_n, int k_blocks,
                           int producers, int stages, const std::string& forced) {
  if (forced == "off" || block_n != 64) return false;
  if (items > ctas || cluster != 1 || grouped_k || stages % 2 != 0 || 2 * producers > stages) return false;
  return k_blocks >= (forced == "on" ? 2 : kSm90KSplitMinKBlocks);
}

// Whether a launch streams B from DRAM: at most two tile rows (small M), and B not shared by
// several problems (dense, split-K's K ranges, batched with a stacked B, grouped-K's K ranges;
// grouped-M groups may span many tile rows, which the host does not know). Its TMA loads then carry
// the L2 evict-first policy (sm90::l2_policy_evict_first says why). With two tile rows the two CTAs
// of a tile column are neighbours in the raster order and load each B tile at about the same time.
// H200, after do_bench's L2 flush (a 256 MB memset), ratio to cuBLAS without / with the policy:
// 32x14336x4096 0.984 / 1.063, 48x8192x8192 0.968 / 1.038, 64x8192x8192 0.977 / 1.063,
// 128x8192x8192 (two rows) 0.996 / 1.057; after a flush that leaves L2 clean: no change (0.93, 0.91,
// 0.92, 0.93 either way).
inline bool sm90_b_streams(int tiles_m, GroupMode mode, int batch, bool b_3d, int k_chunk) {
  if (tiles_m < 1 || tiles_m > 2) return false;
  if (mode == GroupMode::kGroupedK) return true;
  return mode == GroupMode::kBatched && (batch <= 1 || b_3d || k_chunk > 0);
}

// The stride in bytes between the rows TMA reads of an operand (K-major: its M / N stride; MN-major:
// its K stride) is a multiple of 128.
inline bool sm90_rows_128b(long long k_stride, long long mn_stride, int elem_bytes) {
  const long long row = k_stride == 1 ? mn_stride : k_stride;
  return (row * elem_bytes) % 128 == 0;
}

// sm90_rows_128b for both operands of a launch (the 2x1 cluster rule's input; launch_sm90 and the
// binding's wave rule read it the same way).
inline bool sm90_operands_rows_128b(const ProblemShape& s, int elem_bytes) {
  return sm90_rows_128b(s.a_sk, s.a_sm, elem_bytes) && sm90_rows_128b(s.b_sk, s.b_sn, elem_bytes);
}

// Whether grouped_gemm's problems run faster as one pointer-array launch than as one launch each:
// when on average a problem's 128x256 tiles do not fill the SMs. Measured on an H100
// (benchmarks/bench_grouped.py --quick): 128 small problems (qwen3-30b-a3b experts) 2.7x faster
// as one launch; 8 Mixtral-sized ones (hundreds of tiles each) 8% slower.
inline bool sm90_ptr_array_pays(const int64_t* m, const int64_t* n, int count, int num_sms) {
  long long tiles = 0;
  for (int i = 0; i < count; ++i) tiles += ((m[i] + 127) / 128) * ((n[i] + 255) / 256);
  return tiles < (long long)count * num_sms;
}

// How the Hopper kernels can read one operand (TMA + wgmma): its reduction dimension
// contiguous (K-major) or its M / N dimension contiguous (MN-major, wgmma's transpose bit),
// with a 16-byte aligned base, row stride and (stacked operands) batch stride.
// Strides in elements, as the binding reports them (size-1 dimensions count as stride 1).
struct Sm90Operand {
  bool ok;
  bool mn_major;
};

inline Sm90Operand sm90_operand(long long k_stride, long long mn_stride, long long batch_stride, bool base_aligned,
                                int elem_bytes) {
  const bool k_major = k_stride == 1;
  if (!k_major && mn_stride != 1) return {false, false};
  const long long row = k_major ? mn_stride : k_stride;  // stride between the 128-byte box rows
  const bool ok = base_aligned && row > 0 && (row * elem_bytes) % 16 == 0 && batch_stride >= 0 &&
                  (batch_stride * elem_bytes) % 16 == 0;
  return {ok, !k_major};
}

}  // namespace cutorch_gemm
