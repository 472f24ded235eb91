#pragma once
// Persistent tile scheduler of the Hopper kernels: CTA c takes tiles c, c + grid, c + 2*grid, ...
// of one linear sequence that covers every problem of the launch (dense, batch entries, or the
// groups of a grouped launch), and maps a linear tile index to (group, tile origin, K range).
//
// Fixed-size modes (dense, batched, grouped-K) have the same tile grid in every problem, so the
// mapping is a division. Grouped-M / grouped-N problems have device-resident sizes (offsets
// that the host never reads), so the mapping is the seeds' device-only problem visitor: a warp
// reads 32 groups' sizes at once, prefix-sums their tile counts with shuffles and picks the
// group holding the tile; the scan resumes from the last group found, so over a CTA's
// increasing tile indices every group is read at most once per warp.
//
// Pointer-array launches (grouped_gemm: each problem its own pointers and m, n, k) use the
// same scan over tile counts the host precomputed (Sm90PtrProblem::tiles): the host knows every
// shape, so nothing is derived on the device but the problem holding a tile.

#include <cuda.h>

#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/scheduler/raster.h"

namespace cutorch_gemm {

// The CTA's rank in its cluster (0 without clusters).
CG_DEVICE int cluster_rank() {
#if defined(__CUDA_ARCH__)
  return int(sm90::cluster_ctarank());
#else
  return 0;
#endif
}

// One problem of a pointer-array launch, as the host prepared it: its own GemmArgs (pointers,
// extents, strides, epilogue; a dense problem) and tile grid.
struct Sm90PtrProblem {
  GemmArgs args;
  int tiles_m, tiles_n;
  int tiles;    // tiles_m * tiles_n (0 for an empty problem)
  int direct;   // D = alpha * acc (+ bias) from registers (else the staged functor)
};

// k-blocks the compact kernels issue before their CTA barrier (Sm90Params::early_start). Why two, not
// the whole ring: every thread waits at that barrier while thread 0 issues them, which costs where the
// operands sit in L2; issued after the barrier instead, the first loads start later, which costs where
// they come from DRAM (do_bench flushes L2). H100, kernel time with the operands in L2 (ring / two /
// none): 1024^3 7.20 / 7.07 / 6.88 us, 512^3 4.77 / 4.45 / 4.22, 2048^3 25.47 / 25.02 / 25.25. Under
// do_bench (9 interleaved rounds, ratio to cuBLAS, ring / two): 1024^3 0.890 / 0.953, 512^3 0.833 /
// 0.883, 2048^3 0.945 / 0.957, 1024x2048x2048 0.886 / 0.908, 256x1024x1024 0.855 / 0.834, 512x1024x2048
// 0.816 / 0.802 (benchmarks/RESULTS.md, twenty-eighth session).
constexpr int kSm90EarlyStages = 2;

struct Sm90Params {
  GemmArgs args;     // extents, strides, group mode and offsets, epilogue operands
  int tiles_m;       // tile grid of one problem; grouped-M: unused (per group), grouped-N: rows
  int tiles_n;       // grouped-N: unused (per group)
  int raster_group;  // band height of the rasterization inside a problem
  int a_3d;          // A / B indexed by group or batch through their tensor map's 3rd dimension
  int b_3d;
  int direct_epilogue;  // D = alpha * acc (+ bias): no staged functor (see the kernel)
  int tma_store;        // ... and D written by TMA stores (else from registers)
  int tma_store_act;    // D = act(alpha * acc + bias), 16-bit, by TMA stores, activation from registers
  int tma_store_fused;  // D = act(alpha * acc + beta * C + bias) by TMA stores, through an fp32 scratch
  int d_3d;             // D indexed by group / batch through its tensor map's 3rd dimension
  // beta * C loaded by TMA (the kernel's tma_c) into the TMA-store buffers, D = act(alpha * acc + beta * C + bias)
  // in registers (sm90_store_tile_tma's kC): one dense problem, C and D 16-bit and row-major.
  int tma_load_c;
  // CTAs per cluster along M (1 or 2; dense, batched and grouped-K launches). With 2, the CTAs
  // of a cluster take the two tiles of one "pair tile" (tile rows 2i and 2i + 1 of one tile
  // column and K range), load their own A and one half of the shared B tile each, multicast to
  // both. tiles_m odd: the last pair's second tile is past M (zero A rows, nothing stored).
  int cluster;
  // Pointer-array launches: args.batch problems, their records and tensor maps (A of problem g
  // at ptr_maps[2g], B at ptr_maps[2g + 1]), in one device blob.
  const Sm90PtrProblem* ptr_problems;
  const CUtensorMap* ptr_maps;
  // Stream-K (dense cooperative launches without clusters, device/sm90_cluster_streamk.h): the last
  // sk_tiles tiles of the sequence are cut along K, sk_kb k-blocks per tile; 0: none. The
  // buffers are args.sk_partials / args.sk_flags.
  int sk_tiles;
  int sk_kb;
  // Grouped-M cooperative tiles: a warpgroup whose 64 rows lie past the group's end skips its
  // wgmma (the kernel; device/sm90_configs.h, choose_sm90_half_tiles).
  int half_tiles;
  // Cooperative 16-bit launches whose 16-bit D goes out by TMA stores without C: each tile's
  // store runs under the next tile's first k-blocks (the kernel's kDefer); CUTORCH_GEMM_SM90_DEFER=off
  // turns it off (A/B runs).
  int defer_store;
  // The consumers' wait for their last TMA stores before the CTA exits: 0 until the stores have
  // read shared memory (all the CTA needs), 1 until their writes are complete as well
  // (CUTORCH_GEMM_SM90_EXIT_WAIT=all; A/B runs).
  int exit_wait_all;
  // The compact kernels' early start (the kernel's note): thread 0 issues this many of the first
  // tile's k-blocks before the CTA barrier (kSm90EarlyStages; CUTORCH_GEMM_SM90_EARLY=off|N for A/B
  // runs; at most the ring's stages).
  int early_start;
  // B is streamed from DRAM (at most two tile rows: small M; sm90_b_streams), so its TMA loads
  // carry the L2 evict-first policy (sm90::l2_policy_evict_first; CUTORCH_GEMM_L2_HINT=off: A/B).
  int b_stream;
  // The compact cooperative kernel loads each tile's bias pairs before its wait for the last wgmma
  // group (sm90_load_bias_pairs); CUTORCH_GEMM_SM90_BIAS_EARLY=off loads them at packing time (A/B).
  int bias_early;
  // Producer warps issuing k-blocks in turn (1-4; CUTORCH_GEMM_SM90_PRODUCERS for A/B runs).
  int producers;
  // Ping-pong: 1 turns the release gate off (collective/sm90_pingpong_turns.cuh;
  // CUTORCH_GEMM_SM90_PP_GATE=off reproduces the race it closes). 0, the zero-initialised default, keeps it.
  int pp_gate_off;
  // The deferring cooperative kernels' last tile per CTA (the kernel's note). 0: from the idle pipeline stages, each
  // slice's store as soon as the slice is written in the bare kernels, all at once after the last one in the others;
  // 1: through the epilogue buffers (CUTORCH_GEMM_SM90_LAST_FRESH=off); 2: from the stages, all at once in every
  // kernel (=all). 1 and 2 are for A/B runs.
  int last_tile_mode;
  // The fixed grids' raster_tile divisors (one problem's work-item grid: ceil(tiles_m / cluster) x tiles_n, band
  // raster_group), set by launch_sm90: the tile lookup multiplies instead of dividing (every get_item call site
  // inlines it, and at one tile per CTA it is cold code on the way to the first load and the first wgmma).
  RasterDivisors raster;
  // 1: the compact ping-pong kernels' K-split pair, both consumers on the CTA's one tile (collective/sm90_ksplit_pair.cuh;
  // launch_sm90 sets it where every CTA has one tile at most: sm90_ksplit_ok).
  int ksplit;
  // 1: the compact ping-pong kernels' one-tile launches (every CTA one tile at most, no clusters): the tile's epilogue
  // writes its 64-column slices into the idle pipeline stages, each to its own buffer (sm90_store_tile_tma from
  // &s.a[0][0]), so no slice waits for an earlier one's store to read a shared buffer. CUTORCH_GEMM_SM90_ONE_TILE=off.
  int one_tile;
};

struct Sm90Work {
  int group;     // -1: past the last tile
  int m0, n0;    // tile origin inside the group's problem (the epilogue's coordinates)
  int a_row;     // absolute coordinates of the tile origin in A (along M) and B (along N)
  int b_col;
  int k_begin;   // absolute K offset of the problem (grouped-K), else 0
  int k_len;     // K extent of the problem
  int m_len;     // grouped-M: the group's rows (else 0)
  // Stream-K pieces: 0 a whole tile; 1 the tile's first k-blocks (store an fp32 partial, no
  // epilogue); 2 its last k-blocks (add the partials of CTAs sk_first .. this one - 1, then the
  // epilogue).
  int sk_role = 0;
  int sk_first = 0;
};

// A work item read from shared memory (the kernel's s.first_work), passed through lane 0 of the warp: the compiler
// then knows its fields are warp-uniform and keeps what derives from them (tile origins, k-block counts, descriptors)
// in uniform registers. Read straight from shared memory, the cooperative compact kernel's SASS gained ~130 R2UR and
// ~220 PLOP3 and ran 4096^3 10% slower (H200).
// (Field by field: a loop over the struct's words compiled to different SASS that has not been timed.)
CG_DEVICE Sm90Work sm90_uniform_work(const Sm90Work& w) {
  static_assert(sizeof(Sm90Work) == 10 * sizeof(int), "a field added to Sm90Work: pass it through lane 0 here too");
  Sm90Work u;
  u.group = __shfl_sync(0xffffffffu, w.group, 0);
  u.m0 = __shfl_sync(0xffffffffu, w.m0, 0);
  u.n0 = __shfl_sync(0xffffffffu, w.n0, 0);
  u.a_row = __shfl_sync(0xffffffffu, w.a_row, 0);
  u.b_col = __shfl_sync(0xffffffffu, w.b_col, 0);
  u.k_begin = __shfl_sync(0xffffffffu, w.k_begin, 0);
  u.k_len = __shfl_sync(0xffffffffu, w.k_len, 0);
  u.m_len = __shfl_sync(0xffffffffu, w.m_len, 0);
  u.sk_role = __shfl_sync(0xffffffffu, w.sk_role, 0);
  u.sk_first = __shfl_sync(0xffffffffu, w.sk_first, 0);
  return u;
}

// kFixedGrid: the launch is dense, batched or grouped-K (the compact kernels): the device-only
// scan is not compiled in.
// kStreamK: the kernel may be launched with stream-K pieces (p.sk_tiles > 0; only dense cooperative
// launches are: launch_sm90). Without it the pieces' lookup is not compiled in.
// Why both: every get_item call site inlines the whole lookup; in the compact ping-pong kernel
// the scan, the pieces and their divisions were 3.3 K of its 5.1 K SASS instructions, cold code
// that a one-tile-per-CTA launch (1024^3) fetches from memory.
template <int kBlockM, int kBlockN, int kBlockK, bool kPtrArray = false, bool kFixedGrid = false,
          bool kStreamK = true>
struct Sm90TileScheduler {
  const Sm90Params& p;
  int scan_group = 0;   // grouped-M/N scan state: the first group that may hold the next tile
  int scan_before = 0;  //   and the linear index of its first tile

  CG_DEVICE explicit Sm90TileScheduler(const Sm90Params& params) : p(params) {}

  // The CTA's (or, clustered, its cluster's) first work index and the step between its items.
  // (p.cluster is 1 or 2: shifts, not the ~20-instruction integer divisions, at every call site)
  CG_DEVICE static int first_item(const Sm90Params& params) { return int(blockIdx.x) >> (params.cluster - 1); }
  CG_DEVICE static int item_step(const Sm90Params& params) { return int(gridDim.x) >> (params.cluster - 1); }

  CG_DEVICE static int k_blocks(const Sm90Work& w) { return ceil_div(w.k_len, kBlockK); }

  // The CTA's j-th work item (j = 0, 1, ...; group -1 past the last). Ping-pong consumers take
  // the items of one sequence in turn. Stream-K launches (p.sk_tiles > 0): first the unit's whole
  // items before the last sk_tiles, then its pieces of those, from its last item to its first, so a
  // unit's partial (its last item's first k-blocks) comes before anything it waits for, and an item's
  // owner waits only for units of lower index. A unit is a CTA, or (2x1 clusters where
  // sm90_streamk_pairs allows) a cluster, whose two CTAs take the same pieces of their pair
  // tile's two tiles (sk_first: a unit).
  CG_DEVICE Sm90Work get_item(int j) {
    if (!kStreamK || p.sk_tiles == 0) return get(first_item(p) + j * item_step(p));
    const int ctas = item_step(p), cta = first_item(p);  // (units)
    const int dp = p.raster.tiles_m * p.tiles_n - p.sk_tiles;
    const int n_dp = dp > cta ? (dp - cta + ctas - 1) / ctas : 0;
    if (j < n_dp) return get(cta + j * ctas);
    // (32-bit math: choose_sm90_streamk keeps (ctas + 1) * iters below 2^31)
    const int kb = p.sk_kb, iters = p.sk_tiles * kb;
    const int s = cta * iters / ctas, e = (cta + 1) * iters / ctas;  // this CTA's k-blocks
    const int t = (e - 1) / kb - (j - n_dp);
    if (e <= s || t < s / kb) return Sm90Work{-1, 0, 0, 0, 0, 0, 0};
    Sm90Work w = get(dp + t);
    const int k0 = max_of(s, t * kb) - t * kb;
    const int k1 = min_of(e, (t + 1) * kb) - t * kb;
    w.k_begin = k0 * kBlockK;
    w.k_len = min_of(k1 * kBlockK, p.args.shape.k) - w.k_begin;
    w.sk_role = k1 < kb ? 1 : (k0 > 0 ? 2 : 0);
    // The CTA holding the tile's first k-block: the largest c with c * iters / ctas <= t * kb.
    w.sk_first = ((t * kb + 1) * ctas - 1) / iters;
    return w;
  }

  // Tiles of group g (grouped-M / grouped-N only).
  CG_DEVICE int group_tiles(int g) const {
    if constexpr (kPtrArray) return p.ptr_problems[g].tiles;
    const ProblemShape& s = p.args.shape;
    if (s.mode == GroupMode::kGroupedM) {
      const GroupRange r = clamp_group(s.offs, g, s.m);
      return ceil_div(r.end - r.begin, kBlockM) * p.tiles_n;
    }
    const GroupRange r = clamp_group(s.offs, g, s.n);
    return p.tiles_m * ceil_div(r.end - r.begin, kBlockN);
  }

  // Every lane of the calling warp must call this with the same tile (shuffles inside).
  CG_DEVICE Sm90Work get(int tile) {
    const ProblemShape& s = p.args.shape;
    Sm90Work w{-1, 0, 0, 0, 0, 0, s.k};
    if (kFixedGrid || (!kPtrArray && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedK))) {
      // Clustered: `tile` is a pair tile of a (tiles_m / 2) x tiles_n grid per problem (p.raster's grid: its tiles_m
      // is the launch's work-item rows).
      const int per = p.raster.tiles_m * p.tiles_n;
      const int group = int(p.raster.by_grid.divide(unsigned(tile)));
      if (group >= p.args.batch) return w;
      TileCoord tc = raster_tile_fast(tile - group * per, p.raster);
      if (p.cluster > 1) tc.m = 2 * tc.m + int(cluster_rank());
      w.group = group;
      w.m0 = w.a_row = tc.m * kBlockM;
      w.n0 = w.b_col = tc.n * kBlockN;
      if (p.args.k_chunk > 0) {  // split-K partials: entry `group` is one K range of the problem
        w.k_begin = group * p.args.k_chunk;
        w.k_len = min_of(p.args.k_chunk, s.k - w.k_begin);
      }
      if (s.mode == GroupMode::kGroupedK) {
        const GroupRange r = clamp_group(s.offs, group, s.k);
        w.k_begin = r.begin;
        w.k_len = r.end - r.begin;
      }
      return w;
    }
    // Grouped M / N: find the group whose tiles contain `tile`, 32 groups per step.
    const int lane = threadIdx.x % 32;
    const int groups = p.args.batch;
    while (scan_group < groups) {
      const int g = scan_group + lane;
      const int count = g < groups ? group_tiles(g) : 0;
      int incl = count;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, g < groups && tile < scan_before + incl);
      if (hit != 0) {
        const int l = __ffs(hit) - 1;
        scan_group += l;
        scan_before += __shfl_sync(0xffffffffu, incl - count, l);
        break;
      }
      scan_before += __shfl_sync(0xffffffffu, incl, 31);
      scan_group += 32;
    }
    if (scan_group >= groups) return w;
    const int g = scan_group;
    const int local = tile - scan_before;
    if constexpr (kPtrArray) {
      const Sm90PtrProblem& pr = p.ptr_problems[g];
      const TileCoord tc = raster_tile(local, pr.tiles_m, pr.tiles_n, min_of(p.raster_group, pr.tiles_m));
      w.group = g;
      w.m0 = w.a_row = tc.m * kBlockM;
      w.n0 = w.b_col = tc.n * kBlockN;
      w.k_len = pr.args.shape.k;
      return w;
    }
    const GroupRange r = clamp_group(s.offs, g, s.mode == GroupMode::kGroupedM ? s.m : s.n);
    const int tm = s.mode == GroupMode::kGroupedM ? ceil_div(r.end - r.begin, kBlockM) : p.tiles_m;
    const int tn = s.mode == GroupMode::kGroupedN ? ceil_div(r.end - r.begin, kBlockN) : p.tiles_n;
    const TileCoord tc = raster_tile(local, tm, tn, min_of(p.raster_group, tm));
    w.group = g;
    w.m0 = w.a_row = tc.m * kBlockM;
    w.n0 = w.b_col = tc.n * kBlockN;
    if (s.mode == GroupMode::kGroupedM) {
      w.a_row += r.begin;
      w.m_len = r.end - r.begin;
    } else {
      w.b_col += r.begin;
    }
    return w;
  }
};

}  // namespace cutorch_gemm
