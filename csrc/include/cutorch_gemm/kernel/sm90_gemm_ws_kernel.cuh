#pragma once
// Hopper GEMM kernel: persistent, warp-specialized, cooperative (seeds: the Hopper talk).
//   warpgroup 0  producer: the lane 0s of Cfg::kProducerWarps warps issue TMA loads of A and B
//                k-slices in turn into a ring of shared-memory stages (full/empty mbarriers),
//                tile after tile (collective/sm90_producer.cuh)
//   warpgroups 1..kConsumers  consumers: wgmma from shared memory into registers, 64 rows of
//                the 128-row tile each; one wgmma group in flight, the stage behind it released;
//                then the fused epilogue straight from registers while the producer already
//                loads the next tile.
// Operands (Mma, collective/sm90_mma.cuh): fp16 / bf16, each K-major or MN-major (kAMn / kBMn:
// wgmma's transpose bits and the matching TMA boxes), 2-D or stacked 3-D; or e4m3 / e5m2, both
// K-major, with scaled_mm's epilogue. T is the epilogue's 16-bit type (bias, C, D unless fp32).
// A consumer holds a 64 x kBlockN fp32 fragment (kBlockN / 2 registers); the widths: device/sm90_configs.h.
// One persistent loop over the tiles of every problem of the launch: dense, batched, or grouped
// with device-resident offsets (scheduler/sm90_tile_scheduler.cuh).

#include <cuda.h>

#include <type_traits>

#include "cutorch_gemm/arch/sm90_cluster.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/arch/sm90_warpgroup.cuh"
#include "cutorch_gemm/arch/sm90_wgmma.cuh"
#include "cutorch_gemm/collective/sm90_ksplit_pair.cuh"
#include "cutorch_gemm/collective/sm90_lean_mainloop.cuh"
#include "cutorch_gemm/collective/sm90_mma.cuh"
#include "cutorch_gemm/collective/sm90_operand_load.cuh"
#include "cutorch_gemm/collective/sm90_pingpong_turns.cuh"
#include "cutorch_gemm/collective/sm90_producer.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/sm90_deferred_store.cuh"
#include "cutorch_gemm/epilogue/sm90_epilogue.cuh"
#include "cutorch_gemm/epilogue/sm90_streamk.cuh"
#include "cutorch_gemm/kernel/sm90_kernel_prologue.cuh"
#include "cutorch_gemm/kernel/sm90_kernel_storage.cuh"
#include "cutorch_gemm/pipeline/sm90_pipeline.cuh"
#include "cutorch_gemm/scheduler/sm90_tile_scheduler.cuh"

namespace cutorch_gemm {

// The variant flags (kSwiGlu, kPtrArray, kPlainTma, kGroupEnds, kBare), what and why: kernel/sm90_kernel_storage.cuh.
template <class Cfg, class Mma, typename T, bool kAMn, bool kBMn, bool kSwiGlu = false, bool kPtrArray = false,
          bool kPlainTma = false, bool kGroupEnds = false, bool kBare = false>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
sm90_gemm_ws_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                    const __grid_constant__ CUtensorMap tma_d, const __grid_constant__ CUtensorMap tma_c,
                    const Sm90Params p) {
  using E = typename Mma::Element;
  static_assert(sm90_kernel_variant_ok<Cfg, Mma, kAMn, kBMn, kSwiGlu, kPtrArray, kPlainTma, kGroupEnds, kBare>());
  // The fit-width cooperative tiles (128 x 80 ... 224; what they take: sm90_kernel_variant_ok).
  constexpr bool kFit = sm90_is_fit<Cfg, Mma>();
  constexpr int kAccRegs = Cfg::kBlockN / 2;  // a consumer's 64 x kBlockN fp32 fragment per thread
  // The deferred store (p.defer_store: what, why and what it measured, epilogue/sm90_deferred_store.cuh). The
  // fused SwiGLU's tiles too (kSwiGlu: 128 output columns, 32 packed registers, two slices, from registers).
  constexpr bool kDefer = sm90_defers<Cfg, Mma>() && !kPtrArray;
  // 64-column slices of a tile row (240 columns: four, the last from column 176: sm90_slice_first_col)
  constexpr int kSlices = ((kSwiGlu ? Cfg::kBlockN / 2 : Cfg::kBlockN) + 63) / 64;
  // Slices stored from registers: SwiGLU's tiles, and a grouped-M group's last partial tile in the
  // kGroupEnds variant (elsewhere such a tile takes the normal epilogue).
  [[maybe_unused]] constexpr bool kDeferDirect = kSwiGlu || kGroupEnds;  // (unused by the fit-width tiles)
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // The cooperative compact variant: fixed tile grids (dense, batched, grouped-K), every tile deferred.
  constexpr bool kCompactCoop = kPlainTma && !Cfg::kPingpong;
  using Storage = Sm90SharedStorage<Cfg, E>;
  using State = sm90::PipelineState<Cfg::kStages>;
  // The compact kernels run on fixed tile grids (launch_sm90); stream-K pieces come only to the
  // dense cooperative launches of the kernels that test for them below.
  constexpr bool kStreamK = !Cfg::kPingpong && !kSwiGlu && !kPtrArray && !kGroupEnds && !kFit && !kBare;
  // beta * C by TMA (Sm90Params::tma_load_c): the general 16-bit kernels with 64-column slices.
  constexpr bool kCLoads = sm90_loads_c<Cfg, Mma, T>() && !kPlainTma && !kSwiGlu && !kPtrArray && !kGroupEnds;
  // (fixed tile grids: the compact kernels and the fit-width tiles, which run dense launches only)
  using Scheduler = Sm90TileScheduler<Cfg::kBlockM, kSwiGlu ? Cfg::kBlockN / 2 : Cfg::kBlockN, Cfg::kBlockK, kPtrArray,
                                      kPlainTma || kFit, kStreamK>;
  extern __shared__ uint8_t smem_raw[];
  // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; stages must start on it.
  Storage& s = *reinterpret_cast<Storage*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  // 2x1 clusters (p.cluster == 2): this CTA's rank; its producer loads that half of the B tile.
  const int rank = p.cluster > 1 ? int(sm90::cluster_ctarank()) : 0;
  const sm90::TmaPipeline<Cfg::kStages> pipe{s.full, s.empty, &p.cluster};

  const int warpgroup = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;
  const GemmArgs& g = p.args;
  constexpr int kBCols = sm90_b_cols<Cfg>();  // B columns a stage holds (Sm90MnB: whole 64-column boxes)
  // The producer's k-block kb of work item w (collective/sm90_producer.cuh). NOTE: the early start's loads go without
  // B's L2 policy: each call site inlines both load sequences, and the compact kernels' size shows at 1024^3. (An
  // evict-normal hint on every load where B is not streamed cost H200 4096^3 and 8192x4096x14336 3-4%.)
  auto load_stage = [&](State& st, const Sm90Work& w, int kb, const CUtensorMap* map_a, const CUtensorMap* map_b,
                        bool b_hint = false, uint64_t b_policy = 0) {
    sm90_load_stage<Cfg, E, kAMn, kBMn, kSwiGlu, kBCols>(s, pipe, p, rank, &tma_b, st, w, kb, map_a, map_b, b_hint,
                                                         b_policy);
  };
  // The CTA's first work item on the fixed tile grids, looked up once by thread 0 and shared (s.first_work), and
  // the early start's first loads: the compact kernels and the fit-width tiles (kernel/sm90_kernel_prologue.cuh).
  constexpr bool kFirstShared = kPlainTma || kFit;
  // k-blocks of the first tile already issued (thread 0, and the other producer warps); the barriers, the wait for
  // the launch before (programmatic dependent launch) and the CTA barrier.
  int early = sm90_kernel_prologue<Cfg, Scheduler, State, kFirstShared, kCLoads, kPtrArray>(s, p, &tma_a, &tma_b,
                                                                                          &tma_d, load_stage);

  if (warpgroup == 0) {
    sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
    // p.producers warps issue the k-blocks in turn (collective/sm90_producer.cuh); warps other than
    // 0 learn the early start's count here.
    if constexpr (kFirstShared) {
      if (tid_in_wg >= 32 && tid_in_wg < 32 * p.producers)
        early = sm90_early_count<Cfg, Scheduler, kFirstShared>(p, s.first_work);
    }
    sm90_produce<Scheduler, State, Cfg::kStages, kPtrArray>(p, pipe, &tma_a, &tma_b, tid_in_wg, early,
                                                            kFirstShared ? &s.first_work : nullptr, load_stage);
  } else {
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    // The consumer index read from lane 0: the compiler then knows it is warp-uniform and keeps the stage
    // descriptors in uniform registers, no R2UR per wgmma (H100, ncu at fixed clocks: fp8 4096^3 -10% instructions,
    // -1.5% cycles; bf16 8192x14336x4096 236 M -> 205 M instructions (cuBLAS 160 M), -1.7% cycles; every layout).
    const int consumer = __shfl_sync(0xffffffffu, warpgroup - 1, 0);
    Scheduler sched(p);
    auto item = [&](int i) -> Sm90Work {  // (kFirstShared: the first from shared memory)
      if constexpr (kFirstShared) {
        if (i == 0) return sm90_uniform_work(s.first_work);
      }
      return sched.get_item(i);
    };
    State st;
    float acc[kAccRegs];
    // The lean mainloop (collective/sm90_lean_mainloop.cuh) of the ping-pong and cooperative kernels (the
    // deferred store's slices through its hook); not the promoting 8-bit ones (their own loop, below), SwiGLU's
    // or the pointer-array kernels.
    constexpr bool kLean = !Mma::kPromote && !kSwiGlu && !kPtrArray;
    // The deferred tile (kDefer): its packed D, where it goes, and the next slice to store (kSlices: nothing pending).
    // pend_d: a grouped-M tile past its group's end, stored from registers (its warpgroup's first row of D; pend_row
    // then counts the rows in the group); nullptr: by TMA (pend_row: D's row).
    uint32_t pend[kDefer ? (kSwiGlu ? kAccRegs / 4 : kAccRegs / 2) : 1];
    int pend_next = kSlices, pend_row = 0, pend_col = 0, pend_group = 0, pend_n = 0;
    uint16_t* pend_d = nullptr;
    auto store_pending_slice = [&] {
      if constexpr (kDefer) {
        auto at = [&](auto slice) {
          if constexpr (kDeferDirect) {
            if (kSwiGlu || pend_d) {
              sm90_store_packed_slice_direct<decltype(slice)::value>(pend, pend_d, g.shape.d_sm, pend_row, pend_col,
                                                                     pend_n, tid_in_wg);
              return;
            }
          }
          sm90_store_packed_slice<Cfg, decltype(slice)::value>(pend, s.epi_slot[consumer].u.out, &tma_d, p.d_3d,
                                                               pend_group, pend_row, pend_col, pend_n, tid_in_wg,
                                                               1 + consumer);
        };
        static_assert(kSlices == 4 || kSlices == 3 || kSlices == 2,
                      "four slices (256 and 240 columns; three: 192; two: SwiGLU)");
        if (pend_next == 0) at(std::integral_constant<int, 0>{});
        else if (kSlices == 2 || pend_next == 1) at(std::integral_constant<int, 1>{});
        else if (kSlices == 3 || pend_next == 2) at(std::integral_constant<int, kSlices >= 3 ? 2 : 0>{});
        else at(std::integral_constant<int, kSlices == 4 ? 3 : 0>{});
        ++pend_next;
      }
    };
    auto store_pending_slice_if_any = [&] {
      if constexpr (kDefer) {
        if (pend_next < kSlices) store_pending_slice();
      }
    };
    auto flush_pending = [&] {
      if constexpr (kDefer) {
        while (pend_next < kSlices) store_pending_slice();
      }
    };
    // Cooperative: every tile of the CTA's sequence, rows [64c, 64c + 64) of it. Ping-pong: every other tile, all rows;
    // the ring carries the other warpgroup's tiles in between, which this one skips.
    const int row_in_tile = Cfg::kPingpong ? 0 : consumer * 64;
    [[maybe_unused]] Sm90PingpongTurns turns{s.order, consumer};
    // The K-split pair (collective/sm90_ksplit_pair.cuh): both warpgroups on the CTA's one tile, k-blocks alternating.
    constexpr bool kKSplit = sm90_has_ksplit<Cfg, Mma>() && kPlainTma && kLean;
    const bool ksplit = kKSplit && p.ksplit;
    const int step = Cfg::kPingpong && !ksplit ? Cfg::kConsumers : 1;
    int own = 0;  // tiles this warpgroup has done
    for (int i = Cfg::kPingpong && !ksplit ? consumer : 0;; i += step, ++own) {
      if (Cfg::kPingpong && !ksplit && i > 0) {
        const Sm90Work other = item(i - 1);
        if (other.group < 0) break;
        st.advance(Scheduler::k_blocks(other));
      }
      const Sm90Work w = item(i);
      if (w.group < 0 || (ksplit && i > 0)) break;  // (ksplit: the CTA's one tile, this warpgroup's k-blocks)
      const int k_blocks = ksplit ? (Scheduler::k_blocks(w) + 1 - consumer) / 2 : Scheduler::k_blocks(w);
      if (ksplit && consumer == 1) st.advance();
      const int tail_k = w.k_len % Cfg::kBlockK;  // grouped-K: the last slice holds the next group's K
      const bool zero_tail = !kBare && g.shape.mode == GroupMode::kGroupedK && tail_k != 0;
      // (kCLoads) the warpgroup's C slices; the first ones load now, under the mainloop (not for a stream-K piece
      // that ends in partials: it runs no epilogue)
      auto c_slices = [&] {
        return Sm90CSlices{&tma_c, s.c_full[consumer], s.c_phase[consumer], w.m0 + row_in_tile};
      };
      if constexpr (kCLoads) {
        if (p.tma_load_c && tid_in_wg == 0 && w.sk_role != 1)
          sm90_prefetch_c<Cfg>(c_slices(), s.epi_slot[consumer].u.out, w.n0, g.shape.n);
      }
      // Ping-pong: this warpgroup's turn, and its stage releases after the other's
      // (collective/sm90_pingpong_turns.cuh: why both).
      if (Cfg::kPingpong && !ksplit) turns.begin_tile(own, !p.pp_gate_off);
      auto gate_wait = [&] {
        if constexpr (Cfg::kPingpong) turns.before_release();
      };
      auto release_gated = [&](const State& stage) {
        gate_wait();
        pipe.consumer_release(stage);
      };
      // A group's last tile (grouped-M, cooperative) whose second 64 rows all lie past the group's end: those rows
      // would hold the next group's tokens, computed and thrown away. That warpgroup only passes the stages on (a wait,
      // then its release: the empty barrier counts both warpgroups' warps, and the wait keeps its arrivals in the
      // stage's current phase) and stores nothing, so the other's wgmma have the tensor core to themselves and the tile
      // takes about half as long. With skewed routing about half the groups end that way. Where the launch allows it
      // (p.half_tiles: device/sm90_configs.h, choose_sm90_half_tiles). NOTE: not with both operands MN-major (not a
      // forward layout): there ptxas then serialized the wgmma (C7511).
      if constexpr (!Cfg::kPingpong && !Mma::kPromote && !kPtrArray && !(kAMn && kBMn) && !kCompactCoop) {
        if (g.shape.mode == GroupMode::kGroupedM && row_in_tile > 0 && p.half_tiles) {
          if (w.m0 + row_in_tile >= w.m_len) {
            flush_pending();  // (no wgmma here to hide the stores under)
            for (int kb = 0; kb < k_blocks; ++kb) {
              pipe.consumer_wait(st);
              pipe.consumer_release(st);
              st.advance();
            }
            continue;
          }
        }
      }
      // Zero: an empty grouped-K problem (the epilogue of a zero product), and always for the
      // promoting 8-bit mainloop, which adds each k-block's partial tile to it.
      if (Mma::kPromote || k_blocks == 0) {
#pragma unroll
        for (int r = 0; r < kAccRegs; ++r) acc[r] = 0.0f;
      }
      State prev;
      constexpr uint64_t kStepA = kAMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
      constexpr uint64_t kStepB = kBMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
      // Waits for k-block kb's stage (st), zeroes a grouped-K tail slice, and returns the stage's
      // A and B descriptors.
      auto prepare = [&](int kb, uint64_t& da, uint64_t& db) {
        pipe.consumer_wait(st);
        if (zero_tail && kb == k_blocks - 1) {
          // Cooperative: the two warpgroups split the shared B tile and zero their own A rows.
          const int part = Cfg::kPingpong ? tid_in_wg : tid_in_wg + 128 * consumer;
          const int parts = Cfg::kPingpong ? 128 : 128 * Cfg::kConsumers;
          sm90_zero_k_tail<Cfg, E, kAMn>(s.a[st.index] + row_in_tile * Cfg::kBlockK, Cfg::kPingpong ? Cfg::kBlockM : 64,
                                         tail_k, tid_in_wg, 128);
          sm90_zero_k_tail<Cfg, E, kBMn>(s.b[st.index], kBCols, tail_k, part, parts);
          sm90::fence_proxy_async_shared();
          named_barrier_sync(Cfg::kPingpong ? 3 + consumer : 1 + Cfg::kConsumers, parts);
        }
        // Both layouts put 64 rows of A (M) at 64 * kBlockK elements: [rows][64 K] or [M/64][K][64].
        const E* a_tile = s.a[st.index] + row_in_tile * Cfg::kBlockK;
        da = kAMn ? sm90::make_desc_mn_major_sw128(a_tile, Cfg::kBlockK) : sm90::make_desc_k_major_sw128(a_tile);
        db = kBMn ? sm90::make_desc_mn_major_sw128(s.b[st.index], Cfg::kBlockK)
                  : sm90::make_desc_k_major_sw128(s.b[st.index]);
      };
      if constexpr (Mma::kPromote) {
        // The promoting 8-bit mainloop. Each k-block's partial tiles are read in the iteration that issued them (see
        // the NOTE on C7514 below), and the next k-block's stage is waited for and described while this one's last
        // group runs, so between a warpgroup's last wait and its next wgmma there are only the adds. (With the wait,
        // the grouped-K check and the descriptor arithmetic on that path, H100 fp8 4096^3 kept the tensor pipe 60%
        // busy: the other warpgroup's group did not cover the gap.) A k-block's stage is released (prev) once this
        // warpgroup has issued the next k-block's first group; the last one after the loop. NOTE: released right after
        // the last wait, the release (lane 0's branch, the cluster check, a volatile read of %cluster_ctarank) sat
        // between that wait and the adds, on the path to the next wgmma. H100, ncu at fixed clocks, 4096x4096xK: 35.5
        // -> 32.3 cycles per unit of K (cuBLAS 32.6), 4096^3 179.4 K -> 167.9 K cycles (cuBLAS 156.1 K),
        // 8192x14336x4096 1.151 M -> 1.074 M (1.025 M).
        uint64_t da = 0, db = 0;
        if (k_blocks > 0) prepare(0, da, db);
        for (int kb = 0; kb < k_blocks; ++kb) {
          const State cur = st;
          auto release_prev = [&] {
            if (kb > 0) release_gated(prev);  // every group that read it completed
          };
          uint64_t next_da = 0, next_db = 0;
          auto prepare_next = [&] {
            st.advance();
            if (kb + 1 < k_blocks) prepare(kb + 1, next_da, next_db);
          };
          // Cooperative: two halves of N, each: the k-block's instructions into a fresh 64-register
          // tile, wait, add it to the fp32 accumulator. The wait exposes the latency to this
          // warpgroup; the other consumer's wgmma keep the tensor core busy meanwhile.
          // One k-block's group into a fresh partial tile d (32, 48 or 64 registers: an n64, n96 or
          // n128 slice of the tile's columns), B from `b_off` (descriptor units: bytes >> 4) on.
          auto issue_part = [&](auto& d, uint64_t b_off) {
            sm90::fence_accumulators(d);
            sm90::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < Cfg::kBlockK / Mma::kInstrK; ++kk) {
              Mma::mma_part(d, da + kStepA * kk, db + b_off + kStepB * kk, kk > 0 ? 1 : 0);
            }
            sm90::wgmma_commit();
          };
          // acc[kFirst, kFirst + kRegs) += d, once d's group has completed (the caller waited).
          auto add_part = [&](auto& d, auto first) {
            constexpr int kRegs = int(sizeof(d) / sizeof(float));
            sm90::fence_accumulators(d);
#pragma unroll
            for (int r = 0; r < kRegs; ++r) acc[decltype(first)::value + r] += d[r];
          };
          // A K-major B row is 128 bytes: a slice of n columns starts n * 128 bytes on.
          constexpr auto kCols = [](int n) { return uint64_t(n * 128) >> 4; };
          using At0 = std::integral_constant<int, 0>;  // add_part's first register
          if constexpr (Cfg::kBlockN == 64) {
            // 64 columns (small M: a stream of the weight from DRAM, one warpgroup's tile per CTA
            // where tiles <= CTAs): the k-block's group, waited for before its adds. The tensor
            // core idles meanwhile; the tile's bytes, not its arithmetic, set the pace.
            float part[32];
            issue_part(part, kCols(0));
            release_prev();
            prepare_next();
            sm90::wgmma_wait<0>();
            add_part(part, At0{});
          } else if constexpr (Cfg::kPingpong) {
            // Ping-pong: one warpgroup issues wgmma at a time, so its own adds must overlap its
            // wgmma. Four n64 quarters through two 32-register tiles P, Q, straight-line within the
            // k-block (ptxas serializes every wgmma, warning C7514, when a tile is read in a later
            // loop iteration than its group's): q0 -> P, q1 -> Q, add P, q2 -> P, add Q, q3 -> Q,
            // add P, add Q; only the last add waits with nothing queued. H100, 64x8192x8192: 0.75x
            // torch._scaled_mm vs 0.645x with halves. (Cooperative tiles keep the halves: there
            // the other warpgroup's wgmma cover the adds, and quarters measured 2-8% slower.)
            float qp[32], qq[32];
            issue_part(qp, kCols(0));
            issue_part(qq, kCols(64));
            release_prev();
            sm90::wgmma_wait<1>();
            add_part(qp, At0{});
            issue_part(qp, kCols(128));
            sm90::wgmma_wait<1>();
            add_part(qq, std::integral_constant<int, 32>{});
            issue_part(qq, kCols(192));
            prepare_next();
            sm90::wgmma_wait<1>();
            add_part(qp, std::integral_constant<int, 64>{});
            sm90::wgmma_wait<0>();
            add_part(qq, std::integral_constant<int, 96>{});
          } else if constexpr (Cfg::kBlockN == 192) {
            // 192 columns: two n96 partial tiles, issued back to back; the first half's adds run
            // while the tensor core still works on the second half (one drain per k-block, not two).
            float p0[48], p1[48];
            issue_part(p0, kCols(0));
            issue_part(p1, kCols(96));
            release_prev();
            prepare_next();
            sm90::wgmma_wait<1>();
            add_part(p0, At0{});
            sm90::wgmma_wait<0>();
            add_part(p1, std::integral_constant<int, 48>{});
          } else {
            // NOTE: plain adds into the zeroed accumulator. "kb > 0 ? acc + part : part" compiled to
            // an FSEL per register besides the FADD, which lengthened each warpgroup's turn between
            // its wait and its next wgmma by 64 instructions: 0.60-0.72x torch._scaled_mm -> 0.73-0.86x
            // (H100, interleaved, six shapes; results bit-identical to torch's in fp32 out).
            float part[64];
            issue_part(part, kCols(0));
            release_prev();
            sm90::wgmma_wait<0>();
            add_part(part, At0{});
            issue_part(part, kCols(128));
            prepare_next();
            sm90::wgmma_wait<0>();
            add_part(part, std::integral_constant<int, 64>{});
          }
          prev = cur;
          da = next_da;
          db = next_db;
        }
      } else {
        // The lean loop (collective/sm90_lean_mainloop.cuh) takes every k-block but a grouped-K tail's last, which the
        // loop below takes (zeroing its tail first) from the lean loop's state (prev, the accumulator's scale); there
        // the deferred store's slices the lean loop did not reach go out after the tile (flush_pending).
        int kb_lean = 0;
        if constexpr (kLean) {
          kb_lean = zero_tail ? k_blocks - 1 : k_blocks;
          if constexpr (kDefer) {
            sm90_lean_mainloop<Cfg, Mma, kAMn, kBMn>(s, pipe, acc, st, prev, kb_lean, row_in_tile, p.cluster, kSlices,
                                                     [&] { store_pending_slice_if_any(); });
          } else if constexpr (Cfg::kPingpong) {
            sm90_lean_mainloop<Cfg, Mma, kAMn, kBMn>(s, pipe, acc, st, prev, kb_lean, row_in_tile, p.cluster, 0,
                                                     Sm90NoHook{}, gate_wait, ksplit ? 2 : 1);
          } else {
            sm90_lean_mainloop<Cfg, Mma, kAMn, kBMn>(s, pipe, acc, st, prev, kb_lean, row_in_tile, p.cluster);
          }
        }
        // Every k-block of SwiGLU's and the pointer-array kernels; a grouped-K tail's last of the others.
        for (int kb = kb_lean; kb < k_blocks; ++kb) {
          uint64_t da, db;
          prepare(kb, da, db);
          sm90::fence_accumulators(acc);
          sm90::wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < Cfg::kBlockK / Mma::kInstrK; ++kk) {
            Mma::template mma<kAMn, kBMn>(acc, da + kStepA * kk, db + kStepB * kk, (kb > 0 || kk > 0) ? 1 : 0);
          }
          sm90::wgmma_commit();
          // (under this group; NOTE: not in the lean kernels' tail k-block: compiled there too, the hook's
          // second copy made ptxas spill 8 bytes in the 16-bit cooperative kernel with an MN-major B)
          if constexpr (!kLean) store_pending_slice_if_any();
          sm90::fence_accumulators(acc);
          sm90::wgmma_wait<1>();  // the previous k-slice's wgmma is done: release its stage
          if (kb > 0) release_gated(prev);
          prev = st;
          st.advance();
        }
      }
      flush_pending();  // (a tile shorter than kSlices k-blocks, or an empty one)
      if constexpr (kDefer) {
        // NOTE: nothing is pending from here on, which the compiler cannot see (its next use, in the
        // next tile's mainloop, is behind a run-time check): without these constants it kept the
        // packed registers live through the other epilogues and spilled ~1 KB.
#pragma unroll
        for (int r = 0; r < int(sizeof(pend) / sizeof(pend[0])); ++r) pend[r] = 0u;
      }
      if (Cfg::kPingpong && !ksplit) turns.pass_turn(tid_in_wg);
      // The compact cooperative kernel: the tile's bias, one 4-byte column pair per thread, loaded under its last wgmma
      // group and staged in shared memory for the packing (p.bias_early). Why: loaded at packing time, its round trip
      // to L2 ran with the tensor core idle (ncu, H100: + bias cost 2.4% of 8192x14336x4096's cycles, 1.7% of
      // 4096^3's).
      const bool stage_bias = kCompactCoop && !kBare && g.bias && p.bias_early;
      uint32_t bias_pair = 0;
      if constexpr (kCompactCoop) {
        if (stage_bias) {
          const int c = w.n0 + 2 * tid_in_wg;  // (pairs 4-byte aligned, n even: Sm90Params::defer_store)
          const uint16_t* b16 = static_cast<const uint16_t*>(g.bias) + resolve_problem(g.shape, w.group).bias_off;
          // (the tile's kBlockN / 2 pairs: 192-wide tiles leave the last 32 threads out)
          if (c < g.shape.n && tid_in_wg < Cfg::kBlockN / 2)
            bias_pair = __ldg(reinterpret_cast<const unsigned int*>(b16 + c));
        }
      }
      sm90::wgmma_wait<0>();
      sm90::fence_accumulators(acc);
      if (k_blocks > 0) release_gated(prev);  // (the last k-block's stage)
      if (Cfg::kPingpong && !ksplit) turns.open_gate(tid_in_wg);
      if constexpr (kKSplit) {
        if (ksplit && sm90_ksplit_pair_reduce(acc, &s.b[0][0], consumer, tid_in_wg)) break;
      }
      if constexpr (kFit) {  // (launch_sm90 refuses these configs without the direct epilogue)
        const Problem prob = resolve_problem(g.shape, w.group);
        // The big tiles (320, 192x192): D by TMA in 64-column slices through the epilogue buffers where the launch
        // encoded D's map and there is no C, plain (p.tma_store) or bias + an activation (p.tma_store_act). Why: from
        // registers a tile's D went out as 4-byte stores with the tensor core idle; the 320 tile lost 2.5-6.5% so.
        if constexpr (sm90_is_big<Cfg, Mma>()) {
          if (p.tma_store && g.c == nullptr) {
            sm90_store_tma_whole<Cfg, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                         w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
            continue;
          }
          if (p.tma_store_act) {
            sm90_store_tile_tma_act<Cfg, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                            w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
            continue;
          }
        }
        const int row = w.m0 + row_in_tile;  // (+ beta * C: sm90_direct_c)
        if (g.out_f32) sm90_store_tile_direct<T, float, kAccRegs, true>(g, prob, acc, row, w.n0, tid_in_wg);
        else sm90_store_tile_direct<T, T, kAccRegs, true>(g, prob, acc, row, w.n0, tid_in_wg);
        continue;
      } else {  // (every other config: not indented; the block ends at the tile loop's end)
      if constexpr (kStreamK) {  // stream-K pieces (dense launches)
        if (p.sk_tiles > 0) {
          // (the piece's role looked up again here: kept live across the mainloop, it spilled)
          const Sm90Work piece = item(i);
          if (piece.sk_role == 1) {
            sm90_streamk_store(g, acc, int(blockIdx.x), consumer, tid_in_wg, 1 + consumer);
            continue;
          }
          if (piece.sk_role == 2) {  // (sk_first is a unit: a CTA, or a cluster whose CTA of this rank)
            sm90_streamk_add(g, acc, piece.sk_first * p.cluster + (int(blockIdx.x) & (p.cluster - 1)), int(blockIdx.x),
                             consumer, tid_in_wg, 1 + consumer, p.cluster);
          }
        }
      }
      if constexpr (kPtrArray) {  // the problem's own arguments; a dense problem
        const Sm90PtrProblem& pr = p.ptr_problems[w.group];
        const Problem prob = resolve_problem(pr.args.shape, 0);
        if (pr.direct) {
          if (pr.args.out_f32) sm90_store_tile_direct<T, float>(pr.args, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
          else sm90_store_tile_direct<T, T>(pr.args, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
        } else {
          sm90_store_tile<T>(pr.args, prob, acc, sm90::smem_addr(s.epi_slot[consumer].u.epi), w.m0 + row_in_tile,
                             w.n0, tid_in_wg, 1 + consumer);
        }
        continue;
      }
      if constexpr (kBare && Cfg::kPingpong) {  // (D = acc: no bias, alpha 1, a 16-bit D)
        // A one-tile launch (p.one_tile): the slices from the idle stages, one buffer each (the CTA's only tile: every
        // stage was loaded and read for it; fenced, as the async proxy wrote and read them last).
        if constexpr (Cfg::kEpiBuffers == 1 && Cfg::kBlockN == 128) {
          static_assert(sizeof(s.a) >= 2 * sizeof(s.epi_slot[0].u.out), "two epilogue buffers in the A stages");
          if (p.one_tile && !ksplit) {
            sm90::fence_proxy_async_shared();
            sm90_store_tile_tma<Sm90WithBuffers<Cfg, 2>, T, T, false, Activation::kNone, false>(
                g, resolve_problem(g.shape, w.group), acc, reinterpret_cast<uint8_t(*)[64 * 128]>(&s.a[0][0]), &tma_d,
                p.d_3d, w.group, w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
            continue;
          }
        }
        sm90_store_tile_tma<Cfg, T, T, false, Activation::kNone, false>(
            g, resolve_problem(g.shape, w.group), acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
            w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
        continue;
      } else if constexpr (kPlainTma && Cfg::kPingpong) {  // (launched with p.tma_store on fixed grids: whole tiles)
        sm90_store_tma_whole<Cfg, T>(g, resolve_problem(g.shape, w.group), acc, s.epi_slot[consumer].u.out, &tma_d,
                                     p.d_3d, w.group, w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
        continue;
      }
      const Problem prob = resolve_problem(g.shape, w.group);
      // TMA stores need the 64 rows inside the problem: D's bounds clip at the tensor's end, not
      // at a group's (grouped-M), so a group's last partial tile stores from registers.
      const bool tma_rows = g.shape.mode != GroupMode::kGroupedM || w.m0 + row_in_tile + 64 <= prob.m;
      // The packed tile (in pend) now pending: n columns; by TMA at D row `row`, or from registers
      // (d: the warpgroup's first row of D; `row`: its rows in the group).
      auto set_pending = [&](int n, uint16_t* d, int row) {
        pend_next = 0;
        pend_col = w.n0;
        pend_group = w.group;
        pend_n = n;
        pend_d = d;
        pend_row = row;
      };
      // (grouped-M: D's rows are the problem's, d_off on)
      auto rows_d = [&] {
        return static_cast<uint16_t*>(g.d) + prob.d_off + index_t(w.m0 + row_in_tile) * g.shape.d_sm;
      };
      if constexpr (kCompactCoop || kGroupEnds) {
        // launch_sm90 takes these variants only where every tile defers (p.defer_store: a 16-bit D by
        // TMA, no C, bias pairs, an activation the packing has), so the pack cannot decline; with
        // K = 0 (an empty grouped-K group) the accumulator was zeroed above. kGroupEnds: a tile past its
        // group's end goes out from registers.
        if (stage_bias) {  // (the previous tile's packing read it before the slice stores' barriers)
          // NOTE: a row holds kBlockN / 2 pairs; a 192-wide tile's threads 96-127 would write the other
          // consumer's row.
          if (tid_in_wg < Cfg::kBlockN / 2) {
            asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm90::smem_addr(&s.bias_stage[consumer][tid_in_wg])),
                         "r"(bias_pair) : "memory");
          }
          named_barrier_sync(1 + consumer, 128);
        }
        if constexpr (kBare) {  // (D = acc: alpha 1, no bias, no activation)
          sm90_pack_tile<T, Activation::kNone, false>(acc, 1.0f, nullptr, w.n0, prob.n, tid_in_wg % 32, pend, nullptr);
        } else {
          sm90_pack_tile_for<T>(g, prob, acc, w.n0, tid_in_wg % 32, pend,
                                stage_bias ? s.bias_stage[consumer] : nullptr);
        }
        if (kCompactCoop || tma_rows) set_pending(prob.n, nullptr, w.a_row + row_in_tile);
        else set_pending(prob.n, rows_d(), prob.m - (w.m0 + row_in_tile));
        continue;
      } else if constexpr (kDefer && !kSwiGlu) {
        // The general kernel's deferring launches (CUTORCH_GEMM_SM90_EPILOGUE=general, grouped-M with
        // CUTORCH_GEMM_SM90_GROUP_ENDS=off): whole TMA tiles only; an empty grouped-K problem and a
        // group's partial last tile take the epilogues below.
        if (p.defer_store && k_blocks > 0 && tma_rows &&
            sm90_pack_tile_for<T>(g, prob, acc, w.n0, tid_in_wg % 32, pend)) {
          set_pending(prob.n, nullptr, w.a_row + row_in_tile);
          continue;
        }
      }
      if constexpr (kSwiGlu) {  // grouped-M or batched, bias, no C
        if constexpr (kDefer) {
          const int f = prob.n / 2;
          const uint16_t* b16 = g.bias ? static_cast<const uint16_t*>(g.bias) + prob.bias_off : nullptr;
          if (p.defer_store && f % 2 == 0 && reinterpret_cast<uintptr_t>(b16) % 4 == 0) {
            sm90_pack_swiglu<T>(acc, b16, f, w.n0, tid_in_wg % 32, pend);
            set_pending(f, rows_d(), prob.m - (w.m0 + row_in_tile));
            continue;
          }
        }
        if (g.out_f32) {
          sm90_store_tile_swiglu<T, float>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg, p.direct_epilogue);
        } else {
          sm90_store_tile_swiglu<T, T>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg, p.direct_epilogue);
        }
        continue;
      }
      if constexpr (Mma::kScaled) {  // scaled_mm: dense, no C, no activation
        if (p.tma_store) {
          // (3-D D: split-K's partials, one K range per batch entry, sm90_scaled_mm_split)
          if (g.out_f32) sm90_store_tma_plain<Cfg, T, float, true>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d,
                                                                 p.d_3d, w.group, w.a_row + row_in_tile, w.n0,
                                                                 tid_in_wg, 1 + consumer);
          else sm90_store_tma_plain<Cfg, T, T, true>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d,
                                                     w.group, w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
        } else if (g.out_f32) {
          sm90_store_tile_scaled<float>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg, p.direct_epilogue);
        } else {
          sm90_store_tile_scaled<T>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg, p.direct_epilogue);
        }
        continue;
      }
      if constexpr (kCLoads) {
        if (p.tma_load_c) {  // (one dense problem: whole TMA rows)
          const Sm90CSlices cs = c_slices();
          constexpr bool kActs = sm90_c_acts<Cfg, kBMn>();
          sm90_store_tile_tma_act<Cfg, T, true, kActs>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d,
                                                       w.group, w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer,
                                                       &cs);
          continue;
        }
      }
      if (p.tma_store_act && tma_rows) {
        sm90_store_tile_tma_act<Cfg, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                        w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
        continue;
      }
      if constexpr (Cfg::kEpiBuffers >= 2 && kAccRegs == 128) {  // (256-column tiles; not the 240-wide one's compact kernel)
        if (p.tma_store_fused && tma_rows) {
          if (g.out_f32)
            sm90_store_tile_tma_fused<Cfg, T, float>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                                     w.a_row + row_in_tile, w.m0 + row_in_tile, w.n0, tid_in_wg,
                                                     1 + consumer);
          else
            sm90_store_tile_tma_fused<Cfg, T, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                                 w.a_row + row_in_tile, w.m0 + row_in_tile, w.n0, tid_in_wg,
                                                 1 + consumer);
          continue;
        }
      }
      if (p.tma_store && tma_rows) {
        sm90_store_tma_whole<Cfg, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                     w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
      } else if (p.direct_epilogue) {
        if (g.out_f32) sm90_store_tile_direct<T, float>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
        else sm90_store_tile_direct<T, T>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
      } else {
        sm90_store_tile<T>(g, prob, acc, sm90::smem_addr(s.epi_slot[consumer].u.epi), w.m0 + row_in_tile, w.n0,
                           tid_in_wg, 1 + consumer);
      }
      }  // (!kFit)
    }
    // The CTA's last tile (kDefer): its slices from the idle stages, the bare kernels' each as soon as it is written
    // (only there: it spilled in the others). A/B: CUTORCH_GEMM_SM90_LAST_FRESH=off | all (Sm90Params::last_tile_mode).
    if constexpr (kDefer && !kDeferDirect) {
      if (p.last_tile_mode != 1 && sm90_store_last_tile_fresh<Cfg, kSlices>(pend_next == 0, pend, &s.a[0][0], consumer,
                                                                         &tma_d, p.d_3d, pend_group, pend_row, pend_col,
                                                                         pend_n, tid_in_wg, kBare && !p.last_tile_mode))
        pend_next = kSlices;
    }
    flush_pending();  // (with CUTORCH_GEMM_SM90_LAST_FRESH=off, and the kDeferDirect variants)
    // Shared memory must outlive the TMA stores that read it. Their writes need no wait here: nothing in this kernel
    // reads D back, and work later in the stream sees the grid's writes once the grid completes.
    if ((p.tma_store || p.tma_store_act || p.tma_store_fused || p.tma_load_c) && tid_in_wg == 0) {
      if (p.exit_wait_all) sm90::bulk_wait_group_all();
      else sm90::bulk_wait_group_read<0>();
    }
  }
#endif
}

}  // namespace cutorch_gemm
