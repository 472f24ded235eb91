// CUDA implementations: tensors -> GemmArgs (pointers, extents, strides; no copies of a or b)
// -> heuristic plan -> kernel launch on the current stream under a device guard.
// NOTE: only c10/cuda headers (CUDA runtime API): ATen/cuda/CUDAContext.h pulls in cuBLAS and
// cuSPARSE headers, which a toolkit with just the compiler does not ship.
#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <mutex>
#include <string>

#include <cctype>
#include <cstdlib>

#include "../checks.h"
#include "../epilogue_cpu.h"
#include "cutorch_gemm/device/family.h"
#include "cutorch_gemm/device/simt_gemm.h"
#include "cutorch_gemm/device/sm80_gemm.h"
#include "cutorch_gemm/device/sm90_gemm.h"

namespace cutorch_gemm::binding {
namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();

void check_extents(const char* op, std::initializer_list<int64_t> extents) {
  for (int64_t e : extents) {
    TORCH_CHECK_VALUE(e <= kMaxExtent, op, ": extents above 2^31-1 are not supported, got ", e);
  }
}

// Size-1 dimensions have meaningless strides; reporting 1 lets such an operand take the
// contiguous (vectorized) variant.
int64_t stride_of(const at::Tensor& t, int64_t dim) { return t.size(dim) == 1 ? 1 : t.stride(dim); }

struct DeviceInfo {
  int major = 0, minor = 0, sms = 0;
  int smem_optin = 0;  // dynamic shared memory a block may opt in to
  bool sm90 = false;   // this build has sm_90a code this device runs
  bool sm80 = false;   // this build has sm_80-family code this device runs
};

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

SimtPlan plan_for(const GemmArgs& args, bool grouped) {
  const DeviceInfo& d = device_info();
  return choose_simt_plan(d.major, d.minor, args.dtype, args.shape.m, args.shape.n, args.shape.k,
                          args.batch, d.sms, grouped);
}

// Launches the SIMT family (CUTORCH_GEMM_ARCH=simt forces it).
void run(const GemmArgs& args, bool grouped) {
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

// NOTE: kernels written but not yet run by the GPU suite are opt-in (CUTORCH_GEMM_EXPERIMENTAL=1)
// until a GPU run has checked them; the default path for the same call is a verified one.
bool experimental() { return env_lower("CUTORCH_GEMM_EXPERIMENTAL") == "1"; }

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// How the sm90 kernels would read a and b (strides as set_2d reported them).
Sm90Operand sm90_a(const GemmArgs& g, const at::Tensor& a) {
  return sm90_operand(g.shape.a_sk, g.shape.a_sm, g.batch > 1 ? g.shape.a_sb : 0, aligned16(a), int(a.element_size()));
}
Sm90Operand sm90_b(const GemmArgs& g, const at::Tensor& b) {
  return sm90_operand(g.shape.b_sk, g.shape.b_sn, g.batch > 1 ? g.shape.b_sb : 0, aligned16(b), int(b.element_size()));
}

// The extents the heuristics see: one problem; for grouped launches the average group along the
// grouped dimension (the group sizes stay on the device).
struct HeuristicExtents {
  int m;
  int n;
};
HeuristicExtents heuristic_extents(const GemmArgs& g) {
  const int groups = g.batch > 0 ? g.batch : 1;
  return {g.shape.mode == GroupMode::kGroupedM ? ceil_div(g.shape.m, groups) : g.shape.m,
          g.shape.mode == GroupMode::kGroupedN ? ceil_div(g.shape.n, groups) : g.shape.n};
}

// Launches the sm80 family: plan (CUTORCH_GEMM_SM80_CONFIG / CUTORCH_GEMM_SPLIT_K override it),
// split-K workspace from PyTorch's caching allocator on the current stream, kernel.
void run_sm80(const GemmArgs& g) {
  if (g.batch == 0 || g.shape.m == 0 || g.shape.n == 0) return;
  const DeviceInfo& d = device_info();
  const bool grouped = g.shape.mode != GroupMode::kBatched;
  const HeuristicExtents e = heuristic_extents(g);  // the grid below covers the largest group
  const std::string forced_config = env_lower("CUTORCH_GEMM_SM80_CONFIG");
  const std::string forced_split = env_lower("CUTORCH_GEMM_SPLIT_K");
  bool ok = true;
  Sm80Plan plan = choose_sm80_plan(g.dtype, e.m, e.n, g.shape.k, g.batch, d.sms, d.smem_optin, grouped,
                                   forced_config, forced_split, &ok);
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
  const cudaError_t err = sm80_gemm(g, plan, need.partial_bytes ? ws.data_ptr() : nullptr,
                                    need.semaphores ? sem.data_ptr<int>() : nullptr,
                                    c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm80 kernel launch failed (", sm80_config_name(plan.config),
              ", split-K ", splitk_mode_name(plan.split_mode), " x", plan.splits, "): ", cudaGetErrorString(err));
}

// Runs any GEMM launch (dense, batched, grouped) on the family choose_family names.
void run_gemm(const GemmArgs& g, const at::Tensor& a, const at::Tensor& b) {
  const DeviceInfo& d = device_info();
  const Sm90Operand oa = sm90_a(g, a), ob = sm90_b(g, b);
  const FamilyChoice fc = choose_family(FamilyQuery{d.major, g.dtype, oa, ob, g.shape.mode, g.shape.k > 0, d.sm90,
                                                    d.sm80, at::globalContext().allowTF32CuBLAS(), forced_arch(),
                                                    experimental()});
  const bool grouped = g.shape.mode != GroupMode::kBatched;
  TORCH_CHECK(g.dtype != DType::kInt8 || fc.family == GemmFamily::kSm80,
              "gemm.mm: int8 inputs run on the tensor cores of sm_80+ GPUs only (", fc.reason, ")");
  if (fc.family == GemmFamily::kSm80) return run_sm80(g);
  if (fc.family == GemmFamily::kSm90 && g.batch > 0 && g.shape.m > 0 && g.shape.n > 0) {
    const HeuristicExtents e = heuristic_extents(g);
    const Sm90ConfigId config = choose_sm90_config(e.m, e.n, g.shape.k, g.batch, d.sms,
                                                   env_lower("CUTORCH_GEMM_SM90_CONFIG"));
    // Split-K for one dense problem whose tiles leave SMs idle (opt-in until the GPU suite has
    // run it; explain() mirrors this rule).
    const Sm90Split split = experimental() && g.shape.mode == GroupMode::kBatched && g.batch == 1
                                ? choose_sm90_split(config, g.shape.m, g.shape.n, g.shape.k, d.sms)
                                : Sm90Split{1, 0};
    at::Tensor ws;
    if (split.splits > 1) {
      ws = at::empty({int64_t(split.splits) * g.shape.m * g.shape.n},
                     at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
    }
    const cudaError_t err =
        split.splits > 1 ? sm90_gemm_split(g, config, oa.mn_major, ob.mn_major, split, ws.data_ptr(), d.sms,
                                           c10::cuda::getCurrentCUDAStream().stream())
                         : sm90_gemm(g, config, oa.mn_major, ob.mn_major, d.sms, c10::cuda::getCurrentCUDAStream().stream());
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

at::Tensor gemm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& c, double alpha, double beta,
                     c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_gemm("gemm.gemm", a, b, bias, c, std::string(activation), out_dtype);
  check_extents("gemm.gemm", {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.m, s.n}, a.options().dtype(s.out_dtype));
  GemmArgs g = base_args(a, b, s.out_dtype, s.act);
  g.batch = 1;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.d = d.data_ptr();
  g.alpha = alpha;
  g.beta = beta;
  at::Tensor bias_c;
  if (bias.has_value()) {
    bias_c = bias->contiguous();
    g.bias = bias_c.data_ptr();
  }
  if (c.has_value() && beta != 0.0) {  // BLAS convention: beta == 0 never reads C
    g.c = c->data_ptr();
    g.shape.c_sm = c->stride(0);
    g.shape.c_sn = c->stride(1);
  }
  run_gemm(g, a, b);
  return d;
}

at::Tensor mm_cuda(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_mm(a, b, out_dtype);
  if (a.scalar_type() != at::kChar) return gemm_cuda(a, b, std::nullopt, std::nullopt, 1.0, 0.0, "none", out_dtype);
  // int8 x int8 -> int32 (torch._int_mm): the sm80 family's IMMA kernels, no epilogue fusion.
  check_extents("gemm.mm", {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.m, s.n}, a.options().dtype(at::kInt));
  GemmArgs g = base_args(a, b, at::kInt, Activation::kNone);
  g.batch = 1;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.d = d.data_ptr();
  run_gemm(g, a, b);
  return d;
}

at::Tensor bmm_cuda(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  const DenseSpec s = check_bmm(a, b, out_dtype);
  check_extents("gemm.bmm", {s.m, s.n, s.k, s.batch});
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor d = at::empty({s.batch, s.m, s.n}, a.options().dtype(s.out_dtype));
  GemmArgs g = base_args(a, b, s.out_dtype, Activation::kNone);
  g.batch = int(s.batch);
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.shape.a_sb = a.stride(0);
  g.shape.b_sb = b.stride(0);
  g.shape.d_sb = d.stride(0);
  g.d = d.data_ptr();
  run_gemm(g, a, b);
  return d;
}

// One grouped launch: its GemmArgs (output d) and the contiguous offs / bias they point into.
struct GroupedLaunch {
  GemmArgs g;
  at::Tensor offs_c, bias_c;
};

GroupedLaunch grouped_launch(const GroupedSpec& s, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                             const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias) {
  GroupedLaunch l;
  GemmArgs& g = l.g;
  g = base_args(a, b, s.out_dtype, s.act);
  g.batch = int(s.groups);
  g.shape.mode = s.mode;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  set_2d(g, a, b, d);
  g.shape.a_sb = a.dim() == 3 ? a.stride(0) : 0;
  g.shape.b_sb = b.dim() == 3 ? b.stride(0) : 0;
  g.shape.d_sb = d.dim() == 3 ? d.stride(0) : 0;
  g.d = d.data_ptr();
  if (offs.has_value()) {
    l.offs_c = offs->contiguous();
    g.shape.offs = l.offs_c.data_ptr<int32_t>();
  }
  if (bias.has_value()) {
    l.bias_c = bias->contiguous();
    g.bias = l.bias_c.data_ptr();
    g.shape.bias_sb = l.bias_c.dim() == 2 ? l.bias_c.stride(0) : 0;
  }
  return l;
}

// grouped_mm's SwiGLU fused into the sm90 kernel's epilogue (opt-in until the GPU suite has run
// it): fp16/bf16, a K-major, the sm90 family's rules otherwise. False: not taken, nothing ran.
// explain() mirrors this rule.
bool sm90_swiglu_ran(const GroupedSpec& s, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                     const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias) {
  if (!experimental() || (a.scalar_type() != at::kHalf && a.scalar_type() != at::kBFloat16)) return false;
  if (s.groups == 0 || s.m == 0 || s.n == 0) return false;
  const GroupedLaunch l = grouped_launch(s, a, b, d, offs, bias);
  const DeviceInfo& dev = device_info();
  const Sm90Operand oa = sm90_a(l.g, a), ob = sm90_b(l.g, b);
  const FamilyChoice fc = choose_family(FamilyQuery{dev.major, l.g.dtype, oa, ob, s.mode, s.k > 0, dev.sm90, dev.sm80,
                                                    at::globalContext().allowTF32CuBLAS(), forced_arch(), true});
  if (fc.family != GemmFamily::kSm90 || oa.mn_major) return false;
  const HeuristicExtents e = heuristic_extents(l.g);
  const Sm90ConfigId config = choose_sm90_config(e.m, e.n, l.g.shape.k, l.g.batch, dev.sms,
                                                 env_lower("CUTORCH_GEMM_SM90_CONFIG"));
  const cudaError_t err = sm90_swiglu(l.g, config, ob.mn_major, dev.sms, c10::cuda::getCurrentCUDAStream().stream());
  if (err == cudaErrorNotSupported) return false;  // the driver refused the tensor maps
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm90 SwiGLU launch failed (", sm90_config_name(config), "): ",
              cudaGetErrorString(err));
  return true;
}

at::Tensor grouped_mm_cuda(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                           const std::optional<at::Tensor>& bias, c10::string_view activation,
                           std::optional<at::ScalarType> out_dtype) {
  const GroupedSpec s = check_grouped(a, b, offs, bias, std::string(activation), out_dtype);
  check_extents("gemm.grouped_mm", {s.m, s.n, s.k, s.groups});
  const c10::cuda::CUDAGuard guard(a.device());
  // Rows (columns) outside every group stay zero: the grouped-M/N outputs start zeroed.
  const bool zero_fill = s.mode == GroupMode::kGroupedM || s.mode == GroupMode::kGroupedN;
  const auto opts = a.options().dtype(s.out_dtype);
  at::Tensor d = zero_fill ? at::zeros(s.out_shape, opts) : at::empty(s.out_shape, opts);
  if (s.swiglu) {
    if (sm90_swiglu_ran(s, a, b, d, offs, bias)) return d;
    // Unfused: z = a @ b + bias in fp32 (fp64 for fp64), then silu(gate) * up and one rounding.
    // Rows past offs[-1] have z = 0, so they stay 0.
    const at::ScalarType acc = acc_dtype(a.scalar_type());
    return swiglu_halves(grouped_mm_cuda(a, b, offs, bias, "none", acc)).to(s.out_dtype).contiguous();
  }
  const GroupedLaunch l = grouped_launch(s, a, b, d, offs, bias);
  run_gemm(l.g, a, b);
  return d;
}

// grouped_gemm as one persistent pointer-array launch on sm90 (opt-in until the GPU suite has
// run it): fp16/bf16, every problem with K > 0 on the sm90 family's terms with a K-major a, and
// one b majorness for all. The host encodes every problem's tensor maps and tile counts into a
// pinned blob, copies it to the device on the stream, and one kernel walks the tiles of all
// problems. Nothing (no value) when the call does not qualify: the caller runs one launch per
// problem. explain() mirrors this rule.
std::optional<std::vector<at::Tensor>> grouped_gemm_sm90_ptr(const std::vector<at::Tensor>& a,
                                                            const std::vector<at::Tensor>& b,
                                                            const std::optional<std::vector<at::Tensor>>& bias,
                                                            Activation act, at::ScalarType out_t) {
  const at::ScalarType dt = a[0].scalar_type();
  if (!experimental() || a.size() < 2 || (dt != at::kHalf && dt != at::kBFloat16)) return std::nullopt;
  const c10::cuda::CUDAGuard guard(a[0].device());
  const DeviceInfo& dev = device_info();
  const int count = int(a.size());
  std::vector<GemmArgs> args(count);
  std::vector<at::Tensor> outs(count), biases(count);
  int b_mn = -1;
  double m_sum = 0, n_sum = 0;
  int k_max = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t m = a[i].size(0), n = b[i].size(1), k = a[i].size(1);
    check_extents("gemm.grouped_gemm", {m, n, k});
    outs[i] = at::empty({m, n}, a[i].options().dtype(out_t));
    GemmArgs& g = args[i];
    g = base_args(a[i], b[i], out_t, act);
    g.batch = 1;
    g.shape.m = int(m); g.shape.n = int(n); g.shape.k = int(k);
    set_2d(g, a[i], b[i], outs[i]);
    g.d = outs[i].data_ptr();
    if (bias.has_value()) {
      biases[i] = (*bias)[i].contiguous();
      g.bias = biases[i].data_ptr();
    }
    m_sum += double(m);
    n_sum += double(n);
    k_max = std::max(k_max, int(k));
    if (k == 0 || m == 0 || n == 0) continue;  // no loads: no tensor maps needed
    const Sm90Operand oa = sm90_a(g, a[i]), ob = sm90_b(g, b[i]);
    const FamilyChoice fc = choose_family(FamilyQuery{dev.major, g.dtype, oa, ob, GroupMode::kBatched, true, dev.sm90,
                                                      dev.sm80, false, forced_arch(), true});
    if (fc.family != GemmFamily::kSm90 || oa.mn_major) return std::nullopt;
    if (b_mn >= 0 && b_mn != int(ob.mn_major)) return std::nullopt;
    b_mn = int(ob.mn_major);
  }
  const Sm90ConfigId config = choose_sm90_config(int(m_sum / count + 0.5), int(n_sum / count + 0.5), k_max, count,
                                                 dev.sms, env_lower("CUTORCH_GEMM_SM90_CONFIG"));
  // CUTORCH_GEMM_GROUPED_SORT_K=1: problems in order of decreasing K (the longest tiles first, so
  // the persistent grid's last wave holds the short ones); each record keeps its own output.
  if (env_lower("CUTORCH_GEMM_GROUPED_SORT_K") == "1") {
    std::stable_sort(args.begin(), args.end(),
                     [](const GemmArgs& x, const GemmArgs& y) { return x.shape.k > y.shape.k; });
  }
  at::Tensor blob = at::empty({int64_t(sm90_ptr_blob_size(count))},
                              at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  int total_tiles = 0;
  cudaError_t err = sm90_ptr_fill(blob.data_ptr(), args.data(), count, config, b_mn > 0, &total_tiles);
  if (err == cudaErrorNotSupported) return std::nullopt;  // a tensor map was refused
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: grouped_gemm pointer-array fill failed: ", cudaGetErrorString(err));
  // NOTE: a non-blocking copy from PyTorch's pinned allocator: the block is not reused before
  // the copy has run, and the device copy lives on this stream like every other operand.
  const at::Tensor dev_blob = blob.to(a[0].device(), /*non_blocking=*/true);
  err = sm90_ptr_run(args[0], dev_blob.data_ptr(), count, total_tiles, config, b_mn > 0, dev.sms,
                     c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: grouped_gemm pointer-array launch failed (", sm90_config_name(config),
              "): ", cudaGetErrorString(err));
  return outs;
}

std::vector<at::Tensor> grouped_gemm_cuda(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                                          const std::optional<std::vector<at::Tensor>>& bias,
                                          c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  check_grouped_gemm_lists(a, b, bias, std::string(activation), out_dtype);
  if (!a.empty()) {
    const Activation act = check_activation("gemm.grouped_gemm", std::string(activation));
    const at::ScalarType out_t = check_out_dtype("gemm.grouped_gemm", a[0].scalar_type(), out_dtype);
    if (auto outs = grouped_gemm_sm90_ptr(a, b, bias, act, out_t)) return *outs;
  }
  // One launch per problem (the default until the pointer-array kernel has run on a GPU).
  return grouped_gemm_by_problem(a, b, bias, std::string(activation), out_dtype,
                                 [&](const at::Tensor& ai, const at::Tensor& bi, const std::optional<at::Tensor>& biasi) {
                                   return gemm_cuda(ai, bi, biasi, std::nullopt, 1.0, 0.0, activation, out_dtype);
                                 });
}

// scaled_mm on any GPU and layout: exact bf16 upcasts of the 8-bit operands (e4m3 and e5m2 values
// are all bf16 values), our fp32-output GEMM on whatever family that picks, then the scales and
// bias in fp32 and one rounding.
at::Tensor scaled_mm_upcast(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, const ScaledSpec& s) {
  at::Tensor acc = gemm_cuda(a.to(at::kBFloat16), b.to(at::kBFloat16), std::nullopt, std::nullopt, 1.0, 0.0, "none",
                             at::kFloat);
  const at::Tensor sa = s.scale_a_rows ? scale_a.reshape({s.m, 1}) : scale_a.reshape({});
  const at::Tensor sb = s.scale_b_cols ? scale_b.reshape({1, s.n}) : scale_b.reshape({});
  acc.mul_(sa * sb);
  if (bias.has_value()) acc.add_(bias->to(at::kFloat));
  return acc.to(s.out_dtype).contiguous();
}

// Why the sm90 fp8 kernels cannot take a scaled_mm call ("" when they can): the Python
// explain() mirrors this rule.
std::string scaled_mm_sm90_refusal(const at::Tensor& a, const at::Tensor& b, const ScaledSpec& s, int64_t a_sm,
                                   int64_t b_sn) {
  const DeviceInfo& d = device_info();
  const std::string forced = forced_arch();
  if (forced == "simt" || forced == "sm80") return "CUTORCH_GEMM_ARCH=" + forced;
  if (!d.sm90) return "no sm_90a kernels for this GPU";
  if (!experimental()) return "the sm90 8-bit kernels are opt-in until the GPU suite has run them "
                              "(CUTORCH_GEMM_EXPERIMENTAL=1)";
  if (s.m == 0 || s.n == 0 || s.k == 0) return "an empty extent";
  const Sm90Operand oa = sm90_operand(stride_of(a, 1), a_sm, 0, aligned16(a), 1);
  const Sm90Operand ob = sm90_operand(stride_of(b, 0), b_sn, 0, aligned16(b), 1);
  if (!oa.ok || oa.mn_major) return "a is not K-major (row-major) with 16-byte aligned rows";
  if (!ob.ok || ob.mn_major) return "b is not K-major (column-major) with 16-byte aligned columns";
  return "";
}

at::Tensor scaled_mm_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype) {
  const ScaledSpec s = check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype);
  check_extents("gemm.scaled_mm", {s.m, s.n, s.k});
  const c10::cuda::CUDAGuard guard(a.device());
  // A single row of a (column of b) has no real row stride: a 16-byte multiple >= K lets TMA read it.
  const int64_t k16 = (s.k + 15) / 16 * 16;
  const int64_t a_sm = s.m == 1 ? k16 : a.stride(0);
  const int64_t b_sn = s.n == 1 ? k16 : b.stride(1);
  if (!scaled_mm_sm90_refusal(a, b, s, a_sm, b_sn).empty()) return scaled_mm_upcast(a, b, scale_a, scale_b, bias, s);

  // sm90: TMA + 8-bit wgmma, scales and bias applied to the fp32 accumulators in the epilogue.
  const DeviceInfo& d = device_info();
  at::Tensor out = at::empty({s.m, s.n}, a.options().dtype(s.out_dtype));
  const at::Tensor sa = scale_a.contiguous(), sb = scale_b.contiguous();
  at::Tensor bias_f32;
  GemmArgs g{};
  g.dtype = s.out_dtype == at::kHalf ? DType::kFloat16 : DType::kBFloat16;  // D's 16-bit type
  g.out_f32 = s.out_dtype == at::kFloat;
  g.batch = 1;
  g.shape.mode = GroupMode::kBatched;
  g.shape.m = int(s.m); g.shape.n = int(s.n); g.shape.k = int(s.k);
  g.shape.a_sm = a_sm; g.shape.a_sk = 1;
  g.shape.b_sn = b_sn; g.shape.b_sk = 1;
  g.shape.d_sm = out.stride(0); g.shape.d_sn = 1;
  g.a = a.data_ptr();
  g.b = b.data_ptr();
  g.d = out.data_ptr();
  g.alpha = 1.0;
  g.act = Activation::kNone;
  if (bias.has_value()) {
    bias_f32 = bias->to(at::kFloat).contiguous();
    g.bias = bias_f32.data_ptr();
  }
  g.scale_a = sa.data_ptr<float>();
  g.scale_b = sb.data_ptr<float>();
  g.scale_a_rows = s.scale_a_rows;
  g.scale_b_cols = s.scale_b_cols;
  const Sm90ConfigId config = choose_sm90_config(int(s.m), int(s.n), int(s.k), 1, d.sms,
                                                 env_lower("CUTORCH_GEMM_SM90_CONFIG"));
  const cudaError_t err = sm90_scaled_mm(g, s.ka, s.kb, config, d.sms, c10::cuda::getCurrentCUDAStream().stream());
  if (err == cudaErrorNotSupported) return scaled_mm_upcast(a, b, scale_a, scale_b, bias, s);  // maps refused
  TORCH_CHECK(err == cudaSuccess, "cutorch_gemm: sm90 scaled_mm launch failed (", sm90_config_name(config, 1),
              "): ", cudaGetErrorString(err));
  return out;
}

}  // namespace
}  // namespace cutorch_gemm::binding

TORCH_LIBRARY_IMPL(gemm, CUDA, m) {
  using namespace cutorch_gemm::binding;
  m.impl("mm", &mm_cuda);
  m.impl("gemm", &gemm_cuda);
  m.impl("bmm", &bmm_cuda);
  m.impl("grouped_mm", &grouped_mm_cuda);
  m.impl("grouped_gemm", &grouped_gemm_cuda);
  m.impl("scaled_mm", &scaled_mm_cuda);
}
