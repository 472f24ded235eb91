#pragma once
// The Hopper skinny GEMM (kernel/sm90_skinny_kernel.cuh): its named configs, the rule that gives
// it a launch, the K split, and the host entry points (csrc/instantiations/sm90_skinny_*.cu).
// The rule is torch-free and CUDA-free (the binding and `explain` share it; CPU-tested).
//
// Why on Hopper: a small-M GEMM's time is W's bytes read from DRAM. The mma.sync skinny kernel
// (device/sm80_skinny.h) keeps bytes in flight with one load instruction per 16 bytes per lane;
// TMA keeps a whole ring of 8 KB boxes in flight from one thread, and wgmma takes W's 64 rows
// per instruction with the tokens on its N side (16 to 128).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/device/sm80_skinny.h"

namespace cutorch_gemm {

constexpr int kSm90SkinnyBlockK = 64;     // K per stage: one 128-byte swizzle row of 16-bit elements
constexpr int64_t kSm90SkinnyMaxM = 128;  // the widest config (CUTORCH_GEMM_SKINNY=sm90)
// The auto rule's token range (measured on an H100, benchmarks/RESULTS.md): up to 16 tokens the
// mma.sync kernel has less fixed latency (no TMA ramp, no cluster sums) and was 4-5% faster on
// W of 32 MB (it keeps M <= 16 unless one K split fills the SMs: sm90_skinny_refusal); above 64,
// x's boxes (read once per CTA from L2) outweigh W's and the tiles win.
constexpr int64_t kSm90SkinnyAutoMinM = 17;
constexpr int64_t kSm90SkinnyAutoMaxM = 64;
constexpr int kSm90SkinnyMaxSplits = 8;   // a portable cluster

// One consumer warpgroup per CTA, 64 W rows (wgmma's M). NOTE (tried on an H100, not kept): two
// warpgroups sharing each x box over 128 W rows halved the CTAs and lost (64x4096x14336 64.9 us
// vs 59.9; 96x4096x4096 with 128 tokens 33.0 vs 29.7).
constexpr int sm90_skinny_consumers(int) { return 1; }
constexpr int sm90_skinny_rows(int tokens) { return 64 * sm90_skinny_consumers(tokens); }  // W rows per CTA
constexpr int sm90_skinny_threads(int tokens) { return 128 * sm90_skinny_consumers(tokens) + 32; }  // + a producer warp
// Floats per token row of the partial tile: the rows plus 4 (conflict-free fragment stores).
constexpr int sm90_skinny_red_ld(int tokens) { return sm90_skinny_rows(tokens) + 4; }
// Ring depth per token count: ~100 KB of stages, so that two CTAs fit on an SM and clusters of 4 and 8 pack into the
// GPCs (choose_sm90_skinny_splits). `deep` (sm90_skinny_deep_ring: the dense 64-token launch with at most 2 K splits
// and long K per CTA): 12 stages, ~200 KB, one CTA per SM. At 64 tokens half of each stage is x, so the short ring
// keeps only ~40 KB of W in flight per SM against ~80 KB at 16 tokens (H200, sixty-third and sixty-fourth sessions,
// skinny_ab.py, us, short -> deep: 64x4096x14336 44.4 -> 42.8, cuBLAS 45.5; 56x4096x14336 43.8 -> 41.8; 33x4096x8192
// 33.3 -> 31.4; benchmarks/experiments/skinny_session64_gpu.sh). Deeper rings at 16 and 32 tokens lost (1x8192x8192
// 42.2 -> 44.6 at 20 stages, 8x14336x4096 39.0 -> 42.2; 32x4096x4096 17.6 -> 18.2 at 12 stages, 24x4096x4096 17.6 ->
// 18.6), and at 4 splits the deep ring's one CTA per SM leaves clusters of 4 a second wave (64x2048x8192 19.7 -> 29.2).
constexpr int sm90_skinny_stages(int tokens, bool deep = false) {
  return deep && tokens == 64 ? 12 : tokens <= 16 ? 10 : tokens <= 32 ? 8 : tokens <= 64 ? 6 : 4;
}
// Whether a dense launch takes the deep ring (launch_sm90_skinny then also checks that every CTA, every cluster of 2,
// is resident at once): 64 tokens, at most 2 K splits, and more than 32 K blocks per CTA. Below that the deep ring
// gained nothing (H200, sixty-fourth session, skinny_ab.py, us, deep / short, 2 splits: 32 K blocks per CTA
// 48x4096x4096 19.8 / 19.1, 64x4096x4096 20.2 / 20.2; 16: 40x4096x2048 14.3 / 13.9; the A/B's spread: one kernel
// under both columns read 19.4 / 18.9), and the short ring is the one with the longer record; from 64 it won
// (40x4096x8192 28.6 / 28.7, 33x4096x8192 31.4 / 33.3; 112: 64x4096x14336 42.8 / 44.4, 56x4096x14336 41.8 / 43.8).
// `knob` (CUTORCH_GEMM_SKINNY_RING, A/B runs and the sanitizer sweep): "short" never, "deep" whatever K.
inline bool sm90_skinny_deep_ring(int tokens, int64_t k, int splits, const std::string& knob) {
  if (tokens != 64 || splits < 1 || splits > 2 || knob == "short") return false;
  if (knob == "deep") return true;
  const int64_t k_blocks = (k + kSm90SkinnyBlockK - 1) / kSm90SkinnyBlockK;
  return (k_blocks + splits - 1) / splits > 32;
}
// Dynamic shared memory of a launch: the stages, their barriers, and 1 KB to align the ring.
constexpr int sm90_skinny_smem_bytes(int tokens, bool deep = false) {
  return sm90_skinny_stages(tokens, deep) * ((sm90_skinny_rows(tokens) + tokens) * kSm90SkinnyBlockK * 2 + 16) + 1024 +
         1024;
}

// Named configs: Sm90_Skinny_64xT<tokens>, tokens (rows of x) = M rounded up to 16, 32, 64, 128.
inline int sm90_skinny_tokens(int64_t m) { return m <= 16 ? 16 : m <= 32 ? 32 : m <= 64 ? 64 : 128; }
inline std::string sm90_skinny_config_name(int tokens) {
  return "Sm90_Skinny_" + std::to_string(sm90_skinny_rows(tokens)) + "xT" + std::to_string(tokens);
}

// K split (the cluster's CTAs): the most splits, up to 8, each with at least 4 K blocks, whose CTAs stay within a
// bound: the SMs for clusters of 2; in the dense launch 13/8 of them for clusters of 4 and 5/4 for clusters of 8
// (`dense` false: the grouped launch, whose rings carry the partial tile too: 3/4 and 1/2). Why the bounds: a
// cluster's CTAs share a GPC (16-18 SMs), and the GPCs hold fewer clusters of 4 or 8 than SMs / 4 or / 8 at one CTA
// per SM; the rest then run as a second wave (H100, 128-row CTAs: 32 clusters of 4 ran slower than 32 of 2, 74.4 vs
// 64.9 us at 64x4096x14336).
// The dense launch's ~100 KB rings fit two CTAs per SM, so its clusters of 4 pack up to the SMs: H200, sixty-third
// session, skinny_ab.py (do_bench, three interleaved rounds), us, 2 / 4 splits (the rule's choice now), cuBLAS:
// 64x2048x8192 26.1 / 19.7, 19.6; 48x2048x8192 25.2 / 19.5, 19.5; 32x2048x8192 22.8 / 18.1, 19.4; 24x1600x8192
// 22.4 / 15.4, 16.8; 17x2048x4096 14.5 / 13.2, 13.5; 40x1920x14336 (4 splits) 24.9, 27.0. Past the SMs too, where
// the two CTAs per SM still hold them (H200, sixty-fifth session, skinny_ab.py, us, 2 / 4 splits, cuBLAS; 144 CTAs:
// 24x2304x14336 34.1 / 26.5, 30.2; 160: 32x2560x8192 23.7 / 20.1, 21.8; 64x2560x8192 25.0 / 20.9, 22.5; 192:
// 32x3072x8192 24.2 / 22.9, 25.1; 200: 32x3200x8192 23.8 / 22.9, 25.5; 208: 32x3328x8192 24.6 / 23.4, 25.9), and no
// longer at 216-224 (32x3456x8192 24.3 / 24.5; 32x3584x8192 25.2 / 25.1; 24x3584x14336 36.6 / 36.5; 48x3584x8192 26.4
// / 26.4; only 64x3456x8192 26.2 / 25.0): the bound is 13/8 of the SMs (214 on 132). (26th session, H100,
// ratio to cuBLAS with 4 / 2 splits, 17-24 row tiles: 16x1536x8960 1.07 / 0.90, 32x1536x8960 1.09-1.10 / 0.86,
// 24x1280x5120 0.99-1.03 / 0.79, 64x1280x8192 0.97-1.00 / 0.73, 20x1536x14336 1.12 / 0.85, 32x1088x4096 0.96-1.00 /
// 0.78.) Clusters of 8 pack the same way (H200, sixty-fourth session, skinny_ab.py, us, 4 / 8 splits, cuBLAS; 12 row
// tiles: 32x768x8192 14.5 / 12.5, 12.5; 24x768x14336 19.8 / 15.1, 15.5; 16: 64x1024x8192 16.5 / 14.2, 14.0;
// 32x1024x8192 15.1 / 13.7, 13.9; 40x1024x4096 12.3 / 11.9, 11.3; 20: 32x1280x8192 15.5 / 14.8, 15.2). At 24 row tiles
// (192 CTAs) it was mixed (32x1536x8192 15.9 / 16.3; 64x1536x8192 18.1 / 17.4) and at 32 (256) clusters of 8 lost
// (32x2048x8192 18.1 / 23.9). Measured on an H100: two CTAs per SM from more splits than one wave
// ran 10-20% slower than one (16x4096x4096: 4 splits 27.5 us, 2 splits 23.7). `forced` (tests, experiments:
// CUTORCH_GEMM_SKINNY_SPLITS) fixes it, clamped to 1..8 and to the K blocks.
inline int choose_sm90_skinny_splits(int64_t n, int64_t k, int tokens, int num_sms, int forced = 0, bool dense = true) {
  const int64_t row_tiles = (n + sm90_skinny_rows(tokens) - 1) / sm90_skinny_rows(tokens);
  const int64_t k_blocks = (k + kSm90SkinnyBlockK - 1) / kSm90SkinnyBlockK;
  if (forced > 0) {
    int s = forced > kSm90SkinnyMaxSplits ? kSm90SkinnyMaxSplits : forced;
    while (s > 1 && s > k_blocks) --s;
    return s;
  }
  // The most CTAs a launch in clusters of `size` may have (the bounds above).
  const auto max_ctas = [&](int size) -> int64_t {
    if (size == 8) return dense ? num_sms + num_sms / 4 : num_sms / 2;
    if (size == 4) return dense ? 13 * num_sms / 8 : 3 * num_sms / 4;
    return num_sms;
  };
  int s = 1;
  while (2 * s <= kSm90SkinnyMaxSplits && k_blocks / (2 * s) >= 4 && row_tiles * 2 * s <= max_ctas(2 * s)) s *= 2;
  return s;
}

// "" when the Hopper skinny kernel takes the launch, else the reason it does not.
inline std::string sm90_skinny_refusal(const SkinnyQuery& q) {
  if (q.knob == "off") return "CUTORCH_GEMM_SKINNY=off";
  if (skinny_sm80_named(q.knob)) return "CUTORCH_GEMM_SKINNY=" + q.knob + " names the mma.sync skinny kernel";
  if (!q.forced_arch.empty() && q.forced_arch != "auto") return "CUTORCH_GEMM_ARCH names a family";
  if (q.sm_major != 9 || !q.sm90_built) return "needs an sm_90 GPU and sm_90a code in the build";
  const std::string operands = skinny_operand_refusal(q, kSm90SkinnyMaxM);
  if (!operands.empty()) return operands;
  // The CTAs' row tiles go on the grid's y dimension (at most 65535 of them).
  const int64_t rows = sm90_skinny_rows(sm90_skinny_tokens(q.m));
  if ((q.n + rows - 1) / rows > 65535) return "N above 65535 row tiles (the grid's y limit)";
  if (q.knob == "sm90") return "";
  if (q.m > kSm90SkinnyAutoMaxM) return "M > 64: the tile kernels serve it";
  const int64_t row_tiles = (q.n + rows - 1) / rows;  // (rows: W rows per CTA, above)
  // Up to 16 tokens, where one K split fills the SMs (N / 64 above half of them), this kernel streams
  // W at least as fast as the mma.sync one. H200, us, mma.sync / this kernel (three interleaved
  // rounds): after do_bench's flush, a memset that leaves L2 dirty, 1x8192x8192 43.2 / 41.8,
  // 8x14336x4096 40.8 / 38.4, 16x8192x4096 25.7 / 25.5 (its W loads carry the L2 evict-first policy,
  // sm90::l2_policy_evict_first); after a flush that leaves L2 clean 40.4 / 37.2, 34.6 / 34.7,
  // 22.0 / 22.2. With a K split (16x4096x4096: 64 row tiles x 2) the mma.sync kernel's shorter ramp
  // won on the H200 too (14.3 / 14.8).
  // 9..16 tokens against a narrow W (N / 64 row tiles in 4 K splits fill at most 3/4 of the SMs) and
  // K >= 4096: the mma.sync kernel's N / 32 CTAs of 16-token fragments keep too few bytes in flight,
  // and this kernel's K split wins (26th session, H100, ratio to cuBLAS, mma.sync / this kernel, two
  // runs: 16x1024x8192 0.909-0.932 / 1.017-1.046, 16x1024x16384 0.87 / 1.02-1.05, 16x768x8192 0.83 /
  // 0.93-0.97, 16x896x4864 0.95 / 1.00, 12x1280x5120 0.99 / 1.02, 16x1536x8960 1.03 / 1.07; at K =
  // 2048 the mma.sync kernel kept its lead: 16x1536x2048 0.96-1.06 / 0.86-0.94).
  const bool narrow_split = q.m > 8 && q.num_sms > 0 && 16 * row_tiles <= 3 * int64_t(q.num_sms) && q.k >= 4096;
  if (q.m < kSm90SkinnyAutoMinM && !narrow_split && (q.num_sms <= 0 || 2 * row_tiles <= q.num_sms))
    return "M <= 16 and N / 64 row tiles at most half the SMs (and not 9..16 tokens against a W of at most "
           "3/4 SMs / 16 row tiles with K >= 4096): the mma.sync skinny kernel serves it";
  // One K split because W has more 64-row tiles than half the SMs, against the tile kernels (64x128
  // ping-pong), H200, benchmarks/experiments/skinny_ab.py, ratio to cuBLAS skinny / tiles: 33-64
  // tokens lost on every shape (48x8192x8192 0.895 / 0.963, 64x8192x8192 0.891 / 0.975, 40x14336x4096
  // 0.927 / 0.994, 64x14336x4096 0.929 / 1.019); 17-32 tokens lost where the tiles (N / 128) fill three quarters of
  // the SMs (32x14336x4096 0.916 / 0.975) and won where they do not (32x8192x8192 0.928 / 0.864,
  // 24x8192x8192 0.930 / 0.858). With two or more splits it kept its lead (32x4096x4096 0.984 / 0.836).
  // (choose_sm90_skinny_splits then keeps one split)
  if (q.num_sms > 0 && 2 * row_tiles > q.num_sms && q.m >= kSm90SkinnyAutoMinM) {
    if (q.m > 32) return "one K split (N / 64 above half the SMs) and M > 32: the tile kernels serve it";
    if (4 * ((q.n + 127) / 128) >= 3 * int64_t(q.num_sms))
      return "one K split (N / 64 above half the SMs) and N / 128 tiles fill the SMs: the tile kernels serve it";
  }
  return "";
}

// ---- Grouped along M (grouped_mm 2D x 3D) at decode sizes ----
// MoE decode sends a few rows to a few experts: each non-empty group is a skinny GEMM against its
// expert's weight, which is streamed from DRAM once. The tile kernels give such a group 64x128
// tiles of mostly padding (N / 128 CTAs per group); this kernel gives it N / 64 CTAs that stream
// 64-row W boxes (Mixtral down, one token: 2 groups x 64 CTAs against 2 x 32 tiles; H200, 0.96x ->
// 1.43x torch._grouped_mm). grouped_mm's fused SwiGLU too: a work item is then 32 output columns,
// its 64 W rows the matching 32 gate and 32 up rows. The weight may be K-contiguous (W_e^T views of
// an (E, N, K) tensor, nn.Linear's layout) or N-contiguous (an (E, K, N) tensor, GroupedExperts'
// layout): wgmma reads an MN-major W box through its transpose bit.
// Every group has at most M rows, so M <= 32 fits one 16- or 32-token pass per group. At 64 rows
// the 64-token config lost to the tile kernels by 20-29% (H200: its x boxes are as large as W's and
// it fits one CTA per SM), so the rule stops at 32.
constexpr int64_t kSm90GroupedSkinnyMaxM = 32;
constexpr int64_t kSm90GroupedSkinnyForcedMaxM = 64;  // CUTORCH_GEMM_SKINNY=sm90 (A/B runs, tests)

// Slots: with non-decreasing offsets at most min(G, M) groups have rows (the work items are these
// groups' 64-row W tiles). `forced` (CUTORCH_GEMM_SKINNY_SLOTS, tests) caps it below the groups
// with rows, so that (with a K split) CTAs run several groups in turn.
inline int sm90_grouped_skinny_slots(int64_t groups, int64_t m, int forced = 0) {
  int64_t s = groups < m ? groups : m;
  if (forced > 0 && forced < s) s = forced;
  return int(s > 1 ? s : 1);
}

// K split of a grouped launch: as one problem whose row tiles are every slot's.
inline int choose_sm90_grouped_skinny_splits(int64_t n, int64_t k, int64_t groups, int64_t m, int num_sms,
                                             int forced = 0) {
  const int tokens = sm90_skinny_tokens(m);
  const int64_t rows = sm90_skinny_rows(tokens);
  const int64_t n_all = (n + rows - 1) / rows * rows * sm90_grouped_skinny_slots(groups, m);
  return choose_sm90_skinny_splits(n_all, k, tokens, num_sms, forced, /*dense=*/false);
}

// "" when the grouped Hopper skinny kernel takes a grouped_mm launch (checked before the tile
// kernels' rules), else why not. q.batch: the groups; strides as set_2d reports them.
inline std::string sm90_grouped_skinny_refusal(const SkinnyQuery& q) {
  if (q.mode != GroupMode::kGroupedM) return "grouped along M (2D x 3D) only";
  if (q.knob == "off") return "CUTORCH_GEMM_SKINNY=off";
  if (!q.forced_arch.empty() && q.forced_arch != "auto") return "CUTORCH_GEMM_ARCH names a family";
  if (q.sm_major != 9 || !q.sm90_built) return "needs an sm_90 GPU and sm_90a code in the build";
  if (q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16) return "fp16 / bf16 only";
  if (q.batch < 1) return "no groups";
  if (q.knob == "sm90") {
    if (q.m < 1 || q.m > kSm90GroupedSkinnyForcedMaxM) return "M outside 1..64 (CUTORCH_GEMM_SKINNY=sm90)";
  } else if (q.m < 1 || q.m > kSm90GroupedSkinnyMaxM) {
    return "M outside 1..32: the tile kernels serve it";
  }
  if (q.n < 1 || q.k < 1) return "empty problem";
  if (q.a_sk != 1) return "needs a K-contiguous a (x)";
  if (q.b_sk != 1 && q.b_sn != 1)
    return "needs b K- or N-contiguous (W_e^T views of a (G, N, K) weight, or a (G, K, N) one)";
  const int64_t b_row = q.b_sk == 1 ? q.b_sn : q.b_sk;  // the stride between b's contiguous rows
  if (q.k % 8 != 0 || q.a_sm % 8 != 0 || b_row % 8 != 0 || q.b_sb % 8 != 0 || !q.a_aligned || !q.b_aligned)
    return "16-byte loads need K, the strides and the base pointers in 16-byte units";
  // SwiGLU over N-contiguous weights: the up half's boxes start at column F of the contiguous
  // dimension, where TMA needs 16-byte steps (K-contiguous weights: F rows apart, any F)
  if (q.swiglu && q.b_sk != 1 && (q.n / 2) % 8 != 0)
    return "SwiGLU over N-contiguous weights needs F = N / 2 in 16-byte units";
  const int64_t rows = sm90_skinny_rows(sm90_skinny_tokens(q.m));
  if ((q.n + rows - 1) / rows > 65535) return "N above 65535 row tiles (the grid's y limit)";
  return "";
}

// Launches D^T = W x^T with `tokens` (16, 32, 64, 128) and `splits` (1..8). cudaErrorNotSupported:
// the driver refused a tensor map (nothing launched).
cudaError_t sm90_skinny_f16(const GemmArgs&, int tokens, int splits, cudaStream_t);
cudaError_t sm90_skinny_bf16(const GemmArgs&, int tokens, int splits, cudaStream_t);

inline cudaError_t sm90_skinny(const GemmArgs& g, int tokens, int splits, cudaStream_t stream) {
  return g.dtype == DType::kFloat16 ? sm90_skinny_f16(g, tokens, splits, stream)
                                    : sm90_skinny_bf16(g, tokens, splits, stream);
}

// The grouped launch (tokens 16, 32 or 64; at most `slots` non-empty groups; a persistent grid of
// resident CTAs on num_sms SMs where there is no K split; swiglu: D = silu(gate) * up, N / 2 wide).
cudaError_t sm90_grouped_skinny_f16(const GemmArgs&, int tokens, int splits, int slots, int num_sms, bool swiglu,
                                    cudaStream_t);
cudaError_t sm90_grouped_skinny_bf16(const GemmArgs&, int tokens, int splits, int slots, int num_sms, bool swiglu,
                                     cudaStream_t);

inline cudaError_t sm90_grouped_skinny(const GemmArgs& g, int tokens, int splits, int slots, int num_sms, bool swiglu,
                                       cudaStream_t stream) {
  return g.dtype == DType::kFloat16 ? sm90_grouped_skinny_f16(g, tokens, splits, slots, num_sms, swiglu, stream)
                                    : sm90_grouped_skinny_bf16(g, tokens, splits, slots, num_sms, swiglu, stream);
}

}  // namespace cutorch_gemm
