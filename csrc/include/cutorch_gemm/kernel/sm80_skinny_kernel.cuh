#pragma once
// Skinny GEMM kernel (small M: decode and small batches; sm_80+, mma.sync):
//   D = act(alpha * x W^T + beta * C + bias),  x = a (M x K, K contiguous),  W^T = b (K x N,
//   K contiguous: nn.Linear's weight read through its transpose).
// With M <= 64 the work is streaming W's N x K elements from DRAM once; the arithmetic is
// small. The kernel computes D^T = W x^T: 16 rows of W fill mma.sync's A operand and 8 tokens
// its B operand (the swap keeps the tensor core's 16-row side on the large dimension), and
// both operands go from global memory straight into fragments: no shared-memory staging, no
// barriers in the K loop. Speed is DRAM bytes in flight: each warp issues the loads of several
// steps before their MMAs.
// NOTE: a per-thread cp.async ring (each lane staging its own chunks through shared memory,
// 4-8 stages) was slower on the H100 (16x4096x4096 27 us vs 22, 1x8192x8192 80 vs 57): twice
// the load/store-unit instructions per byte (ncu: MIO throttle), no fewer memory stalls.
//
// Work split: CTA = 8 or 16 warps owning 32 rows of W (32 columns of D) and all of K; warp w
// takes the w-th slice of K (whole 32-wide steps). The CTA then sums the partial fragments in
// shared memory in warp order (deterministic, one launch, no workspace) and applies the
// epilogue with columns spread over consecutive threads (coalesced D stores).
//
// Fragment trick: the sum over k is order-free, so lane (g = l / 4, q = l % 4) loads 16
// contiguous bytes, k = k0 + 8q ... k0 + 8q + 7 (32-bit words w0..w3), of W rows g and g + 8 and
// of x row g, and those 8 values are relabeled as its fragments of two m16n8k16 MMAs
// (s = 0, 1): logical k 2q + j <- word 2s, logical k 2q + 8 + j <- word 2s + 1, for A
// (rows g, g + 8) and B (token g) alike. Every physical k meets its own x value.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cutorch_gemm/arch/sm80_mma.cuh"
#include "cutorch_gemm/arch/sm90_grid_dependency.cuh"
#include "cutorch_gemm/core/numeric.cuh"
#include "cutorch_gemm/device/gemm_args.h"
#include "cutorch_gemm/epilogue/fusion.h"

namespace cutorch_gemm {

constexpr int kSkinnyRows = 32;    // rows of W (columns of D) per CTA: two 16-row MMA blocks
constexpr int kSkinnyStepK = 32;   // K per step: 16 bytes per lane = two k16 MMAs

// Shared memory of one CTA: the warps' partial fragments, [warp][fragment element][lane].
template <int kTokens, int kWarps>
constexpr int skinny_smem_bytes() {
  return kWarps * (kSkinnyRows / 16) * (kTokens / 8) * 4 * 32 * int(sizeof(float));
}

template <typename T>
struct SkinnyMma;
template <>
struct SkinnyMma<__half> : sm80::Sm80MmaF16 {};
template <>
struct SkinnyMma<__nv_bfloat16> : sm80::Sm80MmaBF16 {};

// kTokens: tokens (rows of x) one warp multiplies, 8 per MMA column block; M <= kTokens.
// kWarps: the CTA's warps, each a K slice (8, or 16 when the N / 32 CTAs are at most one per SM:
// DRAM bytes in flight per SM are what this kernel's speed is made of).
template <typename T, typename Out, int kTokens, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, kWarps == 8 && kTokens <= 32 ? 2 : 1)
    sm80_skinny_kernel(const GemmArgs g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#if __CUDA_ARCH__ >= 900
  // Programmatic dependent launch (launch_skinny asks for it only where this sm_90 code runs): the next launch may
  // place its CTAs as this grid's leave their SMs; this grid touches no memory before the kernel before it completes.
  sm90::launch_dependents();
  sm90::grid_dependency_wait();
#endif
  constexpr int kNT = kTokens / 8;                 // token blocks (MMA B operands)
  constexpr int kMW = kSkinnyRows / 16;            // W row blocks (MMA A operands)
  constexpr int kFrag = kMW * kNT * 4;             // accumulator floats per lane
  // Steps loaded before their MMAs: DRAM bytes in flight per lane (64 per step) against
  // registers for the fragments (kMW * 2 + kNT uint4 per step).
  constexpr int kUnroll = kTokens <= 8 ? 4 : kTokens <= 32 ? 2 : 1;
  using Mma = SkinnyMma<T>;
  extern __shared__ float skinny_red[];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gq = lane / 4, q = lane % 4;
  const int m = g.shape.m, n = g.shape.n, k = g.shape.k;
  const int row0 = blockIdx.x * kSkinnyRows;
  const T* x = static_cast<const T*>(g.a);
  const T* w = static_cast<const T*>(g.b);

  // This warp's K range: whole steps, the last warp's possibly short (K is a multiple of 8).
  const int k_per_warp = ceil_div(ceil_div(k, kWarps), kSkinnyStepK) * kSkinnyStepK;
  const int k_begin = min(k, warp * k_per_warp);
  const int k_end = min(k, k_begin + k_per_warp);

  // One pointer per operand at this lane's first chunk (W row row0 + g, token g); the other rows
  // are 8-row strides away. Rows past N / M read nothing (zero fragments).
  const index_t w_step8 = 8 * g.shape.b_sn, x_step8 = 8 * g.shape.a_sm;
  const T* w_lane = w + index_t(row0 + gq) * g.shape.b_sn + k_begin + 8 * q;
  const T* x_lane = x + index_t(gq) * g.shape.a_sm + k_begin + 8 * q;
  const int w_rows = n - row0 - gq;  // W rows 8 r below this lane's are valid for r * 8 < w_rows
  const int x_rows = m - gq;

  float acc[kMW][kNT][4];
#pragma unroll
  for (int mw = 0; mw < kMW; ++mw)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mw][nt][c] = 0.0f;

  // One step's MMAs from its chunks.
  auto mma_step = [&](const uint4 (&wv)[kMW][2], const uint4 (&xv)[kNT]) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
#pragma unroll
      for (int mw = 0; mw < kMW; ++mw) {
        const uint32_t* w0 = reinterpret_cast<const uint32_t*>(&wv[mw][0]);
        const uint32_t* w1 = reinterpret_cast<const uint32_t*>(&wv[mw][1]);
        const uint32_t a[4] = {w0[2 * s], w1[2 * s], w0[2 * s + 1], w1[2 * s + 1]};
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const uint32_t* xs = reinterpret_cast<const uint32_t*>(&xv[nt]);
          const uint32_t b[2] = {xs[2 * s], xs[2 * s + 1]};
          Mma::mma(acc[mw][nt], a, b);
        }
      }
    }
  };

  const uint4 zero = make_uint4(0, 0, 0, 0);
  // The loads of one step (off: its K offset from k_begin; in: this lane's chunk is inside K).
  auto load_step = [&](int off, bool in, uint4 (&wv)[kMW][2], uint4 (&xv)[kNT]) {
#pragma unroll
    for (int mw = 0; mw < kMW; ++mw)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wv[mw][h] = in && 8 * (2 * mw + h) < w_rows
                        ? __ldcs(reinterpret_cast<const uint4*>(w_lane + (2 * mw + h) * w_step8 + off))
                        : zero;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
      xv[nt] = in && 8 * nt < x_rows ? __ldg(reinterpret_cast<const uint4*>(x_lane + nt * x_step8 + off)) : zero;
  };

  // Whole steps, kUnroll at a time: every load of the group issued before its MMAs. W is
  // read once (streaming: evict-first), x by every CTA (read-only path, stays cached).
  const int steps = (k_end - k_begin) / kSkinnyStepK;
  int st = 0, off = 0;
  for (; st + kUnroll <= steps; st += kUnroll, off += kUnroll * kSkinnyStepK) {
    uint4 wv[kUnroll][kMW][2];
    uint4 xv[kUnroll][kNT];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) load_step(off + u * kSkinnyStepK, true, wv[u], xv[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) mma_step(wv[u], xv[u]);
  }
  // The rest one step at a time; the last may be short (K a multiple of 8: a lane's 16-byte
  // chunk is wholly inside or outside).
  for (; k_begin + off < k_end; off += kSkinnyStepK) {
    uint4 wv[kMW][2];
    uint4 xv[kNT];
    load_step(off, k_begin + off + 8 * q < k_end, wv, xv);
    mma_step(wv, xv);
  }

  // Partial sums to shared memory, [warp][element][lane] (each warp's stores conflict-free).
  float* mine = skinny_red + warp * kFrag * 32;
#pragma unroll
  for (int mw = 0; mw < kMW; ++mw)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) mine[((mw * kNT + nt) * 4 + c) * 32 + lane] = acc[mw][nt][c];
  __syncthreads();

  // Epilogue: element e of the CTA's 32-column x kTokens block is (token e / 32, column e % 32),
  // so consecutive threads write consecutive columns of a row of D.
  const float alpha = float(g.alpha), beta = float(g.beta);
  const T* bias = static_cast<const T*>(g.bias);
  const T* c_ptr = static_cast<const T*>(g.c);
  Out* d = static_cast<Out*>(g.d);
  for (int e = threadIdx.x; e < kSkinnyRows * kTokens; e += kWarps * 32) {
    const int tok = e / kSkinnyRows, col = e % kSkinnyRows;
    const int row = row0 + col;  // W row = D column
    if (tok >= m || row >= n) continue;
    // Where (tok, col) sits in the fragments: W row 16 mw + 8 h + g, token 8 nt + 2 q + j.
    const int mw = col / 16, h = (col / 8) % 2, gg = col % 8;
    const int nt = tok / 8, qq = (tok % 8) / 2, j = tok % 2;
    const int idx = ((mw * kNT + nt) * 4 + 2 * h + j) * 32 + 4 * gg + qq;
    float sum = 0.0f;
#pragma unroll
    for (int wp = 0; wp < kWarps; ++wp) sum += skinny_red[wp * kFrag * 32 + idx];
    float v = alpha * sum;
    if (c_ptr != nullptr) v += beta * to_acc<float>(c_ptr[index_t(tok) * g.shape.c_sm + index_t(row) * g.shape.c_sn]);
    if (bias != nullptr) v += to_acc<float>(bias[row]);
    v = apply_activation(g.act, v);
    d[index_t(tok) * g.shape.d_sm + index_t(row) * g.shape.d_sn] = from_acc<Out>(v);
  }
#endif
}

}  // namespace cutorch_gemm
