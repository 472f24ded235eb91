#pragma once
// Division by a divisor fixed for a whole launch, as a multiply and a shift: the host picks the
// constants once, the kernel spends two or three instructions per quotient instead of the ~15 of a
// 32-bit integer division (reciprocal estimate and two corrections), which every inlined tile
// lookup repeats.
//
// For a divisor d in [1, 2^31] let s = ceil(log2 d) and m = ceil(2^(31+s) / d) (m < 2^32). Then for
// every n in [0, 2^31): floor(n / d) = floor(n * m / 2^(31+s)). Why: m = 2^(31+s)/d + e with
// 0 <= e < 1, so n*m / 2^(31+s) = n/d + n*e / 2^(31+s), and the extra term stays below
// 2^31 / 2^(31+s) = 2^-s <= 1/d, which cannot carry n/d past the next integer (n/d is at most
// (d-1)/d above its floor).

#include <cstdint>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

struct FastDivisor {
  uint32_t mul = 1u << 31;  // (the default divides by 1)
  uint32_t shift = 31;      // 31 + s

  // The quotient floor(n / d) for 0 <= n < 2^31.
  CG_HOST_DEVICE uint32_t divide(uint32_t n) const { return uint32_t((uint64_t(n) * mul) >> shift); }
};

// The constants for divisor d (1 <= d <= 2^31).
inline FastDivisor make_fast_divisor(uint32_t d) {
  uint32_t s = 0;
  while ((uint64_t(1) << s) < d) ++s;
  FastDivisor f;
  f.mul = uint32_t(((uint64_t(1) << (31 + s)) + d - 1) / d);
  f.shift = 31 + s;
  return f;
}

}  // namespace cutorch_gemm
