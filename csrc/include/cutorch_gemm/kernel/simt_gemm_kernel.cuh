#pragma once
// The SIMT GEMM kernel: rasterized CTA tile -> problem (batch entry or group) -> K range
// (split-K slice) -> mainloop -> epilogue (fused store, or partial store when split).

#include "cutorch_gemm/collective/simt_mainloop.cuh"
#include "cutorch_gemm/epilogue/simt_epilogue.cuh"
#include "cutorch_gemm/scheduler/raster.h"
#include "cutorch_gemm/scheduler/split_k.h"

namespace cutorch_gemm {

// NOTE: sm_90's register allocation fits the 8x8 config in 128 registers (two CTAs per SM);
// sm_80's does not quite (it spills a few words), so there the cap is lifted and the config
// runs one CTA per SM. The Ampere tensor-core path is the fast one on sm_80 anyway.
template <class Cfg>
constexpr int simt_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return Cfg::kThreadM * Cfg::kThreadN > 32 ? 1 : Cfg::kMinBlocksPerSM;
#else
  return Cfg::kMinBlocksPerSM;
#endif
}

template <class Cfg, typename T, bool kAContigK, bool kBContigK>
__global__ void __launch_bounds__(Cfg::kThreads, simt_min_blocks<Cfg>())
simt_gemm_kernel(const SimtParams p) {
  using Mainloop = SimtMainloop<Cfg, T, kAContigK, kBContigK>;
  using Epilogue = SimtEpilogue<T>;
  using Acc = typename Mainloop::Acc;
  __shared__ typename Mainloop::SharedStorage smem;

  const GemmArgs& g = p.args;
  const int tid = threadIdx.x;
  const auto t = Mainloop::thread_coords(tid / 32, tid % 32);
  const TileCoord tile = raster_tile(blockIdx.x, p.tiles_m, p.tiles_n, p.raster_group);
  const int m0 = tile.m * Cfg::kBlockM;
  const int n0 = tile.n * Cfg::kBlockN;
  const int split = blockIdx.y;

  // NOTE: one problem per CTA, no loop over z: a loop lets the compiler hoist the whole
  // epilogue's address arithmetic out of it and spill. Batches beyond the grid's z limit are
  // launched in chunks (z_base). Every early exit is uniform across the CTA.
  const int z = p.z_base + blockIdx.z;
  {
    const Problem prob = resolve_problem(g.shape, z);
    if (m0 >= prob.m || n0 >= prob.n) return;
    const KRange kr = slice_k_range(prob.k_begin, prob.k_end, Cfg::kBlockK, p.splits, split);
    const int k_begin = kr.begin;
    const int k_end = kr.end;
    typename Mainloop::Accumulators acc;
    Mainloop::run(smem, static_cast<const T*>(g.a) + prob.a_off, g.shape.a_sm, g.shape.a_sk,
                  static_cast<const T*>(g.b) + prob.b_off, g.shape.b_sk, g.shape.b_sn, m0, prob.m,
                  n0, prob.n, k_begin, k_end, tid, t, acc);

#pragma unroll
    for (int i = 0; i < Cfg::kThreadM; ++i) {
      const int m = m0 + Mainloop::thread_row(t, i);
#pragma unroll
      for (int s = 0; s < Cfg::kSubN; ++s) {
        const int n = n0 + Mainloop::thread_col(t, s * 4);
        // NOTE: an explicit copy; casting the register array's address would force it into
        // local memory.
        const Acc v[4] = {acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]};
        if (p.splits > 1) {
          Epilogue::store_partial4(p, split, z, m, n, v);
        } else {
          Epilogue::store4(g, prob, m, n, v);
        }
      }
    }
  }
}

// Sums the split-K partials in split order (deterministic) and applies the epilogue (scaled_mm's
// when args.scale_a is set).
template <typename T>
__global__ void splitk_reduce_kernel(const SimtParams p) {
  using Acc = typename AccumulatorFor<T>::type;
  using Epilogue = SimtEpilogue<T>;
  const GemmArgs& g = p.args;
  const index_t mn = index_t(g.shape.m) * g.shape.n;
  const index_t total = mn * g.batch;
  const Acc* ws = static_cast<const Acc*>(p.workspace);
  if (g.shape.n % 4 == 0) {
    // Four consecutive columns of one row per thread: vector loads of each split's partials
    // (every split's slab and row start on a 4-element boundary) and a quarter of the index
    // divisions; the same split order per element, so the sums are the scalar path's.
    for (index_t idx = (blockIdx.x * index_t(blockDim.x) + threadIdx.x) * 4; idx < total;
         idx += index_t(gridDim.x) * blockDim.x * 4) {
      Acc sum[4] = {Acc(0), Acc(0), Acc(0), Acc(0)};
      int s = 0;
      // Four splits' loads in flight before their adds (still added in split order).
      for (; s + 4 <= p.splits; s += 4) {
        Vec<Acc, 4> v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = *reinterpret_cast<const Vec<Acc, 4>*>(ws + index_t(s + u) * total + idx);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int e = 0; e < 4; ++e) sum[e] += v[u].v[e];
      }
      for (; s < p.splits; ++s) {
        const Vec<Acc, 4> v = *reinterpret_cast<const Vec<Acc, 4>*>(ws + index_t(s) * total + idx);
#pragma unroll
        for (int e = 0; e < 4; ++e) sum[e] += v.v[e];
      }
      const int z = int(idx / mn);
      const index_t rem = idx - index_t(z) * mn;
      const int m = int(rem / g.shape.n);
      const int n = int(rem - index_t(m) * g.shape.n);
      Epilogue::store4(g, resolve_problem(g.shape, z), m, n, sum);
    }
    return;
  }
  for (index_t idx = blockIdx.x * index_t(blockDim.x) + threadIdx.x; idx < total;
       idx += index_t(gridDim.x) * blockDim.x) {
    Acc sum = Acc(0);
    for (int s = 0; s < p.splits; ++s) sum += ws[index_t(s) * total + idx];
    const int z = int(idx / mn);
    const index_t rem = idx - index_t(z) * mn;
    const int m = int(rem / g.shape.n);
    const int n = int(rem - index_t(m) * g.shape.n);
    const Problem prob = resolve_problem(g.shape, z);
    const Acc v = g.scale_a ? Epilogue::scaled(g, m, n, sum) : Epilogue::value(g, prob, m, n, sum);
    const index_t off = prob.d_off + index_t(m) * g.shape.d_sm + index_t(n) * g.shape.d_sn;
    if (g.out_f32) {
      Epilogue::template store_one<float>(g.d, off, v);
    } else {
      Epilogue::template store_one<T>(g.d, off, v);
    }
  }
}

// Launches splitk_reduce_kernel over every output element (both families' parallel split-K
// write partials as [split][z][m][n]).
template <typename T>
cudaError_t launch_splitk_reduce(const SimtParams& p, cudaStream_t stream) {
  const long long total = (long long)p.args.batch * p.args.shape.m * p.args.shape.n;
  const int threads = 256;
  const long long per_thread = p.args.shape.n % 4 == 0 ? 4 : 1;  // the kernel's vector path
  const unsigned blocks =
      unsigned(min_of<long long>(ceil_div<long long>(ceil_div<long long>(total, per_thread), threads), 65535LL * 8));
  splitk_reduce_kernel<T><<<blocks, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace cutorch_gemm
