// mma.sync issue rate against warps per SM and independent accumulators per warp: can the sm80
// family's 8-warp CTAs (one per SM) keep the HMMA pipe busy on Hopper? One CTA per SM (150 KB of
// dynamic shared memory keeps a second one off), register-only chains, no memory traffic.
//   nvcc -O3 -arch=sm_90a -o /tmp/mma_occ benchmarks/experiments/mma_sync_occupancy.cu && /tmp/mma_occ
// H100: bf16 4 warps/SM 595-622 TFLOP/s, 8 warps 630-642 (ncu: 97.6% of the HMMA pipe), 32: 645.
// Launches that need more registers than 64K / threads fail and print the error.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
constexpr int kIters = 2048;
template <int kKind, int kChains>
__global__ void mma_loop(float* sink, int seed) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * 7 + i + seed);
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x * 3 + i + seed);
  float d[kChains][4] = {};
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kKind == 0) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      } else {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      }
    }
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  if (s == 1234.5f) sink[threadIdx.x] = s;
}
template <int kKind, int kChains>
void run(const char* name, double flops, int warps) {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* sink; cudaMalloc(&sink, 4096 * sizeof(float));
  const int threads = 32 * warps;
  // one block per SM: dynamic smem of 150 KB keeps a second block off
  cudaFuncSetAttribute(mma_loop<kKind, kChains>, cudaFuncAttributeMaxDynamicSharedMemorySize, 150 * 1024);
  mma_loop<kKind, kChains><<<sms, threads, 150 * 1024>>>(sink, 1);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    mma_loop<kKind, kChains><<<sms, threads, 150 * 1024>>>(sink, r);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
  }
  const double total = double(sms) * warps * kChains * kIters * flops;
  printf("%-6s warps/SM %2d chains %2d: %7.1f TFLOP/s  err=%s\n", name, warps, kChains, total / best / 1e9,
         cudaGetErrorString(cudaGetLastError()));
  cudaFree(sink);
}
template <int kKind, int kChains>
void sweep(const char* name, double flops) {
  for (int w : {4, 8, 12, 16, 32}) run<kKind, kChains>(name, flops, w);
}
int main() {
  sweep<0, 8>("bf16", 4096.0); sweep<0, 16>("bf16", 4096.0); sweep<0, 32>("bf16", 4096.0);
  sweep<1, 8>("tf32", 2048.0); sweep<1, 16>("tf32", 2048.0); sweep<1, 32>("tf32", 2048.0);
  return 0;
}
