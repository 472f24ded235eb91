#pragma once
// Host-side launch of the Hopper kernel: tensor maps, persistent grid, shared-memory size.
// Included only by csrc/instantiations/sm90_*.cu.

#include <cstdlib>
#include <string>
#include <type_traits>

#include "cutorch_gemm/device/sm90_gemm.h"
#include "cutorch_gemm/device/sm90_pdl_launch.cuh"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_gemm_ws_kernel.cuh"
#include "cutorch_gemm/device/launch_util.h"

namespace cutorch_gemm {

// The tensor map of one operand of elem_bytes-sized elements. K-major: rows of K elements (A: M
// rows, B: N rows), boxes of tile-rows x 128 bytes. MN-major: rows of M (N) elements, one per
// k, boxes of kBlockK x 128 bytes. Stacked operands (batch / group index) get a 3rd dimension.
template <class Cfg>
bool encode_operand(CUtensorMap* map, CUtensorMapDataType type, int elem_bytes, const void* base, bool mn_major,
                    int tile_rows, uint64_t mn, uint64_t k, int64_t mn_stride, int64_t k_stride, uint64_t batch,
                    int64_t batch_stride) {
  const uint32_t row_elems = uint32_t(128 / elem_bytes);
  if (mn_major) {
    return encode_sw128(map, type, base, k, mn, uint64_t(k_stride), Cfg::kBlockK, row_elems, batch,
                        uint64_t(batch_stride), uint64_t(elem_bytes));
  }
  return encode_sw128(map, type, base, mn, k, uint64_t(mn_stride), uint32_t(tile_rows), row_elems, batch,
                      uint64_t(batch_stride), uint64_t(elem_bytes));
}

// TMA's name for an element type (8-bit floats: raw bytes).
template <typename T>
constexpr CUtensorMapDataType tma_type_of() {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  else if constexpr (std::is_same_v<T, __half>) return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, float>) return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  else return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

// Producer warps issuing k-blocks in turn (Sm90Params::producers): the config's kProducerWarps;
// CUTORCH_GEMM_SM90_PRODUCERS=1..4 overrides it (A/B runs).
inline int sm90_producer_warps(int config_default) {
  const char* e = std::getenv("CUTORCH_GEMM_SM90_PRODUCERS");
  const int n = e ? std::atoi(e) : config_default;
  return n < 1 ? 1 : n > 4 ? 4 : n;
}

// The ping-pong kernels' release gate off (Sm90Params::pp_gate_off): CUTORCH_GEMM_SM90_PP_GATE=off, only to
// reproduce the race the gate closes (collective/sm90_pingpong_turns.cuh).
inline int sm90_pp_gate_off() { return env_is("CUTORCH_GEMM_SM90_PP_GATE", "off") ? 1 : 0; }

// What launch_sm90 returns, having launched nothing, for a config of the deferred store only (sm90_defer_only)
// where the launch does not defer every tile. (A code no launch or runtime call returns here.)
constexpr cudaError_t kSm90NotDeferred = cudaErrorNotReady;

// Mma: the operand type (collective/sm90_mma.cuh); T: the epilogue's type (bias, C, D unless
// args.out_f32): the 16-bit type, or float for tf32.
// kSwiGlu: grouped_mm's fused SwiGLU (the kernel's variant): B boxes of kBlockN / 2 rows, a tile
// grid over the F = N / 2 output columns, D written from registers.
template <class Cfg, class Mma, typename T, bool kAMn, bool kBMn, bool kSwiGlu = false>
cudaError_t launch_sm90(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  using E = typename Mma::Element;
  const ProblemShape& s = args.shape;
  const CUtensorMapDataType type = tma_type_of<E>();
  const int elem_bytes = int(sizeof(E));
  const bool stacked = args.batch > 1;
  const bool a_3d = stacked && s.a_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedN);
  const bool b_3d = stacked && s.b_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedM);
  static_assert(sizeof(Sm90SharedStorage<Cfg, E>) + 1024 <= 227 * 1024, "shared memory per block (sm_90)");
  const int smem = int(sizeof(Sm90SharedStorage<Cfg, E>)) + 1024;  // + alignment slack
  // A width that is not a multiple of 64 (sm90_defer_only) has the compact deferring kernel only.
  constexpr bool kDeferOnly = sm90_defer_only<Cfg, Mma>();
  static_assert(!kDeferOnly || !kSwiGlu, "widths that are not multiples of 64: not the fused SwiGLU");
  auto kernel = sm90_gemm_ws_kernel<Cfg, Mma, T, kAMn, kBMn, kSwiGlu, false, kDeferOnly>;
  cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t config{};
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  const char* forced_cluster = std::getenv("CUTORCH_GEMM_SM90_CLUSTER");
  const bool fixed_grid = s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedK;
  const bool rows_128b = sm90_operands_rows_128b(s, elem_bytes);
  // (one dense problem, unsplit: the K rules of choose_sm90_cluster, for 16-bit, tf32 and 8-bit operands)
  const bool dense = s.mode == GroupMode::kBatched && args.batch == 1 && args.k_chunk == 0;
  int cluster = choose_sm90_cluster(!Cfg::kPingpong, fixed_grid, kSwiGlu, ceil_div(s.m, Cfg::kBlockM), rows_128b,
                                    forced_cluster ? forced_cluster : "", dense, s.k,
                                    (long long)ceil_div(s.m, Cfg::kBlockM) * ceil_div(s.n, Cfg::kBlockN), num_sms,
                                    Cfg::kBlockN, Cfg::kBlockM, Cfg::kBlockK);
  // The scheduler maps work items with shifts by (cluster - 1): one CTA or pairs only. An MN-major B is read in
  // 64-column boxes, which half a tile of a width that is not a multiple of 128 does not split into: no pairs.
  if (cluster != 1 && cluster != 2) return cudaErrorNotSupported;
  if (kBMn && (Cfg::kBlockN / 2) % 64 != 0) cluster = 1;
  int cluster_fit = 0;  // clusters of this kernel that fit on the GPU at once
  if (cluster > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    config.gridDim = dim3(unsigned(cluster));
    cluster_fit = max_active_clusters(reinterpret_cast<const void*>(kernel), config);
    if (cluster_fit <= 0) {  // (not expected on sm_90) launch without clusters
      cluster = 1;
      config.attrs = nullptr;
      config.numAttrs = 0;
    }
  }
  // B boxes: a clustered CTA loads half the B tile (K-major: half the rows; MN-major boxes are
  // 64 wide either way), SwiGLU its gate half and then its up half, the 320-wide tile its two halves (a box is at most
  // 256 rows: sm90_load_stage).
  const int b_box_rows = kSwiGlu || cluster > 1 || Cfg::kBlockN > 256 ? Cfg::kBlockN / 2 : Cfg::kBlockN;
  CUtensorMap tma_a, tma_b;
  if (!encode_operand<Cfg>(&tma_a, type, elem_bytes, args.a, kAMn, Cfg::kBlockM, s.m, s.k, s.a_sm, s.a_sk,
                           a_3d ? args.batch : 0, s.a_sb) ||
      !encode_operand<Cfg>(&tma_b, type, elem_bytes, args.b, kBMn, b_box_rows, s.n, s.k, s.b_sn, s.b_sk,
                           b_3d ? args.batch : 0, s.b_sb)) {
    return cudaErrorNotSupported;  // nothing launched: the caller falls back to SIMT
  }
  constexpr int kTileN = kSwiGlu ? Cfg::kBlockN / 2 : Cfg::kBlockN;  // output columns per tile
  Sm90Params p{args, ceil_div(s.m, Cfg::kBlockM), ceil_div(kSwiGlu ? s.n / 2 : s.n, kTileN), 0, a_3d, b_3d, 0, 0, 0, 0};
  // Register-direct epilogue: no C, no activation, and every column pair of D 2-element
  // aligned (row-major, even row / batch strides, aligned base; grouped-N columns start at
  // arbitrary offsets, so that mode keeps the staged path).
  const size_t pair_bytes = args.out_f32 ? 8 : 2 * sizeof(T);
  // CUTORCH_GEMM_SM90_EPILOGUE=staged|direct|fused forces a slower epilogue path, general the
  // general kernel's TMA store for plain launches (tests run them all).
  const char* forced_epi = std::getenv("CUTORCH_GEMM_SM90_EPILOGUE");
  const std::string epi = forced_epi ? forced_epi : "";
  const bool plain = args.act == Activation::kNone && args.c == nullptr;  // always, for scaled launches
  const bool d_rows = s.d_sn == 1 && s.mode != GroupMode::kGroupedN;  // row-major, no per-group column shift
  // The fit-width tiles add beta * C from registers too (sm90_direct_c), its pairs 4-byte aligned.
  const bool fit_c =
      sm90_is_fit<Cfg, Mma>() && args.act == Activation::kNone && args.c != nullptr && sm90_c_pairs(args);
  p.direct_epilogue = (plain || fit_c) && d_rows && s.d_sm % 2 == 0 && s.d_sb % 2 == 0 &&
                      reinterpret_cast<uintptr_t>(args.d) % pair_bytes == 0 && epi != "staged";
  // The fit-width configs store only from registers (the kernel's kFit; sm90_fit_launch_ok chose them); the big tiles
  // (128x320, 192x192) also by TMA, bias + an activation too (act_regs; checked again once D's map is encoded).
  constexpr bool kBigTile = sm90_is_big<Cfg, Mma>();
  const bool act_regs = !plain && args.c == nullptr && !args.out_f32 && d_rows && epi.empty();
  if constexpr (sm90_is_fit<Cfg, Mma>()) {
    if (!(p.direct_epilogue || (kBigTile && act_regs)) || args.batch != 1) return cudaErrorInvalidValue;
  }
  // TMA stores: D's base, row and batch strides 16-byte aligned (D from at::empty: whenever N
  // is a multiple of 8, or of 4 for fp32). Grouped-K and batched outputs are 3-D.
  CUtensorMap tma_d{};
  const uint64_t out_bytes = args.out_f32 ? 4 : sizeof(T);
  p.d_3d = stacked && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedK);
  // Bias + activation into a 16-bit D (no C): the TMA store with the activation from registers (act_regs, above).
  // CUTORCH_GEMM_SM90_EPILOGUE=fused sends it through the fp32-scratch path instead (tests).
  // The fused TMA path (C, or an fp32 D with an activation) needs two staging buffers
  // (cooperative config).
  const bool fused = !plain && !act_regs && d_rows && Cfg::kEpiBuffers >= 2 && (epi.empty() || epi == "fused");
  // beta * C loaded by TMA into the D slices' buffers (the general kernel's kCLoads, Sm90Params::tma_load_c): one
  // dense problem (gemm's C), a 16-bit D and C of its type, row-major with 16-byte aligned rows; an activation where
  // the kernel has it (sm90_c_acts). Otherwise C takes the fused path's element-wise loads
  // (CUTORCH_GEMM_SM90_EPILOGUE=fused forces that path: tests), or the staged one.
  const bool c_act_ok = args.act == Activation::kNone || sm90_c_acts<Cfg, kBMn>();
  const bool c_loads = sm90_loads_c<Cfg, Mma, T>() && !kSwiGlu && args.c != nullptr && !args.out_f32 && c_act_ok &&
                       d_rows && epi.empty() && s.mode == GroupMode::kBatched && args.batch == 1 &&
                       args.k_chunk == 0 && s.c_sn == 1 && s.c_sm > 0 && (s.c_sm * 2) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(args.c) % 16 == 0;
  CUtensorMap tma_c{};
  if (!kSwiGlu && ((p.direct_epilogue && epi != "direct") || fused || act_regs || c_loads)) {  // SwiGLU: registers
    if (reinterpret_cast<uintptr_t>(args.d) % 16 == 0 && (s.d_sm * out_bytes) % 16 == 0 &&
        (!p.d_3d || (s.d_sb * out_bytes) % 16 == 0)) {
      const CUtensorMapDataType d_type = args.out_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : tma_type_of<T>();
      const bool ok = encode_sw128(&tma_d, d_type, args.d, s.m, s.n, uint64_t(s.d_sm), 64,
                                   uint32_t(128 / out_bytes), p.d_3d ? args.batch : 0, uint64_t(s.d_sb), out_bytes);
      p.tma_store = ok && p.direct_epilogue;
      p.tma_store_act = ok && act_regs;
      p.tma_store_fused = ok && fused;
      if (ok && c_loads && encode_sw128(&tma_c, d_type, args.c, s.m, s.n, uint64_t(s.c_sm), 64, 64)) {
        p.tma_load_c = 1;
        p.tma_store_fused = 0;
      }
    }
  }
  if constexpr (kBigTile) {  // (an activation: only by TMA, the kernel's kFit branch)
    if (!p.direct_epilogue && !p.tma_store_act) return cudaErrorInvalidValue;
  }
  // Grouped M / N tile counts live on the device; each group adds at most one partial tile.
  // Clustered: work items are pair tiles (two tile rows of one tile column).
  const int item_rows = ceil_div(p.tiles_m, cluster);
  p.raster_group = raster_group_for(item_rows, p.tiles_n);
  // CUTORCH_GEMM_SM90_RASTER=<band height in work-item rows> (experiments).
  if (const char* band = std::getenv("CUTORCH_GEMM_SM90_RASTER")) {
    const int b = std::atoi(band);
    if (b > 0) p.raster_group = b < item_rows ? b : (item_rows > 0 ? item_rows : 1);
  }
  p.raster = make_raster_divisors(item_rows, p.tiles_n, p.raster_group);
  long long items = (long long)item_rows * p.tiles_n * args.batch;
  if (s.mode == GroupMode::kGroupedM) items = (long long)(p.tiles_m + args.batch) * p.tiles_n;
  if (s.mode == GroupMode::kGroupedN) items = (long long)p.tiles_m * (p.tiles_n + args.batch);
  if (items == 0) return cudaSuccess;
  // CUTORCH_GEMM_SM90_GRID caps the persistent grid (CTAs; experiments only).
  const char* grid_cap_env = std::getenv("CUTORCH_GEMM_SM90_GRID");
  const long long grid_cap = grid_cap_env ? std::atoll(grid_cap_env) : 0;
  // Stream-K (choose_sm90_streamk, sm90_streamk_full): dense cooperative launches without clusters, or with
  // them where sm90_streamk_pairs allows (the pieces are a cluster's, cut from pair tiles; not the "full"
  // form), when the caller provided the workspace (for the grid's CTAs: checked below).
  const bool sk_eligible = !Cfg::kPingpong && !kSwiGlu && (cluster == 1 || sm90_streamk_pairs(s.k, Cfg::kBlockK)) &&
                           s.mode == GroupMode::kBatched && args.batch == 1 && args.k_chunk == 0 &&
                           args.sk_partials != nullptr;
  const char* sk_env = std::getenv("CUTORCH_GEMM_SM90_STREAMK");
  const std::string forced_sk = sk_env ? sk_env : "";
  const int k_blocks = ceil_div(s.k, Cfg::kBlockK);
  if (cluster > 1) {
    // Persistent: as many clusters as fit at once (the GPCs decide), at most one per item.
    long long clusters = items < cluster_fit ? items : cluster_fit;
    if (grid_cap >= cluster && clusters * cluster > grid_cap) clusters = grid_cap / cluster;
    config.gridDim = dim3(unsigned(cluster * clusters));
  } else {
    long long ctas = items < num_sms ? items : num_sms;
    // Stream-K's "full" form spreads one partial round over every SM.
    if (sk_eligible && sm90_streamk_full(items, num_sms, k_blocks, Cfg::kBlockK, forced_sk)) ctas = num_sms;
    if (grid_cap > 0 && ctas > grid_cap) ctas = grid_cap;
    config.gridDim = dim3(unsigned(ctas));
  }
  p.cluster = cluster;
  // The deferred store (cooperative 16-bit kernels; ignored by the others): a 16-bit D by TMA
  // stores, plain or with bias and activation from registers (no C); a bias read as column pairs
  // (4-byte aligned pairs: sm90_pack_tile). Exact GELU not on the 256-wide tiles: its erf in the packing cost them
  // ~0.5% against the TMA store's (H200, six shapes, 11 rounds: 1.014 / 1.019x addmm + gelu, thirty-ninth session);
  // the other widths gain far more than that from the deferring kernels they take (the fit twins, 192, 240).
  const bool defer_off = env_is("CUTORCH_GEMM_SM90_DEFER", "off");
  const bool bias_pairs = args.bias == nullptr || (reinterpret_cast<uintptr_t>(args.bias) % 4 == 0 &&
                                                   s.bias_sb % 2 == 0 && s.n % 2 == 0);
  const bool act_defers = args.act != Activation::kGelu || Cfg::kBlockN != 256;
  p.defer_store = ((p.tma_store && !args.out_f32) || p.tma_store_act) && bias_pairs && act_defers && !defer_off;
  // SwiGLU: a 16-bit D with aligned pairs (its direct epilogue's condition; the kernel checks the
  // bias pairs per problem).
  if (kSwiGlu) p.defer_store = p.direct_epilogue && !args.out_f32 && !defer_off;
  p.exit_wait_all = env_is("CUTORCH_GEMM_SM90_EXIT_WAIT", "all");
  // The compact kernels' early start: kSm90EarlyStages k-blocks; CUTORCH_GEMM_SM90_EARLY=off|N (A/B runs).
  p.early_start = kSm90EarlyStages;
  if (const char* e = std::getenv("CUTORCH_GEMM_SM90_EARLY")) {
    p.early_start = std::string(e) == "off" ? 0 : max_of(0, std::atoi(e));
  }
  p.bias_early = !env_is("CUTORCH_GEMM_SM90_BIAS_EARLY", "off");
  p.producers = sm90_producer_warps(Cfg::kProducerWarps);
  p.pp_gate_off = sm90_pp_gate_off();
  p.last_tile_mode = env_is("CUTORCH_GEMM_SM90_LAST_FRESH", "off")      ? 1
                     : env_is("CUTORCH_GEMM_SM90_LAST_FRESH", "all")    ? 2
                                                                         : 0;
  // B streamed from DRAM (at most two tile rows): L2 evict-first loads (sm90_b_streams).
  p.b_stream = sm90_b_streams(p.tiles_m, s.mode, args.batch, b_3d, args.k_chunk) && !env_is("CUTORCH_GEMM_L2_HINT", "off");
  // Half tiles: grouped-M cooperative launches whose groups' B fits L2 (choose_sm90_half_tiles).
  const char* half_env = std::getenv("CUTORCH_GEMM_SM90_HALF_TILES");
  p.half_tiles = choose_sm90_half_tiles(s.k, s.n, elem_bytes, half_env ? half_env : "");
  // Stream-K's pieces (choose_sm90_streamk), when the workspace covers this grid's CTAs.
  if (sk_eligible && int(config.gridDim.x) <= args.sk_slots) {  // (units: CTAs, or clusters)
    p.sk_kb = k_blocks;
    p.sk_tiles = choose_sm90_streamk(items, int(config.gridDim.x) / cluster, k_blocks, forced_sk);
  }
  // Plain ping-pong launches on a fixed tile grid (dense, batched, grouped-K) with the TMA store take
  // the compact variant (kPlainTma: that epilogue only, no grouped scan; same shared memory and
  // threads, so the occupancy above holds). The ping-pong configs serve the small problems, where a
  // launch's fixed cost shows. NOTE: an earlier cooperative
  // compact variant (the whole-tile store, before the deferred store) lost the wgmma pipeline to ptxas's
  // register allocation (C7511, every wgmma serialized: 4096^3 0.97x -> 0.80x cuBLAS on an H100); the
  // one below keeps the deferred store and its register budget.
  // CUTORCH_GEMM_SM90_EPILOGUE=general keeps the general kernel (tests, A/B), for both schedules.
  auto launched = kernel;
  // Widths that are not multiples of 64 (240, the fit widths' twins): only launches whose every tile defers its
  // store (the dispatch rule's defer_ok; launch_sm90_fit); nothing launched otherwise.
  if constexpr (kDeferOnly) {
    if (!p.defer_store || !fixed_grid || epi == "general" || p.sk_tiles != 0) return kSm90NotDeferred;
  }
  // Grouped-M forwards that defer the store take the kGroupEnds variant (a group's last partial
  // tile deferred too, from registers); the dense kernels do without that path (its cost: the
  // kernel's kGroupEnds note). CUTORCH_GEMM_SM90_GROUP_ENDS=off keeps the general kernel (A/B).
  if constexpr (sm90_defers<Cfg, Mma>() && Cfg::kBlockN == 256 && !kAMn && !kSwiGlu) {
    if (p.defer_store && s.mode == GroupMode::kGroupedM && !env_is("CUTORCH_GEMM_SM90_GROUP_ENDS", "off")) {
      launched = sm90_gemm_ws_kernel<Cfg, Mma, T, false, kBMn, false, false, false, true>;
      err = ensure_dynamic_smem(reinterpret_cast<const void*>(launched), smem);
      if (err != cudaSuccess) return err;
    }
  }
  // D = A B alone (dense or batched, no bias, alpha 1, a 16-bit D, no stream-K pieces) takes the bare compact
  // kernel where the config has one (sm90_has_bare); CUTORCH_GEMM_SM90_BARE=off keeps the compact one (A/B, tests).
  [[maybe_unused]] const bool bare = args.act == Activation::kNone && args.bias == nullptr && args.c == nullptr &&
                                     args.alpha == 1.0 && !args.out_f32 && s.mode == GroupMode::kBatched &&
                                     p.sk_tiles == 0 && !env_is("CUTORCH_GEMM_SM90_BARE", "off");
  if constexpr (Cfg::kPingpong && !kSwiGlu && !Mma::kScaled) {
    if (p.tma_store && fixed_grid && epi != "general") {
      launched = sm90_gemm_ws_kernel<Cfg, Mma, T, kAMn, kBMn, false, false, true>;
      if constexpr (sm90_has_bare<Cfg, Mma, T, kAMn, kBMn>()) {
        if (bare) launched = sm90_gemm_ws_kernel<Cfg, Mma, T, kAMn, kBMn, false, false, true, false, true>;
      }
      err = ensure_dynamic_smem(reinterpret_cast<const void*>(launched), smem);
      if (err != cudaSuccess) return err;
      p.one_tile = items <= (long long)config.gridDim.x && cluster == 1 && !env_is("CUTORCH_GEMM_SM90_ONE_TILE", "off");
      // The K-split pair where every CTA has one tile at most (dense or batched, no clusters).
      if constexpr (sm90_has_ksplit<Cfg, Mma>()) {
        const char* ks_env = std::getenv("CUTORCH_GEMM_SM90_KSPLIT");
        const int item_k_blocks = args.k_chunk > 0 ? ceil_div(args.k_chunk, Cfg::kBlockK) : k_blocks;  // (split-K)
        p.ksplit = sm90_ksplit_ok(items, int(config.gridDim.x), cluster, s.mode == GroupMode::kGroupedK,
                                  Cfg::kBlockN, item_k_blocks, p.producers, Cfg::kStages, ks_env ? ks_env : "") ? 1 : 0;
      }
    }
  }
  // Cooperative launches on a fixed tile grid (dense, batched, grouped-K) whose every tile defers its
  // store take the cooperative compact variant.
  if constexpr (!Cfg::kPingpong && sm90_defers<Cfg, Mma>() && !kSwiGlu && !kDeferOnly) {
    if (p.defer_store && fixed_grid && epi != "general") {
      launched = sm90_gemm_ws_kernel<Cfg, Mma, T, kAMn, kBMn, false, false, true>;
      if constexpr (sm90_has_bare<Cfg, Mma, T, kAMn, kBMn>()) {
        if (bare) launched = sm90_gemm_ws_kernel<Cfg, Mma, T, kAMn, kBMn, false, false, true, false, true>;
      }
      err = ensure_dynamic_smem(reinterpret_cast<const void*>(launched), smem);
      if (err != cudaSuccess) return err;
    }
  }
  // Programmatic dependent launch (device/sm90_pdl_launch.cuh) for short launches or small grids: items over CTAs
  // (or pairs), each item's K (split-K: its chunk; stream-K: the same whole divided among the CTAs).
  const bool pdl = sm90_pdl_wanted(items, (long long)config.gridDim.x / cluster,
                                   args.k_chunk > 0 ? (long long)args.k_chunk : (long long)s.k,
                                   (long long)config.gridDim.x, num_sms, sm90_pdl_env());
  return sm90_launch_pdl(config, pdl, launched, tma_a, tma_b, tma_d, tma_c, p);
}

// A fit-width config of one layout: for widths that are not multiples of 64 (all but 128, which the rule
// never takes), its deferring twin (Sm90Deferring, the compact kernel) where every tile defers its store, else the
// direct-store tile. H200, dense_ab.py, 7 rounds, ratio to cuBLAS, direct / twin (thirty-sixth session):
// 1536x1536x4096 (144) 0.911 / 0.942, 768x3072x4096 (144) 0.920 / 0.958, 1024x2560x4096 (160) 0.940 / 0.988,
// 2048x1280x4096 (160) 0.902 / 0.953, 768x3072x2048 (144) 0.837 / 0.896, 1536^3 (144) 0.790 / 0.889. The narrow
// widths store up to 60% of their columns twice (80: slices from columns 0 and 16) and lost then (1024x1536x8960
// (96) 0.913 / 0.886, 512x2560x2560 (80) 0.830 / 0.814), while a CTA's last tile waited for one slice's store to
// read the buffer before the next. Since the last tile goes out from the idle stages at once (the kernel's end) they
// win too (thirty-seventh session, 15 rounds): 1024x1792x4096 (112) 0.889 / 0.916, 1024x1792x2048 (112) 0.821 /
// 0.907, 2048x896x4096 (112) 0.864 / 0.905, 512x2560x2560 (80) 0.856 / 0.892, 640x2048x2048 (80) 0.819 / 0.834,
// 512x2560x4096 (80) 0.843 / 0.860; 96 even: 1024x1536x8960 0.919 / 0.922, 768x2048x4096 0.929 / 0.921.
// CUTORCH_GEMM_SM90_FIT_DEFER=off: the direct store for every width (A/B).
template <class Fit, typename T, bool kAMn, bool kBMn>
cudaError_t launch_sm90_fit_layout(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  using Mma = Sm90Mma16<T>;
  if constexpr (Fit::kBlockN % 64 != 0) {
    if (!env_is("CUTORCH_GEMM_SM90_FIT_DEFER", "off")) {
      const cudaError_t err = launch_sm90<Sm90Deferring<Fit>, Mma, T, kAMn, kBMn>(args, num_sms, stream);
      if (err != kSm90NotDeferred) return err;
    }
  }
  return launch_sm90<Fit, Mma, T, kAMn, kBMn>(args, num_sms, stream);
}

// The fit widths' three layouts: both operands K-major (the forward), B MN-major (dX = dY W) and both MN-major
// (dW = dY^T X), the latter two in whole 64-column B boxes (Sm90MnB) where the width is not a multiple of 64. (An
// MN-major A with a K-major B has no fit tiles: sm90_fit_launch_ok.)
template <class Fit, typename T>
cudaError_t launch_sm90_fit(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  if (!b_mn) return a_mn ? cudaErrorInvalidValue : launch_sm90_fit_layout<Fit, T, false, false>(args, num_sms, stream);
  using FitMn = std::conditional_t<Fit::kBlockN % 64 == 0, Fit, Sm90MnB<Fit>>;
  return a_mn ? launch_sm90_fit_layout<FitMn, T, true, true>(args, num_sms, stream)
              : launch_sm90_fit_layout<FitMn, T, false, true>(args, num_sms, stream);
}

// The four operand-major combinations of one config and 16-bit type.
template <class Cfg, typename T>
cudaError_t launch_sm90_layouts(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  using Mma = Sm90Mma16<T>;
  if (a_mn) {
    return b_mn ? launch_sm90<Cfg, Mma, T, true, true>(args, num_sms, stream)
                : launch_sm90<Cfg, Mma, T, true, false>(args, num_sms, stream);
  }
  return b_mn ? launch_sm90<Cfg, Mma, T, false, true>(args, num_sms, stream)
              : launch_sm90<Cfg, Mma, T, false, false>(args, num_sms, stream);
}

// grouped_mm's fused SwiGLU (groups along M or batched): a K-major, b either way.
template <class Cfg, typename T>
cudaError_t launch_sm90_swiglu(const GemmArgs& args, bool b_mn, int num_sms, cudaStream_t stream) {
  return b_mn ? launch_sm90<Cfg, Sm90Mma16<T>, T, false, true, true>(args, num_sms, stream)
              : launch_sm90<Cfg, Sm90Mma16<T>, T, false, false, true>(args, num_sms, stream);
}
template <typename T>
cudaError_t launch_sm90_swiglu_config(const GemmArgs& args, Sm90ConfigId config, bool b_mn, int num_sms,
                                      cudaStream_t stream) {
  if (config == Sm90ConfigId::kCoop128x256) {
    return launch_sm90_swiglu<Sm90_128x256x64_Coop_S4, T>(args, b_mn, num_sms, stream);
  }
  return launch_sm90_swiglu<Sm90_64x256x64_Pingpong_S5, T>(args, b_mn, num_sms, stream);
}

// tf32: one config, both operands K-major (tf32 wgmma has no transpose bits).
template <class Cfg>
cudaError_t launch_sm90_tf32(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  return launch_sm90<Cfg, Sm90MmaTf32, float, false, false>(args, num_sms, stream);
}

// scaled_mm: the four 8-bit kind combinations of one config (both operands K-major) with D's
// 16-bit type T (float D: args.out_f32). Mma: Sm90MmaF8 (promoted) or Sm90MmaF8Fast.
template <class Cfg, typename T, template <Fp8Kind, Fp8Kind> class Mma = Sm90MmaF8>
cudaError_t launch_sm90_f8_kinds(const GemmArgs& args, Fp8Kind a, Fp8Kind b, int num_sms, cudaStream_t stream) {
  constexpr Fp8Kind E4 = Fp8Kind::kE4M3, E5 = Fp8Kind::kE5M2;
  if (a == E4) {
    return b == E4 ? launch_sm90<Cfg, Mma<E4, E4>, T, false, false>(args, num_sms, stream)
                   : launch_sm90<Cfg, Mma<E4, E5>, T, false, false>(args, num_sms, stream);
  }
  return b == E4 ? launch_sm90<Cfg, Mma<E5, E4>, T, false, false>(args, num_sms, stream)
                 : launch_sm90<Cfg, Mma<E5, E5>, T, false, false>(args, num_sms, stream);
}

// ---- grouped_gemm's pointer-array launch ------------------------------------------------
// The host writes one blob that the kernel reads from global memory: the two tensor maps of every
// problem (64-byte aligned, first), then the Sm90PtrProblem records. Layout:
//   [2G CUtensorMap][G Sm90PtrProblem]

inline size_t sm90_ptr_blob_bytes(int problems) {
  return size_t(problems) * (2 * sizeof(CUtensorMap) + sizeof(Sm90PtrProblem));
}

// Fills `blob` (host memory) for `problems` dense problems of one 16-bit type, a K-major and b
// K- or (kBMn) MN-major in every one. *total_tiles: the launch's tile count. cudaErrorNotSupported:
// the driver refused a tensor map (nothing to launch; the caller runs the problems one by one).
template <class Cfg, typename T, bool kBMn>
cudaError_t sm90_ptr_prepare(void* blob, const GemmArgs* problems, int count, int* total_tiles) {
  CUtensorMap* maps = static_cast<CUtensorMap*>(blob);
  Sm90PtrProblem* recs = reinterpret_cast<Sm90PtrProblem*>(maps + 2 * count);
  constexpr CUtensorMapDataType type = tma_type_of<T>();
  long long tiles = 0;
  for (int i = 0; i < count; ++i) {
    const GemmArgs& a = problems[i];
    const ProblemShape& s = a.shape;
    Sm90PtrProblem& r = recs[i];
    r = Sm90PtrProblem{};
    r.args = a;
    r.tiles_m = ceil_div(s.m, Cfg::kBlockM);
    r.tiles_n = ceil_div(s.n, Cfg::kBlockN);
    r.tiles = r.tiles_m * r.tiles_n;
    const size_t pair_bytes = a.out_f32 ? 8 : 2 * sizeof(T);
    r.direct = a.act == Activation::kNone && a.c == nullptr && s.d_sn == 1 && s.d_sm % 2 == 0 &&
               reinterpret_cast<uintptr_t>(a.d) % pair_bytes == 0;
    maps[2 * i] = CUtensorMap{};
    maps[2 * i + 1] = CUtensorMap{};
    if (r.tiles > 0 && s.k > 0) {  // K = 0: no loads, the epilogue of a zero product
      if (!encode_operand<Cfg>(&maps[2 * i], type, int(sizeof(T)), a.a, false, Cfg::kBlockM, s.m, s.k, s.a_sm,
                               s.a_sk, 0, 0) ||
          !encode_operand<Cfg>(&maps[2 * i + 1], type, int(sizeof(T)), a.b, kBMn, Cfg::kBlockN, s.n, s.k, s.b_sn,
                               s.b_sk, 0, 0)) {
        return cudaErrorNotSupported;
      }
    }
    tiles += r.tiles;
  }
  if (tiles > (1LL << 31) - 1) return cudaErrorNotSupported;
  *total_tiles = int(tiles);
  return cudaSuccess;
}

// Launches the pointer-array kernel over a blob already on the device. `common`: dtype and
// out_f32 of every problem.
template <class Cfg, typename T, bool kBMn>
cudaError_t sm90_ptr_launch(const GemmArgs& common, const void* dev_blob, int count, int total_tiles, int num_sms,
                            cudaStream_t stream) {
  if (total_tiles == 0) return cudaSuccess;
  Sm90Params p{};
  p.args = common;
  p.args.batch = count;
  p.args.shape.mode = GroupMode::kBatched;  // the scheduler's pointer-array scan ignores it
  p.args.act = Activation::kNone;
  p.raster_group = 8;
  p.cluster = 1;
  p.ptr_maps = static_cast<const CUtensorMap*>(dev_blob);
  p.ptr_problems = reinterpret_cast<const Sm90PtrProblem*>(p.ptr_maps + 2 * count);
  p.producers = sm90_producer_warps(Cfg::kProducerWarps);
  p.pp_gate_off = sm90_pp_gate_off();
  using Mma = Sm90Mma16<T>;
  static_assert(sizeof(Sm90SharedStorage<Cfg, T>) + 1024 <= 227 * 1024, "shared memory per block (sm_90)");
  const int smem = int(sizeof(Sm90SharedStorage<Cfg, T>)) + 1024;
  auto kernel = sm90_gemm_ws_kernel<Cfg, Mma, T, false, kBMn, false, true>;
  cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  const CUtensorMap unused{};
  kernel<<<total_tiles < num_sms ? total_tiles : num_sms, Cfg::kThreads, smem, stream>>>(unused, unused, unused, unused, p);
  return cudaGetLastError();
}

// The pointer-array entry points of one 16-bit type: config x b majorness (instantiated by
// csrc/instantiations/sm90_ptr_<type>.cu).
template <typename T>
cudaError_t sm90_ptr_fill_typed(void* blob, const GemmArgs* problems, int count, Sm90ConfigId config, bool b_mn,
                                int* total_tiles) {
  using Coop = Sm90_128x256x64_Coop_S4;
  using Pingpong = Sm90_64x256x64_Pingpong_S5;
  if (config == Sm90ConfigId::kCoop128x256) {
    return b_mn ? sm90_ptr_prepare<Coop, T, true>(blob, problems, count, total_tiles)
                : sm90_ptr_prepare<Coop, T, false>(blob, problems, count, total_tiles);
  }
  return b_mn ? sm90_ptr_prepare<Pingpong, T, true>(blob, problems, count, total_tiles)
              : sm90_ptr_prepare<Pingpong, T, false>(blob, problems, count, total_tiles);
}

template <typename T>
cudaError_t sm90_ptr_run_typed(const GemmArgs& common, const void* dev_blob, int count, int total_tiles,
                               Sm90ConfigId config, bool b_mn, int num_sms, cudaStream_t stream) {
  using Coop = Sm90_128x256x64_Coop_S4;
  using Pingpong = Sm90_64x256x64_Pingpong_S5;
  if (config == Sm90ConfigId::kCoop128x256) {
    return b_mn ? sm90_ptr_launch<Coop, T, true>(common, dev_blob, count, total_tiles, num_sms, stream)
                : sm90_ptr_launch<Coop, T, false>(common, dev_blob, count, total_tiles, num_sms, stream);
  }
  return b_mn ? sm90_ptr_launch<Pingpong, T, true>(common, dev_blob, count, total_tiles, num_sms, stream)
              : sm90_ptr_launch<Pingpong, T, false>(common, dev_blob, count, total_tiles, num_sms, stream);
}

}  // namespace cutorch_gemm
