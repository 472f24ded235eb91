#pragma once
// wgmma atoms for the fit-width cooperative tiles (device/sm90_configs.h, Sm90_128xNx64_Coop): fp16 / bf16
// m64nNk16 for N = 80 ... 224 in steps of 16 and 240 (N = 128: arch/sm90_wgmma.cuh's narrow atom), one overload set
// per type (wgmma_fit_k16_bf16 / _f16); the fragment's size (N / 2 registers) picks the width. Same form as
// arch/sm90_wgmma.cuh's CG_WGMMA_K16, with its chained register lists (transpose bits included, though the fit
// tiles read both operands K-major).

#include "cutorch_gemm/arch/sm90_wgmma.cuh"

namespace cutorch_gemm::sm90 {

// Both types' atoms for N = 2 R; I_A ... I_TB: the asm operand numbers of desc_a, desc_b, scale_d and the
// transpose immediates, right after the R accumulators.
#define CG_WGMMA_FIT(N, R, I_A, I_B, I_S, I_TA, I_TB)                                                         \
  CG_WGMMA_K16(wgmma_fit_k16_bf16, "m64n" #N "k16", "bf16", R, "{" CG_WGMMA_R##R "}", CG_WGMMA_O##R, I_A, I_B, \
               I_S, I_TA, I_TB)                                                                              \
  CG_WGMMA_K16(wgmma_fit_k16_f16, "m64n" #N "k16", "f16", R, "{" CG_WGMMA_R##R "}", CG_WGMMA_O##R, I_A, I_B,   \
               I_S, I_TA, I_TB)

CG_WGMMA_FIT(80, 40, "40", "41", "42", "43", "44")
CG_WGMMA_FIT(96, 48, "48", "49", "50", "51", "52")
CG_WGMMA_FIT(112, 56, "56", "57", "58", "59", "60")
CG_WGMMA_FIT(144, 72, "72", "73", "74", "75", "76")
CG_WGMMA_FIT(160, 80, "80", "81", "82", "83", "84")
CG_WGMMA_FIT(176, 88, "88", "89", "90", "91", "92")
CG_WGMMA_FIT(192, 96, "96", "97", "98", "99", "100")
CG_WGMMA_FIT(208, 104, "104", "105", "106", "107", "108")
CG_WGMMA_FIT(224, 112, "112", "113", "114", "115", "116")
CG_WGMMA_FIT(240, 120, "120", "121", "122", "123", "124")  // (the 240-wide pair tile)
#undef CG_WGMMA_FIT

}  // namespace cutorch_gemm::sm90
