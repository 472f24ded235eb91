#pragma once
// Launch of the Hopper skinny GEMM for one element type (included by
// csrc/instantiations/sm90_skinny_*.cu).

#include <cuda.h>

#include <cstdlib>
#include <type_traits>

#include "cutorch_gemm/device/launch_util.h"
#include "cutorch_gemm/device/sm90_pdl_launch.cuh"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_skinny_kernel.cuh"

namespace cutorch_gemm {

// kGrouped: grouped_mm 2D x 3D (b: G stacked K x N slices, K contiguous or, kWMn, N; x and D rows split by
// g.shape.offs) over `slots` non-empty groups at most (see the kernel); num_sms sizes its
// persistent grid. kSwiGlu (grouped only): D = silu(gate) * up of b's [gate | up] column halves,
// N / 2 columns, 32 per work item.
template <typename T, int kTok, bool kGrouped = false, bool kWMn = false, bool kSwiGlu = false, bool kDeep = false>
cudaError_t launch_sm90_skinny(const GemmArgs& g, int splits, cudaStream_t stream, int slots = 1, int num_sms = 0) {
  using Smem = Sm90SkinnySmem<T, kTok, kGrouped, kDeep>;
  constexpr int smem = int(sizeof(Smem)) + 1024;  // + the 1024-byte alignment of the ring
  static_assert(smem <= sm90_skinny_smem_bytes(kTok, kDeep) + (Smem::kOwnRed ? kTok * sm90_skinny_red_ld(kTok) * 4 : 0),
                "the rule's shared-memory size covers the kernel's");
  static_assert(smem <= 227 * 1024, "shared memory per block (sm_90)");
  const ProblemShape& s = g.shape;
  constexpr int kRows = sm90_skinny_rows(kTok);
  const int64_t row_tiles = ceil_div(int64_t(kSwiGlu ? s.n / 2 : s.n), int64_t(kSwiGlu ? kRows / 2 : kRows));
  if (row_tiles > 65535 || splits < 1 || splits > kSm90SkinnyMaxSplits || slots < 1 || slots > 65535)
    return cudaErrorInvalidValue;
  auto kernel = g.out_f32 ? sm90_skinny_kernel<T, float, kTok, kGrouped, kWMn, kSwiGlu, kDeep>
                          : sm90_skinny_kernel<T, T, kTok, kGrouped, kWMn, kSwiGlu, kDeep>;
  cudaError_t err = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  if (err != cudaSuccess) return err;
  if constexpr (kDeep) {
    // The deep ring (device/sm90_skinny.h, sm90_skinny_stages) holds one CTA per SM: where sm90_skinny_deep_ring
    // takes it and every CTA (every cluster of 2) is resident at once; else the short ring, two CTAs per SM (a
    // second wave would double the time). Decided before the tensor maps, which the short launch encodes itself.
    const char* knob = std::getenv("CUTORCH_GEMM_SKINNY_RING");
    bool deep = sm90_skinny_deep_ring(kTok, s.k, splits, knob != nullptr ? knob : "");
    if (deep && splits == 1) {
      deep = row_tiles <= resident_ctas(reinterpret_cast<const void*>(kernel), sm90_skinny_threads(kTok), smem);
    } else if (deep) {
      cudaLaunchConfig_t probe{};
      cudaLaunchAttribute cluster[1];
      set_cluster_x(probe, cluster[0], unsigned(splits));
      probe.gridDim = dim3(unsigned(splits), unsigned(row_tiles), 1u);
      probe.blockDim = dim3(sm90_skinny_threads(kTok));
      probe.dynamicSmemBytes = size_t(smem);
      deep = row_tiles <= max_active_clusters(reinterpret_cast<const void*>(kernel), probe);
    }
    if (!deep) return launch_sm90_skinny<T, kTok, kGrouped, kWMn, kSwiGlu, false>(g, splits, stream, slots, num_sms);
  }
  constexpr CUtensorMapDataType type =
      std::is_same_v<T, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  // W: N rows of K (b = W^T, K contiguous, row stride b_sn); x: M rows of K (row stride a_sm).
  // Boxes past N, M or K arrive as zeros. Grouped: W's map is 3-D, the group outermost.
  CUtensorMap tma_w, tma_x;
  bool w_ok;
  if constexpr (kSwiGlu) {
    // K-major: [gate | up] as a dimension of 2 (F apart), so one box (k, col, half, group) brings 32
    // gate and the matching 32 up rows of W as [half][col][k] (64 rows of 64 K).
    const uint64_t f = uint64_t(s.n / 2), e = sizeof(T);
    if constexpr (kWMn) {
      // NOTE: a (col, half, k) view with 64-byte boxes under the 128-byte swizzle left half of each
      // 128-byte row unwritten (H200: non-finite outputs). N-contiguous weights load their gate and
      // up halves as two 32-column boxes with the 64-byte swizzle instead, 4 KB apart.
      const uint64_t dims[3] = {2 * f, uint64_t(s.k), uint64_t(g.batch)};
      const uint64_t strides[2] = {uint64_t(s.b_sk) * e, uint64_t(s.b_sb) * e};
      const uint32_t box[3] = {uint32_t(kRows / 2), uint32_t(kSm90SkinnyBlockK), 1};
      w_ok = encode_3d_sw64(&tma_w, type, g.b, dims, strides, box);
    } else {
      const uint64_t dims[4] = {uint64_t(s.k), f, 2, uint64_t(g.batch)};
      const uint64_t strides[3] = {uint64_t(s.b_sn) * e, f * uint64_t(s.b_sn) * e, uint64_t(s.b_sb) * e};
      const uint32_t box[4] = {uint32_t(kSm90SkinnyBlockK), uint32_t(kRows / 2), 2, 1};
      w_ok = encode_4d_sw128(&tma_w, type, g.b, dims, strides, box);
    }
  } else {
    // kWMn: W's N is contiguous (K rows of N, row stride b_sk), boxes of 64 K rows x 64 W rows.
    const uint64_t w_rows = kWMn ? uint64_t(s.k) : uint64_t(s.n), w_cols = kWMn ? uint64_t(s.n) : uint64_t(s.k);
    w_ok = encode_sw128(&tma_w, type, g.b, w_rows, w_cols, uint64_t(kWMn ? s.b_sk : s.b_sn),
                        kWMn ? kSm90SkinnyBlockK : kRows, kWMn ? kRows : kSm90SkinnyBlockK,
                        kGrouped ? uint64_t(g.batch) : 0, kGrouped ? uint64_t(s.b_sb) : 0);
  }
  if (!w_ok ||
      !encode_sw128(&tma_x, type, g.a, uint64_t(s.m), uint64_t(s.k), uint64_t(s.a_sm), kTok, kSm90SkinnyBlockK)) {
    return cudaErrorNotSupported;
  }
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
  if (splits > 1) set_cluster_x(config, attr[0], unsigned(splits));  // the K split's CTAs: one cluster (DSMEM sums)
  const int w_hint = env_is("CUTORCH_GEMM_L2_HINT", "off") ? 0 : 1;
  // Programmatic dependent launch (device/sm90_pdl_launch.cuh) for short launches on small grids: the K a CTA runs
  // through, items (a row tile's K split share) over CTAs (more than one each where persistent).
  const long long ctas = (long long)config.gridDim.x * config.gridDim.y * config.gridDim.z;
  const long long items = (long long)splits * row_tiles * (kGrouped ? slots : 1);
  const bool pdl = sm90_skinny_pdl_wanted(ctas, ceil_div(items, ctas) * ceil_div((long long)s.k, (long long)splits),
                                          num_sms, sm90_pdl_env());
  return sm90_launch_pdl(config, pdl, kernel, tma_w, tma_x, g, w_hint);
}

template <typename T>
cudaError_t run_sm90_skinny(const GemmArgs& g, int tokens, int splits, cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0) return cudaSuccess;
  switch (tokens) {
    case 16:  return launch_sm90_skinny<T, 16>(g, splits, stream);
    case 32:  return launch_sm90_skinny<T, 32>(g, splits, stream);
    case 64:  return launch_sm90_skinny<T, 64, false, false, false, /*kDeep=*/true>(g, splits, stream);
    case 128: return launch_sm90_skinny<T, 128>(g, splits, stream);
  }
  return cudaErrorInvalidValue;
}

// The grouped launch for one epilogue kind: the token config and W's majorness pick the instance.
template <typename T, bool kSwiGlu>
cudaError_t run_sm90_grouped_skinny_as(const GemmArgs& g, int tokens, int splits, int slots, int num_sms,
                                       cudaStream_t stream) {
  const bool w_mn = g.shape.b_sk != 1;  // (the rule takes K- or N-contiguous weights)
  switch (tokens) {
    case 16: return w_mn ? launch_sm90_skinny<T, 16, true, true, kSwiGlu>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 16, true, false, kSwiGlu>(g, splits, stream, slots, num_sms);
    case 32: return w_mn ? launch_sm90_skinny<T, 32, true, true, kSwiGlu>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 32, true, false, kSwiGlu>(g, splits, stream, slots, num_sms);
    case 64: return w_mn ? launch_sm90_skinny<T, 64, true, true, kSwiGlu>(g, splits, stream, slots, num_sms)
                         : launch_sm90_skinny<T, 64, true, false, kSwiGlu>(g, splits, stream, slots, num_sms);
  }
  return cudaErrorInvalidValue;
}

// Grouped along M at decode sizes (device/sm90_skinny.h, sm90_grouped_skinny_refusal): M <= 32
// (64 when forced); swiglu: grouped_mm's fused SwiGLU.
template <typename T>
cudaError_t run_sm90_grouped_skinny(const GemmArgs& g, int tokens, int splits, int slots, int num_sms, bool swiglu,
                                    cudaStream_t stream) {
  if (g.shape.m == 0 || g.shape.n == 0 || g.batch == 0) return cudaSuccess;
  if (g.shape.m > kSm90GroupedSkinnyForcedMaxM) return cudaErrorInvalidValue;  // (the tail's 64-bit row mask)
  return swiglu ? run_sm90_grouped_skinny_as<T, true>(g, tokens, splits, slots, num_sms, stream)
                : run_sm90_grouped_skinny_as<T, false>(g, tokens, splits, slots, num_sms, stream);
}

}  // namespace cutorch_gemm
