#pragma once
// Host-side launch of the Hopper kernel: tensor maps, persistent grid, shared-memory size.
// Included only by csrc/instantiations/sm90_*.cu.

#include <cstdlib>
#include <string>

#include "cutorch_gemm/device/sm90_gemm.h"
#include "cutorch_gemm/device/sm90_tma_desc.h"
#include "cutorch_gemm/kernel/sm90_gemm_ws_kernel.cuh"

namespace cutorch_gemm {

// The tensor map of one operand. K-major: rows of K elements (A: M rows, B: N rows), boxes of
// tile-rows x 64. MN-major: rows of M (N) elements, one per k, boxes of kBlockK x 64. Stacked
// operands (batch / group index) get a third dimension.
template <class Cfg>
bool encode_operand(CUtensorMap* map, CUtensorMapDataType type, const void* base, bool mn_major, int tile_rows,
                    uint64_t mn, uint64_t k, int64_t mn_stride, int64_t k_stride, uint64_t batch,
                    int64_t batch_stride) {
  if (mn_major) {
    return encode_sw128(map, type, base, k, mn, uint64_t(k_stride), Cfg::kBlockK, 64, batch, uint64_t(batch_stride));
  }
  return encode_sw128(map, type, base, mn, k, uint64_t(mn_stride), uint32_t(tile_rows), 64, batch,
                      uint64_t(batch_stride));
}

template <class Cfg, typename T, bool kAMn, bool kBMn>
cudaError_t launch_sm90(const GemmArgs& args, int num_sms, cudaStream_t stream) {
  const ProblemShape& s = args.shape;
  const CUtensorMapDataType type =
      args.dtype == DType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const bool stacked = args.batch > 1;
  const bool a_3d = stacked && s.a_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedN);
  const bool b_3d = stacked && s.b_sb != 0 && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedM);
  CUtensorMap tma_a, tma_b;
  if (!encode_operand<Cfg>(&tma_a, type, args.a, kAMn, Cfg::kBlockM, s.m, s.k, s.a_sm, s.a_sk,
                           a_3d ? args.batch : 0, s.a_sb) ||
      !encode_operand<Cfg>(&tma_b, type, args.b, kBMn, Cfg::kBlockN, s.n, s.k, s.b_sn, s.b_sk,
                           b_3d ? args.batch : 0, s.b_sb)) {
    return cudaErrorNotSupported;  // nothing launched: the caller falls back to SIMT
  }
  Sm90Params p{args, ceil_div(s.m, Cfg::kBlockM), ceil_div(s.n, Cfg::kBlockN), 0, a_3d, b_3d, 0, 0, 0, 0};
  // Register-direct epilogue: no C, no activation, and every column pair of D 2-element
  // aligned (row-major, even row / batch strides, aligned base; grouped-N columns start at
  // arbitrary offsets, so that mode keeps the staged path).
  const size_t pair_bytes = args.out_f32 ? 8 : 2 * sizeof(T);
  // CUTORCH_GEMM_SM90_EPILOGUE=staged|direct forces a slower epilogue path (tests run all three).
  const char* forced_epi = std::getenv("CUTORCH_GEMM_SM90_EPILOGUE");
  const std::string epi = forced_epi ? forced_epi : "";
  const bool plain = args.act == Activation::kNone && args.c == nullptr;
  const bool d_rows = s.d_sn == 1 && s.mode != GroupMode::kGroupedN;  // row-major, no per-group column shift
  p.direct_epilogue = plain && d_rows && s.d_sm % 2 == 0 && s.d_sb % 2 == 0 &&
                      reinterpret_cast<uintptr_t>(args.d) % pair_bytes == 0 && epi != "staged";
  // TMA stores: D's base, row and batch strides 16-byte aligned (D from at::empty: whenever N
  // is a multiple of 8, or of 4 for fp32). Grouped-K and batched outputs are 3-D.
  CUtensorMap tma_d{};
  const uint64_t out_bytes = args.out_f32 ? 4 : sizeof(T);
  p.d_3d = stacked && (s.mode == GroupMode::kBatched || s.mode == GroupMode::kGroupedK);
  // The fused TMA path (activation or C) needs two staging buffers (cooperative config).
  const bool fused = !plain && d_rows && Cfg::kEpiBuffers >= 2 && epi.empty();
  if ((p.direct_epilogue && epi != "direct") || fused) {
    if (reinterpret_cast<uintptr_t>(args.d) % 16 == 0 && (s.d_sm * out_bytes) % 16 == 0 &&
        (!p.d_3d || (s.d_sb * out_bytes) % 16 == 0)) {
      const CUtensorMapDataType d_type = args.out_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : type;
      const bool ok = encode_sw128(&tma_d, d_type, args.d, s.m, s.n, uint64_t(s.d_sm), 64,
                                   uint32_t(128 / out_bytes), p.d_3d ? args.batch : 0, uint64_t(s.d_sb), out_bytes);
      p.tma_store = ok && p.direct_epilogue;
      p.tma_store_fused = ok && fused;
    }
  }
  p.raster_group = raster_group_for(p.tiles_m, p.tiles_n);
  // Grouped M / N tile counts live on the device; each group adds at most one partial tile.
  long long tiles = (long long)p.tiles_m * p.tiles_n * args.batch;
  if (s.mode == GroupMode::kGroupedM) tiles = (long long)(p.tiles_m + args.batch) * p.tiles_n;
  if (s.mode == GroupMode::kGroupedN) tiles = (long long)p.tiles_m * (p.tiles_n + args.batch);
  if (tiles == 0) return cudaSuccess;
  static_assert(sizeof(Sm90SharedStorage<Cfg, T>) + 1024 <= 227 * 1024, "shared memory per block (sm_90)");
  const int smem = int(sizeof(Sm90SharedStorage<Cfg, T>)) + 1024;  // + alignment slack
  auto kernel = sm90_gemm_ws_kernel<Cfg, T, kAMn, kBMn>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  kernel<<<int(tiles < num_sms ? tiles : num_sms), Cfg::kThreads, smem, stream>>>(tma_a, tma_b, tma_d, p);
  return cudaGetLastError();
}

// The four operand-major combinations of one config and type.
template <class Cfg, typename T>
cudaError_t launch_sm90_layouts(const GemmArgs& args, bool a_mn, bool b_mn, int num_sms, cudaStream_t stream) {
  if (a_mn) {
    return b_mn ? launch_sm90<Cfg, T, true, true>(args, num_sms, stream)
                : launch_sm90<Cfg, T, true, false>(args, num_sms, stream);
  }
  return b_mn ? launch_sm90<Cfg, T, false, true>(args, num_sms, stream)
              : launch_sm90<Cfg, T, false, false>(args, num_sms, stream);
}

}  // namespace cutorch_gemm
