// grouped_gemm on CUDA: one persistent pointer-array launch on sm90 when the problems are small,
// else one launch per problem.
#include <algorithm>

#include <ATen/cuda/EmptyTensor.h>

#include "cuda_common.h"

namespace cutorch_gemm::binding {
namespace {

// grouped_gemm as one persistent pointer-array launch on sm90: fp16/bf16, problems that on
// average do not fill the GPU (sm90_ptr_array_pays), every problem with K > 0 on the sm90
// family's terms with a K-major a, and one b majorness for all. The host encodes every problem's tensor maps and tile counts into a
// pinned blob, copies it to the device on the stream, and one kernel walks the tiles of all
// problems. Nothing (no value) when the call does not qualify: the caller runs one launch per
// problem. explain() mirrors this rule.
std::optional<std::vector<at::Tensor>> grouped_gemm_sm90_ptr(const std::vector<at::Tensor>& a,
                                                            const std::vector<at::Tensor>& b,
                                                            const std::optional<std::vector<at::Tensor>>& bias,
                                                            Activation act, at::ScalarType out_t) {
  const at::ScalarType dt = a[0].scalar_type();
  if (a.size() < 2 || (dt != at::kHalf && dt != at::kBFloat16)) return std::nullopt;
  const c10::cuda::CUDAGuard guard(a[0].device());
  const DeviceInfo& dev = device_info();
  const int count = int(a.size());
  std::vector<int64_t> ms(count), ns(count);
  for (int i = 0; i < count; ++i) ms[i] = a[i].size(0), ns[i] = b[i].size(1);
  // CUTORCH_GEMM_GROUPED_PTR=on / off: take the pointer-array launch whenever it qualifies, or never
  // (the size rule's two sides, for A/B runs and the GPU tests); anything else: the size rule.
  const std::string ptr_knob = env_lower("CUTORCH_GEMM_GROUPED_PTR");
  if (ptr_knob == "off") return std::nullopt;
  if (ptr_knob != "on" && !sm90_ptr_array_pays(ms.data(), ns.data(), count, dev.sms)) return std::nullopt;
  std::vector<GemmArgs> args(count);
  std::vector<at::Tensor> outs(count), biases(count);
  int b_mn = -1;
  double m_sum = 0, n_sum = 0;
  int k_max = 0;
  // NOTE: the per-problem work below is host time on every call, and with 128 problems the host
  // took longer than the kernel (~0.3 ms). So the outputs come from at::detail::empty_cuda (the
  // CUDA allocation at::empty dispatches to, minus the dispatcher), and what does not depend on
  // the problem (the forced-arch knob) is read once. With the wrapper's below-autograd call: the
  // whole call 503 -> 330 us of host time for 128 problems (benchmarks/experiments/list_overhead.py
  // HOST_ONLY=1, both builds on one H200 machine, RESULTS.md).
  const std::string forced = forced_arch();
  const c10::Device device = a[0].device();
  for (int i = 0; i < count; ++i) {
    const int64_t m = a[i].size(0), n = b[i].size(1), k = a[i].size(1);
    check_extents("gemm.grouped_gemm", {m, n, k});
    outs[i] = at::detail::empty_cuda({m, n}, out_t, device, std::nullopt);
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
                                                      dev.sm80, false, forced});
    if (fc.family != GemmFamily::kSm90 || oa.mn_major) return std::nullopt;
    if (b_mn >= 0 && b_mn != int(ob.mn_major)) return std::nullopt;
    b_mn = int(ob.mn_major);
  }
  // The size rule of the dense launches over the problems' mean extents (the ping-pong 64x256 kernel for
  // small problems). NOTE: that kernel faulted once in ~20-400 repeated calls until the thirty-fourth session,
  // when its consumers' stage releases were put back in ring order (collective/sm90_pingpong_turns.cuh).
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

}  // namespace

std::vector<at::Tensor> grouped_gemm_cuda(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                                          const std::optional<std::vector<at::Tensor>>& bias,
                                          c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  check_grouped_gemm_lists(a, b, bias, std::string(activation), out_dtype);
  if (!a.empty()) {
    const Activation act = check_activation("gemm.grouped_gemm", std::string(activation));
    const at::ScalarType out_t = check_out_dtype("gemm.grouped_gemm", a[0].scalar_type(), out_dtype);
    if (auto outs = grouped_gemm_sm90_ptr(a, b, bias, act, out_t)) return *outs;
  }
  // One launch per problem (problems that fill the GPU, or calls the pointer-array kernel refuses).
  return grouped_gemm_by_problem(a, b, bias, std::string(activation), out_dtype,
                                 [&](const at::Tensor& ai, const at::Tensor& bi, const std::optional<at::Tensor>& biasi) {
                                   return gemm_cuda(ai, bi, biasi, std::nullopt, 1.0, 0.0, activation, out_dtype);
                                 });
}

}  // namespace cutorch_gemm::binding
