"""Build cutorch_gemm._C.

A CUDA extension when a CUDA toolkit and a CUDA build of PyTorch are present, otherwise a
CPU-only extension (the reference implementations). Always built against the installed
torch: `pip install --no-build-isolation -e .`.
"""
import glob
import os

from setuptools import setup

# NOTE: torch.utils.cpp_extension fixes CUDA_HOME at import time from $CUDA_HOME or the nvcc on
# PATH; on machines whose nvcc is not on PATH it would pick /usr/local and miss the headers.
if "CUDA_HOME" not in os.environ and "CUDA_PATH" not in os.environ \
        and os.path.exists("/usr/local/cuda/bin/nvcc"):
    os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(ROOT, "csrc", "include")


def rel(paths):
    return sorted(os.path.relpath(p, ROOT) for p in paths)


def want_cuda() -> bool:
    if os.environ.get("CUTORCH_GEMM_FORCE_CPU", "0") == "1":
        return False
    return torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None


def make_extension():
    common_cpp = rel(glob.glob(os.path.join(ROOT, "csrc", "torch", "*.cpp")))
    cxx_flags = ["-O2"]  # the C++ standard is torch's choice (C++20 for torch >= 2.13)
    if not want_cuda():
        print("cutorch_gemm: building the CPU-only extension "
              f"(torch.version.cuda={torch.version.cuda}, CUDA_HOME={cpp_extension.CUDA_HOME})")
        return cpp_extension.CppExtension(
            "cutorch_gemm._C", common_cpp, include_dirs=[INCLUDE],
            extra_compile_args={"cxx": cxx_flags})

    # NOTE: the arch list goes through TORCH_CUDA_ARCH_LIST only; adding -gencode here makes
    # torch drop the list (ARCHITECTURE.md, Build).
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.0;9.0a")
    arch_token = "_".join("".join(ch for ch in a if ch.isalnum() or ch == ".")
                          for a in os.environ["TORCH_CUDA_ARCH_LIST"].replace(",", ";").split(";") if a.strip())
    arch_define = f"-DCUTORCH_GEMM_ARCH_LIST={arch_token}"
    cuda_cpp = rel(glob.glob(os.path.join(ROOT, "csrc", "torch", "cuda", "*.cpp")))
    kernels = rel(glob.glob(os.path.join(ROOT, "csrc", "instantiations", "*.cu")))
    nvcc_flags = ["-O3", "--expt-relaxed-constexpr", "-lineinfo",
                  "-DCUTORCH_GEMM_WITH_CUDA"]
    if os.environ.get("CUTORCH_GEMM_PTXAS_VERBOSE", "0") == "1":
        nvcc_flags.append("-Xptxas=-v")
    print("cutorch_gemm: building the CUDA extension for TORCH_CUDA_ARCH_LIST="
          f"{os.environ['TORCH_CUDA_ARCH_LIST']} (CUDA {torch.version.cuda}, {len(kernels)} kernel files)")
    return cpp_extension.CUDAExtension(
        "cutorch_gemm._C", common_cpp + cuda_cpp + kernels, include_dirs=[INCLUDE],
        extra_compile_args={"cxx": cxx_flags + ["-DCUTORCH_GEMM_WITH_CUDA", arch_define],
                            "nvcc": nvcc_flags})


setup(
    name="cutorch_gemm",
    ext_modules=[make_extension()],
    cmdclass={"build_ext": cpp_extension.BuildExtension.with_options(use_ninja=True)},
)
