// Peak issue rate of the legacy warp-level tensor-core instructions (mma.sync) on this GPU:
// every warp runs chains of independent register-only MMAs (no memory traffic), enough warps to
// fill every SM sub-partition. The ceiling of the sm80 family on whatever GPU runs it; on Hopper,
// set next to cuBLAS's wgmma kernels (issue 3's ratio targets).
//   nvcc -O3 -arch=sm_90a -o /tmp/mma_peak benchmarks/experiments/mma_sync_peak.cu && /tmp/mma_peak
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#include "best_of.cuh"

constexpr int kChains = 8;    // independent accumulators per warp (hides the MMA latency)
constexpr int kIters = 4096;  // MMAs per chain

template <int kKind>
__global__ void mma_loop(float* sink, int seed) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * 7 + i + seed);
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x * 3 + i + seed);
  float d[kChains][4] = {};
  int32_t di[kChains][4] = {};
  double dd[kChains][4] = {};
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kKind == 0) {  // bf16 m16n8k16 -> f32
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      } else if constexpr (kKind == 1) {  // tf32 m16n8k8 -> f32
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      } else if constexpr (kKind == 2) {  // int8 m16n8k32 -> s32
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(di[c][0]), "+r"(di[c][1]), "+r"(di[c][2]), "+r"(di[c][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      } else {  // fp64 m16n8k8 (PTX 7.8, sm_90)
        double fa[4] = {1.0 + a[0], 1.0, 1.0, 1.0}, fb[2] = {1.0, 1.0 + b[0]};
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+d"(dd[c][0]), "+d"(dd[c][1]), "+d"(dd[c][2]), "+d"(dd[c][3])
                     : "d"(fa[0]), "d"(fa[1]), "d"(fa[2]), "d"(fa[3]), "d"(fb[0]), "d"(fb[1]));
      }
    }
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c)
    for (int i = 0; i < 4; ++i) s += d[c][i] + float(di[c][i]) + float(dd[c][i]);
  if (s == 1234.5f) sink[threadIdx.x] = s;  // keeps the MMAs alive
}

template <int kKind>
void run(const char* name, double flops_per_mma) {
  int dev = 0, sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  float* sink;
  cudaMalloc(&sink, 1024 * sizeof(float));
  const int blocks = sms * 4, threads = 256;  // 32 warps per SM: 8 per sub-partition
  const float best = best_of_ms([&](int r) { mma_loop<kKind><<<blocks, threads>>>(sink, r + 1); });
  const double total = double(blocks) * (threads / 32) * kChains * kIters * flops_per_mma;
  printf("%-28s %8.1f TFLOP/s (%.3f ms)\n", name, total / best / 1e9, best);
  cudaFree(sink);
}

int main() {
  run<0>("mma.sync bf16 m16n8k16", 2.0 * 16 * 8 * 16);
  run<1>("mma.sync tf32 m16n8k8", 2.0 * 16 * 8 * 8);
  run<2>("mma.sync int8 m16n8k32", 2.0 * 16 * 8 * 32);
  run<3>("mma.sync fp64 m16n8k8", 2.0 * 16 * 8 * 8);
  return 0;
}
