#pragma once
// Named Ampere-class configurations (cp.async multistage + ldmatrix + mma.sync) and their
// heuristic. Torch- and CUDA-free: the binding, `explain` and the CPU tests call the same code.
//
// Every config reads K in 128-byte slices (64 fp16/bf16, 32 tf32, 16 fp64 elements): a slice
// row is one 128-byte line of shared memory whose 16-byte chunks are XOR-swizzled by row, so
// both the cp.async writes and the ldmatrix reads are free of bank conflicts. Warps split the
// CTA tile as kWarpsM x kWarpsN; each warp owns a (kBlockM / kWarpsM) x (kBlockN / kWarpsN) tile
// of accumulators in registers.

#include <cstdlib>
#include <string>

#include "cutorch_gemm/core/types.h"
#include "cutorch_gemm/scheduler/raster.h"

namespace cutorch_gemm {

enum class Sm80ConfigId : int {
  k128x256x64_S3 = 0,  // 16-bit, large outputs (A100 / H100 class shared memory)
  k128x128x64_S3 = 1,  // 16-bit, default (fits the 99 KB of sm_86 / sm_89)
  k64x128x64_S4 = 2,   // 16-bit, narrow: M <= 64
  k64x64x64_S5 = 3,    // 16-bit, small outputs (more CTAs), split-K
  k128x128x32_S3 = 4,  // tf32
  k64x64x32_S5 = 5,    // tf32, small outputs
  k128x64x16_S4 = 6,   // fp64 (DMMA)
  k64x64x16_S4 = 7,    // fp64, small outputs
  k128x256x128_S3 = 8,  // int8
  k128x128x128_S3 = 9,  // int8, fits sm_86 / sm_89 (an int8 MN-major slice row needs 128 of M / N)
  k128x256x32_S4 = 10,  // tf32, large outputs, K-major operands only
  k128x128x64_S3_K2 = 11,  // 16-bit, sliced K: two warp groups per tile (split-K launches)
};

// KMajorOnly: the launcher has only the K-major x K-major variant (fp32 fragments of MN-major
// slices are gathered element by element, which with 64x64 warp tiles runs out of registers);
// the plan never picks such a config for an MN-major operand.
// SlicesK > 1 ("sliced K"): that many groups of WarpsM x WarpsN warps share one CTA tile, each
// with its own stage ring and half (third, ...) of the CTA's K range; the epilogue adds their
// accumulators in group order in shared memory. For split-K it halves the partial tiles that go
// through L2 at the same warps per SM.
template <Sm80ConfigId Id, int BlockM, int BlockN, int BlockK, int WarpsM, int WarpsN, int Stages,
          bool KMajorOnly = false, int SlicesK = 1>
struct Sm80Config {
  static constexpr bool kKMajorOnly = KMajorOnly;
  static constexpr int kSlicesK = SlicesK;
  static constexpr Sm80ConfigId kId = Id;
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kBlockK = BlockK;  // elements: always 128 bytes of the operand type
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsN = WarpsN;
  static constexpr int kStages = Stages;
  static constexpr int kGroupThreads = 32 * WarpsM * WarpsN;  // one K group's warps
  static constexpr int kThreads = kGroupThreads * SlicesK;
  static constexpr int kWarpTileM = BlockM / WarpsM;
  static constexpr int kWarpTileN = BlockN / WarpsN;
  static constexpr int kStageBytes = (BlockM + BlockN) * 128;
  static constexpr int kRingBytes = Stages * kStageBytes;  // per K group
  // The operand loads carry the L2 evict-first policy (sm80::l2_policy): the sliced-K
  // config, which only split-K launches take, whose one wave reads each operand line a few times at
  // about the same moment, then never again.
  static constexpr bool kL2EvictFirst = SlicesK > 1;
  static_assert(BlockM % WarpsM == 0 && BlockN % WarpsN == 0, "warps tile the CTA tile");
  // An MN-major slice row (kBlockM or kBlockN elements) must be whole 128-byte lines too.
  static_assert(BlockM >= BlockK && BlockN >= BlockK, "an MN-major slice row is at least 128 bytes");
  static_assert(Stages >= 2, "a ring needs two stages");
};

using Sm80_128x256x64_S3 = Sm80Config<Sm80ConfigId::k128x256x64_S3, 128, 256, 64, 2, 4, 3>;  // 8 warps of 64x64
using Sm80_128x128x64_S3 = Sm80Config<Sm80ConfigId::k128x128x64_S3, 128, 128, 64, 2, 2, 3>;  // 4 warps of 64x64
using Sm80_64x128x64_S4 = Sm80Config<Sm80ConfigId::k64x128x64_S4, 64, 128, 64, 1, 4, 4>;     // 4 warps of 64x32
using Sm80_64x64x64_S5 = Sm80Config<Sm80ConfigId::k64x64x64_S5, 64, 64, 64, 2, 2, 5>;        // 4 warps of 32x32
using Sm80_128x128x32_S3 = Sm80Config<Sm80ConfigId::k128x128x32_S3, 128, 128, 32, 2, 4, 3>;  // tf32, 8 warps of 64x32
using Sm80_64x64x32_S5 = Sm80Config<Sm80ConfigId::k64x64x32_S5, 64, 64, 32, 2, 2, 5>;        // tf32, 32x32 warps
using Sm80_128x64x16_S4 = Sm80Config<Sm80ConfigId::k128x64x16_S4, 128, 64, 16, 4, 2, 4>;     // fp64, 8 warps of 32x32
using Sm80_64x64x16_S4 = Sm80Config<Sm80ConfigId::k64x64x16_S4, 64, 64, 16, 2, 2, 4>;        // fp64, 32x32 warps
// tf32 with 64x64 warp tiles: a quarter fewer L2 bytes per FLOP than 128x128 and half the
// fragment loads per MMA of 64x32 warps; +10-14% over Sm80_128x128x32_S3 at 4096^3-8192^3 on an
// H100 (3.44 against 3.86 pJ/FLOP under the power cap); 4 stages measured >= 3 (192 KB).
using Sm80_128x256x32_S4 = Sm80Config<Sm80ConfigId::k128x256x32_S4, 128, 256, 32, 2, 4, 4, true>;
// Split-K's 16-bit tile where 192 KB fit (sm_90): one CTA per SM with the eight warps of two
// 128x128x64_S3 CTAs, so a one-wave split needs half the slices and half the partial bytes
// (512x512x16384 on an H100: 8 MB instead of 16 MB of fp32 partials written and read back).
using Sm80_128x128x64_S3_K2 = Sm80Config<Sm80ConfigId::k128x128x64_S3_K2, 128, 128, 64, 2, 2, 3, false, 2>;
using Sm80_128x256x128_S3 = Sm80Config<Sm80ConfigId::k128x256x128_S3, 128, 256, 128, 2, 4, 3>;  // int8, 64x64 warps
using Sm80_128x128x128_S3 = Sm80Config<Sm80ConfigId::k128x128x128_S3, 128, 128, 128, 2, 2, 3>;  // int8, 64x64 warps

struct Sm80ConfigInfo {
  Sm80ConfigId id;
  const char* name;
  int block_m, block_n, block_k, stages, threads;
  int acc_bytes;  // accumulator element (the epilogue stages the whole tile in shared memory)
  bool k_major_only;
  int slices_k;   // K groups of warps per CTA (each with its own ring)
};

template <class C>
constexpr Sm80ConfigInfo sm80_info_of(const char* name, int acc_bytes) {
  return {C::kId, name, C::kBlockM, C::kBlockN, C::kBlockK, C::kStages, C::kThreads, acc_bytes, C::kKMajorOnly,
          C::kSlicesK};
}

inline const Sm80ConfigInfo& sm80_config_info(Sm80ConfigId id) {
  static const Sm80ConfigInfo table[] = {
      sm80_info_of<Sm80_128x256x64_S3>("Sm80_128x256x64_S3", 4),
      sm80_info_of<Sm80_128x128x64_S3>("Sm80_128x128x64_S3", 4),
      sm80_info_of<Sm80_64x128x64_S4>("Sm80_64x128x64_S4", 4),
      sm80_info_of<Sm80_64x64x64_S5>("Sm80_64x64x64_S5", 4),
      sm80_info_of<Sm80_128x128x32_S3>("Sm80_128x128x32_S3", 4),
      sm80_info_of<Sm80_64x64x32_S5>("Sm80_64x64x32_S5", 4),
      sm80_info_of<Sm80_128x64x16_S4>("Sm80_128x64x16_S4", 8),
      sm80_info_of<Sm80_64x64x16_S4>("Sm80_64x64x16_S4", 8),
      sm80_info_of<Sm80_128x256x128_S3>("Sm80_128x256x128_S3", 4),
      sm80_info_of<Sm80_128x128x128_S3>("Sm80_128x128x128_S3", 4),
      sm80_info_of<Sm80_128x256x32_S4>("Sm80_128x256x32_S4", 4),
      sm80_info_of<Sm80_128x128x64_S3_K2>("Sm80_128x128x64_S3_K2", 4),
  };
  return table[int(id)];
}

inline const char* sm80_config_name(Sm80ConfigId id) { return sm80_config_info(id).name; }

// Dynamic shared memory of a config: the stage rings (one per K group), or the fp32/fp64
// accumulator tile the epilogue stages (rows padded by 32 bytes), whichever is larger; the two
// reuse one buffer.
constexpr int sm80_epilogue_row_bytes(int block_n, int acc_bytes) { return block_n * acc_bytes + 32; }
inline int sm80_smem_bytes(Sm80ConfigId id) {
  const Sm80ConfigInfo& c = sm80_config_info(id);
  const int ring = c.slices_k * c.stages * (c.block_m + c.block_n) * 128;
  const int epi = c.block_m * sm80_epilogue_row_bytes(c.block_n, c.acc_bytes);
  return ring > epi ? ring : epi;
}

// The configs one element type compiles, best-first for large problems.
inline int sm80_configs_for(DType dtype, const Sm80ConfigId** out) {
  // (h[4], sliced K, is only the split-K tile; the others are the plain choices by position)
  static const Sm80ConfigId h[] = {Sm80ConfigId::k128x256x64_S3, Sm80ConfigId::k128x128x64_S3,
                                   Sm80ConfigId::k64x128x64_S4, Sm80ConfigId::k64x64x64_S5,
                                   Sm80ConfigId::k128x128x64_S3_K2};
  static const Sm80ConfigId f[] = {Sm80ConfigId::k128x256x32_S4, Sm80ConfigId::k128x128x32_S3,
                                   Sm80ConfigId::k64x64x32_S5};
  static const Sm80ConfigId d[] = {Sm80ConfigId::k128x64x16_S4, Sm80ConfigId::k64x64x16_S4};
  static const Sm80ConfigId i8[] = {Sm80ConfigId::k128x256x128_S3, Sm80ConfigId::k128x128x128_S3};
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16: *out = h; return 5;
    case DType::kFloat32:  *out = f; return 3;
    case DType::kFloat64:  *out = d; return 2;
    case DType::kInt8:     *out = i8; return 2;
  }
  *out = nullptr;
  return 0;
}

// How the sm80 loaders read an operand: MN-major when its M (N) stride is 1 and its K stride is
// not; K-major otherwise (K stride 1, or fully strided: element-wise copies into the K-major
// slice). The launcher picks the kernel variant by it and the plan its configs.
constexpr bool sm80_mn_major(index_t k_stride, index_t mn_stride) { return k_stride != 1 && mn_stride == 1; }

enum class SplitKMode : int { kNone = 0, kSerial = 1, kParallel = 2 };

inline const char* splitk_mode_name(SplitKMode s) {
  return s == SplitKMode::kSerial ? "serial" : s == SplitKMode::kParallel ? "parallel" : "none";
}

struct Sm80Plan {
  Sm80ConfigId config;
  SplitKMode split_mode;
  int splits;        // K slices (1 without split-K)
  int raster_group;  // band height of the rasterization swizzle, in tiles
  int tiles_m;
  int tiles_n;
  std::string reason;
};

// Split-K pays when the output tiles leave most SMs idle and each slice keeps at least this
// many 128-byte k-tiles to amortise its partial-tile traffic. A split launch uses the largest
// config that fits (its mainloop is the most efficient; the slices supply the parallelism) and
// cuts K into enough slices for about one wave of resident CTAs.
// Parallel split-K (partials + a reduction kernel) measured faster than serial on an H200 at
// every slice count (512x512x16384 fp16: parallel x4 40 us, serial x4 50 us: serial slices take
// turns on the partial tile); serial needs one partial tile per output tile instead of one per
// slice, so it is chosen when the parallel partials would exceed kSm80MaxParallelBytes.
constexpr int kSm80MinKTilesPerSplit = 8;
constexpr int kSm80MaxSplits = 16;
constexpr long long kSm80MaxParallelBytes = 64ll << 20;

// CTAs of a config one SM holds at once (shared memory bound; registers allow two of the
// 128-thread configs, one of the 256-thread ones).
inline int sm80_ctas_per_sm(Sm80ConfigId id, int smem_optin) {
  const Sm80ConfigInfo& c = sm80_config_info(id);
  const int by_smem = (smem_optin + 1024) / (sm80_smem_bytes(id) + 1024);
  const int by_regs = c.threads <= 128 ? 2 : 1;
  return by_smem < 1 ? 1 : (by_smem < by_regs ? by_smem : by_regs);
}

// forced_config: CUTORCH_GEMM_SM80_CONFIG, a config name or its tile ("128x128x64"), "" = pick.
// forced_split: CUTORCH_GEMM_SPLIT_K, "" = pick, "none", "serial:N" or "parallel:N".
// m, n: one problem (grouped launches: the average group); batch: batch entries or groups.
// mn_major: an operand is read MN-major (K-major-only configs are then never chosen; a forced
// one gives way to the heuristic's choice, with the reason saying so).
// Returns false in *ok when an override names something this dtype does not have.
inline Sm80Plan choose_sm80_plan(DType dtype, int m, int n, int k, int batch, int num_sms, int smem_optin,
                                 bool grouped, const std::string& forced_config, const std::string& forced_split,
                                 bool* ok, bool mn_major = false) {
  *ok = true;
  const Sm80ConfigId* ids = nullptr;
  const int count = sm80_configs_for(dtype, &ids);
  Sm80Plan plan{};
  plan.split_mode = SplitKMode::kNone;
  plan.splits = 1;
  const auto tiles = [&](Sm80ConfigId id) {
    const Sm80ConfigInfo& c = sm80_config_info(id);
    return (long long)ceil_div(m, c.block_m) * ceil_div(n, c.block_n) * (batch > 0 ? batch : 1);
  };
  const auto fits = [&](Sm80ConfigId id) { return sm80_smem_bytes(id) <= smem_optin; };
  const auto usable = [&](Sm80ConfigId id) { return !(mn_major && sm80_config_info(id).k_major_only); };

  bool chosen = false;
  if (!forced_config.empty()) {
    for (int i = 0; i < count; ++i) {
      // case-insensitive: the binding passes the environment value lowercased
      std::string name = sm80_config_name(ids[i]), want = forced_config;
      for (char& ch : name) ch = char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      for (char& ch : want) ch = char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      if (name == want || name.find("_" + want + "_") != std::string::npos) {
        plan.config = ids[i];
        plan.reason = "CUTORCH_GEMM_SM80_CONFIG=" + forced_config;
        chosen = true;
        break;  // the first (listed) config of that tile
      }
    }
    if (!chosen) { *ok = false; return plan; }
    if (!fits(plan.config)) { *ok = false; return plan; }
    if (!usable(plan.config)) chosen = false;
  }
  const bool forced_kept = chosen;
  std::string note;
  if (!forced_config.empty() && !chosen) {
    note = std::string("; ") + sm80_config_name(plan.config) + " (CUTORCH_GEMM_SM80_CONFIG) reads K-major operands only";
  }
  if (!chosen) {
    const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    // ids[0] reads K-major operands only for tf32 (k_major_only): ids[1] serves MN-major ones.
    const Sm80ConfigId big = usable(ids[0]) ? ids[0] : ids[1], small = half ? ids[3] : ids[count - 1];
    if (half && m <= 64 && fits(ids[2])) {
      plan.config = ids[2];
      plan.reason = "M <= 64: narrow 64-row tiles";
    } else if (tiles(big) >= num_sms && fits(big)) {
      plan.config = big;
      plan.reason = "the largest tiles fill all " + std::to_string(num_sms) + " SMs";
    } else if (tiles(ids[1]) >= num_sms && fits(ids[1])) {
      plan.config = ids[1];
      plan.reason = std::string(sm80_config_name(ids[1])) +
                    " tiles fill the SMs (the largest would not, do not fit in shared memory, or need K-major "
                    "operands)";
    } else {
      plan.config = small;
      plan.reason = "small output: the smallest tiles give the most CTAs";
    }
    plan.reason += note;
  }
  const Sm80ConfigInfo& c = sm80_config_info(plan.config);
  plan.tiles_m = ceil_div(m, c.block_m);
  plan.tiles_n = ceil_div(n, c.block_n);
  plan.raster_group = raster_group_for(plan.tiles_m, plan.tiles_n);

  const int k_tiles = ceil_div(k, c.block_k);
  // NOTE: int8 never splits: its int32 partials would need their own reduction epilogue.
  if (dtype == DType::kInt8) return plan;
  if (!forced_split.empty() && forced_split != "auto") {
    if (forced_split == "none") return plan;
    const size_t colon = forced_split.find(':');
    const std::string mode = forced_split.substr(0, colon);
    const int n_split = colon == std::string::npos ? 0 : std::atoi(forced_split.c_str() + colon + 1);
    if ((mode != "serial" && mode != "parallel") || n_split < 1 || n_split > kSm80MaxSplits) {
      *ok = false;
      return plan;
    }
    if (grouped || n_split == 1) return plan;  // grouped launches are never split
    plan.split_mode = mode == "serial" ? SplitKMode::kSerial : SplitKMode::kParallel;
    plan.splits = n_split;
    plan.reason += "; CUTORCH_GEMM_SPLIT_K=" + forced_split;
    return plan;
  }
  const long long t = tiles(plan.config);
  if (grouped || t <= 0 || 2 * t > num_sms || k_tiles < 2 * kSm80MinKTilesPerSplit) return plan;
  // 16-bit and tf32: 128x128 (it fits every sm_8x; 128x256 slices would halve the CTAs per
  // wave); 16-bit takes the sliced-K 128x128 where its 192 KB fit; a forced config stays.
  const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  const bool tile128 = half || dtype == DType::kFloat32;
  Sm80ConfigId split_cfg = forced_kept ? plan.config : tile128 ? ids[1] : ids[0];
  if (!forced_kept && half && fits(ids[4])) split_cfg = ids[4];
  if (!fits(split_cfg)) return plan;
  const Sm80ConfigInfo& sc = sm80_config_info(split_cfg);
  const long long t_split = tiles(split_cfg);
  const long long wave = (long long)num_sms * sm80_ctas_per_sm(split_cfg, smem_optin);
  // At most one wave: the slices may then sum their partials in the kernel (all resident).
  const long long want = wave / t_split;
  const long long by_k = ceil_div(k, sc.block_k) / kSm80MinKTilesPerSplit;
  const int splits = int(min_of(min_of(want, by_k), (long long)kSm80MaxSplits));
  if (splits < 2) return plan;
  plan.config = split_cfg;
  plan.tiles_m = ceil_div(m, sc.block_m);
  plan.tiles_n = ceil_div(n, sc.block_n);
  plan.raster_group = raster_group_for(plan.tiles_m, plan.tiles_n);
  plan.splits = splits;
  const long long parallel_bytes = (long long)splits * m * n * (batch > 0 ? batch : 1) * sc.acc_bytes;
  plan.split_mode = parallel_bytes > kSm80MaxParallelBytes ? SplitKMode::kSerial : SplitKMode::kParallel;
  plan.reason = std::to_string(t) + " tiles leave SMs idle and K=" + std::to_string(k) + ": " +
                splitk_mode_name(plan.split_mode) + " split-K x" + std::to_string(splits) + " of " + sc.name +
                " tiles (about one wave of " + std::to_string(wave) + " CTAs)" +
                (plan.split_mode == SplitKMode::kParallel
                     ? "; the slices sum the partials themselves when all CTAs fit at once, else a reduction kernel"
                     : "") +
                note;
  return plan;
}

}  // namespace cutorch_gemm
