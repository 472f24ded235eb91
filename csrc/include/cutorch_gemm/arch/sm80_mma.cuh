#pragma once
// mma.sync atoms (sm_80+): one warp-wide tensor-core instruction each, with the fragment
// layouts of the PTX ISA written as coordinate functions. Lane l is split as g = l / 4 (the
// "group") and t = l % 4 (the thread in the group). Fragments are arrays of 32-bit registers.
//
//   atom            shape     A regs  B regs  C elems  instruction
//   Sm80MmaF16      16x8x16   4       2       4 f32    mma.m16n8k16 f16 -> f32   (HMMA)
//   Sm80MmaBF16     16x8x16   4       2       4 f32    mma.m16n8k16 bf16 -> f32  (HMMA)
//   Sm80MmaTF32     16x8x8    4       2       4 f32    mma.m16n8k8 tf32 -> f32   (HMMA)
//   Sm80MmaF64      8x8x4     2       2       2 f64    mma.m8n8k4 f64            (DMMA)
//   Sm90MmaF64      16x8x8    8       4       4 f64    mma.m16n8k8 f64, sm_90+   (DMMA)
//   Sm80MmaS8       16x8x32   4       2       4 s32    mma.m16n8k32 s8 -> s32    (IMMA)
//
// The coordinate functions give, for element e of a lane's fragment, its (row, col) inside the
// atom: A is (m, k), B is (k, n), C is (m, n). Element e of A / B counts elements of the
// operand type (two per register for 16-bit, one for tf32, one per two registers for f64).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm::sm80 {

struct Coord {
  int row;
  int col;
};

// m16n8k16 with 16-bit inputs: A (16x16) in 4 registers, B (16x8) in 2, C (16x8) in 4 floats.
template <typename T>
struct Sm80Mma16Bit {
  using Element = T;
  using Acc = float;
  static constexpr int kM = 16, kN = 8, kK = 16;
  static constexpr int kARegs = 4, kBRegs = 2, kCElems = 4;
  static constexpr int kAElems = 8, kBElems = 4;

  CG_DEVICE static Coord a_coord(int lane, int e) {  // reg r = e / 2 holds a pair along k
    const int g = lane >> 2, t = lane & 3, r = e >> 1;
    return {g + 8 * (r & 1), 2 * t + (e & 1) + 8 * (r >> 1)};
  }
  CG_DEVICE static Coord b_coord(int lane, int e) {
    const int g = lane >> 2, t = lane & 3, r = e >> 1;
    return {2 * t + (e & 1) + 8 * r, g};
  }
  CG_DEVICE static Coord c_coord(int lane, int e) {
    const int g = lane >> 2, t = lane & 3;
    return {g + 8 * (e >> 1), 2 * t + (e & 1)};
  }
};

struct Sm80MmaF16 : Sm80Mma16Bit<__half> {
  CG_DEVICE static void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

struct Sm80MmaBF16 : Sm80Mma16Bit<__nv_bfloat16> {
  CG_DEVICE static void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

// m16n8k8 tf32: fp32 bit patterns go in as they are; the tensor core reads the top 19 bits
// (round toward zero), within PyTorch's tf32 tolerance.
struct Sm80MmaTF32 {
  using Element = float;
  using Acc = float;
  static constexpr int kM = 16, kN = 8, kK = 8;
  static constexpr int kARegs = 4, kBRegs = 2, kCElems = 4;
  static constexpr int kAElems = 4, kBElems = 2;

  CG_DEVICE static Coord a_coord(int lane, int e) {
    const int g = lane >> 2, t = lane & 3;
    return {g + 8 * (e & 1), t + 4 * (e >> 1)};
  }
  CG_DEVICE static Coord b_coord(int lane, int e) {
    const int g = lane >> 2, t = lane & 3;
    return {t + 4 * e, g};
  }
  CG_DEVICE static Coord c_coord(int lane, int e) { return Sm80Mma16Bit<float>::c_coord(lane, e); }

  CG_DEVICE static void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

// m8n8k4 fp64 (DMMA): one double of A and of B per lane (two registers each), two of C.
struct Sm80MmaF64 {
  using Element = double;
  using Acc = double;
  static constexpr int kM = 8, kN = 8, kK = 4;
  static constexpr int kARegs = 2, kBRegs = 2, kCElems = 2;
  static constexpr int kAElems = 1, kBElems = 1;

  CG_DEVICE static Coord a_coord(int lane, int) { return {lane >> 2, lane & 3}; }
  CG_DEVICE static Coord b_coord(int lane, int) { return {lane & 3, lane >> 2}; }
  CG_DEVICE static Coord c_coord(int lane, int e) { return {lane >> 2, 2 * (lane & 3) + e}; }

  CG_DEVICE static void mma(double (&c)[2], const uint32_t (&a)[2], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const double av = __hiloint2double(int(a[1]), int(a[0]));
    const double bv = __hiloint2double(int(b[1]), int(b[0]));
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c[0]), "+d"(c[1])
                 : "d"(av), "d"(bv));
#endif
  }
};

// m16n8k32 int8 -> int32: four int8 along k per register.
struct Sm80MmaS8 {
  using Element = int8_t;
  using Acc = int32_t;
  static constexpr int kM = 16, kN = 8, kK = 32;
  static constexpr int kARegs = 4, kBRegs = 2, kCElems = 4;
  static constexpr int kAElems = 16, kBElems = 8;

  CG_DEVICE static Coord a_coord(int lane, int e) {  // reg r = e / 4 holds four consecutive k
    const int g = lane >> 2, t = lane & 3, r = e >> 2;
    return {g + 8 * (r & 1), 4 * t + (e & 3) + 16 * (r >> 1)};
  }
  CG_DEVICE static Coord b_coord(int lane, int e) {
    const int g = lane >> 2, t = lane & 3, r = e >> 2;
    return {4 * t + (e & 3) + 16 * r, g};
  }
  CG_DEVICE static Coord c_coord(int lane, int e) { return Sm80Mma16Bit<float>::c_coord(lane, e); }

  CG_DEVICE static void mma(int32_t (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

// m16n8k8 fp64 (sm_90+; PTX 7.8): the tf32 m16n8k8 fragment layout with doubles. Hopper runs
// it at a far higher rate than the m8n8k4 form (ncu, 4096^3 on an H200: the m8n8k4 kernel kept
// the fp64 pipe 83% busy at 26.5 TFLOP/s, cuBLAS reaches 61).
struct Sm90MmaF64 {
  using Element = double;
  using Acc = double;
  static constexpr int kM = 16, kN = 8, kK = 8;
  static constexpr int kARegs = 8, kBRegs = 4, kCElems = 4;
  static constexpr int kAElems = 4, kBElems = 2;

  CG_DEVICE static Coord a_coord(int lane, int e) { return Sm80MmaTF32::a_coord(lane, e); }
  CG_DEVICE static Coord b_coord(int lane, int e) { return Sm80MmaTF32::b_coord(lane, e); }
  CG_DEVICE static Coord c_coord(int lane, int e) { return Sm80MmaTF32::c_coord(lane, e); }

  CG_DEVICE static double dbl(const uint32_t (&r)[8], int i) { return __hiloint2double(int(r[2 * i + 1]), int(r[2 * i])); }
  CG_DEVICE static void mma(double (&c)[4], const uint32_t (&a)[8], const uint32_t (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const double b0 = __hiloint2double(int(b[1]), int(b[0]));
    const double b1 = __hiloint2double(int(b[3]), int(b[2]));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(dbl(a, 0)), "d"(dbl(a, 1)), "d"(dbl(a, 2)), "d"(dbl(a, 3)), "d"(b0), "d"(b1));
#endif
  }
};

template <typename T> struct Sm80MmaFor;
template <> struct Sm80MmaFor<int8_t> { using type = Sm80MmaS8; };
template <> struct Sm80MmaFor<__half> { using type = Sm80MmaF16; };
template <> struct Sm80MmaFor<__nv_bfloat16> { using type = Sm80MmaBF16; };
template <> struct Sm80MmaFor<float> { using type = Sm80MmaTF32; };
// NOTE: chosen per compile target: the sm_80 cubin has only the m8n8k4 form.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
template <> struct Sm80MmaFor<double> { using type = Sm90MmaF64; };
#else
template <> struct Sm80MmaFor<double> { using type = Sm80MmaF64; };
#endif

}  // namespace cutorch_gemm::sm80
