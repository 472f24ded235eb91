#pragma once
// grouped_mm's rows (groups along M) or columns (groups along N) past offs[-1]: outside every
// group, so no GEMM tile writes them, and they must read as zero. Zeroed by a small kernel that
// reads offs[-1] on the device (no host synchronisation) before the GEMM runs, instead of a
// memset of the whole output (H100: a 16384 x 14336 bf16 output took ~150 us to clear; a routed
// MoE batch usually leaves no such rows at all). offs[-1] is clamped to [0, extent]. Kernel:
// kernel/grouped_tail_kernel.cuh.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cutorch_gemm {

// d: rows x cols elements of elem_bytes (2, 4 or 8) with row stride ld (elements). along_rows:
// zero rows [offs[-1], rows) (groups along M); else columns [offs[-1], cols) of every row.
// offs_last: the device address of offs[-1], or null (no groups: everything is zeroed).
cudaError_t zero_past_last_offset(void* d, int64_t rows, int64_t cols, int64_t ld, int elem_bytes,
                                  const int32_t* offs_last, bool along_rows, int num_sms, cudaStream_t stream);

}  // namespace cutorch_gemm
