#pragma once
// Plain, torch-free descriptions of element types and operand layouts.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

// Element types of the operands. Accumulation: fp32 for 16-bit and fp32, fp64 for fp64, int32
// for int8 (whose products are stored as int32, like torch._int_mm).
enum class DType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2, kFloat64 = 3, kInt8 = 4 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat16:  return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32:  return "float32";
    case DType::kFloat64:  return "float64";
    case DType::kInt8:     return "int8";
  }
  return "?";
}

inline int dtype_size(DType t) {
  switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat32:  return 4;
    case DType::kFloat64:  return 8;
    case DType::kInt8:     return 1;
  }
  return 0;
}

// The two 8-bit float formats of gemm.scaled_mm's operands (torch.float8_e4m3fn and
// torch.float8_e5m2); each operand has its own.
enum class Fp8Kind : int { kE4M3 = 0, kE5M2 = 1 };

inline const char* fp8_kind_name(Fp8Kind k) { return k == Fp8Kind::kE4M3 ? "e4m3" : "e5m2"; }

// How a 2-D operand sits in memory. A transposed view of a row-major matrix is column-major:
// the kernels read it as such (no copy).
enum class Layout : int { kRowMajor = 0, kColumnMajor = 1, kStrided = 2 };

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kRowMajor:    return "row";
    case Layout::kColumnMajor: return "col";
    case Layout::kStrided:     return "strided";
  }
  return "?";
}

// The stride of a dimension of extent <= 1 never matters, so it counts as 1. Then: row-major
// when the column stride is 1 (this wins when both are 1), column-major when the row stride
// is 1, else strided (still readable element by element, without vector loads).
CG_HOST_DEVICE Layout classify_layout(index_t rows, index_t cols, index_t stride_row,
                                      index_t stride_col) {
  const index_t sr = rows <= 1 ? 1 : stride_row;
  const index_t sc = cols <= 1 ? 1 : stride_col;
  if (sc == 1) return Layout::kRowMajor;
  if (sr == 1) return Layout::kColumnMajor;
  return Layout::kStrided;
}

}  // namespace cutorch_gemm
