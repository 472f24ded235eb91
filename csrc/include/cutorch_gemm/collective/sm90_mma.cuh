#pragma once
// The operand types of the Hopper mainloop: what kernel/sm90_gemm_ws_kernel.cuh needs to know
// about them. Each is a type with the shared-memory element, the K of one wgmma instruction,
// whether MN-major tiles are allowed, whether the epilogue is scaled_mm's, and the instruction.
// Every type fills one 128-byte swizzle row per tile row with its kBlockK (64 16-bit, 128 8-bit
// or 32 fp32 elements), so the stage layout and the K step of the descriptors (32 bytes) are shared.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cutorch_gemm/arch/sm90_wgmma.cuh"
#include "cutorch_gemm/arch/sm90_wgmma_fit.cuh"
#include "cutorch_gemm/core/types.h"

namespace cutorch_gemm {

// fp16 / bf16: m64n256k16 (m64n128k16, m64n64k16 for the narrow configs' 64- and 32-register fragments); either
// tile K-major or MN-major (wgmma's transpose bits).
template <typename T>
struct Sm90Mma16 {
  using Element = T;
  static constexpr int kInstrK = 16;
  static constexpr bool kMnMajorOk = true;
  static constexpr bool kScaled = false;  // epilogue: alpha, bias and C of type T, activations
  static constexpr bool kPromote = false;  // the tensor core's accumulation is fp32 already
  static constexpr bool kNarrowOk = true;  // a 128-column tile (m64n128k16) exists
  template <bool kAMn, bool kBMn>
  static CG_DEVICE void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      sm90::wgmma_m64n256k16_bf16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    } else {
      sm90::wgmma_m64n256k16_f16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    }
  }
  // The narrow configs' fragments: m64n128k16 (64 registers) and m64n64k16 (32), one overload set;
  // the fit-width cooperative configs' m64nNk16, N = 80 ... 224 (40 ... 112 registers; N = 128 the narrow one),
  // and the 240-wide pair tile's (120).
  // The 320-wide tile's fragment (160 registers): two m64n160k16, B's second half 160 rows (160 x 128 bytes, K-major,
  // a whole number of 1024-byte swizzle atoms) on. Each half's registers are the fragment's in order: columns 8 j
  // ... 8 j + 7 at registers 4 j ... 4 j + 3 across both, as one m64n320 would hold them.
  template <bool kAMn, bool kBMn>
  static CG_DEVICE void mma(float (&d)[160], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    static_assert(!kBMn, "the 320-wide tile reads B K-major");
    float(&lo)[80] = *reinterpret_cast<float(*)[80]>(&d[0]);
    float(&hi)[80] = *reinterpret_cast<float(*)[80]>(&d[80]);
    constexpr uint64_t kHalfB = uint64_t(160 * 128) >> 4;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      sm90::wgmma_fit_k16_bf16<kAMn, kBMn>(lo, desc_a, desc_b, scale_d);
      sm90::wgmma_fit_k16_bf16<kAMn, kBMn>(hi, desc_a, desc_b + kHalfB, scale_d);
    } else {
      sm90::wgmma_fit_k16_f16<kAMn, kBMn>(lo, desc_a, desc_b, scale_d);
      sm90::wgmma_fit_k16_f16<kAMn, kBMn>(hi, desc_a, desc_b + kHalfB, scale_d);
    }
  }
  template <bool kAMn, bool kBMn, int kRegs>
  static CG_DEVICE void mma(float (&d)[kRegs], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    constexpr bool kFit = kRegs >= 40 && kRegs <= 120 && kRegs % 8 == 0 && kRegs != 64;
    static_assert(kRegs == 64 || kRegs == 32 || kFit, "a 64x128, 64x64 or fit-width (64 x 80..240) tile");
    if constexpr (kFit && std::is_same_v<T, __nv_bfloat16>) {
      sm90::wgmma_fit_k16_bf16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    } else if constexpr (kFit) {
      sm90::wgmma_fit_k16_f16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      sm90::wgmma_narrow_k16_bf16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    } else {
      sm90::wgmma_narrow_k16_f16<kAMn, kBMn>(d, desc_a, desc_b, scale_d);
    }
  }
};

// e4m3 / e5m2 (each operand its own kind): per k-block, partial tiles of the fragment's columns
// (mma_part: n128 halves, n64 quarters or n96 halves, by config) added to the fp32 accumulator, no
// chained m64n256 form (see kPromote; Sm90MmaF8Fast below is that form), both tiles K-major; the
// epilogue is scaled_mm's (GemmArgs::scale_a / scale_b, fp32 bias).
template <Fp8Kind kA, Fp8Kind kB>
struct Sm90MmaF8 {
  using Element = uint8_t;  // raw bytes: TMA moves them, wgmma interprets them
  static constexpr int kInstrK = 32;
  static constexpr bool kMnMajorOk = false;
  static constexpr bool kScaled = true;
  // NOTE: Hopper's 8-bit wgmma does not accumulate in full fp32: measured on an H100
  // (scripts/fp8_accum_probe.py), a chained accumulation is off by ~3e3 eps32 * sum|a*b|,
  // the same as torch._scaled_mm(use_fast_accum=True), and its error relative to |D| grows
  // with K (7e-3 at K = 16384). So each k-block's 4 instructions accumulate into a fresh
  // half tile (mma_part), which the consumer then adds to the fp32 accumulator, as
  // torch._scaled_mm's default (use_fast_accum=False) does.
  static constexpr bool kPromote = true;
  static constexpr bool kNarrowOk = false;
  // D[64 x 2 kRegs] = (A * B[columns]) for one K step into a fresh partial tile: kRegs 32 (an n64
  // quarter, m64n64k32), 48 (an n96 half of the 192-column config) or 64 (an n128 half,
  // m64n128k32); 128 (m64n256k32) is Sm90MmaF8Fast's.
  template <int kRegs>
  static CG_DEVICE void mma_part(float (&d)[kRegs], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    static_assert(kRegs == 32 || kRegs == 48 || kRegs == 64 || kRegs == 128, "an n64, n96, n128 or n256 tile");
    if constexpr (kA == Fp8Kind::kE4M3 && kB == Fp8Kind::kE4M3) {
      sm90::wgmma_k32_e4m3_e4m3(d, desc_a, desc_b, scale_d);
    } else if constexpr (kA == Fp8Kind::kE4M3) {
      sm90::wgmma_k32_e4m3_e5m2(d, desc_a, desc_b, scale_d);
    } else if constexpr (kB == Fp8Kind::kE4M3) {
      sm90::wgmma_k32_e5m2_e4m3(d, desc_a, desc_b, scale_d);
    } else {
      sm90::wgmma_k32_e5m2_e5m2(d, desc_a, desc_b, scale_d);
    }
  }
};

// The same operands chained over all of K in the tensor core (scaled_mm's use_fast_accum=True,
// like torch._scaled_mm's): one m64n256k32 per K step into the accumulator, no promotion. Faster,
// and as torch's fast mode, its error grows with K (see Sm90MmaF8::kPromote).
template <Fp8Kind kA, Fp8Kind kB>
struct Sm90MmaF8Fast {
  using Element = uint8_t;
  static constexpr int kInstrK = 32;
  static constexpr bool kMnMajorOk = false;
  static constexpr bool kScaled = true;
  static constexpr bool kPromote = false;
  static constexpr bool kNarrowOk = false;
  template <bool kAMn, bool kBMn>
  static CG_DEVICE void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    Sm90MmaF8<kA, kB>::mma_part(d, desc_a, desc_b, scale_d);  // m64n256k32
  }
};

// tf32: m64n256k8 on fp32 operands (wgmma reads their top 19 bits), both tiles K-major; the
// epilogue is the 16-bit one with T = float (bias, C and D in fp32).
struct Sm90MmaTf32 {
  using Element = float;
  static constexpr int kInstrK = 8;
  static constexpr bool kMnMajorOk = false;
  static constexpr bool kScaled = false;
  static constexpr bool kPromote = false;  // tf32 wgmma accumulates in fp32
  static constexpr bool kNarrowOk = false;
  template <bool kAMn, bool kBMn>
  static CG_DEVICE void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    static_assert(!kAMn && !kBMn, "tf32 wgmma has no transpose bits: both tiles must be K-major");
    sm90::wgmma_m64n256k8_tf32(d, desc_a, desc_b, scale_d);
  }
};

}  // namespace cutorch_gemm
