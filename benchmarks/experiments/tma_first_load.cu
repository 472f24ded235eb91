// How long a CTA's first TMA load takes (forty-fifth session, benchmarks/RESULTS.md): 128 CTAs, thread 0 of each
// loads three 8 KB boxes (64 rows x 128 bytes) one after the other, with the tensor map in the kernel's parameters
// (__grid_constant__, as the Hopper kernel passes it) or in global memory, prefetched at entry or not; clock64
// cycles per load, medians over CTAs and launches, back to back or with another kernel between launches.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DCUTORCH_GEMM_WITH_CUDA -Icsrc/include \
//        benchmarks/experiments/tma_first_load.cu -o /tmp/tf && /tmp/tf
// H200: ~640 cycles for the first load from the parameters' map (~600 prefetched), ~860 from global memory, ~480
// for the next ones.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cutorch_gemm/arch/sm90_mbarrier.cuh"
#include "cutorch_gemm/arch/sm90_tma.cuh"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "graph_timing.cuh"

using namespace cutorch_gemm;

__device__ unsigned long long g_t[1024 * 8];

__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

// mode bit 0: prefetch the descriptor first thing; loads of 8 KB boxes (64 rows x 128 bytes), three in a row.
template <bool kGlobal>
__global__ void __launch_bounds__(128, 1) first_load(const __grid_constant__ CUtensorMap pmap, const CUtensorMap* gmap,
                                                     int mode) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ uint64_t bar;
  if (threadIdx.x != 0) return;
  const CUtensorMap* map = kGlobal ? gmap : &pmap;
  const unsigned long long t0 = clk();
  if (mode & 1) sm90::tma_prefetch_descriptor(map);
  sm90::mbarrier_init(&bar, 1);
  sm90::mbarrier_init_fence();
  const unsigned long long t1 = clk();
  unsigned long long t[4];
  uint8_t* dst = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem) + 1023) & ~uintptr_t(1023));
  for (int i = 0; i < 3; ++i) {
    sm90::mbarrier_arrive_expect_tx(&bar, 8192);
    sm90::tma_load_2d(dst + i * 8192, map, &bar, 64 * i, 64 * (blockIdx.x % 16));
    sm90::mbarrier_wait(&bar, uint32_t(i & 1));
    t[i] = clk();
  }
  unsigned long long* o = g_t + blockIdx.x * 8;
  o[0] = t1 - t0;
  o[1] = t[0] - t1;
  o[2] = t[1] - t[0];
  o[3] = t[2] - t[1];
}

__global__ void other(float* x) { x[threadIdx.x + blockIdx.x * blockDim.x] += 1.0f; }

int main() {
  const int rows = 1024, cols = 1024;
  __nv_bfloat16* a;
  EXP_CHECK(cudaMalloc(&a, size_t(rows) * cols * 2));
  EXP_CHECK(cudaMemset(a, 0, size_t(rows) * cols * 2));
  float* junk;
  EXP_CHECK(cudaMalloc(&junk, 1 << 20));
  CUtensorMap map;
  if (!encode_sw128(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a, rows, cols, cols, 64, 64)) {
    std::printf("encode failed\n");
    return 1;
  }
  CUtensorMap* gmap;
  EXP_CHECK(cudaMalloc(&gmap, sizeof(CUtensorMap)));
  EXP_CHECK(cudaMemcpy(gmap, &map, sizeof(map), cudaMemcpyHostToDevice));
  const int smem = 200 * 1024;
  EXP_CHECK(cudaFuncSetAttribute(first_load<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  EXP_CHECK(cudaFuncSetAttribute(first_load<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<unsigned long long> h(1024 * 8);
  auto report = [&](const char* name, auto launch, bool other_between) {
    std::vector<double> v[4];
    for (int r = 0; r < 10; ++r) {
      if (other_between) other<<<128, 256>>>(junk);
      launch();
      EXP_CHECK(cudaDeviceSynchronize());
      EXP_CHECK(cudaMemcpyFromSymbol(h.data(), g_t, h.size() * 8));
      if (r < 2) continue;
      for (int c = 0; c < 128; ++c)
        for (int j = 0; j < 4; ++j) v[j].push_back(double(h[c * 8 + j]));
    }
    for (auto& x : v) std::sort(x.begin(), x.end());
    std::printf("%-44s init %5.0f | 1st load %5.0f (p90 %5.0f) | 2nd %5.0f | 3rd %5.0f cycles (median)\n", name,
                v[0][v[0].size() / 2], v[1][v[1].size() / 2], v[1][v[1].size() * 9 / 10], v[2][v[2].size() / 2],
                v[3][v[3].size() / 2]);
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool ob = pass == 1;
    std::printf("--- %s\n", ob ? "another kernel between launches" : "back to back");
    report("param descriptor", [&] { first_load<false><<<128, 128, smem>>>(map, gmap, 0); }, ob);
    report("param descriptor, prefetched at entry", [&] { first_load<false><<<128, 128, smem>>>(map, gmap, 1); }, ob);
    report("global descriptor", [&] { first_load<true><<<128, 128, smem>>>(map, gmap, 0); }, ob);
    report("global descriptor, prefetched at entry", [&] { first_load<true><<<128, 128, smem>>>(map, gmap, 1); }, ob);
  }
  return 0;
}
