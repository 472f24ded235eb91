// How many clusters of 1, 2 or 4 CTAs of 384 threads fit on this GPU at once for a given dynamic shared
// memory size (cudaOccupancyMaxActiveClusters): whether a clustered persistent launch is short of SMs.
//   nvcc -arch=sm_90a -o /tmp/cluster_occupancy benchmarks/experiments/cluster_occupancy.cu && /tmp/cluster_occupancy
// H100 (twenty-seventh session): 66 clusters of 2 (132 CTAs) and 30 of 4 (120 CTAs) at 160-227 KB.
#include <cstdio>

#include <cuda_runtime.h>

__global__ void probe(int* p) {
  extern __shared__ int s[];
  if (p) p[0] = s[0];
}

int main() {
  const int smem_kb[] = {100, 160, 200, 227};
  for (int kb : smem_kb) {
    const int smem = kb << 10;
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int c : {1, 2, 4}) {
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = unsigned(c);
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(unsigned(c));
      cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = size_t(smem);
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      int clusters = -1;
      const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<void*>(probe), &cfg);
      std::printf("smem %3d KB, cluster %d: %d clusters (%d CTAs) %s\n", kb, c, clusters, clusters * c,
                  cudaGetErrorString(err));
    }
  }
  return 0;
}
