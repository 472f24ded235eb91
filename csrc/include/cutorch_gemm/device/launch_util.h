#pragma once
// Host helpers shared by the launchers (device/*_launch.cuh).

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace cutorch_gemm {

// Whether the environment variable `name` is set to exactly `value` (the launchers' A/B switches).
inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

// One int per (kernel, device), shared by the launchers' once-per-kernel facts below.
class KernelDeviceInts {
 public:
  bool find(const void* kernel, int device, int* value) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = values_.find({kernel, device});
    if (it == values_.end()) return false;
    *value = it->second;
    return true;
  }
  void store(const void* kernel, int device, int value) {
    std::lock_guard<std::mutex> lock(mu_);
    values_[{kernel, device}] = value;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<const void*, int>, int> values_;
};

// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes) once per (kernel, device):
// the attribute stays set, and the driver call on every launch was host time that small
// problems (a few microseconds of GPU work) pay in full.
inline cudaError_t ensure_dynamic_smem(const void* kernel, int bytes) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static KernelDeviceInts allowed;  // bytes already allowed
  int have = 0;
  if (allowed.find(kernel, device, &have) && have >= bytes) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess) allowed.store(kernel, device, bytes);
  return err;
}

// Launches `config` in clusters of `x` CTAs along the grid's x dimension; `attr` is the caller's storage and must
// outlive the launch.
inline void set_cluster_x(cudaLaunchConfig_t& config, cudaLaunchAttribute& attr, unsigned x) {
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = x;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
}

// cudaOccupancyMaxActiveClusters for a launch configuration, once per (kernel, device): how many
// clusters of the kernel fit on the GPU at once (a persistent grid's size). A cluster's CTAs
// share one GPC, so this can be below SMs / cluster size. 0 on error.
inline int max_active_clusters(const void* kernel, const cudaLaunchConfig_t& config) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  static KernelDeviceInts known;
  int clusters = 0;
  if (known.find(kernel, device, &clusters)) return clusters;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; the caller launches without clusters
    return 0;
  }
  known.store(kernel, device, clusters);
  return clusters;
}

// How many CTAs of `kernel` (threads, dynamic shared memory) the device holds at once, once per
// (kernel, device): occupancy per SM times the SMs. 0 on error.
inline long long resident_ctas(const void* kernel, int threads, int smem_bytes) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  static KernelDeviceInts known;
  int ctas = 0;
  if (known.find(kernel, device, &ctas)) return ctas;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, size_t(smem_bytes)) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  ctas = per_sm * sms;
  known.store(kernel, device, ctas);
  return ctas;
}

// Whether the code of `kernel` that runs on the current device was compiled for sm_90 or later, from sm_90 or later
// PTX (cudaFuncGetAttributes' binaryVersion and ptxVersion, once per (kernel, device)). Why both: a build without an
// sm_90 cubin runs on Hopper by JIT from compute_80 PTX (binaryVersion 90, ptxVersion 80), whose __CUDA_ARCH__ 800
// code has none of the sm_90-only instructions (griddepcontrol) that a Hopper-only launch attribute relies on.
inline bool kernel_runs_sm90_code(const void* kernel) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  static KernelDeviceInts known;
  int yes = 0;
  if (known.find(kernel, device, &yes)) return yes != 0;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  yes = attr.binaryVersion >= 90 && attr.ptxVersion >= 90 ? 1 : 0;
  known.store(kernel, device, yes);
  return yes != 0;
}

}  // namespace cutorch_gemm
