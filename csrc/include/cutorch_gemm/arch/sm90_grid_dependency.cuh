#pragma once
// Programmatic dependent launch (sm_90): a grid launched with cudaLaunchAttributeProgrammaticStreamSerialization may
// start while the kernel before it in the stream still runs, once every CTA of that kernel has signalled
// (griddepcontrol.launch_dependents) or exited. What it may do before griddepcontrol.wait returns: only work that
// touches no global memory another kernel may write or read (barrier initialisation, descriptor prefetch from the
// kernel's parameters). After the wait the prerequisite grid has completed and its writes are visible. Both
// instructions are no-ops in a grid launched without the attribute / with no such dependents.

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm90 {

// Blocks the thread until the grids this one depends on programmatically have completed and their memory is
// visible (returns at once in a launch without the attribute).
CG_DEVICE void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// This CTA no longer holds back the dependent grid's launch (its CTAs still wait in grid_dependency_wait for this
// grid's completion before they touch memory).
CG_DEVICE void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" :::); }

}  // namespace cutorch_gemm::sm90
