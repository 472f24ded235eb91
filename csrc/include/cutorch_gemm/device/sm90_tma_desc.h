#pragma once
// Host-side TMA descriptor encoding. cuTensorMapEncodeTiled is a driver API function; it is
// reached through the runtime's driver entry point so nothing links libcuda and the extension
// still imports on a machine without a driver.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cutorch_gemm {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      p = nullptr;
    }
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// A row-major view of elem_bytes-sized elements, read (or written) in boxes of box_rows x box_cols with the 128-byte
// swizzle: 2-D (rows x cols, row stride in elements, cols contiguous) or, with batch > 0, 3-D
// (batch x rows x cols, batch stride in elements; boxes of one batch entry).
inline bool encode_sw128(CUtensorMap* map, CUtensorMapDataType type, const void* base, uint64_t rows, uint64_t cols,
                         uint64_t row_stride_elems, uint32_t box_rows, uint32_t box_cols, uint64_t batch = 0,
                         uint64_t batch_stride_elems = 0, uint64_t elem_bytes = 2) {
  const EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return false;
  const cuuint64_t dims[3] = {cols, rows, batch};
  const cuuint64_t strides[2] = {row_stride_elems * elem_bytes, batch_stride_elems * elem_bytes};
  const cuuint32_t box[3] = {box_cols, box_rows, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  // L2 promotion: a box row's requests fetch 256 bytes, except where the rows are not 128-byte
  // multiples (a 128-byte box row then straddles two lines), where 128 measured faster. H200, ratio
  // to cuBLAS with 256 / 128-byte promotion (9 interleaved rounds): 3000x5000x1000 (2000-byte rows)
  // 0.914 / 0.951, 5000x3000x1000 0.895 / 0.925; 3000x5000x1024 (aligned) 0.955 / 0.960. Small-M
  // streams and 1024^3 measured within +-2% either way, so aligned rows keep 256.
  const CUtensorMapL2promotion promo =
      strides[0] % 128 == 0 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  return fn(map, type, batch > 0 ? 3 : 2, const_cast<void*>(base), dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promo,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// A 3-D view (dims[0] contiguous; strides of dims 1-2 in bytes) in boxes with the 64-byte swizzle
// (box[0] * elem_bytes == 64): the grouped skinny kernel's SwiGLU over N-contiguous weights, whose
// gate and up boxes are 32 columns wide each.
inline bool encode_3d_sw64(CUtensorMap* map, CUtensorMapDataType type, const void* base, const uint64_t (&dims)[3],
                           const uint64_t (&stride_bytes)[2], const uint32_t (&box)[3]) {
  const EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return false;
  const cuuint64_t d[3] = {dims[0], dims[1], dims[2]};
  const cuuint64_t st[2] = {stride_bytes[0], stride_bytes[1]};
  const cuuint32_t bx[3] = {box[0], box[1], box[2]};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return fn(map, type, 3, const_cast<void*>(base), d, st, bx, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
         CUDA_SUCCESS;
}

// A 4-D view (dims[0] contiguous; strides of dims 1-3 in bytes, 16-byte multiples) read in boxes
// of box[0..3] with the 128-byte swizzle, box[0] * elem_bytes == 128 (a narrower box row does not
// fill the swizzle's 128-byte rows: H200, half of each row stayed unwritten). The box lands in
// shared memory dims[0] fastest: the grouped skinny kernel's SwiGLU view of a K-contiguous weight
// puts its 32 gate rows and the matching 32 up rows into one 64-row tile this way.
inline bool encode_4d_sw128(CUtensorMap* map, CUtensorMapDataType type, const void* base, const uint64_t (&dims)[4],
                            const uint64_t (&stride_bytes)[3], const uint32_t (&box)[4]) {
  const EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return false;
  const cuuint64_t d[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t st[3] = {stride_bytes[0], stride_bytes[1], stride_bytes[2]};
  const cuuint32_t bx[4] = {box[0], box[1], box[2], box[3]};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  return fn(map, type, 4, const_cast<void*>(base), d, st, bx, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
         CUDA_SUCCESS;
}

}  // namespace cutorch_gemm
