// How fast TMA loads can feed the SMs on a GEMM's access pattern, with no math: each CTA owns a
// (bm x bn) output tile and streams its A rows and B rows over K through a ring of shared-memory
// stages (one producer thread, four consumer warps that only wait and release), like the Hopper
// kernel's "loads only" mode. The operands stay in L2 (12 MB at 512x1024x4096), so the number is
// the L2 -> SM delivery rate that a given box size, ring, grid order, K start or row pitch reaches.
// A plain 16-byte-load kernel reads the same bytes for comparison.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -DCUTORCH_GEMM_WITH_CUDA -Icsrc/include \
//        -o /tmp/tma_stream benchmarks/experiments/tma_stream.cu && timeout 60 /tmp/tma_stream
// (keep the timeout: a case whose boxes do not match its expected bytes hangs, and the device call with it)
//
// Why (twenty-eighth session): at 512x1024x4096 cuBLAS's whole kernel (64x64 tiles, 2x1 clusters)
// takes 9.9 us with warm L2, our loads alone 15 us (~9 TB/s into the SMs, with or without multicast).
// Found (twenty-ninth session, H200; benchmarks/RESULTS.md): one CTA alone takes as long as 128; ring
// depth and bytes per k-block hardly matter; two producer warps taking k-blocks in turn double the
// rate. A CTA's delivery is bound by its issuing thread's serial chain per k-block.
// NOTE: the second run's version walked the ring by division and ran 1.6x slower per k-block than
// the first (incremental, as now); up to 4 producer warps since (not yet run).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "best_of.cuh"
#include "cutorch_gemm/arch/sm90_mbarrier.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/device/sm90_tma_desc.h"

using namespace cutorch_gemm;

#define CHECK(x)                                                                           \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct Params {
  CUtensorMap a, b;
  int gm, gn;      // tile grid
  int bm, bn;      // tile rows of A and of B
  int boxa, boxb;  // rows per TMA box of A and of B (boxr, at most the tile's rows)
  int stages;
  int kblocks;     // 64-element (128-byte) k-blocks
  int reps;        // K sweeps per launch
  int order;       // 0: consecutive CTAs walk M, 1: walk N
  int rotate;      // 1: CTA c starts its K sweep at k-block c % kblocks
  int kper;        // k-blocks per stage (one barrier phase)
  int nprod;       // producer warps: warp w issues the stages of iterations it % nprod == w
  int split;       // 1: two producer warps, warp 0 issues A and warp 1 B of every stage (full count 2)
  int skipb;       // 1: B is not loaded (half the rows)
};

// One stage: kper k-blocks of the tile's A rows and (unless skipb) B rows, 128 bytes each.
__host__ __device__ inline int stage_bytes_of(const Params& p) { return p.kper * (p.bm + (p.skipb ? 0 : p.bn)) * 128; }

constexpr int kConsumerWarps = 4;
constexpr int kMaxProducerWarps = 4;

__global__ void __launch_bounds__(32 * (kMaxProducerWarps + kConsumerWarps), 1)
    stream_tma(const __grid_constant__ Params p, unsigned* sink) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ uint64_t full[32], empty[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int cta = blockIdx.x;
  const int m = p.order == 0 ? cta % p.gm : cta / p.gn;
  const int n = p.order == 0 ? cta / p.gm : cta % p.gn;
  const int rows_b = p.skipb ? 0 : p.bn;
  const int stage_bytes = stage_bytes_of(p);
  const int prod_warps = p.split ? 2 : p.nprod;
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) {
      sm90::mbarrier_init(&full[s], p.split ? 2 : 1);
      sm90::mbarrier_init(&empty[s], kConsumerWarps);
    }
    sm90::mbarrier_init_fence();
  }
  __syncthreads();
  const int total = p.kblocks / p.kper * p.reps;
  if (warp < kMaxProducerWarps) {
    if (lane == 0 && warp < prod_warps) {
      // Incremental ring walk (no run-time division per k-block unless rotated): warp w takes
      // iterations w, w + step, ... (w < 4 <= stages, and kblocks >= 4 * kper in every case).
      const int step = p.split ? 1 : p.nprod;
      int it = p.split ? 0 : warp;
      int s = it, kb0 = it * p.kper;
      uint32_t phase = 0;
      for (; it < total; it += step) {
        int kbr = kb0;
        if (p.rotate) kbr = (kbr + cta * p.kper) % p.kblocks;
        sm90::mbarrier_wait(&empty[s], phase ^ 1);
        unsigned char* dst = smem + size_t(s) * stage_bytes;
        const bool do_a = !p.split || warp == 0, do_b = (!p.split || warp == 1) && !p.skipb;
        const int bytes = p.split ? (warp == 0 ? p.kper * p.bm * 128 : p.kper * rows_b * 128) : stage_bytes;
        sm90::mbarrier_arrive_expect_tx(&full[s], uint32_t(bytes));
        for (int q = 0; q < p.kper; ++q) {
          unsigned char* d = dst + q * (p.bm + rows_b) * 128;
          int kb = kbr + q;
          if (kb >= p.kblocks) kb -= p.kblocks;
          if (do_a)
            for (int r = 0; r < p.bm; r += p.boxa) sm90::tma_load_2d(d + r * 128, &p.a, &full[s], kb * 64, m * p.bm + r);
          if (do_b)
            for (int r = 0; r < p.bn; r += p.boxb)
              sm90::tma_load_2d(d + (p.bm + r) * 128, &p.b, &full[s], kb * 64, n * p.bn + r);
        }
        s += step;
        if (s >= p.stages) {
          s -= p.stages;
          phase ^= 1;
        }
        kb0 += step * p.kper;
        if (kb0 >= p.kblocks) kb0 -= p.kblocks;
      }
    }
  } else {
    int s = 0;
    uint32_t phase = 0;
    unsigned acc = 0;
    for (int it = 0; it < total; ++it) {
      sm90::mbarrier_wait(&full[s], phase);
      acc += reinterpret_cast<const unsigned*>(smem + size_t(s) * stage_bytes)[threadIdx.x];
      __syncwarp();
      if (lane == 0) sm90::mbarrier_arrive(&empty[s]);
      if (++s == p.stages) { s = 0; phase ^= 1; }
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the read; practically never taken
  }
}

// The same bytes with 16-byte loads (ld.global.cg: L2 only), 256 threads, 4 k-blocks per step.
__global__ void __launch_bounds__(256) stream_ldg(const uint4* A, const uint4* B, int pitch16, Params p, unsigned* sink) {
  const int cta = blockIdx.x;
  const int m = p.order == 0 ? cta % p.gm : cta / p.gn;
  const int n = p.order == 0 ? cta / p.gm : cta % p.gn;
  const int rows = p.bm + p.bn;
  const int chunks = rows * 8;  // 16-byte chunks per k-block
  unsigned acc = 0;
  for (int rep = 0; rep < p.reps; ++rep) {
    for (int kb = 0; kb < p.kblocks; kb += 4) {
      uint4 v[16];
      int cnt = 0;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int c0 = 0; c0 < 4; ++c0) {
          const int c = threadIdx.x + 256 * c0;
          const int r = c / 8, q = c % 8;
          const uint4* src = r < p.bm ? A + size_t(m * p.bm + r) * pitch16 : B + size_t(n * p.bn + r - p.bm) * pitch16;
          if (c < chunks) v[cnt] = __ldcg(src + (kb + u) * 8 + q);
          else v[cnt] = make_uint4(0, 0, 0, 0);
          ++cnt;
        }
      }
#pragma unroll
      for (int i = 0; i < 16; ++i) acc ^= v[i].x + v[i].w;
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

__global__ void empty_kernel() {}

// The kernel's own encoding (encode_sw128: 128-byte swizzle, its L2 promotion rule), boxes of 64 K x boxr rows.
static CUtensorMap make_map(void* base, int rows, int k, int pitch_elems, int boxr) {
  CUtensorMap map;
  if (!encode_sw128(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, base, uint64_t(rows), uint64_t(k), uint64_t(pitch_elems),
                    uint32_t(boxr), 64)) {
    std::printf("cuTensorMapEncodeTiled failed or missing\n");
    std::exit(1);
  }
  return map;
}

struct Case {
  const char* name;
  int M, N, K, bm, bn, boxr, stages, order, rotate, pad, ldg;
  int kper, nprod, split, skipb, ctas;  // 0: 1, 1, off, off, every tile
};

static float time_launch(const Case& c, Params p, void* A, void* B, unsigned* sink, int reps) {
  p.reps = reps;
  const int grid = c.ctas ? c.ctas : p.gm * p.gn;
  const size_t smem = size_t(p.stages) * stage_bytes_of(p) + 1024;
  auto launch = [&] {
    if (c.ldg)
      stream_ldg<<<grid, 256>>>(static_cast<const uint4*>(A), static_cast<const uint4*>(B), (c.K + c.pad) / 8, p, sink);
    else
      stream_tma<<<grid, 32 * (kMaxProducerWarps + kConsumerWarps), smem>>>(p, sink);
  };
  // 20 back-to-back launches between two events (the queue hides the host's launch time), best of 5.
  const float ms = best_of_ms([&](int) {
    for (int i = 0; i < 20; ++i) launch();
  });
  CHECK(cudaGetLastError());
  return ms * 1000.0f / 20;
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // a hung case still shows the lines before it
  CHECK(cudaFuncSetAttribute(stream_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);

  // name, M, N, K, bm, bn, boxr, stages, order, rotate, pad (elements per row), ldg, then
  // kper (k-blocks per stage), nprod (producer warps), split (A and B from two warps), skipb, ctas
  const Case cases[] = {
      {"64x64 S12 box64", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0},
      {"64x64 S12 box32", 512, 1024, 4096, 64, 64, 32, 12, 0, 0, 0, 0},
      {"64x64 S4 box64", 512, 1024, 4096, 64, 64, 64, 4, 0, 0, 0, 0},
      {"64x64 S6 2 kblocks/stage", 512, 1024, 4096, 64, 64, 64, 6, 0, 0, 0, 0, 2},
      {"64x64 S12 2 producers", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 2},
      {"64x64 S12 3 producers", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 3},
      {"64x64 S12 4 producers", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 4},
      {"64x64 S12 A/B producers", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 1, 1},
      {"64x64 S12 1 CTA", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 1, 0, 0, 1},
      {"64x64 S12 1 CTA 2 producers", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 0, 1, 2, 0, 0, 1},
      {"64x64 ldg.cg", 512, 1024, 4096, 64, 64, 64, 12, 0, 0, 0, 1},
      {"64x128 S8 box128 (1024^2 x4096)", 1024, 1024, 4096, 64, 128, 128, 8, 0, 0, 0, 0},
      {"64x128 S8 box128 2 producers", 1024, 1024, 4096, 64, 128, 128, 8, 0, 0, 0, 0, 1, 2},
      {"128x256 S4 box128 (2048^3)", 2048, 2048, 2048, 128, 256, 128, 4, 0, 0, 0, 0},
      {"128x256 S4 box128 2 producers", 2048, 2048, 2048, 128, 256, 128, 4, 0, 0, 0, 0, 1, 2},
      {"128x256 S4 box128 4 producers", 2048, 2048, 2048, 128, 256, 128, 4, 0, 0, 0, 0, 1, 4},
  };
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 4));
  const float empty_ms = best_of_ms([](int) {
    for (int i = 0; i < 100; ++i) empty_kernel<<<128, 160>>>();
  });
  std::printf("empty kernel, back to back: %.2f us per launch\n", empty_ms * 10.0f);
  std::printf("%-34s %6s %9s %9s %10s %10s\n", "case", "CTAs", "us r=1", "us r=5", "TB/s r=1", "TB/s steady");
  for (const Case& c : cases) {
    const int pitch = c.K + c.pad;
    void *A, *B;
    CHECK(cudaMalloc(&A, size_t(c.M) * pitch * 2));
    CHECK(cudaMalloc(&B, size_t(c.N) * pitch * 2));
    CHECK(cudaMemset(A, 1, size_t(c.M) * pitch * 2));
    CHECK(cudaMemset(B, 1, size_t(c.N) * pitch * 2));
    Params p{};
    // A box never covers more rows than the tile: the stage's expected bytes count the tile's rows.
    p.boxa = std::min(c.boxr, c.bm);
    p.boxb = std::min(c.boxr, c.bn);
    p.a = make_map(A, c.M, c.K, pitch, p.boxa);
    p.b = make_map(B, c.N, c.K, pitch, p.boxb);
    p.gm = c.M / c.bm;
    p.gn = c.N / c.bn;
    p.bm = c.bm;
    p.bn = c.bn;
    p.stages = c.stages;
    p.kblocks = c.K / 64;
    p.order = c.order;
    p.rotate = c.rotate;
    p.kper = c.kper ? c.kper : 1;
    p.nprod = c.nprod ? c.nprod : 1;
    p.split = c.split;
    p.skipb = c.skipb;
    const float t1 = time_launch(c, p, A, B, sink, 1);
    const float t5 = time_launch(c, p, A, B, sink, 5);
    const int ctas = c.ctas ? c.ctas : p.gm * p.gn;
    const double bytes = double(ctas) * (c.bm + (c.skipb ? 0 : c.bn)) * double(c.K) * 2;
    std::printf("%-34s %6d %9.2f %9.2f %10.2f %10.2f\n", c.name, ctas, t1, t5, bytes / t1 * 1e-6,
                4 * bytes / (t5 - t1) * 1e-6);
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
  }
  return 0;
}
