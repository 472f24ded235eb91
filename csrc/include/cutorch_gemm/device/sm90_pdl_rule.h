#pragma once
// When the Hopper launchers ask for programmatic dependent launch (device/sm90_pdl_launch.cuh launches; these rules
// are plain host C++, bound for the CPU tests: tests/test_pdl_rule.py).

#include <string>

#include "cutorch_gemm/core/macros.h"

namespace cutorch_gemm {

// The depth of K one CTA runs through in a launch (its work items, in turn, times each item's K) up to which a grid
// that fills the GPU asks for programmatic dependent launch (sm90_pdl_wanted).
constexpr long long kSm90PdlMaxCtaK = 2048;

// `forced`: CUTORCH_GEMM_SM90_PDL's value; "on" asks for programmatic dependent launch on every launch, "off" on
// none (A/B runs, tests), anything else leaves it to each rule. 1 / 0 for on / off, -1 otherwise.
inline int sm90_pdl_forced(const std::string& forced) {
  if (forced == "off") return 0;
  if (forced == "on") return 1;
  return -1;
}

// Whether a launch of `items` work items of K depth `item_k` over `units` CTAs (or clusters, which share their
// items), `ctas` CTAs in all, on a GPU of `sms` SMs asks for programmatic dependent launch. By default where the
// grid takes at most half the SMs (any K), or at least 7/8 of them with a CTA running through at most
// kSm90PdlMaxCtaK of K in all (a few microseconds, so the fixed cost between two launches is a sizable part of it);
// never in between. Measured on an H200 (bf16, CUDA-graph replays of one launch after another, % less time with it
// than without; benchmarks/RESULTS.md, fifty-sixth and fifty-seventh sessions):
//   at most half the SMs: 2048x2048x512 (64 CTAs) 7-8, 64x16896x2048 (66) 3, 64x16896x4096 (66) 2.5,
//     64x8192x4096 (64) 2.5, 128x4096x4096 (64) 0.6, 64x8192x16384 (64) 0;
//   7/8 or more: 1024^3 (128) 12, 1024x1024x2048 (128) 2.6, 256x4096x2048 (128) -2.2; with K = 4096 1024x1024x4096
//     (128) -1, 256x4096x4096 (128) -7.6;
//   in between it can cost a third of the time: 64x9216x1024 (72) -13, 64x9216x2048 (72) -24, 64x9216x4096 (72)
//     -39, 64x10240x2048 (80) -18, 1024x1056x4096 (80) -24, 64x14336x4096 (112) -5, 64x14336x8192 (112) -7 (but
//     64x14336x1024 (112) +2.9, 1024x1056x2048 (80) 0).
// Why the middle loses: where the dependent grid's CTAs land (fifty-eighth session, per-CTA SM ids and mainloop
// cycles, benchmarks/experiments/sm90_timeline.patch with CHAIN=3). Without PDL a grid of 72 starts on an idle GPU
// and its CTAs spread one per TPC; with it they are handed out, in SM id order, to the SMs the running grid left free,
// whole runs of consecutive SMs, and 48 of the 72 shared a TPC (12 without). Streaming CTAs in and beside those runs
// took 36-41 K cycles per mainloop against ~30 K (64x9216x4096: 30.6 us per launch against 22.2). At most half the
// SMs the free SMs leave almost every TPC one CTA; from ~7/8 on every placement is crowded: hence the two clauses.
// (A late trigger, consumers signalling after their last mainloop, changed nothing that matters.)
inline bool sm90_pdl_wanted(long long items, long long units, long long item_k, long long ctas, long long sms,
                            const std::string& forced) {
  const int f = sm90_pdl_forced(forced);
  if (f >= 0) return f == 1;
  if (2 * ctas <= sms) return true;
  units = max_of(units, 1LL);
  return 8 * ctas >= 7 * sms && ceil_div(items, units) * item_k <= kSm90PdlMaxCtaK;
}

// The skinny kernels' rule (device/sm90_skinny_launch.cuh; `ctas` CTAs, `cta_k` the K each runs through): at most
// half the SMs and K <= kSm90PdlMaxCtaK. H200 (fifty-seventh session, % less time with it): 32x2048x1024 (32 row
// tiles) 6.8, 32x4096x2048 (64) 2.2, 64x4096x1024 (64) 1.5; above half the SMs 16x8192x2048 (128) 0.6, but
// 32x9216x1024 (144) -17 and 32x9216x2048 (144) -21.
inline bool sm90_skinny_pdl_wanted(long long ctas, long long cta_k, long long sms, const std::string& forced) {
  const int f = sm90_pdl_forced(forced);
  if (f >= 0) return f == 1;
  return 2 * ctas <= sms && cta_k <= kSm90PdlMaxCtaK;
}

}  // namespace cutorch_gemm
