#pragma once
// Launching the Hopper kernels with programmatic dependent launch (arch/sm90_grid_dependency.cuh: the kernels signal
// their dependents at once and wait for the kernel before them before they touch global memory).

#include <cuda_runtime.h>

#include "cutorch_gemm/core/macros.h"
#include "cutorch_gemm/device/launch_util.h"

namespace cutorch_gemm {

// The depth of K one CTA runs through in a launch (its work items, in turn, times each item's K) up to which the
// launchers ask for programmatic dependent launch (sm90_pdl_wanted).
constexpr long long kSm90PdlMaxCtaK = 2048;

// Whether a launch of `items` work items of K depth `item_k` over `units` CTAs (or clusters, which share their
// items) asks for programmatic dependent launch: by default where it is short, a CTA running through at most
// kSm90PdlMaxCtaK of K in all (a few microseconds, so the fixed cost between two launches is a sizable part of it).
// CUTORCH_GEMM_SM90_PDL=on asks for it on every launch, =off on none (A/B runs, tests). Why not always: measured on an
// H200 (fifty-sixth session, bf16, CUDA-graph replays) it saves 8-11% at 1024^3 and 6-7% at 2048x2048x512 (one tile
// per CTA, K <= 1024) but costs ~1% at 1024x1024x4096 and 4-6% at 64x14336x4096 (one tile per CTA, K = 4096), and is
// neutral on longer launches (benchmarks/RESULTS.md; why the long one-tile launches lose is open:
// benchmarks/experiments/sm90_pdl_probe.sh).
inline bool sm90_pdl_wanted(long long items, long long units, long long item_k) {
  if (env_is("CUTORCH_GEMM_SM90_PDL", "off")) return false;
  if (env_is("CUTORCH_GEMM_SM90_PDL", "on")) return true;
  return ceil_div(items, max_of(units, 1LL)) * item_k <= kSm90PdlMaxCtaK;
}

// cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticStreamSerialization added to config's attributes when
// `pdl`, for kernels that execute griddepcontrol.wait before any global memory access. Where the runtime refuses
// the attribute, the plain launch (the refusal is not a sticky error).
template <typename... Params, typename... Args>
cudaError_t sm90_launch_pdl(const cudaLaunchConfig_t& config, bool pdl, void (*kernel)(Params...), Args&&... args) {
  if (pdl && config.numAttrs < 4) {
    cudaLaunchAttribute attrs[4];
    for (unsigned i = 0; i < config.numAttrs; ++i) attrs[i] = config.attrs[i];
    attrs[config.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[config.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t pdl = config;
    pdl.attrs = attrs;
    pdl.numAttrs = config.numAttrs + 1;
    if (cudaLaunchKernelEx(&pdl, kernel, args...) == cudaSuccess) return cudaGetLastError();
    (void)cudaGetLastError();
  }
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, args...);
  return err == cudaSuccess ? cudaGetLastError() : err;
}

}  // namespace cutorch_gemm
