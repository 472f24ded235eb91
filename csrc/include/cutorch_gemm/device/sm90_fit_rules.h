#pragma once
// The rules that replace the heuristic's config (choose_sm90_config) for one dense fp16 / bf16 problem by a
// cooperative tile whose count fills the SMs' rounds: the fit widths (128 x 80 ... 224) and 128x240 tiles
// (choose_sm90_wide) where operand rows are 128-byte multiples, and 2x1-clustered pairs of 128x256, 128x240 or
// 128x192 tiles where they are not (choose_sm90_pairs); the big 128x320 and 192x192 tiles (choose_sm90_big); and
// the 64x256 ping-pong tile for launches with an activation and a short K, opt-in (choose_sm90_act). The binding
// (csrc/torch/cuda/cuda_common.cpp) applies them, `explain` mirrors them. Torch- and CUDA-free.

#include <string>

#include "cutorch_gemm/device/sm90_configs.h"

namespace cutorch_gemm {

// The fit-width rule (one dense fp16 / bf16 problem whose launch can take those tiles: both operands
// K-major, a plain epilogue from registers; the binding decides that): a cooperative 128 x N tile, N = 80
// ... 224, whose tile count fills the persistent grid's rounds, in place of `base`. Score of a width:
// the fill of its rounds times the share of its tiles' area inside the problem; the best score wins (ties:
// the wider tile). Taken when the best scores at least kFitMin and the 128x256 tiles' own score is below
// kFitBase (they already fill their rounds), for at most kFitRounds rounds (kFitRoundsWide, or kFitRoundsShallow
// up to K = kFitShallowK, for the wider tiles that fill better than the heuristic's), M >= 256 and K >= 512.
// `forced` (CUTORCH_GEMM_SM90_CONFIG): "fit" takes the best width wherever the launch allows, "coop80" ...
// "coop224" that width; any other forced config ("nofit": the rules without this one) keeps `base`.
// H200, 5 interleaved rounds, ratio to cuBLAS, without / with (thirty-first session, widths 144-224): one round of fit
// tiles: 1536x1536x4096 (144) 0.723 / 0.890, 768x3072x4096 (144) 0.726 / 0.903, 1024x2560x4096 (160)
// 0.748 / 0.904, 1024x2304x4096 0.705 / 0.862, 2048x1280x4096 0.729 / 0.878, 640x4096x4096 0.706 / 0.863,
// 384x6144x4096 0.704 / 0.893, 1024x3072x4096 (192) 0.807 / 0.889, 1280x2048x2048 0.770 / 0.806,
// 768x3072x2048 0.739 / 0.833, 1536^3 0.762 / 0.810; two rounds: 2048x2560x4096 0.846 / 0.884,
// 2560^3 (208) 0.853 / 0.851; three rounds lost or tied (1536x6144x4096 0.914 / 0.886, 3072x3072x4096
// 0.886 / 0.878): kFitRounds = 2. Where the 128x256 tiles fill their rounds the fit ones lose (forced:
// 4096^3 0.992 / 0.877, 2048^3 0.968 / 0.759), and below kFitMin too (1024x1536x8960 0.767 / 0.729).
// The best width is the one the score names (1536x1536x4096: 144 0.862, 160 0.820, 176 0.777 ...;
// 1024x2560x4096: 160 0.908, 144 0.584; 1024x3072x4096: 192 0.875, 176 0.543). The narrow widths (same
// method): 1024x1536x8960 (96) 0.769 / 0.870, 512x2560x2560 (80) 0.725 / 0.808, 768x2048x4096 (96) 0.812 /
// 0.902, 512x3072x4096 (96) 0.750 / 0.858, 640x2048x4096 (80) 0.737 / 0.846.
constexpr double kFitMin = 0.9, kFitBase = 0.85;
constexpr double kPairNarrowGain = 1.15;  // choose_sm90_pairs: the 192-wide pairs' fill over the 256-wide ones
constexpr double kPairWideGain = 1.05;    // choose_sm90_pairs: the 240-wide pairs' fill over the 256-wide ones
constexpr int kFitRounds = 2;
// A third round: widths from kFitWideMin up, where the best width also fills its rounds better than the heuristic's
// own tile (sm90_base_score). H200, dense_ab.py, 9 rounds, ratio to cuBLAS, heuristic's config / fit (forced),
// thirty-eighth session: 144 wide 2304x3072x2048 0.922 / 0.930, 5632x1280x2048 0.891 / 0.921, 1792x3840x4096
// 0.898 / 0.951; 192: 3072x3072x4096 (128x256 + stream-K) 0.890-0.900 / 0.947-0.955, 4096x2304x4096 0.917 /
// 0.972; 208: 1280x7936x2048 (64x256 ping-pong) 0.932 / 0.988, 3328x3072x4096 0.967 / 1.005, 1792x5632x4096
// 0.936 / 0.995; 224: 6144x1792x4096 0.945 / 0.999; 112: 1024x5376x2048 0.835 / 0.893. Narrower tiles lost
// (3584x1024x4096, 80 wide: 0.980 / 0.705; 4352x1024x4096, 96: 0.959 / 0.803), and so did 224 where the 64x256
// ping-pong tiles fill 98% of their rounds (6912x1536x2048: 0.938 / 0.904, the fit tiles 93.5%). The rule then
// on ten held-out three-round shapes, new / CUTORCH_GEMM_SM90_CONFIG=nofit, bf16 geomean 0.964 / 0.901 (fp16 0.962 /
// 0.903; 3584x3072x4096 1.007 / 0.906, 7168x768x8192 (112) 0.964 / 0.850; one loss, 5376x1792x8192 0.941 / 0.959).
// Four or five rounds (kFitRoundsShallow) for the same widths where K is at most kFitShallowK: fit forced, 9 rounds,
// the heuristic's config / fit, K <= 4096: 1536x6144x4096 (112) 0.906 / 0.942, 5376x3328x2048 (224 against 240)
// 0.967 / 1.019, 1792x8192x2048 (176) 0.888 / 0.903, 2048x7168x2048 0.903 / 0.904, 5376x3328x4096 1.013 / 1.000;
// held out (drawn after that): 2816x3328x4096 (112) 0.948 / 0.981, 6912x2560x3072 (224) 0.976 / 1.021,
// 1280x7168x2048 (112) 0.875 / 0.931, 3328x4096x3072 (208) 0.949 / 1.026, 4352x3072x3072 0.952 / 1.014,
// 6400x2816x4096 1.004 / 1.011, 1792x4096x4096 1.034 / 1.028, 6912x1280x2048 (112) 0.894 / 0.837 (geomean of the
// eight 0.953 / 0.979). At K = 8192 the 128x256 tiles with stream-K kept the lead (2560x3584x8192 1.028 / 0.995,
// 6912x2560x8192 1.053 / 1.016, 4352x2048x8192 1.045 / 0.959; ping-pong bases tied).
constexpr int kFitRoundsWide = 3, kFitWideMin = 112, kFitRoundsShallow = 5, kFitShallowK = 4096;
// An MN-major B (mn_b: the backward's dX and dW forms) takes widths from kFitMnMin up. Below, its padded 64-column
// boxes (Sm90MnB) cost more than the fill gains. H200, 5 interleaved rounds, ratio to torch.mm, b MN-major, the
// configs before (CUTORCH_GEMM_SM90_CONFIG=nofit) / the fit width: 1024x2560x4096 (160) 0.724 / 0.947, 2048x1280x4096
// (160) 0.693 / 0.850, 3072x3072x4096 (192) 0.909 / 0.962; but 1536x1536x4096 (144) 0.769 / 0.722, 768x3072x4096
// (144) 0.752 / 0.746, 1024x1536x8960 (96) 0.860 / 0.732 (both operands MN-major alike). Forced at 1536x1536x4096:
// 144 0.706, 160 0.794, 176 0.878, 192 0.850, 208 0.772 (the K-major forward's: 0.945, 0.888, 0.850, 0.807, 0.752).
// In one round such a width serves from a score of kFitMnOneRound (160 fills 87% of it where 144 would fill it):
// heuristic's config / 160 forced, b MN-major, same method: 1536x1536x4096 0.784 / 0.885, 768x3072x4096 0.775 /
// 0.925, 1536^3 0.680 / 0.827; two such rounds lost (3072x1536x4096 0.847 / 0.720), and so did 78% of one round
// (1024x2048x4096, 64x256 ping-pong: 0.910 / 0.833).
constexpr int kFitMnMin = 160;
constexpr double kFitMnOneRound = 0.85;
// One round of K-major fit tiles serves from a score of kFitOneRound where K >= kFitOneRoundK: most of what such a
// score misses is rows past M (544 rows: five 128-row tiles, 85% inside), which the 128x256 tiles pay as well, and
// those fill their one round only through stream-K's partial tiles and fixups. H200, dense_ab.py, 5 rounds, ratio to
// torch.mm, the heuristic's config (128x256 + stream-K) / fit forced, seventy-fifth session: 544x4096x7168 (160,
// score 0.824) 0.737 / 0.906, 592x4096x7168 (160, 0.896) 0.776 / 0.953, 656x4096x7168 (192, 0.828) 0.728 / 0.900;
// 352x4096x14336 (96, 0.889; 64x256 ping-pong) 0.855 / 0.874. Two such rounds did not hold (784x4096x7168, 112
// wide, 0.849: 0.842 / 0.708; 1040x4096x14336, 144, 0.875: 0.888 / 0.784; but 1184x4096x7168, 160, 0.897: 0.879 /
// 0.931): kFitMin stays theirs. Held out (benchmarks/experiments/fit_one_round_gpu.sh, same method, the rule /
// CUTORCH_GEMM_SM90_CONFIG=nofit): 1120x2048x2048 (160) 0.925 / 0.745, 512x4096x4096 (144) 0.925 / 0.882,
// 544x4096x4096 (160) 0.925 / 0.615, 832x3072x4096 (176) 0.975 / 0.768, 1040x2816x4096 (208) 0.836 / 0.663,
// 688x4096x7168 (192) 0.913 / 0.754, 336x8192x8192 (192) 0.890 / 0.748, 688x4096x8192 0.908 / 0.768,
// 448x5120x8192 (160) 0.981 / 0.779, 544x4096x14336 0.922 / 0.805, 432x6144x14336 (192) 0.914 / 0.797; one loss,
// 1024x2048x2048 (144) 0.887 / 0.904 (geomean of the twelve 0.916 / 0.765). With bias + GELU-tanh (ratio to
// torch._addmm_activation): 544x4096x4096 0.852 / 0.581, 832x3072x4096 0.988 / 0.791, 688x4096x8192 0.910 / 0.765,
// 544x4096x14336 0.879 / 0.775.
constexpr double kFitOneRound = 0.8;
constexpr int kFitOneRoundK = 2048;
// Two rounds of the wider fit tiles (from kFitTwoRoundsWidth) serve from kFitTwoRounds where K >= kFitTwoRoundsK:
// same method, the heuristic's config / fit forced: 1184x4096x7168 (160, 0.897) 0.879 / 0.931, 1296x4096x14336 (176,
// 0.893; 64x256 ping-pong) 0.834 / 0.935; narrower ones lost (784x4096x7168, 112: 0.842 / 0.708; 1040x4096x14336, 144:
// 0.888 / 0.784). Held out (benchmarks/experiments/fit_two_rounds_gpu.sh, same method, the rule /
// CUTORCH_GEMM_SM90_CONFIG=nofit): 1168x4096x8192 (160) 0.863 / 0.847, 1296x4096x8192 (176) 0.940 / 0.835,
// 1872x2560x4096 (160) 0.892 / 0.838, 1568x3072x8192 0.944 / 0.926, 1872x3072x4096 (192) 0.988 / 0.932, 1328x3584x8192
// (160) 0.956 / 0.938, 1600x3584x14336 (192) 1.019 / 0.950, 928x5120x8192 (160) 0.978 / 0.899, 1104x5120x14336 (192)
// 1.017 / 0.965, 928x6144x8192 1.024 / 0.961, 576x8192x8192 (160) 0.880 / 0.805, 688x8192x14336 (192) 0.916 / 0.872,
// 800x8192x8192 (224) 0.988 / 0.887, 2352x2048x4096 (160) 0.906 / 0.849: every one gained (1.9-12.6%; geomean 0.949 /
// 0.892). 144 wide, left out, fit forced: 1200x3584x8192 0.946 / 0.939, 832x5120x8192 1.500 / 1.493 (cuBLAS slow).
constexpr double kFitTwoRounds = 0.85;
constexpr int kFitTwoRoundsWidth = 160, kFitTwoRoundsK = 4096;
inline double sm90_tile_score(long long m, long long n, int block_m, int block_n, int num_sms) {
  const long long tiles = ((m + block_m - 1) / block_m) * ((n + block_n - 1) / block_n);
  const long long rounds = (tiles + num_sms - 1) / num_sms;
  return double(m) * double(n) / (double(rounds) * num_sms * block_m * block_n);
}
// The share of a round of 2x1 clusters (num_sms / 2 of them) that one dense problem's 128 x block_n pair tiles
// fill, over all their rounds (sm90_tile_score for pairs): choose_sm90_pairs compares the 256- and 192-wide ones.
// (block_m: the tile's rows, 128; the 192x192 tiles' pairs for choose_sm90_big)
inline double sm90_pair_score(long long m, long long n, int block_n, int num_sms, int block_m = 128) {
  const long long clusters = num_sms / 2 > 0 ? num_sms / 2 : 1;
  const long long pair_m = 2LL * block_m;
  const long long items = ((m + pair_m - 1) / pair_m) * ((n + block_n - 1) / block_n);
  const long long rounds = (items + clusters - 1) / clusters;
  return double(m) * double(n) / (double(rounds) * clusters * double(pair_m) * block_n);
}

// sm90_tile_score of the heuristic's own tile (base: one of choose_sm90_config's 16-bit configs).
inline double sm90_base_score(Sm90ConfigId base, long long m, long long n, int num_sms) {
  const Sm90Tile tile = sm90_heuristic_tile(base);
  return sm90_tile_score(m, n, tile.m, tile.n, num_sms);
}

// Operand rows that are not 128-byte multiples (!rows_128b; K = 1000, 2000, ...): a TMA box row then straddles
// two 128-byte lines, and a CTA reading its whole tile itself is slow (H200, 3000x5000x1000: 128x256 tiles
// without clusters 0.77x cuBLAS, with 2x1 clusters 0.93x). The ping-pong configs run unclustered, and where
// their tiles take more than one round they fell far behind; one round (1024x1024x1000, 1000x1000x4000) they
// keep. The cooperative tiles run in 2x1 clusters (half the B tile multicast per CTA): 128x256, or the deferring
// 128x192 where its pairs fill the rounds at least 15% better (sm90_pair_score; short K costs the narrower
// tile more per tile: at 3000x5000x1000 a 7% better fill still lost 5%). H200, dense_ab.py, 5-7 rounds, ratio to
// cuBLAS, the heuristic's config / 128x256 / 128x192 (forced), thirty-fifth session:
//   1536x1536x1000 (64x128)   0.552 / 0.750 / 0.838    2000x3000x1000 (64x256)  0.617 / 0.844 / 0.934
//   3000x3000x1000 (64x256)   0.530 / 0.792 / 0.894    768x3000x1000 (64x128)   0.549 / 0.733 / 0.822
//   1000x3000x2000 (64x128)   0.674 / 0.806 / 0.949    2048x5000x3000 (64x256)  0.482 / 0.815 / 0.779
//   1024x1024x1000 (64x128)   0.800 / 0.474 / 0.675    1000x1000x4000 (64x128)  0.836 / 0.643 / 0.523
//   512x4096x1000 (64x256)    0.742 / 0.684 / 0.770    1000x8000x1000 (coop)    0.936 / 0.937 / 0.832
//   2048x2048x1000 (coop)     0.934 / 0.950 / 0.715    4000x4000x1000 (coop)    1.189 / 1.192 / 1.021
//   3000x5000x1000 (coop)     0.942 /   -   / 0.898    5000x3000x1000 (coop)    0.920 /   -   / 0.886
//   6000x5000x1000 (coop)     0.937 /   -   / 0.931    3000x5000x2000 (coop)    0.911 /   -   / 0.928
// (pair-score ratios 192 / 256: 1.33 for the first six but 2048x5000x3000 (1.0), 1.07 for the last four.)
// defer_ok: the launch defers its store in every tile (sm90_defer_launch_ok), as the 240-wide pairs need: they take
// the place of 128x256 ones where they fill the rounds at least kPairWideGain better (3000x5000x1000: 1.067, the
// same four rounds). narrow_ok: the launch can take the 192-wide tile (the fit tiles' launches); else the rule goes
// on to 240 and 256 where 192 would have won.
inline Sm90ConfigId choose_sm90_pairs(Sm90ConfigId base, int m, int n, int k, int num_sms, bool defer_ok = false,
                                      bool narrow_ok = true) {
  if (num_sms <= 0 || m < 256 || k < 512) return base;
  if (base != Sm90ConfigId::kCoop128x256) {
    const int bn = base == Sm90ConfigId::kPingpong64x256   ? 256
                   : base == Sm90ConfigId::kPingpong64x128 ? 128
                   : base == Sm90ConfigId::kPingpong64x64  ? 64
                                                           : 0;
    if (bn == 0) return base;
    const long long pp_tiles = (long long)((m + 63) / 64) * ((n + bn - 1) / bn);
    if (pp_tiles <= num_sms) return base;  // one round of ping-pong tiles
  }
  const double wide = sm90_pair_score(m, n, 256, num_sms), narrow = sm90_pair_score(m, n, 192, num_sms);
  if (narrow_ok && narrow >= kPairNarrowGain * wide) return Sm90ConfigId::kCoopFit192;
  // (240: more than one round of 256-wide pairs, as choose_sm90_wide)
  const long long wide_items = (long long)((m + 255) / 256) * ((n + 255) / 256);
  if (defer_ok && 2 * wide_items > num_sms && sm90_pair_score(m, n, 240, num_sms) >= kPairWideGain * wide) {
    return Sm90ConfigId::kCoop240;
  }
  return Sm90ConfigId::kCoop128x256;
}

// Rows that are 128-byte multiples, where the fit widths do not serve (more than kFitRounds rounds, or the
// 128x256 tiles already fill theirs to kFitBase): 128x240 tiles (unclustered) in place of the 128x256 ones where
// they fill the rounds at least kPairWideGain better, as the pairs do on unaligned rows; launches that defer
// every tile (defer_ok) and whose 128x256 tiles would not take stream-K (coop_sk: sm90_coop_streamk, which
// fills their last round otherwise), fewer than 8 rounds (no short-K pairs: choose_sm90_cluster; its mid-K rule
// can pair the 240-wide tiles: 2048x11008x4096 forced so, timed alone, 0.997 / 0.987 plain / bias + GELU-tanh). H200,
// dense_ab.py, 5-7 rounds, ratio to cuBLAS, 128x256 / 128x240 (forced), thirty-sixth session: 3072x5120x1024
// 0.974-0.991 / 1.003-1.018, 3000x5000x1024 0.953-0.961 / 0.984-0.986, 3072x5120x2048 0.965 / 1.012,
// 3072x5120x4096 0.962 / 1.009, 3072x5120x8192 0.940 / 1.007, 3000x5000x4096 0.911 / 0.972, 2048x11008x2048
// 0.959 / 1.004. Where the 128x256 tiles take stream-K the 240-wide ones lost (3072x3072x4096 0.892-0.909 /
// 0.788-0.811, 1536x6144x4096 0.868-0.901 / 0.781-0.801, 2048x11008x4096 0.989-1.005 / 0.978-0.999). With a full
// last round the narrower tile costs ~2% per FLOP (16896x3840x4096, 15 rounds of 256 and 16 of 240: 1.016 /
// 0.997; K = 1024: 1.062 / 1.045).
inline Sm90ConfigId choose_sm90_wide(Sm90ConfigId base, int m, int n, int k, int num_sms, bool defer_ok,
                                     bool coop_sk) {
  if (!defer_ok || coop_sk || base != Sm90ConfigId::kCoop128x256 || m < 256 || k < 512) return base;
  // (more than one round of 128x256 tiles: fewer take split-K, choose_sm90_split, which the 240-wide ones do not)
  const long long wide_tiles = (long long)((m + 127) / 128) * ((n + 255) / 256);
  const long long tiles = (long long)((m + 127) / 128) * ((n + 239) / 240);
  if (wide_tiles <= num_sms || tiles >= 8LL * num_sms) return base;
  return sm90_tile_score(m, n, 128, 240, num_sms) >= kPairWideGain * sm90_tile_score(m, n, 128, 256, num_sms)
             ? Sm90ConfigId::kCoop240
             : base;
}

// rows_128b: both operands' TMA rows are 128-byte multiples (sm90_operands_rows_128b). Otherwise the cooperative
// launch takes 2x1 clusters (choose_sm90_cluster), which pair tile rows: odd tile-row counts then idle half a
// row of CTAs (H200, forced: 384x6144x4096 with pairs 0.509, without 0.897), and 3000x5000x1000 (rows of 2000
// bytes) ran at 0.696 on the direct-store fit tiles against 0.940: such launches take choose_sm90_pairs instead.
// fit_ok: the launch can take the fit-width tiles (sm90_fit_launch_ok: both operands K-major, no C, no activation;
// no forced epilogue path but "direct"; or sm90_fit_act_ok: an activation, every tile deferring its store). The
// other dense fp16 / bf16 launches take only the pair rule, on rows that are not 128-byte multiples, as 128x256 or
// 128x240 pairs (the 192-wide tile runs the fit tiles' launches only), and choose_sm90_wide on aligned rows.
// defer_ok: it defers its store in every tile (sm90_defer_launch_ok: both operands K-major, no C, a 16-bit D by
// TMA, plain or bias + an activation the packing has; the 240-wide tiles need that: pairs on unaligned rows,
// choose_sm90_wide on aligned ones). "coop240" (forced) takes them wherever defer_ok. coop_sk: the 128x256 tiles
// would take stream-K (sm90_coop_streamk; choose_sm90_wide keeps them then). mn_b: B is MN-major (kFitMnMin,
// kFitMnOneRound).
inline Sm90ConfigId choose_sm90_fit(Sm90ConfigId base, int m, int n, int k, int num_sms, const std::string& forced,
                                    bool rows_128b = true, bool fit_ok = true, bool defer_ok = false,
                                    bool coop_sk = false, bool mn_b = false) {
  if (num_sms <= 0 || m <= 0 || n <= 0 || k <= 0) return base;
  if (forced == "coop240") return defer_ok ? Sm90ConfigId::kCoop240 : base;
  if (!fit_ok) {
    if (!forced.empty()) return base;
    if (rows_128b) return choose_sm90_wide(base, m, n, k, num_sms, defer_ok, coop_sk);
    return choose_sm90_pairs(base, m, n, k, num_sms, defer_ok, false);
  }
  const Sm90ConfigId first = Sm90ConfigId::kCoopFit80;
  for (int i = 0; i < kSm90FitWidths; ++i) {
    if (forced == "coop" + std::to_string(80 + 16 * i)) return Sm90ConfigId(int(first) + i);
  }
  if (!forced.empty() && forced != "fit") return base;
  int best = 0;
  double best_score = 0.0;
  for (int i = 0; i < kSm90FitWidths; ++i) {
    // (not 128: two 64x128 ping-pong tiles cover a 128x128 one and fill the rounds as well, with the epilogue
    // overlapped; forced, H200: 1024x2048x2048 0.950 / 0.881, 2048x1024x4096 0.920 / 0.914, 512x4096x4096
    // 0.870 / 0.900)
    if (80 + 16 * i == 128 || (mn_b && 80 + 16 * i < kFitMnMin)) continue;
    const double sc = sm90_tile_score(m, n, 128, 80 + 16 * i, num_sms);
    if (sc >= best_score) {
      best = i;
      best_score = sc;
    }
  }
  const Sm90ConfigId fit = Sm90ConfigId(int(first) + best);
  if (forced == "fit") return fit;
  if (!rows_128b) return choose_sm90_pairs(base, m, n, k, num_sms, defer_ok);  // (forced is "" here)
  const long long width = 80 + 16 * best;
  const long long tiles = ((m + 127LL) / 128) * ((n + width - 1) / width);
  const long long rounds = (tiles + num_sms - 1) / num_sms;
  const int wide_rounds = k <= kFitShallowK ? kFitRoundsShallow : kFitRoundsWide;
  const bool rounds_ok = rounds <= kFitRounds || (rounds <= wide_rounds && width >= kFitWideMin &&
                                                  best_score > sm90_base_score(base, m, n, num_sms));
  const bool two_wide = rounds == 2 && !mn_b && width >= kFitTwoRoundsWidth && k >= kFitTwoRoundsK;
  const double min_score = two_wide ? kFitTwoRounds
                           : rounds != 1 ? kFitMin
                           : mn_b      ? kFitMnOneRound
                           : k >= kFitOneRoundK ? kFitOneRound
                                                : kFitMin;
  const bool fit_serves = m >= 256 && k >= 512 && rounds_ok && best_score >= min_score &&
                          sm90_tile_score(m, n, 128, 256, num_sms) < kFitBase;
  return fit_serves ? fit : choose_sm90_wide(base, m, n, k, num_sms, defer_ok, coop_sk);
}

// The big tiles (choose_sm90_big): 128x320 (Sm90_128x320x64_Coop_S3, unclustered) and 192x192
// (Sm90_192x192x64_Coop_S4, in 2x1 pairs: choose_sm90_cluster), cuBLAS's own mid-size tiles (nvjet 320x128 at
// 2560x4096x4096 and 4096x3584x4096, 192x192 at 3072^3; benchmarks/experiments/cublas_kernels.py). Each loads fewer
// bytes per FLOP than the 64x256 ping-pong and 128x192 tiles they replace ((rows + columns) / (rows x columns) bytes
// per FLOP of 16-bit operands: 128x320 10.9 per 1 K FLOP, 192x192 10.4, 128x256 11.7, 128x192 13.0, 64x256 19.5),
// and at the board's power cap the L2 traffic saved is clock; timed alone (epilogue_power.py, H200, fifty-fourth
// session, plain mm, % time vs the rules' choice, with torch.mm):
//   2560x4096x4096 (64x256 ping-pong)   320: -6.1   (torch.mm -7.3)   1425 -> 1590 MHz
//   4096x3584x4096 (64x256 ping-pong)   320: -1.5   (torch.mm -0.2)
//   8192x14336x4096 (128x256, not a base here) 320: -0.0
//   3072^3 (128x192 fit)                192x192 pairs: -3.0, unclustered -2.7   (torch.mm -4.9)
//   3072x3072x4096 (128x192 fit)        192x192 pairs: -4.2, unclustered -3.3   (torch.mm -6.3)
//   6144x3072x4096 (64x256 ping-pong)   192x192 pairs: -4.2, unclustered -2.8   (torch.mm -5.7)
// (the 320-wide tiles in pairs: -6.0, -1.1, +0.0; D stored from registers instead of by TMA lost 3-8% everywhere:
// the rule takes launches whose D the TMA stores.) Held out (the rule in place, same method, % time of
// CUTORCH_GEMM_SM90_BIG=off over the rule's tile): 320 over fit 208 2816x3584x4096 +2.7, 3328x3072x4096 +3.3; over fit
// 160 3328x1536x4096 +7.7; over 64x256 7168x2048x4096 -0.9, 3584x4096x2048 +0.2, 4096x3584x8192 +2.9; 192x192 over
// 64x256 2304x6144x4096 +10.2, 4608x4096x4096 +5.5, 6144x2304x8192 +8.8; over fit 144 3072x1536x4096 +10.5; over fit
// 192 4096x2304x4096 +2.8, 3072x3072x2048 +2.4, 6144x1536x2048 +3.3 (geomean +4.5). With bias + GELU-tanh
// (fifty-fifth session, benchmarks/experiments/sm90_big_act_gpu.sh: the activation applied in the TMA-store slices)
// BIG=off took +2.1 to +9.6% more time at seven of those shapes, so launches with an activation take the rule too.
// The rule: for one dense fp16 / bf16 problem whose base (the heuristic's and fit rules' choice) is the 64x256
// ping-pong tile or a fit width, kBigMinK <= K <= kBigMaxK, the big tile (of the two) whose tiles fill their rounds
// better (sm90_tile_score; the 192x192 pairs: sm90_pair_score) where that fill is at least kBigMin over at most
// kBigMaxRounds rounds.
// `ok`: the launch can take it (both operands K-major on 128-byte-multiple rows, no C, plain or bias + an
// activation, a 16-bit D the TMA stores: sm90_defer_launch_ok, no forced epilogue path); `on`: CUTORCH_GEMM_SM90_BIG
// is not "off" (A/B runs). Forced ("coop320", "coop192x192": `forced_ok`, those launches on any rows and the fit
// tiles' launches with both operands K-major, C and the direct store too) those tiles run wherever the launch allows.
constexpr double kBigMin = 0.9;
constexpr int kBigMaxRounds = 4, kBigMinK = 2048, kBigMaxK = 8192;
inline Sm90ConfigId choose_sm90_big(Sm90ConfigId config, int m, int n, int k, int num_sms, const std::string& forced,
                                    bool forced_ok, bool ok, bool on) {
  if (forced == "coop320") return forced_ok ? Sm90ConfigId::kCoop320 : config;
  if (forced == "coop192x192") return forced_ok ? Sm90ConfigId::kCoop192x192 : config;
  if (!forced.empty() || !ok || !on || num_sms < 2 || m < 256 || k < kBigMinK || k > kBigMaxK) return config;
  if (config != Sm90ConfigId::kPingpong64x256 && sm90_fit_width(config) == 0) return config;
  const double wide = sm90_tile_score(m, n, 128, 320, num_sms), square = sm90_pair_score(m, n, 192, num_sms, 192);
  const long long wide_rounds = ((m + 127LL) / 128 * ((n + 319) / 320) + num_sms - 1) / num_sms;
  const long long clusters = num_sms / 2;
  const long long square_rounds = ((m + 383LL) / 384 * ((n + 191) / 192) + clusters - 1) / clusters;
  const bool wide_ok = wide >= kBigMin && wide_rounds <= kBigMaxRounds;
  const bool square_ok = square >= kBigMin && square_rounds <= kBigMaxRounds;
  if (square_ok && (!wide_ok || square >= wide)) return Sm90ConfigId::kCoop192x192;
  return wide_ok ? Sm90ConfigId::kCoop320 : config;
}

// The activation rule, opt-in since the fiftieth session (`on`: CUTORCH_GEMM_SM90_ACT_PINGPONG=on): the 64x256
// ping-pong tile in place of the cooperative 128x256 one that the other rules left, for one dense fp16 / bf16 problem
// whose epilogue applies an activation, with both operands K-major (nn.Linear's forward; the layouts measured) on
// rows of 128-byte multiples, K <= kActPingpongMaxK, M*N*K <= kActPingpongMaxMnk and no forced config.
// Why it is off by default: the numbers below are header_ab's, whose two sides alternate, so both run at the clock
// their mix sets. Run alone for 0.7-1 s (benchmarks/experiments/epilogue_power.py; the board at its ~560 W cap),
// the ping-pong launches held the SM clock 90-220 MHz lower and lost at all nine shapes where the configs differed:
// bias + GELU-tanh, ping-pong / cooperative at the torch level, 4096^3 1.030, 2048x4096x4096 1.066,
// 2048x11008x4096 1.025, 1024x4096x1024 1.032, 8192^2x4096 1.022, 16384x14336x1024 1.012, 20480x8192x2048 1.025,
// 16384x6144x4096 1.011, 8192x14336x4096 1.013 (H200, fiftieth session). At the cap the time of a workload made of
// these launches follows their energy, which the alternating A/B does not charge; the cooperative tile spends less.
// Why: the cooperative kernel's two consumer warpgroups share each tile and apply the activation together after its
// last wgmma group, with the tensor core idle (GELU-tanh ~4.5 K cycles per 128x256 tile, ncu, forty-seventh session;
// the mainloop ~65 K at K = 4096); the ping-pong consumers own alternate tiles, so one's epilogue runs under the
// other's mainloop. Its mainloop is slower: the same cycles, but 64-row tiles move ~45% more bytes through L2 and
// read ~70% more from DRAM, so the power cap holds the clock ~7% lower (ncu, one launch, 16384x8192x8192 and
// 8192x14336x4096). The hidden epilogue is a share of each tile's time that shrinks as K grows; the extra DRAM reads
// grow once the operands outgrow L2, so the trade is lost on long K and on large problems.
// H200, header_ab (graph-timed), bias + GELU-tanh, ping-pong / cooperative (bias + relu within ~2% of it):
//   K <= 4096, M*N*K <= 2^39: 4096^3 0.963, 2048x11008x4096 0.877, 16384x6144x4096 0.951, 8192^2x4096 0.971,
//     16384x4096x4096 0.965, 12288^2x1024 0.843, 16384x14336x1024 0.857, 8192x14336x4096 0.974 / 1.000,
//     4096x28672x4096 1.004, at 2^39: 16384x8192x4096 1.001, 32768x4096x4096 0.993, 16384^2x2048 0.990;
//   K <= 4096, past 2^39: 12288x14336x4096 1.088, 16384x11008x4096 1.076, 8192x28672x4096 1.030,
//     16384x14336x4096 1.022-1.046;
//   K = 8192: 16384x8192x8192 1.015, 8192^3 1.032 (forty-eighth and forty-ninth sessions).
// `on`: CUTORCH_GEMM_SM90_ACT_PINGPONG=on, the opt-in (A/B runs); without it the cooperative tile stays.
constexpr int kActPingpongMaxK = 4096;
constexpr int kActPingpongMaxMnkLog2 = 39;  // (explain's note names it as a power of two)
constexpr long long kActPingpongMaxMnk = 1LL << kActPingpongMaxMnkLog2;

inline Sm90ConfigId choose_sm90_act(Sm90ConfigId config, long long m, long long n, int k, bool activation,
                                    bool rows_128b, bool k_major, const std::string& forced, bool on) {
  const bool serves = config == Sm90ConfigId::kCoop128x256 && activation && rows_128b && k_major && forced.empty() &&
                      on && k <= kActPingpongMaxK && m * n * k <= kActPingpongMaxMnk;
  return serves ? Sm90ConfigId::kPingpong64x256 : config;
}

}  // namespace cutorch_gemm
