// Does programmatic dependent launch cost time by itself on grids between half and all of the SMs? (fifty-seventh
// session: our one-tile-per-CTA Hopper launches of 72..112 CTAs took up to 39% longer with PDL, those of at most 66
// CTAs or ~128 did not; benchmarks/RESULTS.md.) A synthetic kernel, no GEMM: one CTA per SM (dynamic shared memory
// over half an SM's), 256 threads, signalling its dependents at its start and waiting for the kernel before it, then
//   mode 0 "fma":  a fixed FMA loop (no memory);
//   mode 1 "l2":   reading a 1.5 MB slice of a 32 MB buffer (L2-resident after the first pass, as a GEMM CTA's
//                  A and B panels mostly are), `reps` times.
// For each grid size, mode and PDL off / on: per-launch time of a CUDA graph of 40 launches (median of 9 replays);
// then one stamped chain of 40 stream launches: per launch the median and max CTA work time (wait return to end),
// the lag from the launch before's last CTA end to this one's first / last wait return, how many CTAs were placed
// (entered) only after the launch before had ended, the TPCs (SM id / 2) holding two of the launch's CTAs, and the
// most and fewest of its CTAs on one GPC (GPCs mapped first through clusters of 2, whose CTAs share a GPC).
// If "fma" shows the loss: it is the launch machinery (placement, the wait); if only "l2": CTAs sharing a TPC
// (or a GPC: uneven GPC max / min under PDL) slow each other, and PDL changes where they land.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a benchmarks/experiments/pdl_placement.cu -o /tmp/pdlp
//   /tmp/pdlp [grid sizes, comma-separated; default 64,66,72,80,96,112,124,128,132]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "graph_timing.cuh"

struct Stamp {
  unsigned long long entry, go, end;
  unsigned smid, pad;
};

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(256, 1)
    synthetic(Stamp* stamps, const float4* buf, size_t slice_f4, size_t buf_f4, int mode, int work, float* sink) {
  extern __shared__ float4 smem[];
  const unsigned long long entry = now_ns();
  asm volatile("griddepcontrol.launch_dependents;\n" :::);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  const unsigned long long go = now_ns();
  float acc = float(threadIdx.x);
  if (mode == 0) {
    float x = acc * 1e-3f, y = 1.0001f;
#pragma unroll 1
    for (int i = 0; i < work; ++i) {
#pragma unroll
      for (int j = 0; j < 16; ++j) x = fmaf(x, y, 1e-7f);
    }
    acc = x;
  } else {
    const size_t base = (size_t(blockIdx.x) * slice_f4) % (buf_f4 - slice_f4);
    float4 s = make_float4(0, 0, 0, 0);
#pragma unroll 1
    for (int r = 0; r < work; ++r) {
      for (size_t i = threadIdx.x; i < slice_f4; i += blockDim.x) {
        const float4 v = __ldcg(buf + base + i);
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
      }
    }
    acc = s.x + s.y + s.z + s.w;
  }
  smem[threadIdx.x].x = acc;  // keeps the shared memory allocation (and one CTA per SM)
  __syncthreads();
  if (acc == 123.456f) sink[blockIdx.x] = smem[(threadIdx.x + 1) % blockDim.x].x;  // never in practice
  if (threadIdx.x == 0 && stamps != nullptr) {
    unsigned smid;
    asm volatile("mov.u32 %0, %smid;" : "=r"(smid));
    stamps[blockIdx.x] = Stamp{entry, go, now_ns(), smid, 0};
  }
}

// The GPCs, found through clusters (a cluster's CTAs share one GPC): SM ids of each CTA of clusters of 2, one CTA
// per SM; SMs met in one cluster are joined (union-find over many launches).
__global__ void __launch_bounds__(32, 1) cluster_smid(unsigned* out) {
  extern __shared__ float4 smem[];
  unsigned smid;
  asm volatile("mov.u32 %0, %smid;" : "=r"(smid));
  smem[0].x = 0;
  if (threadIdx.x == 0) out[blockIdx.x] = smid;
}

static int find_root(std::vector<int>& p, int x) {
  while (p[x] != x) x = p[x] = p[p[x]];
  return x;
}

// gpc[sm] = a GPC label (its smallest SM id), or -1 where no cluster ever landed.
static std::vector<int> map_gpcs(int sms, int smem) {
  std::vector<int> parent(sms), seen(sms, 0);
  for (int i = 0; i < sms; ++i) parent[i] = i;
  EXP_CHECK(cudaFuncSetAttribute(cluster_smid, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  unsigned* d;
  EXP_CHECK(cudaMalloc(&d, 4096 * sizeof(unsigned)));
  for (int rep = 0; rep < 200; ++rep) {
    const int grid = 2 * (1 + rep % (sms / 2));
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(unsigned(grid));
    c.blockDim = dim3(32);
    c.dynamicSmemBytes = size_t(smem);
    c.attrs = attr;
    c.numAttrs = 1;
    EXP_CHECK(cudaLaunchKernelEx(&c, cluster_smid, d));
    EXP_CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> h(grid);
    EXP_CHECK(cudaMemcpy(h.data(), d, grid * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (int b = 0; b + 1 < grid; b += 2) {
      if (int(h[b]) >= sms || int(h[b + 1]) >= sms) continue;
      seen[h[b]] = seen[h[b + 1]] = 1;
      parent[find_root(parent, h[b])] = find_root(parent, h[b + 1]);
    }
  }
  EXP_CHECK(cudaFree(d));
  std::vector<int> gpc(sms, -1);
  for (int i = 0; i < sms; ++i) {
    if (!seen[i]) continue;
    const int r = find_root(parent, i);
    for (int j = 0; j <= i; ++j) {
      if (seen[j] && find_root(parent, j) == r) {
        gpc[i] = j;
        break;
      }
    }
  }
  return gpc;
}

int main(int argc, char** argv) {
  std::vector<int> grids = {64, 66, 72, 80, 96, 112, 124, 128, 132};
  if (argc > 1) {
    grids.clear();
    for (char* t = std::strtok(argv[1], ","); t; t = std::strtok(nullptr, ",")) grids.push_back(std::atoi(t));
  }
  int sms = 0;
  EXP_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int smem_max = 0;
  EXP_CHECK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const int smem = smem_max * 3 / 4;  // one CTA per SM
  EXP_CHECK(cudaFuncSetAttribute(synthetic, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const std::vector<int> gpc = map_gpcs(sms, smem);
  {
    std::vector<int> size(sms, 0);
    for (int i = 0; i < sms; ++i)
      if (gpc[i] >= 0) ++size[gpc[i]];
    std::printf("GPCs (by clusters of 2): sizes");
    for (int i = 0; i < sms; ++i)
      if (size[i] > 0) std::printf(" %d", size[i]);
    std::printf("; SMs never in a cluster: %d\n", int(std::count(gpc.begin(), gpc.end(), -1)));
  }
  const size_t buf_bytes = size_t(32) << 20, slice_bytes = size_t(3) << 19;
  float4* buf;
  float* sink;
  EXP_CHECK(cudaMalloc(&buf, buf_bytes));
  EXP_CHECK(cudaMemset(buf, 0, buf_bytes));
  EXP_CHECK(cudaMalloc(&sink, 4096 * sizeof(float)));
  constexpr int kChain = 40;
  Stamp* stamps;
  EXP_CHECK(cudaMalloc(&stamps, sizeof(Stamp) * 1024 * kChain));
  cudaStream_t s;
  EXP_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("%d SMs, %d B shared memory per CTA, chain of %d launches\n", sms, smem, kChain);
  std::printf("%-5s %4s %3s %9s %9s %9s %9s %9s %6s %6s %7s %7s\n", "mode", "grid", "pdl", "graph us", "work med",
              "work max", "lag first", "lag last", "late", "2/TPC", "GPC max", "GPC min");
  // work sized for ~20 us per launch: "fma" 600 steps of 16 dependent FMAs (~4 clocks each); "l2" 1.5 MB per CTA
  for (int mode = 0; mode < 2; ++mode) {
    const int work = mode == 0 ? 600 : 1;
    for (int grid : grids) {
      for (int pdl = 0; pdl < 2; ++pdl) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        auto launch = [&](Stamp* st) {
          cudaLaunchConfig_t c{};
          c.gridDim = dim3(unsigned(grid));
          c.blockDim = dim3(256);
          c.dynamicSmemBytes = size_t(smem);
          c.stream = s;
          c.attrs = pdl ? attr : nullptr;
          c.numAttrs = pdl ? 1 : 0;
          EXP_CHECK(cudaLaunchKernelEx(&c, synthetic, st, (const float4*)buf, slice_bytes / 16, buf_bytes / 16, mode,
                                       work, sink));
        };
        const cudaGraphExec_t ge = exp_capture([&] { launch(nullptr); }, s, kChain);
        exp_replay_us(ge, s, kChain);
        std::vector<double> t;
        for (int r = 0; r < 9; ++r) t.push_back(exp_replay_us(ge, s, kChain));
        EXP_CHECK(cudaGraphExecDestroy(ge));
        // stamped chain (stream launches; the kernel before the chain is a plain one)
        for (int i = 0; i < kChain; ++i) launch(stamps + size_t(i) * 1024);
        EXP_CHECK(cudaStreamSynchronize(s));
        std::vector<Stamp> h(size_t(1024) * kChain);
        EXP_CHECK(cudaMemcpy(h.data(), stamps, h.size() * sizeof(Stamp), cudaMemcpyDeviceToHost));
        std::vector<double> wmed, wmax, lag_first, lag_last, late, doubled, gpc_max, gpc_min;
        for (int i = 10; i < kChain; ++i) {  // past the chain's ramp
          const Stamp* cur = &h[size_t(i) * 1024];
          const Stamp* prev = &h[size_t(i - 1) * 1024];
          unsigned long long prev_end = 0, first_go = ~0ull, last_go = 0;
          for (int c = 0; c < grid; ++c) prev_end = std::max(prev_end, prev[c].end);
          std::vector<double> w;
          int n_late = 0;
          std::vector<int> per_tpc(512, 0), per_gpc(sms, 0);
          for (int c = 0; c < grid; ++c) {
            w.push_back(double(cur[c].end - cur[c].go) * 1e-3);
            first_go = std::min(first_go, cur[c].go);
            last_go = std::max(last_go, cur[c].go);
            if (cur[c].entry > prev_end) ++n_late;
            ++per_tpc[(cur[c].smid / 2) % 512];
            if (int(cur[c].smid) < sms && gpc[cur[c].smid] >= 0) ++per_gpc[gpc[cur[c].smid]];
          }
          int hi = 0, lo = 1 << 30;
          for (int i = 0; i < sms; ++i) {
            if (gpc[i] != i) continue;  // one entry per GPC (its label)
            hi = std::max(hi, per_gpc[i]);
            lo = std::min(lo, per_gpc[i]);
          }
          gpc_max.push_back(hi);
          gpc_min.push_back(lo);
          wmed.push_back(exp_median(w));
          wmax.push_back(*std::max_element(w.begin(), w.end()));
          lag_first.push_back((double(first_go) - double(prev_end)) * 1e-3);
          lag_last.push_back((double(last_go) - double(prev_end)) * 1e-3);
          late.push_back(n_late);
          doubled.push_back(double(std::count(per_tpc.begin(), per_tpc.end(), 2)));
        }
        std::printf("%-5s %4d %3d %9.2f %9.2f %9.2f %9.2f %9.2f %6.0f %6.0f %7.0f %7.0f\n", mode == 0 ? "fma" : "l2",
                    grid, pdl, exp_median(t), exp_median(wmed), exp_median(wmax), exp_median(lag_first),
                    exp_median(lag_last), exp_median(late), exp_median(doubled), exp_median(gpc_max),
                    exp_median(gpc_min));
      }
    }
  }
  return 0;
}
