"""scripts/sass_local.py's readers of ptxas and nvdisasm output (the SASS check issue 4 asks for, run
without a GPU), on lines in the tools' formats; and, where nvcc and nvdisasm are installed, on one
compiled instantiation file."""
import importlib.util
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("sass_local", os.path.join(ROOT, "scripts", "sass_local.py"))
sass_local = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sass_local)

SASS = """
        /*0c70*/               @P0 LDG.E R6, desc[UR32][R6.64] ;
        /*0d00*/                   UTMALDG.2D [UR8], [UR4], desc[UR6] ;
        /*0d10*/              @!P1 UTMALDG.3D.MULTICAST [UR8], [UR4], UR10, desc[UR6] ;
        /*0e00*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], RZ, !UPT ;
        /*0e10*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR16], R24, gsb0 ;
        /*0f00*/                   QGMMA.64x64x32.F32.E4M3.E4M3 R56, gdesc[UR12], RZ, !UPT ;
        /*1000*/              @UP0 UTMASTG.2D [UR4], [UR6] ;
        /*1100*/                   STL.64 [R1+0x8], R2 ;
        /*1110*/                   LDL.LU R2, [R1+0x4] ;
        /*1120*/                   STS.128 [R3], R4 ;
"""


def test_count_ops_reads_opcodes_after_address_and_predicate():
    got = sass_local.count_ops(SASS)
    assert got == {"HGMMA": 2, "QGMMA": 1, "UTMALDG": 2, "UTMASTG": 1, "LDL": 1, "STL": 1}


def test_count_ops_ignores_labels_and_names():
    text = ".text._ZN12cutorch_gemm19sm90_gemm_ws_kernel:\n.L_x_12:\n        //## HGMMA in a comment\n"
    assert sum(sass_local.count_ops(text).values()) == 0


def test_ptxas_problems_keeps_only_spills_and_stack_frames():
    log = """ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z1jv' for 'sm_90a'
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function '_Z1iv' for 'sm_90a'
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers
"""
    got = sass_local.ptxas_problems(log)
    assert got == ["8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads",
                   "16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"]


@pytest.mark.skipif(sass_local.find_nvdisasm() is None or not os.path.exists(sass_local.NVCC),
                    reason="needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)")
def test_a_compiled_fp8_file(tmp_path):
    src = os.path.join(ROOT, "csrc", "instantiations", "sm90_f8_bf16_pingpong64.cu")
    r = sass_local.check(src, str(tmp_path), sass_local.find_nvdisasm())
    assert "error" not in r, r.get("error")
    assert r["entries"] == 4 and r["QGMMA"] > 0 and r["UTMALDG"] > 0 and r["HGMMA"] == 0
    assert r["LDL"] == 0 and r["STL"] == 0 and r["spills"] == []
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_flags_are_setup_pys():
    # read from setup.py's source (not a copy): its optimisation and the define the kernels are built under
    flags = sass_local.setup_nvcc_flags()
    assert "-O3" in flags and "-DCUTORCH_GEMM_WITH_CUDA" in flags and "-lineinfo" not in flags
    assert sass_local.FLAGS[:len(flags)] == flags
