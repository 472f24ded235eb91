#pragma once
// wgmma atoms (sm_90a): warpgroup-wide asynchronous MMA reading both operands from shared
// memory through matrix descriptors; fence / commit_group / wait_group order them.
//
// Inline PTX needs one operand per accumulator register: the list is a macro, written once.

#include <cstdint>

#include "cutorch_gemm/arch/sm90_mbarrier.cuh"

namespace cutorch_gemm::sm90 {

// Shared-memory matrix descriptors for operand tiles that TMA wrote with the 128-byte swizzle
// (CU_TENSOR_MAP_SWIZZLE_128B, 64-element fp16/bf16 box rows). Fields: start address >> 4
// (bits 0-13), leading byte offset >> 4 (16-29), stride byte offset >> 4 (32-45), swizzle mode
// (62-63: 1 = 128B). Tiles start on 1024-byte boundaries, so the base offset (49-51) is 0.
CG_DEVICE uint64_t make_desc_sw128(const void* smem, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint64_t addr = smem_addr(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo_bytes & 0x3FFFF) >> 4) << 16) |
         (uint64_t((sbo_bytes & 0x3FFFF) >> 4) << 32) | (uint64_t(1) << 62);
}

// K-major tile (rows of 64 K-elements = 128 bytes): 8-row swizzle atoms 1024 bytes apart (SBO);
// LBO is unused for swizzled K-major layouts (encoded as 1). A 16-element K step is 32 bytes.
CG_DEVICE uint64_t make_desc_k_major_sw128(const void* smem) { return make_desc_sw128(smem, 16, 1024); }
constexpr uint64_t kDescStepK16KMajor = 32 >> 4;

// MN-major tile stored as [MN / 64][K rows][64 MN-elements]: each K row is one 128-byte line.
// PTX's canonical MN-major 128B layout ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO)): LBO steps to the
// next 64-wide MN block (block_rows * 128 bytes), SBO to the next 8 K rows (1024 bytes). A
// 16-element K step is 16 rows = 2048 bytes.
CG_DEVICE uint64_t make_desc_mn_major_sw128(const void* smem, int block_rows) {
  return make_desc_sw128(smem, uint32_t(block_rows) * 128, 1024);
}
constexpr uint64_t kDescStepK16MNMajor = 2048 >> 4;

// MN-major tile with the 64-byte swizzle (TMA's CU_TENSOR_MAP_SWIZZLE_64B, 32-element rows): MN
// blocks of 32 elements `lbo_bytes` apart, 8-row K groups 512 bytes apart; a 16-element K step is
// 16 rows = 1024 bytes. (The grouped skinny kernel's SwiGLU W tile: gate and up 32-column boxes.)
CG_DEVICE uint64_t make_desc_mn_major_sw64(const void* smem, uint32_t lbo_bytes) {
  const uint64_t addr = smem_addr(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo_bytes & 0x3FFFF) >> 4) << 16) | (uint64_t(512 >> 4) << 32) |
         (uint64_t(2) << 62);
}
constexpr uint64_t kDescStepK16MNMajorSw64 = 1024 >> 4;

CG_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
CG_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
CG_DEVICE void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory"); }

// Keeps the compiler from moving accumulator reads/writes across wgmma boundaries (a 64x256
// fragment: 128 registers; a 64x128 one: 64).
template <int kRegs>
CG_DEVICE void fence_accumulators(float (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Accumulator register lists, eight registers a step: CG_WGMMA_R<n> is the PTX text "%0, ..., %<n-1>" and
// CG_WGMMA_O<n>(d) the asm operands "+f"(d[0]) ... "+f"(d[n-1]); each extends the one eight shorter.
#define CG_WGMMA_R8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define CG_WGMMA_O8(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define CG_WGMMA_R16 CG_WGMMA_R8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define CG_WGMMA_O16(d) \
    CG_WGMMA_O8(d), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define CG_WGMMA_R24 CG_WGMMA_R16 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define CG_WGMMA_O24(d) \
    CG_WGMMA_O16(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define CG_WGMMA_R32 CG_WGMMA_R24 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define CG_WGMMA_O32(d) \
    CG_WGMMA_O24(d), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CG_WGMMA_R40 CG_WGMMA_R32 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define CG_WGMMA_O40(d) \
    CG_WGMMA_O32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define CG_WGMMA_R48 CG_WGMMA_R40 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define CG_WGMMA_O48(d) \
    CG_WGMMA_O40(d), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define CG_WGMMA_R56 CG_WGMMA_R48 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define CG_WGMMA_O56(d) \
    CG_WGMMA_O48(d), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define CG_WGMMA_R64 CG_WGMMA_R56 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define CG_WGMMA_O64(d) \
    CG_WGMMA_O56(d), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CG_WGMMA_R72 CG_WGMMA_R64 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define CG_WGMMA_O72(d) \
    CG_WGMMA_O64(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define CG_WGMMA_R80 CG_WGMMA_R72 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define CG_WGMMA_O80(d) \
    CG_WGMMA_O72(d), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define CG_WGMMA_R88 CG_WGMMA_R80 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define CG_WGMMA_O88(d) \
    CG_WGMMA_O80(d), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define CG_WGMMA_R96 CG_WGMMA_R88 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define CG_WGMMA_O96(d) \
    CG_WGMMA_O88(d), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define CG_WGMMA_R104 CG_WGMMA_R96 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define CG_WGMMA_O104(d) \
    CG_WGMMA_O96(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define CG_WGMMA_R112 CG_WGMMA_R104 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define CG_WGMMA_O112(d) \
    CG_WGMMA_O104(d), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define CG_WGMMA_R120 CG_WGMMA_R112 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define CG_WGMMA_O120(d) \
    CG_WGMMA_O112(d), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define CG_WGMMA_R128 CG_WGMMA_R120 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define CG_WGMMA_O128(d) \
    CG_WGMMA_O120(d), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// The 128 fp32 accumulator registers of a 64x256 wgmma tile: their PTX list and the asm
// operand list, written once for every input type.
#define CG_WGMMA_D128_REGS "{" CG_WGMMA_R128 "}"
#define CG_WGMMA_D128_OPERANDS(d) CG_WGMMA_O128(d)

// D[64xN] (+)= A[64x16] * B[16xN] for fp16 / bf16, fp32 accumulate; scale_d = 0 overwrites D.
// kTransA / kTransB: 0 = the operand's tile is K-major, 1 = MN-major (wgmma's transpose bits,
// which fp16/bf16 support; the descriptor must describe the matching layout). NREGS / REGS /
// OPERANDS: the fragment (128 registers for N = 256, 64 for N = 128); I_A ... I_TB: the asm
// operand numbers of desc_a, desc_b, scale_d and the two transpose immediates.
#define CG_WGMMA_K16(NAME, SHAPE, PTX_TYPE, NREGS, REGS, OPERANDS, I_A, I_B, I_S, I_TA, I_TB)    \
  template <int kTransA, int kTransB>                                                          \
  CG_DEVICE void NAME(float (&d)[NREGS], uint64_t desc_a, uint64_t desc_b, int scale_d) {      \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" I_S ", 0;\n"                        \
                 " wgmma.mma_async.sync.aligned." SHAPE ".f32." PTX_TYPE "." PTX_TYPE " "       \
                 REGS ", %" I_A ", %" I_B ", p, 1, 1, %" I_TA ", %" I_TB ";\n}\n"             \
                 : OPERANDS(d)                                                                  \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransA), "n"(kTransB));         \
  }
#define CG_WGMMA_M64N256K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n256k16", PTX_TYPE, 128, CG_WGMMA_D128_REGS, CG_WGMMA_D128_OPERANDS, "128", "129", "130", \
               "131", "132")

CG_WGMMA_M64N256K16(wgmma_m64n256k16_bf16, "bf16")
CG_WGMMA_M64N256K16(wgmma_m64n256k16_f16, "f16")

// The 64 registers of a 64x128 fragment: the first (columns 0-127) or last (128-255) 64 of the
// 64x256 one.
#define CG_WGMMA_D64_REGS "{" CG_WGMMA_R64 "}"
#define CG_WGMMA_D64_OPERANDS(d) CG_WGMMA_O64(d)

// D[64x128] (+)= A[64x16] * B[16x128] (64 registers): in the narrow overload set below.
#define CG_WGMMA_M64N128K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n128k16", PTX_TYPE, 64, CG_WGMMA_D64_REGS, CG_WGMMA_D64_OPERANDS, "64", "65", "66", "67", \
               "68")

// D[64xN] (+)= A[64xK] * B[KxN] for the types without transpose bits, fp32 accumulate, both tiles
// K-major: tf32 (fp32 containers whose low 13 mantissa bits wgmma ignores; m64n256k8) and 8-bit
// floats (e4m3 / e5m2, each operand its own kind; m64n128k32: the 8-bit kernel adds each
// k-block's products into a fresh half tile and then into the fp32 accumulator, see
// Sm90MmaF8::kPromote). REGS / OPERANDS: the fragment's lists; I_A, I_B, I_S: the asm operand
// numbers of desc_a, desc_b and scale_d (the fragment's size, +1, +2).
#define CG_WGMMA_KMAJOR(NAME, SHAPE, A_TYPE, B_TYPE, NREGS, REGS, OPERANDS, I_A, I_B, I_S)        \
  CG_DEVICE void NAME(float (&d)[NREGS], uint64_t desc_a, uint64_t desc_b, int scale_d) {      \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" I_S ", 0;\n"                         \
                 " wgmma.mma_async.sync.aligned." SHAPE ".f32." A_TYPE "." B_TYPE " "           \
                 REGS ", %" I_A ", %" I_B ", p, 1, 1;\n}\n"                                   \
                 : OPERANDS(d)                                                                  \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                     \
  }
#define CG_WGMMA_D32_REGS "{" CG_WGMMA_R32 "}"
#define CG_WGMMA_D32_OPERANDS(d) CG_WGMMA_O32(d)
#define CG_WGMMA_N256_KMAJOR(NAME, SHAPE, A, B) \
  CG_WGMMA_KMAJOR(NAME, SHAPE, A, B, 128, CG_WGMMA_D128_REGS, CG_WGMMA_D128_OPERANDS, "128", "129", "130")
#define CG_WGMMA_N128_KMAJOR(NAME, SHAPE, A, B) \
  CG_WGMMA_KMAJOR(NAME, SHAPE, A, B, 64, CG_WGMMA_D64_REGS, CG_WGMMA_D64_OPERANDS, "64", "65", "66")

// The 48 registers of a 64x96 fragment (the 8-bit 128x192 config's partial tiles).
#define CG_WGMMA_D48_REGS "{" CG_WGMMA_R48 "}"
#define CG_WGMMA_D48_OPERANDS(d) CG_WGMMA_O48(d)
#define CG_WGMMA_N96_KMAJOR(NAME, SHAPE, A, B) \
  CG_WGMMA_KMAJOR(NAME, SHAPE, A, B, 48, CG_WGMMA_D48_REGS, CG_WGMMA_D48_OPERANDS, "48", "49", "50")

#define CG_WGMMA_N64_KMAJOR(NAME, SHAPE, A, B) \
  CG_WGMMA_KMAJOR(NAME, SHAPE, A, B, 32, CG_WGMMA_D32_REGS, CG_WGMMA_D32_OPERANDS, "32", "33", "34")

// Narrow 16-bit atoms: the skinny kernel's (kernel/sm90_skinny_kernel.cuh: W rows on wgmma's 64-row
// side, the few tokens on N) and the 64x128 / 64x64 tile configs' (collective/sm90_mma.cuh):
// m64n16k16 (8 registers), m64n32k16 (16), m64n64k16 (32), m64n128k16 (64).
#define CG_WGMMA_D8_REGS "{" CG_WGMMA_R8 "}"
#define CG_WGMMA_D8_OPERANDS(d) CG_WGMMA_O8(d)
#define CG_WGMMA_D16_REGS "{" CG_WGMMA_R16 "}"
#define CG_WGMMA_D16_OPERANDS(d) CG_WGMMA_O16(d)
#define CG_WGMMA_M64N16K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n16k16", PTX_TYPE, 8, CG_WGMMA_D8_REGS, CG_WGMMA_D8_OPERANDS, "8", "9", "10", "11", "12")
#define CG_WGMMA_M64N32K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n32k16", PTX_TYPE, 16, CG_WGMMA_D16_REGS, CG_WGMMA_D16_OPERANDS, "16", "17", "18", "19", "20")
#define CG_WGMMA_M64N64K16(NAME, PTX_TYPE) \
  CG_WGMMA_K16(NAME, "m64n64k16", PTX_TYPE, 32, CG_WGMMA_D32_REGS, CG_WGMMA_D32_OPERANDS, "32", "33", "34", "35", "36")

// One overload set per 16-bit type: the fragment's size picks the width (8, 16, 32 or 64
// registers: N = 16, 32, 64 or 128).
CG_WGMMA_M64N16K16(wgmma_narrow_k16_bf16, "bf16")
CG_WGMMA_M64N32K16(wgmma_narrow_k16_bf16, "bf16")
CG_WGMMA_M64N64K16(wgmma_narrow_k16_bf16, "bf16")
CG_WGMMA_M64N128K16(wgmma_narrow_k16_bf16, "bf16")
CG_WGMMA_M64N16K16(wgmma_narrow_k16_f16, "f16")
CG_WGMMA_M64N32K16(wgmma_narrow_k16_f16, "f16")
CG_WGMMA_M64N64K16(wgmma_narrow_k16_f16, "f16")
CG_WGMMA_M64N128K16(wgmma_narrow_k16_f16, "f16")

CG_WGMMA_N256_KMAJOR(wgmma_m64n256k8_tf32, "m64n256k8", "tf32", "tf32")
// 8-bit k32 atoms, one overload set per kind pair: the fragment's size picks the width
// (32 registers: m64n64k32, 48: m64n96k32, 64: m64n128k32, 128: m64n256k32).
CG_WGMMA_N64_KMAJOR(wgmma_k32_e4m3_e4m3, "m64n64k32", "e4m3", "e4m3")
CG_WGMMA_N64_KMAJOR(wgmma_k32_e4m3_e5m2, "m64n64k32", "e4m3", "e5m2")
CG_WGMMA_N64_KMAJOR(wgmma_k32_e5m2_e4m3, "m64n64k32", "e5m2", "e4m3")
CG_WGMMA_N64_KMAJOR(wgmma_k32_e5m2_e5m2, "m64n64k32", "e5m2", "e5m2")
CG_WGMMA_N96_KMAJOR(wgmma_k32_e4m3_e4m3, "m64n96k32", "e4m3", "e4m3")
CG_WGMMA_N96_KMAJOR(wgmma_k32_e4m3_e5m2, "m64n96k32", "e4m3", "e5m2")
CG_WGMMA_N96_KMAJOR(wgmma_k32_e5m2_e4m3, "m64n96k32", "e5m2", "e4m3")
CG_WGMMA_N96_KMAJOR(wgmma_k32_e5m2_e5m2, "m64n96k32", "e5m2", "e5m2")
CG_WGMMA_N128_KMAJOR(wgmma_k32_e4m3_e4m3, "m64n128k32", "e4m3", "e4m3")
CG_WGMMA_N128_KMAJOR(wgmma_k32_e4m3_e5m2, "m64n128k32", "e4m3", "e5m2")
CG_WGMMA_N128_KMAJOR(wgmma_k32_e5m2_e4m3, "m64n128k32", "e5m2", "e4m3")
CG_WGMMA_N128_KMAJOR(wgmma_k32_e5m2_e5m2, "m64n128k32", "e5m2", "e5m2")
CG_WGMMA_N256_KMAJOR(wgmma_k32_e4m3_e4m3, "m64n256k32", "e4m3", "e4m3")
CG_WGMMA_N256_KMAJOR(wgmma_k32_e4m3_e5m2, "m64n256k32", "e4m3", "e5m2")
CG_WGMMA_N256_KMAJOR(wgmma_k32_e5m2_e4m3, "m64n256k32", "e5m2", "e4m3")
CG_WGMMA_N256_KMAJOR(wgmma_k32_e5m2_e5m2, "m64n256k32", "e5m2", "e5m2")

}  // namespace cutorch_gemm::sm90
