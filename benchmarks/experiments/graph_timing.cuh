// The experiments' error check, bf16 and e4m3 fills, median and CUDA-graph timing (sm90_timeline.cu, tma_first_load.cu, header_ab/ab_main.cu):
// a launch sequence captured once as a graph of `launches` launches, timed per launch with no host time between them.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define EXP_CHECK(x)                                                               \
  do {                                                                             \
    auto e_ = (x);                                                                 \
    if (e_ != 0) {                                                                 \
      std::printf("%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, int(e_));       \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// Element i's hash (seed: which tensor).
__device__ inline unsigned exp_hash(size_t i, unsigned seed) {
  unsigned h = unsigned(i) * 2654435761u + seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  return h ^ (h >> 15);
}

// Fills p[0, n) with hashed values in [-0.5, 0.5).
__global__ void exp_fill_bf16(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(float(exp_hash(i, seed) & 0xffff) / 65536.0f - 0.5f);
}

// e4m3 bytes of magnitude below 1 (exponent field at most 6, so never NaN: NaN is S.1111.111).
__global__ void exp_fill_e4m3(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = uint8_t(exp_hash(i, seed) & 0xb7u);  // (sign, exponent bits 4-5, mantissa)
}

// fn(): enqueues one launch on `s`. Runs it once (a warm-up), then captures `launches` of them.
template <class Fn>
cudaGraphExec_t exp_capture(Fn fn, cudaStream_t s, int launches) {
  fn();
  EXP_CHECK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  EXP_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i) fn();
  EXP_CHECK(cudaStreamEndCapture(s, &graph));
  EXP_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  return exec;
}

// µs per launch of one replay of `exec` (a graph of `launches` launches).
inline double exp_replay_us(cudaGraphExec_t exec, cudaStream_t s, int launches) {
  static cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (e0 == nullptr) {
    EXP_CHECK(cudaEventCreate(&e0));
    EXP_CHECK(cudaEventCreate(&e1));
  }
  EXP_CHECK(cudaEventRecord(e0, s));
  EXP_CHECK(cudaGraphLaunch(exec, s));
  EXP_CHECK(cudaEventRecord(e1, s));
  EXP_CHECK(cudaEventSynchronize(e1));
  float ms;
  EXP_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  return ms * 1000.0 / launches;
}

inline double exp_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
