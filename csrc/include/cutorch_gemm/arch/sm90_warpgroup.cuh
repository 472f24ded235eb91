#pragma once
// Warpgroup-level atoms (sm_90): register reallocation between warpgroups; the lane index as a volatile read.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm90 {

// The producer warpgroup gives registers back, the consumer warpgroups take them (the
// accumulator of a 64x256 fp32 tile is 128 registers per thread).
template <int kRegs>
CG_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
CG_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// The thread's lane (%laneid) through a volatile read: the compiler recomputes what derives from it where it is
// used instead of hoisting it out of loops (a value kept live across a mainloop costs a register there).
CG_DEVICE int lane_id_volatile() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(lane));
  return lane;
}

}  // namespace cutorch_gemm::sm90
