#pragma once
// Two rules of how an sm90 launch runs its tiles, shared by the launch (device/sm90_launch.cuh), the binding
// (csrc/torch/cuda/cuda_common.cpp: the stream-K workspace) and `explain`: 2x1 thread-block clusters with B
// multicast (choose_sm90_cluster) and stream-K for a partly empty last round (choose_sm90_streamk,
// sm90_streamk_full, sm90_streamk_plan). Torch- and CUDA-free.

#include <cstddef>
#include <cstdlib>
#include <string>

namespace cutorch_gemm {

// CTAs per cluster (along M) for one launch of the cooperative kernel: 2 shares each B tile
// between the two CTAs of a cluster (each loads half and multicasts it), so a CTA reads a third
// less per stage from L2. Possible for launches whose problems all have the same tile grid
// (dense, batched, grouped-K: the pair's tiles share a tile column and K range) with at least
// two tile rows; ping-pong, fused SwiGLU and pointer-array launches run without clusters.
// Chosen when an operand's rows (the stride between the 128-byte rows that TMA boxes read) are
// not a multiple of 128 bytes: every box row then spans two L2 lines, and L2 traffic is what
// limits the kernel. Measured on an H100 (best of 3, ratio to cuBLAS): 3000x5000x1000 (rows of
// 2000 bytes) 0.668 -> 0.891 with clusters; with 128-byte-aligned rows the coupled CTAs lose
// 2-5% (4096^3 0.971 -> 0.951, 4096x28672x8192 0.987 -> 0.940, 16384x8192x8192 1.002 -> 0.952).
// Also for one dense 16-bit problem with a short K (8 to 32 K slices: shorter ones keep stream-K,
// see choose_sm90_streamk) and at least 8 rounds of tiles, aligned rows or not: there the pairs
// won (H100, 5 interleaved rounds, ratio to cuBLAS, without / with; a second run agreed):
// 8192x8192x1024 0.895 / 0.955, 8192x8192x512 0.811 / 0.872, 16384x4096x1024 0.891 / 0.929,
// 8192x8192x2048 0.950 / 0.965, 8192x14336x2048 0.957 / 0.971; but 4096x4096x1024 (2 rounds)
// 0.957 / 0.927, and grouped-K (dW) launches of the MoE shapes, whose groups are short in K too,
// were equal or 1-3% slower with pairs.
// And for one dense 16-bit problem with more than 32 K slices (the mid-K rule, named for its first reach, K <= 4096;
// deeper K since the fifty-second session, with stream-K in pairs: sm90_streamk_pairs) over at least 3.5 rounds of
// tiles whose last round is nearly full (at most 1/16 of the slots idle: a sparser last round was measured only
// unclustered, with stream-K), aligned rows too. Timed alone at the board's power cap (benchmarks/experiments/epilogue_power.py, H200,
// fifty-first session), where a run's clock follows its own power, the pairs' halved B reads from L2 left 30-45
// MHz more clock than the unclustered tiles, also where those took stream-K. Plain / bias + GELU-tanh, % time,
// pairs vs none: 4096^3 -1.3 / -1.0, 8192x4096x4096 -1.6 / -2.0, 4096x14336x4096 -1.9 / -3.8, 8192x14336x4096
// -1.5 / -3.3, 8192x8192x4096 -1.2 / -1.9, 6144x6144x4096 -1.9 (plain), 4096x4096x3072 0.0 (plain). Not taken:
// shorter K at few rounds (4096x4096x1024 +0.7, x2048 +3.2). Deeper K, pairs without stream-K vs the unclustered
// tiles with it, was mixed (fifty-first session: 8192x4096x14336 -0.8 / -0.3, 14336x4096x8192 +0.1 / -0.6, 8192^3
// +0.4 / +0.8, 4096x28672x8192 +0.6 / -0.3, 16384x8192x8192 -1.1 / -2.3); with stream-K in pairs it wins (fifty-second
// session, plain mm, two runs alone, % time vs the unclustered tiles with stream-K): 8192^3 -1.8 / -1.9,
// 4096x28672x8192 -2.2 / -2.7, 8192x4096x14336 -2.0 / -1.1, 16384x8192x8192 -2.8 (one run); K = 6144, where the pair
// plan cuts nothing: 8192x8192x6144 -1.7, 4096x14336x6144 -2.5. Interleaved with cuBLASLt (epilogue_ab: both sides
// share one clock)
// bias + GELU-tanh read 4096^3 0.973 / 0.975, 8192x14336x4096 0.976 / 0.995, 8192x4096x14336 0.973 / 0.968.
// `forced` is CUTORCH_GEMM_SM90_CLUSTER ("", "1", "2"; "2" still needs an eligible launch: fixed
// tile grid, not SwiGLU, two tile rows; ping-pong then too, but it measured slower everywhere:
// 1024^3 0.78 / 0.72, 512x4096x4096 0.84 / 0.79, 3072^3 0.77 / 0.71).
// tf32 (fifty-ninth session, H200, benchmarks/experiments/epilogue_power.py DTYPE=tf32, plain mm alone, two mirrored
// passes, % time of pairs without stream-K vs the unclustered tiles, which took stream-K where marked): 4096^3 -1.8,
// 6144x6144x4096 -1.4, 8192x14336x4096 -1.2, 8192^3 (stream-K) -0.9, 8192x4096x14336 (stream-K) -2.0, each at a
// 40-90 MHz higher clock; a second call, the rule in place vs CUTORCH_GEMM_SM90_CLUSTER=1: 4096x4096x2048 (64 slices)
// -2.4, 8192x8192x2048 -2.5, 4096^3 -1.3, 8192^3 -1.0, 8192x4096x14336 -0.4. So tf32 takes the mid-K clause, its K
// counted in 32-element slices (a slice of either type is one 128-byte row); the short-K clause was measured on
// 16-bit operands only and stays theirs. Stream-K in pairs on top (CUTORCH_GEMM_SM90_STREAMK_PAIRS=on) was mixed,
// +0.8 to -1.1 (8192^3): tf32 keeps it off (sm90_streamk_pairs).
// 8-bit operands (scaled_mm, 128-element slices; fifty-ninth session, same script with DTYPE=e4m3, promoted
// accumulation, % time of forced pairs vs unclustered, neither with stream-K): 8192x14336x4096 (32 slices, 27 rounds:
// the short-K clause) -3.1, 8192^3 -2.3, 16384x8192x8192 -1.8 (64 slices: the mid-K clause), 4096^3 (32 slices, 3.9
// rounds: neither) -0.5; with use_fast_accum, the rule in place vs CUTORCH_GEMM_SM90_CLUSTER=1: 8192x14336x4096 -2.8,
// 16384x8192x8192 -1.2. So 8-bit takes both clauses, counted in its slices.
// dense: one dense problem of 16-bit, tf32 or 8-bit operands (block_k: its K slice, 64, 32 or 128); k, tiles,
// num_sms: its K, cooperative tiles and the SMs (the K rules; 0: not applied); block_n: the tiles' width (the mid-K
// rule: 128 x 256 and 128 x 240 only; the fit widths' rules, sm90_fit_rules.h, were measured without pairs).
// block_m: the tiles' rows; the 192x192 tiles always pair (choose_sm90_big's measurements: pairs 0.3-1.4% ahead of
// them unclustered).
inline int choose_sm90_cluster(bool cooperative, bool fixed_grid, bool swiglu, int tiles_m, bool rows_128b,
                               const std::string& forced, bool dense = false, int k = 0, long long tiles = 0,
                               int num_sms = 0, int block_n = 256, int block_m = 128, int block_k = 64) {
  if (!fixed_grid || swiglu || tiles_m < 2 || forced == "1") return 1;
  if (forced == "2") return 2;  // (ping-pong too: its two CTAs walk the same pair tiles in step)
  if (!cooperative) return 1;
  if (!rows_128b || block_m == 192) return 2;
  if (!dense || num_sms <= 0 || (block_k != 64 && block_k != 32 && block_k != 128)) return 1;
  // K in 64-element slices' units: a slice of any type is one 128-byte row (tf32: twice its elements, 8-bit: half)
  const long long k64 = (long long)k * 64 / block_k;
  if (k64 < 8 * 64) return 1;
  const bool short_k = block_k != 32 && k64 <= 32 * 64 && tiles >= 8LL * num_sms;
  // (2176x8192x4096's 544 tiles leave 18% of 5 rounds idle: it keeps stream-K)
  const long long slots = (tiles + num_sms - 1) / num_sms * num_sms;
  const bool mid_k = k64 > 32 * 64 && block_n >= 240 && 2 * tiles >= 7LL * num_sms && 16 * (slots - tiles) <= slots;
  if (!short_k && !mid_k) return 1;
  // Not where pairing adds a round: the clusters (num_sms / 2 of them) walk pair tiles of two tile rows, so an odd
  // tile-row count rounds up (the last pair half idle) and the launch can need one round more than the unclustered
  // tiles. H200, interleaved with torch.mm, ratio to it, pairs / this rule (seventy-third session, dense_ab.py):
  // mid-K 1808x14336x4096 (15 tile rows of 128x240: 8 rounds against 7) 0.857 / 0.974, 2608x14336x4096 (21 rows: 10
  // against 9) 0.908 / 1.014, 4224x4096x4096 (33 rows: 5 / 4) 0.837 / 1.022, 6272x4096x4096 (49: 7 / 6) 0.881 /
  // 1.011; with bias + GELU-tanh 0.844 / 0.950, 0.908 / 1.006, 0.822 / 0.994; short-K 4224x8192x1024 (9 / 8) 0.937 /
  // 1.039, 6272x8192x2048 (13 / 12) 0.965 / 1.049; 8192x14336x4096 (even rows) 1.012 / 1.010, unchanged.
  const long long tiles_n = (tiles + tiles_m - 1) / tiles_m;
  const long long pair_items = (tiles_m + 1LL) / 2 * tiles_n, clusters = num_sms / 2;
  if (clusters < 1 || (pair_items + clusters - 1) / clusters > slots / num_sms) return 1;
  return 2;
}

// Stream-K for the last round of a dense cooperative launch. The persistent grid runs
// ceil(tiles / ctas) rounds of whole tiles; when the last round is partly empty, its SMs idle
// while the rest finish. Instead the last tiles are cut along K into one contiguous range of
// k-blocks per CTA; the CTAs holding a tile's earlier k-blocks store fp32 partial tiles, the one
// holding its last k-blocks adds them (in k order: deterministic) and runs the epilogue. Two
// forms, by how many tiles are cut, with rest = tiles % ctas:
//   "last": the rest only (a fraction of a tile per CTA), when it is at least half a round (a
//           tile then has at most three pieces), at most a tenth of the tiles, and tiles are at
//           least 128 K slices deep (shorter pieces did not pay for their partials);
//   "wide": rest + ctas (more than a tile per CTA, a tile has at most two pieces), when that is
//           at most an eighth of the tiles, or when the last round is at most a quarter full and
//           tiles are at least 64 K slices deep (a sparse last round: there it cost most of a round).
// Measured on an H100 (bf16, interleaved with torch.mm, stream-K vs not, two runs): "last"
// 8192x4096x14336 +2.5/+2.9%, 14336x4096x8192 +5.2/+3.0%, 8192^3 +2.8/+4.6%; "wide"
// 8192x14336x4096 +1.2/+2.6%, 16384x8192x8192 +2.4/+3.0%, 4096x28672x8192 +2.1/+3.5%. Cutting
// more lost: "wide" on 4096^3 (48% of the tiles) -8%, on 8192x4096x14336 (23%) -9% (the CTAs'
// k positions drift apart and the concurrent K slices no longer share L2); "last" on 4096^3
// -3..-5%, on 16384x8192x8192 (4 tiles over 132 CTAs: 33 partials per tile) -2%.
// The sparse-last-round "wide" (H200, cooperative launches, interleaved with torch.mm, ratio, none /
// wide; last rounds 9-23% full): 2048x11008x4096 0.933 / 0.999 (two other runs 0.949 / 1.007, 0.964 /
// 1.047), 1664x11008x4096 0.902 / 0.976, 2304x7680x4096 0.908 / 1.024, 1920x9216x4096 0.905 / 1.040,
// 2048x11008x8192 0.956 / 1.044. A 61% full one gained less ("last" 1024x11008x4096 0.885 / 0.920).
// Returns how many tiles (the last ones of the sequence) run this way; 0: none. `forced` is
// CUTORCH_GEMM_SM90_STREAMK ("", "off", "wide" / "on", "last": any partial last round).
// Fewer tiles than CTAs: the grid was widened for the "full" form (sm90_streamk_full decides it): every
// tile is cut, a CTA taking under one tile's k-blocks.
inline int choose_sm90_streamk(long long tiles, int ctas, int k_blocks, const std::string& forced) {
  if (forced == "off" || ctas <= 0 || k_blocks <= 0) return 0;
  if (tiles < ctas) {
    if (tiles * k_blocks < ctas) return 0;                              // every CTA gets k-blocks
    return tiles * k_blocks * (ctas + 1LL) >= (1LL << 31) ? 0 : int(tiles);
  }
  if (tiles == ctas) return 0;
  const long long rest = tiles % ctas;
  if (rest == 0) return 0;
  long long sk = 0;
  if (forced == "last") {
    sk = rest;
  } else if (forced == "on" || forced == "wide") {
    sk = rest + ctas;
  } else if (2 * rest >= ctas && 10 * rest <= tiles && k_blocks >= 128) {
    sk = rest;
  } else if ((8 * (rest + ctas) <= tiles && k_blocks >= 4) || (4 * rest <= ctas && k_blocks >= 64)) {
    sk = rest + ctas;
  }
  if (sk == 0 || sk * k_blocks < ctas) return 0;                       // every CTA gets k-blocks
  if (sk * k_blocks * (ctas + 1LL) >= (1LL << 31)) return 0;           // the kernel's 32-bit math
  return int(sk);
}

// The stream-K plan of one dense cooperative launch (128x256 tiles, K slices of block_k): the
// persistent grid launch_sm90 will use (one CTA per tile up to the SMs, capped by grid_cap when
// positive: CUTORCH_GEMM_SM90_GRID) and choose_sm90_streamk's tile count for it. The binding sizes
// the workspace with it, `explain` reports it.
struct Sm90StreamK {
  long long tiles;
  int ctas;
  int sk_tiles;  // 0: no stream-K
};
// The "full" stream-K form: one partial round of cooperative tiles spread over a grid of num_sms CTAs
// (instead of one CTA per tile), every tile cut along K. Where the round is half to three quarters
// full and tiles are at least 96 K slices of 64 deep, or at most 60% full and at least 64 slices deep
// (fp16 / bf16: block_k 64; tf32 not measured);
// CUTORCH_GEMM_SM90_STREAMK=full forces it on any partial round, "off" or another form turns it off.
// H200, 5 interleaved rounds, ratio to cuBLAS, the rule's 64x128 tiles / cooperative tiles with
// "full" (thirtieth session): 768x3072x8192 (72 tiles) 0.626 / 0.782, 1536x1536x8192 0.633 / 0.804,
// 1024x2560x8192 0.706 / 0.850, 1280x2048x8192 0.669 / 0.813, 1152x2304x8192 0.694 / 0.839,
// 1024x3072x8192 (96) 0.810 / 0.862, 896x3584x8192 (98) 1.001 / 1.042, 768x3072x16384 0.670 /
// 0.862, 1536x1536x12288 0.660 / 0.866; 96 K slices: 768x3072x6144 0.656 / 0.759, 1024x2560x6144
// 0.746 / 0.818, 896x3584x6144 1.015 / 1.015; 64 K slices (7 rounds): 1536x1536x4096 (72 tiles)
// 0.676 / 0.716, 768x3072x4096 0.688 / 0.721, 1024x2304x4096 0.666 / 0.718, but 80 tiles 0.764 /
// 0.781, 0.728 / 0.734, 0.732 / 0.731 and 96-98 tiles 0.817 / 0.782, 1.008 / 0.952. Where it lost:
// shallower tiles (768x3072x2048 0.711 / 0.635, 896x3584x4096 1.001 / 0.948), fuller rounds (2048x2048x8192, 128 tiles, cooperative 0.987 /
// 0.883; 1024x3584x8192, 112: 0.914 / 0.908), emptier ones (640x3072x8192, 60 tiles: ping-pong
// 64x256 0.925 / 0.795).
inline bool sm90_streamk_full(long long tiles, int num_sms, int k_blocks, int block_k, const std::string& forced) {
  if (forced == "off" || tiles >= num_sms || tiles * k_blocks < num_sms) return false;
  if (forced == "full") return true;
  if (!forced.empty()) return false;  // ("on", "wide", "last": the other forms only)
  return block_k == 64 && 2 * tiles >= num_sms && 4 * tiles <= 3LL * num_sms &&
         (k_blocks >= 96 || (k_blocks >= 64 && 5 * tiles <= 3LL * num_sms));
}
inline Sm90StreamK sm90_streamk_plan(long long m, long long n, long long k, int block_k, int num_sms,
                                     long long grid_cap, const std::string& forced) {
  const long long tiles = ((m + 127) / 128) * ((n + 255) / 256);
  const int k_blocks = int((k + block_k - 1) / block_k);
  const bool full = sm90_streamk_full(tiles, num_sms, k_blocks, block_k, forced);
  long long ctas = tiles < num_sms && !full ? tiles : num_sms;
  if (grid_cap > 0 && ctas > grid_cap) ctas = grid_cap;
  return {tiles, int(ctas), choose_sm90_streamk(tiles, int(ctas), k_blocks, forced)};
}

// Stream-K in 2x1 clusters: whether a launch that takes pairs may also cut its last tiles along K, choose_sm90_streamk's
// plan over pair tiles and clusters (the launch; sm90_streamk_pair_plan), a cluster's two CTAs cutting the same K
// ranges of their two tiles (scheduler/sm90_tile_scheduler.cuh, get_item). By default 16-bit operands with K > 4096
// (block_k 64, more than 64 K slices), where it was measured (choose_sm90_cluster's comment); K <= 4096 keeps the
// mid-K rule's pairs without it (measured so; there the plan would cut only launches of 8+ rounds). `forced` is
// CUTORCH_GEMM_SM90_STREAMK_PAIRS: "on" any pairs, "off" none.
inline bool sm90_streamk_pairs(long long k, int block_k, const std::string& forced) {
  if (forced == "on" || forced == "off") return forced == "on";
  return block_k == 64 && k > 64 * 64;
}
inline bool sm90_streamk_pairs(long long k, int block_k) {
  const char* v = std::getenv("CUTORCH_GEMM_SM90_STREAMK_PAIRS");
  return sm90_streamk_pairs(k, block_k, v ? std::string(v) : std::string());
}
// The stream-K plan of one dense cooperative 128x256 launch in 2x1 clusters: its items are pair tiles (two tile
// rows by one tile column), its units the num_sms / 2 clusters (or the capped grid's), as launch_sm90 plans it
// when the GPU holds that many clusters at once (fewer: the launch plans over those, within the same workspace).
// No tiles are cut where sm90_streamk_pairs keeps stream-K off (CUTORCH_GEMM_SM90_STREAMK_PAIRS, read here).
inline Sm90StreamK sm90_streamk_pair_plan(long long m, long long n, long long k, int block_k, int num_sms,
                                          long long grid_cap, const std::string& forced) {
  const long long items = ((m + 255) / 256) * ((n + 255) / 256);
  long long units = items < num_sms / 2 ? items : num_sms / 2;
  if (grid_cap >= 2 && 2 * units > grid_cap) units = grid_cap / 2;
  const int k_blocks = int((k + block_k - 1) / block_k);
  const bool on = units > 0 && sm90_streamk_pairs(k, block_k);
  return {items, int(units), on ? choose_sm90_streamk(items, int(units), k_blocks, forced) : 0};
}

// sm90_coop_pairs: whether one dense problem's launch on the cooperative 128x256 config takes 2x1 clusters
// (choose_sm90_cluster as launch_sm90 asks it; block_k 64: 16-bit operands, 32: tf32).
// sm90_coop_streamk: whether one dense problem would take stream-K with the cooperative config: unclustered
// (choose_sm90_cluster: rows_128b, the operands' TMA rows are 128-byte multiples; forced_cluster:
// CUTORCH_GEMM_SM90_CLUSTER) or in pairs that take it (sm90_streamk_pairs), and choose_sm90_streamk's plan
// (forced_sk: CUTORCH_GEMM_SM90_STREAMK).
// block_k: the K slice, 64 (fp16 / bf16) or 32 (tf32). choose_sm90_config's wave rule asks it;
// explain mirrors the binding through it.
inline bool sm90_coop_pairs(long long m, long long n, long long k, int num_sms, bool rows_128b,
                            const std::string& forced_cluster, int block_k = 64) {
  const long long tiles_m = (m + 127) / 128;
  return choose_sm90_cluster(true, true, false, int(tiles_m), rows_128b, forced_cluster, true, int(k),
                             tiles_m * ((n + 255) / 256), num_sms, 256, 128, block_k) > 1;
}
inline bool sm90_coop_streamk(long long m, long long n, long long k, int num_sms, bool rows_128b,
                              const std::string& forced_cluster, const std::string& forced_sk, int block_k = 64) {
  const long long tiles = ((m + 127) / 128) * ((n + 255) / 256);
  if (num_sms <= 0 || tiles == num_sms) return false;
  if (sm90_coop_pairs(m, n, k, num_sms, rows_128b, forced_cluster, block_k)) {
    return sm90_streamk_pair_plan(m, n, k, block_k, num_sms, 0, forced_sk).sk_tiles > 0;
  }
  return sm90_streamk_plan(m, n, k, block_k, num_sms, 0, forced_sk).sk_tiles > 0;
}


// Bytes of stream-K workspace for up to `ctas` CTAs: their flags (two ints each, first), then
// their 128 x 256 fp32 partial tiles (16-byte aligned).
inline size_t sm90_streamk_flag_bytes(int ctas) { return (size_t(2 * ctas) * 4 + 15) / 16 * 16; }
inline size_t sm90_streamk_workspace_bytes(int ctas) {
  return sm90_streamk_flag_bytes(ctas) + size_t(ctas) * 128 * 256 * 4;
}

}  // namespace cutorch_gemm
