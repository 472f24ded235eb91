#pragma once
// Hopper GEMM kernel: persistent, warp-specialized, cooperative (seeds: the Hopper talk).
//   warpgroup 0  producer: one elected thread issues TMA loads of A and B k-slices into a ring
//                of shared-memory stages (full/empty mbarriers), tile after tile
//   warpgroups 1..kConsumers  consumers: wgmma from shared memory into registers, 64 rows of
//                the 128-row tile each; one wgmma group in flight, the stage behind it released;
//                then the fused epilogue straight from registers while the producer already
//                loads the next tile.
// Operands: fp16 / bf16, each K-major or MN-major (kAMn / kBMn: wgmma's transpose bits and the
// matching TMA boxes), 2-D or stacked 3-D; one persistent loop over the tiles of every problem
// of the launch: dense, batched, or grouped with device-resident offsets
// (scheduler/sm90_tile_scheduler.cuh).

#include <cuda.h>

#include <type_traits>

#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/arch/sm90_warpgroup.cuh"
#include "cutorch_gemm/arch/sm90_wgmma.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/simt_epilogue.cuh"
#include "cutorch_gemm/pipeline/sm90_pipeline.cuh"
#include "cutorch_gemm/scheduler/sm90_tile_scheduler.cuh"

namespace cutorch_gemm {

constexpr int Sm90EpilogueCols = 32;

struct Acc4 {
  float v[4];
};

// Two adjacent output columns as one store: 16-bit pairs (4 bytes) or fp32 pairs (8 bytes).
template <typename Out>
CG_DEVICE void store_pair(Out* p, float v0, float v1) {
  if constexpr (std::is_same_v<Out, float>) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  } else {
    Vec<Out, 2> x;
    x.v[0] = from_acc<Out>(v0);
    x.v[1] = from_acc<Out>(v1);
    *reinterpret_cast<Vec<Out, 2>*>(p) = x;
  }
}

// Direct epilogue for D = alpha * acc (+ bias): no C, no activation, row-major D with even row
// stride (the host checks; Sm90Params::direct_epilogue). Each thread stores its accumulator
// pairs (wgmma layout: rows 16w + l/4 (+8), columns 8j + 2(l%4) (+1)) straight from registers:
// about two instructions per pair instead of the staged path's functor per element. Fully
// inside tiles skip every bounds check.
// NOTE: the unrolled body is small because it has no activation code (the staged path exists
// because 128 unrolled activations overflowed the instruction cache).
template <typename T, typename Out>
CG_DEVICE void sm90_store_tile_direct(const GemmArgs& g, const Problem& prob, const float (&acc)[128], int row_base,
                                      int col_base, int tid_in_wg) {
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = row_base + warp * 16 + lane / 4;
  const int c0 = col_base + 2 * (lane % 4);
  const float alpha = float(g.alpha);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  Out* d = static_cast<Out*>(g.d) + prob.d_off;
  const index_t sm = g.shape.d_sm;
  Out* row0 = d + index_t(r0) * sm;
  Out* row1 = row0 + 8 * sm;
  if (row_base + 64 <= prob.m && col_base + 256 <= prob.n) {
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int n = c0 + 8 * j;
      const float b0 = bias ? to_acc<float>(bias[n]) : 0.0f;
      const float b1 = bias ? to_acc<float>(bias[n + 1]) : 0.0f;
      store_pair<Out>(row0 + n, fmaf(acc[4 * j], alpha, b0), fmaf(acc[4 * j + 1], alpha, b1));
      store_pair<Out>(row1 + n, fmaf(acc[4 * j + 2], alpha, b0), fmaf(acc[4 * j + 3], alpha, b1));
    }
    return;
  }
  const bool in0 = r0 < prob.m, in1 = r0 + 8 < prob.m;
  // NOTE: fully unrolled with a guard, not a partial unroll with `break`: a runtime index into
  // acc[] would move the accumulators to local memory.
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const int n = c0 + 8 * j;
    if (n >= prob.n) continue;
    const bool pair = n + 1 < prob.n;
    const float b0 = bias ? to_acc<float>(bias[n]) : 0.0f;
    const float b1 = bias && pair ? to_acc<float>(bias[n + 1]) : 0.0f;
    const float v[4] = {fmaf(acc[4 * j], alpha, b0), fmaf(acc[4 * j + 1], alpha, b1),
                        fmaf(acc[4 * j + 2], alpha, b0), fmaf(acc[4 * j + 3], alpha, b1)};
    if (pair) {
      if (in0) store_pair<Out>(row0 + n, v[0], v[1]);
      if (in1) store_pair<Out>(row1 + n, v[2], v[3]);
    } else {
      if (in0) row0[n] = from_acc<Out>(v[0]);
      if (in1) row1[n] = from_acc<Out>(v[2]);
    }
  }
}

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
  alignas(8) uint64_t order[2];  // ping-pong: "consumer c finished a mainloop"
};

template <typename T, bool kAMn, bool kBMn>
CG_DEVICE void sm90_wgmma(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    sm90::wgmma_m64n256k16_bf16<kAMn, kBMn>(d, da, db, scale_d);
  } else {
    sm90::wgmma_m64n256k16_f16<kAMn, kBMn>(d, da, db, scale_d);
  }
}

CG_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Fused epilogue of one consumer warpgroup, staged through shared memory 32 columns at a time.
// wgmma's accumulator layout gives thread (warp w, lane l) rows 16w + l/4 (+8) and column pairs
// 8j + 2(l%4) of its 64 x 256 slice; each slice goes to smem in that layout, then the
// warpgroup reads it back row-wise and applies the fusion functor in a compact (not unrolled)
// loop with 4-element vector stores.
// NOTE: applying the functor straight from registers unrolls it 128 times per thread (~40K
// SASS instructions); the instruction fetch of that code dominated the whole kernel.
template <typename T>
CG_DEVICE void sm90_store_tile(const GemmArgs& g, const Problem& prob, const float (&acc)[128],
                               float (*epi)[Sm90EpilogueCols + 4], int row_base, int col_base, int tid_in_wg,
                               int barrier_id) {
  using Epi = SimtEpilogue<T>;
  const int warp = tid_in_wg / 32;
  const int lane = tid_in_wg % 32;
  constexpr int kChunkJ = Sm90EpilogueCols / 8;  // n8 blocks per chunk
#pragma unroll
  for (int chunk = 0; chunk < 256 / Sm90EpilogueCols; ++chunk) {
    named_barrier_sync(barrier_id, 128);  // the previous chunk has been read
#pragma unroll
    for (int jj = 0; jj < kChunkJ; ++jj) {
      const int j = chunk * kChunkJ + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + lane / 4 + 8 * h;
        const int cc = 8 * jj + 2 * (lane % 4);
        *reinterpret_cast<float2*>(&epi[r][cc]) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
    named_barrier_sync(barrier_id, 128);
    const int n_chunk = col_base + chunk * Sm90EpilogueCols;
#pragma unroll 1
    for (int idx = tid_in_wg; idx < 64 * (Sm90EpilogueCols / 4); idx += 128) {
      const int r = idx / (Sm90EpilogueCols / 4);
      const int c4 = (idx % (Sm90EpilogueCols / 4)) * 4;
      const int m = row_base + r;
      const int n = n_chunk + c4;
      if (m >= prob.m || n >= prob.n) continue;
      const float4 x = *reinterpret_cast<const float4*>(&epi[r][c4]);
      const Acc4 raw{{x.x, x.y, x.z, x.w}};
      Epi::store4(g, prob, m, n, raw.v);
    }
  }
}

// TMA-store epilogue for D = alpha * acc (+ bias) (same conditions as the direct one, plus a
// D that TMA can address): the warpgroup writes 64 x 128-byte slices of D (64 bf16 or 32 fp32
// columns) into swizzled shared memory, conflict-free, and one thread stores each slice with one
// TMA instruction while the warpgroup fills the next buffer. D's bounds clip the boxes.
template <class Cfg, typename T, typename Out>
CG_DEVICE void sm90_store_tile_tma(const GemmArgs& g, const Problem& prob, const float (&acc)[128],
                                   uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                   int row_abs, int col_base, int tid_in_wg, int barrier_id) {
  constexpr int kCols = 128 / int(sizeof(Out));  // columns per slice
  constexpr int kJ = kCols / 8;                    // n8 accumulator blocks per slice
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = warp * 16 + lane / 4;  // row in the 64-row slice (and r0 + 8)
  const float alpha = float(g.alpha);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
#pragma unroll
  for (int chunk = 0; chunk < 256 / kCols; ++chunk) {
    uint8_t* buf = bufs[chunk % Cfg::kEpiBuffers];
    // The store that last read this buffer has finished reading it (bulk groups retire in order).
    if (tid_in_wg == 0) sm90::bulk_wait_group_read<Cfg::kEpiBuffers - 1>();
    named_barrier_sync(barrier_id, 128);
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) {
      const int j = chunk * kJ + jj;
      const int n = col_base + 8 * j + 2 * (lane % 4);
      const float b0 = bias && n < prob.n ? to_acc<float>(bias[n]) : 0.0f;
      const float b1 = bias && n + 1 < prob.n ? to_acc<float>(bias[n + 1]) : 0.0f;
      const int byte = (8 * jj + 2 * (lane % 4)) * int(sizeof(Out));  // in the 128-byte row
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + 8 * h;
        uint8_t* dst = buf + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
        store_pair<Out>(reinterpret_cast<Out*>(dst), fmaf(acc[4 * j + 2 * h], alpha, b0),
                        fmaf(acc[4 * j + 2 * h + 1], alpha, b1));
      }
    }
    sm90::fence_proxy_async_shared();  // the writes above, before TMA (async proxy) reads them
    named_barrier_sync(barrier_id, 128);
    if (tid_in_wg == 0) {
      const int c0 = col_base + chunk * kCols;
      if (c0 < prob.n) {
        if (d_3d) sm90::tma_store_3d(map_d, buf, c0, row_abs, group);
        else sm90::tma_store_2d(map_d, buf, c0, row_abs);
      }
      sm90::bulk_commit_group();
    }
  }
}

// TMA-store epilogue with the rest of the fusion (activation, beta * C): needs two 8 KB
// buffers per warpgroup (cooperative config). Per 64 x 128-byte slice of D: the fragments,
// with alpha and bias, go to an fp32 scratch slice (32 columns at a time); a compact loop (one
// copy of the activation code, not 128 unrolled ones: instruction cache) adds beta * C, applies
// the activation, rounds once and writes the swizzled D slice, which one thread stores by TMA.
template <class Cfg, typename T, typename Out>
CG_DEVICE void sm90_store_tile_tma_fused(const GemmArgs& g, const Problem& prob, const float (&acc)[128],
                                         uint8_t (*bufs)[64 * 128], const CUtensorMap* map_d, bool d_3d, int group,
                                         int row_abs, int row_base, int col_base, int tid_in_wg, int barrier_id) {
  static_assert(Cfg::kEpiBuffers >= 2, "scratch and output slices");
  constexpr int kCols = 128 / int(sizeof(Out));  // D columns per slice
  constexpr int kSubs = kCols / 32;              // fp32 scratch slices (32 columns) per D slice
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r0 = warp * 16 + lane / 4;
  const float alpha = float(g.alpha), beta = float(g.beta);
  const T* bias = g.bias ? static_cast<const T*>(g.bias) + prob.bias_off : nullptr;
  const T* c = static_cast<const T*>(g.c);
  uint8_t* scratch = bufs[0];
  uint8_t* out = bufs[1];
#pragma unroll
  for (int chunk = 0; chunk < 256 / kCols; ++chunk) {
    if (tid_in_wg == 0) sm90::bulk_wait_group_read<0>();  // the last store has read `out`
#pragma unroll
    for (int sub = 0; sub < kSubs; ++sub) {
      named_barrier_sync(barrier_id, 128);  // scratch free (and `out` free, first time)
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = (chunk * kCols + sub * 32) / 8 + jj;
        const int n = col_base + 8 * j + 2 * (lane % 4);
        const float b0 = bias && n < prob.n ? to_acc<float>(bias[n]) : 0.0f;
        const float b1 = bias && n + 1 < prob.n ? to_acc<float>(bias[n + 1]) : 0.0f;
        const int byte = (8 * jj + 2 * (lane % 4)) * 4;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = r0 + 8 * h;
          *reinterpret_cast<float2*>(scratch + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16) =
              make_float2(fmaf(acc[4 * j + 2 * h], alpha, b0), fmaf(acc[4 * j + 2 * h + 1], alpha, b1));
        }
      }
      named_barrier_sync(barrier_id, 128);
      // NOTE: not unrolled: unrolling its 4 iterations spills (the kernel is compiled for 168
      // registers per thread, the launch bound; setmaxnreg only raises the consumers' limit).
#pragma unroll 1
      for (int idx = tid_in_wg; idx < 64 * 8; idx += 128) {
        const int r = idx / 8, q = idx % 8;  // row, 4-column group of the scratch slice
        float4 v = *reinterpret_cast<const float4*>(scratch + r * 128 + ((q ^ (r % 8)) * 16));
        float x[4] = {v.x, v.y, v.z, v.w};
        const int col = sub * 32 + 4 * q;  // column in the D slice
        const int m = row_base + r, n = col_base + chunk * kCols + col;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (c != nullptr && m < prob.m && n + e < prob.n) {
            x[e] += beta * to_acc<float>(c[prob.c_off + index_t(m) * g.shape.c_sm + index_t(n + e) * g.shape.c_sn]);
          }
          x[e] = apply_activation(g.act, x[e]);
        }
        const int byte = col * int(sizeof(Out));
        uint8_t* dst = out + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
        store_pair<Out>(reinterpret_cast<Out*>(dst), x[0], x[1]);
        store_pair<Out>(reinterpret_cast<Out*>(dst) + 2, x[2], x[3]);
      }
    }
    sm90::fence_proxy_async_shared();
    named_barrier_sync(barrier_id, 128);
    if (tid_in_wg == 0) {
      const int c0 = col_base + chunk * kCols;
      if (c0 < prob.n) {
        if (d_3d) sm90::tma_store_3d(map_d, out, c0, row_abs, group);
        else sm90::tma_store_2d(map_d, out, c0, row_abs);
      }
      sm90::bulk_commit_group();
    }
  }
}

// One stage's operand tiles. K-major: [rows][64 K] (one TMA box). MN-major: [rows / 64][64 K][64]
// (one box per 64-wide MN block), the layout make_desc_mn_major_sw128 describes.
template <class Cfg, typename T, bool kMn, int kRows>
CG_DEVICE void sm90_load_operand(T* dst, const CUtensorMap* map, uint64_t* bar, int row, int k, int z, bool is_3d) {
  if constexpr (kMn) {
#pragma unroll
    for (int j = 0; j < kRows / 64; ++j) {
      if (is_3d) sm90::tma_load_3d(dst + j * 64 * Cfg::kBlockK, map, bar, row + 64 * j, k, z);
      else sm90::tma_load_2d(dst + j * 64 * Cfg::kBlockK, map, bar, row + 64 * j, k);
    }
  } else {
    if (is_3d) sm90::tma_load_3d(dst, map, bar, k, row, z);
    else sm90::tma_load_2d(dst, map, bar, k, row);
  }
}

// Zeroes K positions >= valid_k of `rows` rows of one operand tile (share `part` of `parts`).
// Grouped-K problems end inside a K slice; TMA fills the rest of that slice with the next
// group's K (only the tensor's own end is zero-filled), which must not enter the sum.
template <class Cfg, typename T, bool kMn>
CG_DEVICE void sm90_zero_k_tail(T* tile, int rows, int valid_k, int part, int parts) {
  constexpr int kChunks = Cfg::kBlockK * int(sizeof(T)) / 16;  // 16-byte chunks per 128-byte line
  uint8_t* base = reinterpret_cast<uint8_t*>(tile);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (kMn) {
    // [rows / 64][K row][128 bytes]: whole K rows, swizzle or not.
    const int dead = Cfg::kBlockK - valid_k;
    const int total = (rows / 64) * dead * kChunks;
    for (int i = part; i < total; i += parts) {
      const int blk = i / (dead * kChunks);
      const int rest = i % (dead * kChunks);
      const int r = valid_k + rest / kChunks;
      *reinterpret_cast<uint4*>(base + (blk * Cfg::kBlockK + r) * 128 + (rest % kChunks) * 16) = zero;
    }
  } else {
    // [row][128 bytes], logical 16-byte chunk c of row r stored at chunk c ^ (r % 8).
    constexpr int kPerChunk = 16 / int(sizeof(T));
    for (int i = part; i < rows * kChunks; i += parts) {
      const int r = i / kChunks, c = i % kChunks;
      if ((c + 1) * kPerChunk <= valid_k) continue;
      uint8_t* chunk = base + r * 128 + ((c ^ (r % 8)) * 16);
      if (c * kPerChunk >= valid_k) {
        *reinterpret_cast<uint4*>(chunk) = zero;
      } else {
        for (int e = valid_k - c * kPerChunk; e < kPerChunk; ++e) reinterpret_cast<T*>(chunk)[e] = from_acc<T>(0.0f);
      }
    }
  }
}

template <class Cfg, typename T, bool kAMn, bool kBMn>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
sm90_gemm_ws_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                    const __grid_constant__ CUtensorMap tma_d, const Sm90Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Storage = Sm90SharedStorage<Cfg, T>;
  using State = sm90::PipelineState<Cfg::kStages>;
  using Scheduler = Sm90TileScheduler<Cfg::kBlockM, Cfg::kBlockN, Cfg::kBlockK>;
  extern __shared__ uint8_t smem_raw[];
  // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; stages must start on it.
  Storage& s = *reinterpret_cast<Storage*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const sm90::TmaPipeline<Cfg::kStages> pipe{s.full, s.empty};

  const int warpgroup = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int i = 0; i < Cfg::kStages; ++i) {
      sm90::mbarrier_init(&s.full[i], 1);
      // Cooperative: both consumer warpgroups read every stage; ping-pong: one does.
      sm90::mbarrier_init(&s.empty[i], Cfg::kPingpong ? 128 : 128 * Cfg::kConsumers);
    }
    sm90::mbarrier_init(&s.order[0], 1);
    sm90::mbarrier_init(&s.order[1], 1);
    sm90::mbarrier_init_fence();
    sm90::tma_prefetch_descriptor(&tma_a);
    sm90::tma_prefetch_descriptor(&tma_b);
    if (p.tma_store) sm90::tma_prefetch_descriptor(&tma_d);
  }
  __syncthreads();

  const GemmArgs& g = p.args;
  constexpr uint32_t kStageBytes = (Cfg::kBlockM + Cfg::kBlockN) * Cfg::kBlockK * sizeof(T);

  if (warpgroup == 0) {
    sm90::setmaxnreg_dec<Cfg::kProducerRegs>();
    // One warp walks the tiles (the scheduler's scan needs a whole warp); lane 0 issues.
    if (tid_in_wg < 32) {
      Scheduler sched(p);
      State st;
      for (int tile = blockIdx.x;; tile += gridDim.x) {
        const Sm90Work w = sched.get(tile);
        if (w.group < 0) break;
        if (tid_in_wg == 0) {
          const int za = p.a_3d ? w.group : 0, zb = p.b_3d ? w.group : 0;
          const int kbs = Scheduler::k_blocks(w);
          for (int kb = 0; kb < kbs; ++kb) {
            const int k = w.k_begin + kb * Cfg::kBlockK;
            pipe.producer_acquire(st);
            pipe.producer_commit(st, kStageBytes);
            sm90_load_operand<Cfg, T, kAMn, Cfg::kBlockM>(s.a[st.index], &tma_a, &s.full[st.index], w.a_row, k, za,
                                                          p.a_3d);
            sm90_load_operand<Cfg, T, kBMn, Cfg::kBlockN>(s.b[st.index], &tma_b, &s.full[st.index], w.b_col, k, zb,
                                                          p.b_3d);
            st.advance();
          }
        }
        __syncwarp();
      }
    }
  } else {
    sm90::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int consumer = warpgroup - 1;
    Scheduler sched(p);
    State st;
    float acc[128];
    // Cooperative: every tile of the CTA's sequence, rows [64c, 64c + 64) of it. Ping-pong:
    // every other tile, all rows; the ring carries the other warpgroup's tiles in between,
    // which this one skips.
    const int row_in_tile = Cfg::kPingpong ? 0 : consumer * 64;
    const int step = Cfg::kPingpong ? Cfg::kConsumers : 1;
    int own = 0;  // tiles this warpgroup has done
    for (int i = Cfg::kPingpong ? consumer : 0;; i += step, ++own) {
      if (Cfg::kPingpong && i > 0) {
        const Sm90Work other = sched.get(blockIdx.x + (i - 1) * gridDim.x);
        if (other.group < 0) break;
        st.advance(Scheduler::k_blocks(other));
      }
      const Sm90Work w = sched.get(blockIdx.x + i * gridDim.x);
      if (w.group < 0) break;
      const int k_blocks = Scheduler::k_blocks(w);
      const int tail_k = w.k_len % Cfg::kBlockK;  // grouped-K: the last slice holds the next group's K
      const bool zero_tail = g.shape.mode == GroupMode::kGroupedK && tail_k != 0;
      // NOTE: ping-pong mainloops take turns: a warpgroup starts only after the other has
      // passed every full-barrier wait of the tile before it in the ring. Besides staggering
      // the epilogues against the other's wgmma, this keeps every parity wait within one
      // phase of the barrier: with K >= kStages slices, the second warpgroup's first wait
      // would otherwise see the barrier's initial "previous phase complete" and read early.
      if (Cfg::kPingpong && (consumer == 1 || own > 0)) {
        sm90::mbarrier_wait(&s.order[1 - consumer], consumer == 0 ? uint32_t(own - 1) & 1u : uint32_t(own) & 1u);
      }
      if (k_blocks == 0) {  // an empty grouped-K problem: the epilogue of a zero product
#pragma unroll
        for (int r = 0; r < 128; ++r) acc[r] = 0.0f;
      }
      State prev;
      for (int kb = 0; kb < k_blocks; ++kb) {
        pipe.consumer_wait(st);
        if (zero_tail && kb == k_blocks - 1) {
          // Cooperative: the two warpgroups split the shared B tile and zero their own A rows.
          const int part = Cfg::kPingpong ? tid_in_wg : tid_in_wg + 128 * consumer;
          const int parts = Cfg::kPingpong ? 128 : 128 * Cfg::kConsumers;
          sm90_zero_k_tail<Cfg, T, kAMn>(s.a[st.index] + row_in_tile * Cfg::kBlockK, Cfg::kPingpong ? Cfg::kBlockM : 64,
                                         tail_k, tid_in_wg, 128);
          sm90_zero_k_tail<Cfg, T, kBMn>(s.b[st.index], Cfg::kBlockN, tail_k, part, parts);
          sm90::fence_proxy_async_shared();
          named_barrier_sync(Cfg::kPingpong ? 3 + consumer : 3, parts);
        }
        // Both layouts put 64 rows of A (M) at 64 * kBlockK elements: [rows][64 K] or [M/64][K][64].
        const T* a_tile = s.a[st.index] + row_in_tile * Cfg::kBlockK;
        const uint64_t da = kAMn ? sm90::make_desc_mn_major_sw128(a_tile, Cfg::kBlockK)
                                 : sm90::make_desc_k_major_sw128(a_tile);
        const uint64_t db = kBMn ? sm90::make_desc_mn_major_sw128(s.b[st.index], Cfg::kBlockK)
                                 : sm90::make_desc_k_major_sw128(s.b[st.index]);
        constexpr uint64_t kStepA = kAMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
        constexpr uint64_t kStepB = kBMn ? sm90::kDescStepK16MNMajor : sm90::kDescStepK16KMajor;
        sm90::fence_accumulators(acc);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < Cfg::kBlockK / 16; ++kk) {
          sm90_wgmma<T, kAMn, kBMn>(acc, da + kStepA * kk, db + kStepB * kk, (kb > 0 || kk > 0) ? 1 : 0);
        }
        sm90::wgmma_commit();
        sm90::fence_accumulators(acc);
        sm90::wgmma_wait<1>();  // the previous k-slice's wgmma is done: release its stage
        if (kb > 0) pipe.consumer_release(prev);
        prev = st;
        st.advance();
      }
      if (Cfg::kPingpong && tid_in_wg == 0) sm90::mbarrier_arrive(&s.order[consumer]);
      sm90::wgmma_wait<0>();
      sm90::fence_accumulators(acc);
      if (k_blocks > 0) pipe.consumer_release(prev);
      const Problem prob = resolve_problem(g.shape, w.group);
      // TMA stores need the 64 rows inside the problem: D's bounds clip at the tensor's end, not
      // at a group's (grouped-M), so a group's last partial tile stores from registers.
      const bool tma_rows = g.shape.mode != GroupMode::kGroupedM || w.m0 + row_in_tile + 64 <= prob.m;
      if constexpr (Cfg::kEpiBuffers >= 2) {
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
        if (g.out_f32)
          sm90_store_tile_tma<Cfg, T, float>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                             w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
        else
          sm90_store_tile_tma<Cfg, T, T>(g, prob, acc, s.epi_slot[consumer].u.out, &tma_d, p.d_3d, w.group,
                                         w.a_row + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
      } else if (p.direct_epilogue) {
        if (g.out_f32) sm90_store_tile_direct<T, float>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
        else sm90_store_tile_direct<T, T>(g, prob, acc, w.m0 + row_in_tile, w.n0, tid_in_wg);
      } else {
        sm90_store_tile<T>(g, prob, acc, s.epi_slot[consumer].u.epi, w.m0 + row_in_tile, w.n0, tid_in_wg, 1 + consumer);
      }
    }
    // Shared memory must outlive the TMA stores that read it.
    if ((p.tma_store || p.tma_store_fused) && tid_in_wg == 0) sm90::bulk_wait_group_all();
  }
#endif
}

}  // namespace cutorch_gemm
