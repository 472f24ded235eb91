// The wrappers' direct entry points (fast_calls.cpp), registered on the Python module cutorch_gemm._C.
#pragma once

#include <pybind11/pybind11.h>

namespace cutorch_gemm::fast {
void register_fast_calls(pybind11::module_& m);
}  // namespace cutorch_gemm::fast
