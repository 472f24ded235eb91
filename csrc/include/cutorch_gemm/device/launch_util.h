#pragma once
// Host helpers shared by the launchers (device/*_launch.cuh).

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>

namespace cutorch_gemm {

// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes) once per (kernel, device):
// the attribute stays set, and the driver call on every launch was host time that small
// problems (a few microseconds of GPU work) pay in full.
inline cudaError_t ensure_dynamic_smem(const void* kernel, int bytes) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> set;  // (kernel, device) -> bytes allowed
  const std::pair<const void*, int> key{kernel, device};
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = set.find(key);
    if (it != set.end() && it->second >= bytes) return cudaSuccess;
  }
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess) {
    std::lock_guard<std::mutex> lock(mu);
    int& have = set[key];
    if (have < bytes) have = bytes;
  }
  return err;
}

// cudaOccupancyMaxActiveClusters for a launch configuration, once per (kernel, device): how many
// clusters of the kernel fit on the GPU at once (a persistent grid's size). A cluster's CTAs
// share one GPC, so this can be below SMs / cluster size. 0 on error.
inline int max_active_clusters(const void* kernel, const cudaLaunchConfig_t& config) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> known;
  const std::pair<const void*, int> key{kernel, device};
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(key);
    if (it != known.end()) return it->second;
  }
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; the caller launches without clusters
    return 0;
  }
  std::lock_guard<std::mutex> lock(mu);
  known[key] = clusters;
  return clusters;
}

}  // namespace cutorch_gemm
