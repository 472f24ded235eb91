#pragma once
// Launching the Hopper kernels with programmatic dependent launch (arch/sm90_grid_dependency.cuh: the kernels signal
// their dependents at once and wait for the kernel before them before they touch global memory).

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "cutorch_gemm/device/sm90_pdl_rule.h"

namespace cutorch_gemm {

// CUTORCH_GEMM_SM90_PDL as the rules (device/sm90_pdl_rule.h) take it: "on", "off" or anything else (the rules).
inline std::string sm90_pdl_env() {
  const char* v = std::getenv("CUTORCH_GEMM_SM90_PDL");
  return v != nullptr ? std::string(v) : std::string();
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
