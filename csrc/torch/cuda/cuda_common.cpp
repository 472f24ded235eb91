// Device facts, environment overrides, tensors -> GemmArgs, and the family dispatch of one GEMM
// launch (declarations and notes in cuda_common.h).
#include "cuda_common.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "cutorch_gemm/device/simt_gemm.h"
#include "cutorch_gemm/device/sm80_gemm.h"
#include "cutorch_gemm/device/sm80_skinny.h"
#include "cutorch_gemm/device/sm90_skinny.h"
#include "cutorch_gemm/device/sm90_fit_rules.h"

namespace cutorch_gemm::binding {

// Extents are int32 in the kernels, with a tile's headroom: tile counts are ceil_div(m, block) in int (m + block - 1)
// and tile origins plus in-tile offsets stay below m + 1024.
constexpr int64_t kMaxExtent = int64_t(std::numeric_limits<int32_t>::max()) - 1024;

void check_extents(const char* op, std::initializer_list<int64_t> extents) {
  for (int64_t e : extents) {
    TORCH_CHECK_VALUE(e <= kMaxExtent, op, ": extents above 2^31 - 1025 (", kMaxExtent,
                      ") are not supported, got ", e);
  }
}

int64_t stride_of(const at::Tensor& t, int64_t dim) { return t.size(dim) == 1 ? 1 : t.stride(dim); }

// Compute capability and SM count of the current device, queried once per device.
const DeviceInfo& device_info() {
  static std::array<DeviceInfo, 64> cache;
  static std::array<std::once_flag, 64> once;
  int dev = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  TORCH_CHECK(dev >= 0 && dev < 64, "cutorch_gemm: device index ", dev, " out of range");
  std::call_once(once[dev], [dev] {
    DeviceInfo& d = cache[dev];
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    d.sm90 = d.major == 9 && sm90_kernels_available();
    d.sm80 = d.major >= 8 && sm80_kernels_available();
  });
  return cache[dev];
}

static SimtPlan plan_for(const GemmArgs& args, bool grouped) {
  const DeviceInfo& d = device_info();
  return choose_simt_plan(d.major, d.minor, args.dtype, args.shape.m, args.shape.n, args.shape.k,
                          args.batch, d.sms, grouped);
}

// Launches the SIMT family (CUTORCH_GEMM_ARCH=simt forces it).
static void run(const GemmArgs& args, bool grouped) {
  if (args.batch == 0 || args.shape.m == 0 || args.shape.n == 0) return;
  const SimtPlan plan = plan_for(args, grouped);
  const size_t ws_bytes = simt_workspace_bytes(args, plan);
  at::Tensor ws;
  if (ws_bytes > 0) {  // from PyTorch's caching allocator, on the current stream
    ws = at::empty({int64_t(ws_bytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  }
  const cudaError_t err = simt_gemm(args, plan, ws_bytes ? ws.data_ptr() : nullptr,
                                    c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: SIMT kernel launch failed (", simt_config_name(plan.config),
              ", splits=", plan.splits, "): ", cudaGetErrorString(err));
}

// CUTORCH_GEMM_ARCH / CUTORCH_GEMM_SM90_CONFIG, read at every call so tests can force a path.
std::string env_lower(const char* name) {
  const char* e = std::getenv(name);
  std::string v = e ? e : "";
  for (char& ch : v) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return v;
}
std::string forced_arch() { return env_lower("CUTORCH_GEMM_ARCH"); }
// CUTORCH_GEMM_SM90_SPLIT_FILL (experiments): choose_sm90_split's `fill` (default 4).
int split_fill() {
  const std::string v = env_lower("CUTORCH_GEMM_SM90_SPLIT_FILL");
  const int f = v.empty() ? 4 : std::atoi(v.c_str());
  return f > 0 ? f : 4;
}

// CUTORCH_GEMM_SKINNY_SPLITS (experiments, tests): the Hopper skinny kernel's K split; 0: the rule.
// A positive integer knob, else 0 (unset or not a positive number).
static int positive_env_int(const char* name) {
  const std::string v = env_lower(name);
  const int s = v.empty() ? 0 : std::atoi(v.c_str());
  return s > 0 ? s : 0;
}

int sm90_skinny_forced_splits() { return positive_env_int("CUTORCH_GEMM_SKINNY_SPLITS"); }
int sm90_skinny_forced_slots() { return positive_env_int("CUTORCH_GEMM_SKINNY_SLOTS"); }

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// How the sm90 kernels would read a and b (strides as set_2d reported them).
Sm90Operand sm90_a(const GemmArgs& g, const at::Tensor& a) {
  return sm90_operand(g.shape.a_sk, g.shape.a_sm, g.batch > 1 ? g.shape.a_sb : 0, aligned16(a), int(a.element_size()));
}
Sm90Operand sm90_b(const GemmArgs& g, const at::Tensor& b) {
  return sm90_operand(g.shape.b_sk, g.shape.b_sn, g.batch > 1 ? g.shape.b_sb : 0, aligned16(b), int(b.element_size()));
}

HeuristicExtents heuristic_extents(const GemmArgs& g) {
  const int groups = g.batch > 0 ? g.batch : 1;
  const bool by_m = g.shape.mode == GroupMode::kGroupedM;
  return {by_m ? ceil_div(g.shape.m, groups) : g.shape.m,
          g.shape.mode == GroupMode::kGroupedN ? ceil_div(g.shape.n, groups) : g.shape.n,
          by_m ? std::max(1, std::min(groups, g.shape.m)) : groups};
}

// The arrival counters parallel split-K sums its partials with inside the sm80 kernel
// (kSm80ArrivalCounters zeroed ints per (device, stream), allocated on first use and kept: the
// kernel leaves them zero, and launches on one stream never overlap). nullptr while the stream
// is being captured: a graph may be replayed on another stream, concurrently with this one's
// launches, so captured launches keep the reduction kernel.
static int* sm80_arrival_counters(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mu;
  // NOTE: never freed (one small buffer per stream used; PyTorch's streams are pooled).
  static auto* buffers = new std::map<std::pair<int, cudaStream_t>, at::Tensor>();
  std::lock_guard<std::mutex> lock(mu);
  at::Tensor& t = (*buffers)[{device, stream}];
  if (!t.defined()) t = at::zeros({kSm80ArrivalCounters}, at::TensorOptions().dtype(at::kInt).device(at::kCUDA));
  return t.data_ptr<int>();
}

// Launches the sm80 family: plan (CUTORCH_GEMM_SM80_CONFIG / CUTORCH_GEMM_SPLIT_K override it),
// split-K workspace from PyTorch's caching allocator on the current stream, kernel.
static void run_sm80(const GemmArgs& g) {
  if (g.batch == 0 || g.shape.m == 0 || g.shape.n == 0) return;
  const DeviceInfo& d = device_info();
  const bool grouped = g.shape.mode != GroupMode::kBatched;
  const HeuristicExtents e = heuristic_extents(g);  // the grid below covers the largest group
  const std::string forced_config = env_lower("CUTORCH_GEMM_SM80_CONFIG");
  const std::string forced_split = env_lower("CUTORCH_GEMM_SPLIT_K");
  bool ok = true;
  const bool mn_major = sm80_mn_major(g.shape.a_sk, g.shape.a_sm) || sm80_mn_major(g.shape.b_sk, g.shape.b_sn);
  Sm80Plan plan = choose_sm80_plan(g.dtype, e.m, e.n, g.shape.k, g.batch, d.sms, d.smem_optin, grouped,
                                   forced_config, forced_split, &ok, mn_major);
  TORCH_CHECK_VALUE(ok, "cutorch_gemm: CUTORCH_GEMM_SM80_CONFIG='", forced_config, "' / CUTORCH_GEMM_SPLIT_K='",
                    forced_split, "' name no ", dtype_name(g.dtype), " config or split that fits this GPU");
  const Sm80ConfigInfo& c = sm80_config_info(plan.config);
  plan.tiles_m = ceil_div(g.shape.m, c.block_m);
  plan.tiles_n = ceil_div(g.shape.n, c.block_n);
  plan.raster_group = raster_group_for(plan.tiles_m, plan.tiles_n);
  const Sm80Workspace need = sm80_workspace(g, plan);
  at::Tensor ws, sem;
  const auto opts = at::TensorOptions().device(at::kCUDA);
  if (need.partial_bytes > 0) ws = at::empty({int64_t(need.partial_bytes)}, opts.dtype(at::kByte));
  if (need.semaphores > 0) sem = at::zeros({int64_t(need.semaphores)}, opts.dtype(at::kInt));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  int* counters = need.semaphores ? sem.data_ptr<int>()
                  : plan.split_mode == SplitKMode::kParallel && plan.splits > 1 ? sm80_arrival_counters(stream)
                                                                                 : nullptr;
  const cudaError_t err = sm80_gemm(g, plan, need.partial_bytes ? ws.data_ptr() : nullptr, counters, stream);
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm80 kernel launch failed (", sm80_config_name(plan.config),
              ", split-K ", splitk_mode_name(plan.split_mode), " x", plan.splits, "): ", cudaGetErrorString(err));
}

// Stream-K workspace for a dense cooperative sm90 launch whose last round of tiles would run
// partly empty (sm90_streamk_plan: the grid launch_sm90 will use): flags zeroed on the stream,
// partial tiles uninitialised; `g` gets the pointers. Undefined tensor: no stream-K.
static at::Tensor streamk_workspace(GemmArgs& g, Sm90ConfigId config, int num_sms, cudaStream_t stream) {
  if (config != Sm90ConfigId::kCoop128x256 || g.shape.mode != GroupMode::kBatched || g.batch != 1) return at::Tensor();
  // 2x1 clusters take stream-K only where sm90_streamk_pairs allows and their plan over pair tiles cuts some
  // (launch_sm90 makes the same choice; it may hold fewer clusters: room for every SM); otherwise no workspace and
  // no memset to pay for.
  const bool tf32 = g.dtype == DType::kFloat32;
  const int block_k = tf32 ? 32 : 64;  // the config's K slice (tf32: 32)
  const char* forced_cluster = std::getenv("CUTORCH_GEMM_SM90_CLUSTER");
  const bool pairs = sm90_coop_pairs(g.shape.m, g.shape.n, g.shape.k, num_sms,
                                     sm90_operands_rows_128b(g.shape, tf32 ? 4 : 2), forced_cluster ? forced_cluster : "",
                                     block_k);
  const char* cap = std::getenv("CUTORCH_GEMM_SM90_GRID");
  const long long grid_cap = cap ? std::atoll(cap) : 0;
  const std::string forced_sk = env_lower("CUTORCH_GEMM_SM90_STREAMK");
  Sm90StreamK plan = pairs ? sm90_streamk_pair_plan(g.shape.m, g.shape.n, g.shape.k, block_k, num_sms, grid_cap, forced_sk)
                           : sm90_streamk_plan(g.shape.m, g.shape.n, g.shape.k, block_k, num_sms, grid_cap, forced_sk);
  if (plan.sk_tiles == 0) return at::Tensor();
  if (pairs) plan.ctas = num_sms;  // (slots per CTA: the clusters' grid is at most num_sms CTAs)
  const size_t flag_bytes = sm90_streamk_flag_bytes(plan.ctas);
  at::Tensor ws = at::empty({int64_t(sm90_streamk_workspace_bytes(plan.ctas))},
                            at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  C10_CUDA_CHECK(cudaMemsetAsync(ws.data_ptr(), 0, flag_bytes, stream));
  g.sk_flags = static_cast<int*>(ws.data_ptr());
  g.sk_partials = reinterpret_cast<float*>(static_cast<uint8_t*>(ws.data_ptr()) + flag_bytes);
  g.sk_slots = plan.ctas;
  return ws;
}

// MoE decode: a grouped-M launch the grouped skinny kernel takes (device/sm90_skinny.h; explain()
// mirrors the rule). It also stores the rows past offs[-1]. False: not taken, nothing ran.
bool run_grouped_skinny(const GemmArgs& g, const at::Tensor& a, const at::Tensor& b, bool swiglu) {
  if (g.shape.mode != GroupMode::kGroupedM) return false;
  const DeviceInfo& d = device_info();
  const SkinnyQuery sq{d.major, d.sm80, g.dtype, g.shape.mode, g.batch, g.shape.m, g.shape.n, g.shape.k,
                       g.shape.a_sm, g.shape.a_sk, g.shape.b_sk, g.shape.b_sn, aligned16(a), aligned16(b), d.sms,
                       forced_arch(), env_lower("CUTORCH_GEMM_SKINNY"), d.sm90, g.shape.b_sb, swiglu};
  if (!sm90_grouped_skinny_refusal(sq).empty()) return false;
  const int tokens = sm90_skinny_tokens(g.shape.m);
  const int slots = sm90_grouped_skinny_slots(g.batch, g.shape.m, sm90_skinny_forced_slots());
  const int splits = choose_sm90_grouped_skinny_splits(g.shape.n, g.shape.k, g.batch, g.shape.m, d.sms,
                                                       sm90_skinny_forced_splits());
  const cudaError_t err =
      sm90_grouped_skinny(g, tokens, splits, slots, d.sms, swiglu, c10::cuda::getCurrentCUDAStream().stream());
  if (err == cudaErrorNotSupported) return false;  // the driver refused the tensor maps: the tile kernels
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: grouped skinny kernel launch failed (", sm90_skinny_config_name(tokens),
              ", splits ", splits, ", slots ", slots, "): ", cudaGetErrorString(err));
  return true;
}

// Runs any GEMM launch (dense, batched, grouped) on the family choose_family names.
void run_gemm(const GemmArgs& g, const at::Tensor& a, const at::Tensor& b) {
  const DeviceInfo& d = device_info();
  const Sm90Operand oa = sm90_a(g, a), ob = sm90_b(g, b);
  const FamilyChoice fc = choose_family(FamilyQuery{d.major, g.dtype, oa, ob, g.shape.mode, g.shape.k > 0, d.sm90,
                                                    d.sm80, at::globalContext().allowTF32CuBLAS(), forced_arch()});
  const bool grouped = g.shape.mode != GroupMode::kBatched;
  // Small M against a streamed weight: the skinny kernel (explain() mirrors this rule).
  const SkinnyQuery sq{d.major, d.sm80, g.dtype, g.shape.mode, g.batch, g.shape.m, g.shape.n, g.shape.k,
                       g.shape.a_sm, g.shape.a_sk, g.shape.b_sk, g.shape.b_sn, aligned16(a), aligned16(b), d.sms,
                       forced_arch(), env_lower("CUTORCH_GEMM_SKINNY"), d.sm90};
  if (sm90_skinny_refusal(sq).empty()) {  // on Hopper: TMA + wgmma (device/sm90_skinny.h)
    const int tokens = sm90_skinny_tokens(g.shape.m);
    const int splits = choose_sm90_skinny_splits(g.shape.n, g.shape.k, tokens, d.sms, sm90_skinny_forced_splits());
    const cudaError_t err = sm90_skinny(g, tokens, splits, c10::cuda::getCurrentCUDAStream().stream());
    if (err != cudaErrorNotSupported) {  // else the driver refused the tensor maps: the rules below
      TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: skinny kernel launch failed (",
                  sm90_skinny_config_name(tokens), ", splits ", splits, "): ", cudaGetErrorString(err));
      return;
    }
  }
  if (skinny_refusal(sq).empty()) {
    const SkinnyConfigId config = choose_skinny_config(g.shape.m, g.shape.n, d.sms, sq.knob);
    const cudaError_t err = sm80_skinny(g, config, c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: skinny kernel launch failed (", skinny_config_name(config),
                "): ", cudaGetErrorString(err));
    return;
  }
  TORCH_CHECK(g.dtype != DType::kInt8 || fc.family == GemmFamily::kSm80,
              "gemm.mm: int8 inputs run on the tensor cores of sm_80+ GPUs only (", fc.reason, ")");
  if (fc.family == GemmFamily::kSm80) return run_sm80(g);
  if (fc.family == GemmFamily::kSm90 && g.batch > 0 && g.shape.m > 0 && g.shape.n > 0) {
    const HeuristicExtents e = heuristic_extents(g);
    // The 64x128 config: fp16 / bf16 dense, batched and grouped-M launches (MoE decode: few rows
    // per group, whose 64x256 tiles would leave most SMs idle; grouped launches have no split-K).
    // CUTORCH_GEMM_SM90_GROUPED_NARROW=off keeps grouped-M launches on 64x256 (A/B).
    const bool narrow = (g.dtype == DType::kFloat16 || g.dtype == DType::kBFloat16) &&
                        (!grouped || (g.shape.mode == GroupMode::kGroupedM &&
                                      env_lower("CUTORCH_GEMM_SM90_GROUPED_NARROW") != "off"));
    // One dense problem (fp16 / bf16, or tf32): whether the cooperative config would take stream-K
    // (the wave rule keeps it then; explain() mirrors this).
    const bool tf32 = g.dtype == DType::kFloat32;
    const bool dense = (tf32 || g.dtype == DType::kFloat16 || g.dtype == DType::kBFloat16) &&
                       g.shape.mode == GroupMode::kBatched && g.batch == 1;
    const char* forced_cluster = std::getenv("CUTORCH_GEMM_SM90_CLUSTER");
    const bool coop_sk = dense && sm90_coop_streamk(g.shape.m, g.shape.n, g.shape.k, d.sms,
                                                    sm90_operands_rows_128b(g.shape, tf32 ? 4 : 2),
                                                    forced_cluster ? forced_cluster : "",
                                                    env_lower("CUTORCH_GEMM_SM90_STREAMK"), tf32 ? 32 : 64);
    const std::string forced_config = env_lower("CUTORCH_GEMM_SM90_CONFIG");
    Sm90ConfigId config = choose_sm90_config(e.m, e.n, g.shape.k, e.problems, d.sms, forced_config, narrow, coop_sk);
    // Fit-width cooperative tiles (choose_sm90_fit) for plain launches (+ beta * C) whose D the direct epilogue stores
    // (not while a test forces another epilogue path), and for launches with an activation whose every tile
    // defers its store (sm90_fit_act_ok). explain() mirrors this.
    const std::string forced_epi = env_lower("CUTORCH_GEMM_SM90_EPILOGUE");
    // The other dense fp16 / bf16 launches take only its pair rule (rows that are not 128-byte multiples).
    if (dense && !tf32) {
      // (the 240-wide pairs: launches whose every tile defers its store)
      const bool defer_ok = sm90_defer_launch_ok(g, oa.mn_major, ob.mn_major,
                                                 !forced_epi.empty() || env_lower("CUTORCH_GEMM_SM90_DEFER") == "off");
      const bool rows_128b = sm90_operands_rows_128b(g.shape, 2);
      const bool fit_ok =
          (sm90_fit_launch_ok(g, oa.mn_major, ob.mn_major) && (forced_epi.empty() || forced_epi == "direct")) ||
          sm90_fit_act_ok(g, defer_ok, env_lower("CUTORCH_GEMM_SM90_FIT_DEFER") == "off", forced_config);
      config = choose_sm90_fit(config, int(g.shape.m), int(g.shape.n), int(g.shape.k), d.sms, forced_config,
                               rows_128b, fit_ok, defer_ok, coop_sk, ob.mn_major);
      // The big tiles (choose_sm90_big): launches with both operands K-major whose D the TMA stores, plain or bias +
      // an activation (defer_ok: no C, a 16-bit D); forced, on any rows (unaligned: 2x1 clusters) and also the fit
      // tiles' other launches with both operands K-major (C, an fp32 D, the direct store).
      const bool big_ok = defer_ok && rows_128b && forced_epi.empty();
      const bool big_forced_ok = defer_ok || (sm90_fit_launch_ok(g, oa.mn_major, ob.mn_major) && !oa.mn_major &&
                                            !ob.mn_major && (forced_epi.empty() || forced_epi == "direct"));
      config = choose_sm90_big(config, int(g.shape.m), int(g.shape.n), int(g.shape.k), d.sms, forced_config,
                               big_forced_ok, big_ok, env_lower("CUTORCH_GEMM_SM90_BIG") != "off");
      // (after the fit rules: only the 128x256 tiles they left move to ping-pong; opt-in, sm90_fit_rules.h says why)
      config = choose_sm90_act(config, g.shape.m, g.shape.n, int(g.shape.k), g.act != Activation::kNone, rows_128b,
                               !oa.mn_major && !ob.mn_major, forced_config,
                               env_lower("CUTORCH_GEMM_SM90_ACT_PINGPONG") == "on");
    }
    // Split-K for one dense problem whose tiles leave SMs idle (explain() mirrors this rule).
    const Sm90Split split = g.shape.mode == GroupMode::kBatched && g.batch == 1
                                ? choose_sm90_split(config, g.shape.m, g.shape.n, g.shape.k, d.sms, split_fill())
                                : Sm90Split{1, 0};
    at::Tensor ws;
    if (split.splits > 1) {
      ws = at::empty({int64_t(split.splits) * g.shape.m * g.shape.n},
                     at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
    }
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    GemmArgs gk = g;
    at::Tensor sk_ws;
    if (split.splits == 1) sk_ws = streamk_workspace(gk, config, d.sms, stream);
    const cudaError_t err =
        split.splits > 1 ? sm90_gemm_split(g, config, oa.mn_major, ob.mn_major, split, ws.data_ptr(), d.sms, stream)
                         : sm90_gemm(gk, config, oa.mn_major, ob.mn_major, d.sms, stream);
    if (err == cudaErrorNotSupported) {  // the driver refused the tensor maps
      return d.sm80 ? run_sm80(g) : run(g, grouped);
    }
    TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm90 kernel launch failed (", sm90_config_name(config, dtype_size(g.dtype)),
                "): ", cudaGetErrorString(err));
    return;
  }
  run(g, grouped);
}

GemmArgs base_args(const at::Tensor& a, const at::Tensor& b, at::ScalarType out_dtype, Activation act) {
  GemmArgs g{};
  g.dtype = to_dtype(a.scalar_type());
  g.out_f32 = out_dtype == at::kFloat && a.scalar_type() != at::kFloat;
  g.a = a.data_ptr();
  g.b = b.data_ptr();
  g.alpha = 1.0;
  g.beta = 0.0;
  g.act = act;
  g.shape.mode = GroupMode::kBatched;
  return g;
}

void set_2d(GemmArgs& g, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d) {
  g.shape.a_sm = stride_of(a, a.dim() - 2);
  g.shape.a_sk = stride_of(a, a.dim() - 1);
  g.shape.b_sk = stride_of(b, b.dim() - 2);
  g.shape.b_sn = stride_of(b, b.dim() - 1);
  // NOTE: a single row (M = 1, decode) or column (N = 1) has no real row stride; report a
  // 16-byte multiple >= K so TMA can read it (the SIMT kernels never step along it).
  const int64_t k = a.size(-1), k_padded = (k + 7) / 8 * 8;
  if (a.size(-2) == 1 && g.shape.a_sk == 1) g.shape.a_sm = k_padded;
  if (b.size(-1) == 1 && g.shape.b_sk == 1) g.shape.b_sn = k_padded;
  // NOTE: likewise a single k (K = 1) with an MN-contiguous operand: its K-row stride is never
  // stepped; report the padded MN extent so the operand reads as MN-major.
  const int64_t m = a.size(-2), n = b.size(-1);
  if (k == 1 && g.shape.a_sm == 1 && m > 1) g.shape.a_sk = (m + 7) / 8 * 8;
  if (k == 1 && g.shape.b_sn == 1 && n > 1) g.shape.b_sk = (n + 7) / 8 * 8;
  g.shape.d_sm = d.stride(d.dim() - 2);
  g.shape.d_sn = d.stride(d.dim() - 1);
}

}  // namespace cutorch_gemm::binding
