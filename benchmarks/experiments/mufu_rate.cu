// Throughput of the special-function unit (MUFU) on this GPU, per SM and clock: tanh.approx.f32
// against ex2.approx.f32 (and the FMA pipe for scale). Why: the Hopper
// epilogue's GELU-tanh spends one tanh.approx per output; whether that instruction runs at the
// MUFU's full rate decides if moving part of the work to the FMA pipe can pay. The packed forms
// (tanh.approx.bf16x2 / f16x2, sm_90) show whether one instruction yields two results at that rate:
// their line counts instructions; elements are twice that.
//   nvcc -O3 -arch=sm_90a -o /tmp/mufu_rate benchmarks/experiments/mufu_rate.cu && /tmp/mufu_rate
#include <cstdio>
#include <cuda_runtime.h>

#include "best_of.cuh"

constexpr int kChains = 8;
constexpr int kIters = 2048;

template <int kOp>
__global__ void loop(float* sink, float seed) {
  float v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = seed + 0.001f * (threadIdx.x + c);
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kOp == 0) asm volatile("tanh.approx.f32 %0, %0;" : "+f"(v[c]));
      else if constexpr (kOp == 1) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(v[c]));
      else if constexpr (kOp == 2) asm volatile("fma.rn.f32 %0, %0, %0, 0f3F000000;" : "+f"(v[c]));
      else if constexpr (kOp == 3) asm volatile("tanh.approx.bf16x2 %0, %0;" : "+r"(*reinterpret_cast<unsigned*>(&v[c])));
      else asm volatile("tanh.approx.f16x2 %0, %0;" : "+r"(*reinterpret_cast<unsigned*>(&v[c])));
    }
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += v[c];
  if (s == 1234.5f) sink[threadIdx.x] = s;
}

template <int kOp>
void run(const char* name) {
  int sms = 0, khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  float* sink;
  cudaMalloc(&sink, 1024 * sizeof(float));
  const int blocks = sms * 2, threads = 1024;
  const float best = best_of_ms([&](int r) { loop<kOp><<<blocks, threads>>>(sink, 0.25f * (r + 2)); });
  const double ops = double(blocks) * threads * kChains * kIters;
  // Per SM per clock at the reported max clock (the real clock may be lower: a lower bound).
  printf("%-22s %9.1f Gop/s  %6.1f per SM per clock at %d MHz\n", name, ops / best / 1e6,
         ops / (best * 1e-3) / sms / (khz * 1e3), khz / 1000);
  cudaFree(sink);
}

int main() {
  run<0>("tanh.approx.f32");
  run<1>("ex2.approx.ftz.f32");
  run<2>("fma.rn.f32");
  run<3>("tanh.approx.bf16x2");
  run<4>("tanh.approx.f16x2");
  return 0;
}
