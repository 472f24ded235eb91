#pragma once
// wgmma atoms for the fit-width cooperative tiles (device/sm90_configs.h, Sm90_128xNx64_Coop): fp16 / bf16
// m64nNk16 for N = 80 ... 224 in steps of 16 (N = 128: arch/sm90_wgmma.cuh's narrow atom), one overload set
// per type; the fragment's size (N / 2 registers) picks the width. Same form as arch/sm90_wgmma.cuh's
// CG_WGMMA_K16, with its chained register lists (transpose bits included, though the fit tiles read both
// operands K-major). The last five arguments: the asm operand numbers of desc_a, desc_b, scale_d and the
// transpose immediates, right after the N / 2 accumulators.

#include "cutorch_gemm/arch/sm90_wgmma.cuh"

namespace cutorch_gemm::sm90 {

#define CG_WGMMA_M64N80K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n80k16", PTX_TYPE, 40, "{" CG_WGMMA_R40 "}", CG_WGMMA_O40, "40", "41", "42", "43", \
               "44")
#define CG_WGMMA_M64N96K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n96k16", PTX_TYPE, 48, "{" CG_WGMMA_R48 "}", CG_WGMMA_O48, "48", "49", "50", "51", \
               "52")
#define CG_WGMMA_M64N112K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n112k16", PTX_TYPE, 56, "{" CG_WGMMA_R56 "}", CG_WGMMA_O56, "56", "57", "58", "59", \
               "60")
#define CG_WGMMA_M64N144K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n144k16", PTX_TYPE, 72, "{" CG_WGMMA_R72 "}", CG_WGMMA_O72, "72", "73", "74", "75", \
               "76")
#define CG_WGMMA_M64N160K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n160k16", PTX_TYPE, 80, "{" CG_WGMMA_R80 "}", CG_WGMMA_O80, "80", "81", "82", "83", \
               "84")
#define CG_WGMMA_M64N176K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n176k16", PTX_TYPE, 88, "{" CG_WGMMA_R88 "}", CG_WGMMA_O88, "88", "89", "90", "91", \
               "92")
#define CG_WGMMA_M64N192K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n192k16", PTX_TYPE, 96, "{" CG_WGMMA_R96 "}", CG_WGMMA_O96, "96", "97", "98", "99", \
               "100")
#define CG_WGMMA_M64N208K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n208k16", PTX_TYPE, 104, "{" CG_WGMMA_R104 "}", CG_WGMMA_O104, "104", "105", "106", "107", \
               "108")
#define CG_WGMMA_M64N224K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n224k16", PTX_TYPE, 112, "{" CG_WGMMA_R112 "}", CG_WGMMA_O112, "112", "113", "114", "115", \
               "116")

CG_WGMMA_M64N80K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N96K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N112K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N144K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N160K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N176K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N192K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N208K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N224K16(wgmma_fit_k16_bf16, "bf16")
CG_WGMMA_M64N80K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N96K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N112K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N144K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N160K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N176K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N192K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N208K16(wgmma_fit_k16_f16, "f16")
CG_WGMMA_M64N224K16(wgmma_fit_k16_f16, "f16")

}  // namespace cutorch_gemm::sm90
