#pragma once
// Launch of the Hopper skinny GEMM for one element type (included by
// csrc/instantiations/sm90_skinny_*.cu).

#include <cuda.h>

#include <type_traits>

#include "cutorch_gemm/device/launch_util.h"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_skinny_kernel.cuh"

namespace cutorch_gemm {

// kGrouped: grouped_mm 2D x 3D (b: G stacked K x N slices, K contiguous or, kWMn, N; x and D rows split by
// g.shape.offs) over `slots` non-empty groups at most (see the kernel); num_sms sizes its
// persistent grid.
template <typename T, int kTok, bool kGrouped = false, bool kWMn = false>
cudaError_t launch_sm90_skinny(const GemmArgs& g, int splits, cudaStream_t stream, int slots = 1, int num_sms = 0) {
  using Smem = Sm90SkinnySmem<T, kTok, kGrouped>;
  constexpr int smem = int(sizeof(Smem)) + 1024;  // + the 1024-byte alignment of the ring
  static_assert(smem <= sm90_skinny_smem_bytes(kTok) + (kGrouped ? kTok * sm90_skinny_red_ld(kTok) * 4 : 0),
                "the rule's shared-memory size covers the kernel's");
  const ProblemShape& s = g.shape;
  constexpr int kRows = sm90_skinny_rows(kTok);
  const int64_t row_tiles = ceil_div(int64_t(s.n), int64_t(kRows));
  if (row_tiles > 65535 || splits < 1 || splits > kSm90SkinnyMaxSplits || slots < 1 || slots > 65535)
    return cudaErrorInvalidValue;
  constexpr CUtensorMapDataType type =
      std::is_same_v<T, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  // W: N rows of K (b = W^T, K contiguous, row stride b_sn); x: M rows of K (row stride a_sm).
  // Boxes past N, M or K arrive as zeros. Grouped: W's map is 3-D, the group outermost.
  CUtensorMap tma_w, tma_x;
  // kWMn: W's N is contiguous (K rows of N, row stride b_sk), boxes of 64 K rows x 64 W rows.
  const uint64_t w_rows = kWMn ? uint64_t(s.k) : uint64_t(s.n), w_cols = kWMn ? uint64_t(s.n) : uint64_t(s.k);
  if (!encode_sw128(&tma_w, type, g.b, w_rows, w_cols, uint64_t(kWMn ? s.b_sk : s.b_sn),
                    kWMn ? kSm90SkinnyBlockK : kRows, kWMn ? kRows : kSm90SkinnyBlockK,
                    kGrouped ? uint64_t(g.batch) : 0, kGrouped ? uint64_t(s.b_sb) : 0) ||
      !encode_sw128(&tma_x, type, g.a, uint64_t(s.m), uint64_t(s.k), uint64_t(s.a_sm), kTok, kSm90SkinnyBlockK)) {
    return cudaErrorNotSupported;
  }
  auto kernel = g.out_f32 ? sm90_skinny_kernel<T, float, kTok, kGrouped, kWMn>
                          : sm90_skinny_kernel<T, T, kTok, kGrouped, kWMn>;
  cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(splits), unsigned(row_tiles), unsigned(kGrouped ? slots : 1));
  if (kGrouped && splits == 1) {
    // Persistent: as many CTAs as are resident at once (two per SM where shared memory allows),
    // each running items in turn; never more than the items.
    static const int per_sm = [&] {
      int b = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, sm90_skinny_threads(kTok), size_t(smem)) !=
          cudaSuccess) {
        (void)cudaGetLastError();
        b = 1;
      }
      return b > 0 ? b : 1;
    }();
    const int64_t items = row_tiles * int64_t(slots);
    const int64_t resident = int64_t(per_sm) * (num_sms > 0 ? num_sms : 1);
    config.gridDim = dim3(1u, unsigned(items < resident ? items : resident), 1u);
  }
  config.blockDim = dim3(sm90_skinny_threads(kTok));
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  if (splits > 1) {  // the K split's CTAs form one cluster (their partial tiles meet in DSMEM)
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  const int w_hint = env_is("CUTORCH_GEMM_L2_HINT", "off") ? 0 : 1;
  err = cudaLaunchKernelEx(&config, kernel, tma_w, tma_x, g, w_hint);
  return err == cudaSuccess ? cudaGetLastError() : err;
}

template <typename T>
cudaError_t run_sm90_skinny(const GemmArgs& g, int tokens, int splits, cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0) return cudaSuccess;
  switch (tokens) {
    case 16:  return launch_sm90_skinny<T, 16>(g, splits, stream);
    case 32:  return launch_sm90_skinny<T, 32>(g, splits, stream);
    case 64:  return launch_sm90_skinny<T, 64>(g, splits, stream);
    case 128: return launch_sm90_skinny<T, 128>(g, splits, stream);
  }
  return cudaErrorInvalidValue;
}

// Grouped along M at decode sizes (device/sm90_skinny.h, sm90_grouped_skinny_refusal): M <= 32
// (64 when forced).
template <typename T>
cudaError_t run_sm90_grouped_skinny(const GemmArgs& g, int tokens, int splits, int slots, int num_sms,
                                    cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0 || g.batch == 0) return cudaSuccess;
  if (g.shape.m > kSm90GroupedSkinnyForcedMaxM) return cudaErrorInvalidValue;  // (the tail's 64-bit row mask)
  const bool w_mn = g.shape.b_sk != 1;  // (the rule takes K- or N-contiguous weights)
  switch (tokens) {
    case 16: return w_mn ? launch_sm90_skinny<T, 16, true, true>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 16, true, false>(g, splits, stream, slots, num_sms);
    case 32: return w_mn ? launch_sm90_skinny<T, 32, true, true>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 32, true, false>(g, splits, stream, slots, num_sms);
    case 64: return w_mn ? launch_sm90_skinny<T, 64, true, true>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 64, true, false>(g, splits, stream, slots, num_sms);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cutorch_gemm
