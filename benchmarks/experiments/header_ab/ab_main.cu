// The tree's Hopper kernels ("new") against another commit's headers ("old") in one process: both builds' launches of
// one config on one M x N x K bf16 problem, each captured in a CUDA graph of 50 launches (warm L2, no host time), timed
// alternately old / new / new / old over 10 rounds, medians; and whether the two D's differ anywhere. Why one process:
// two binaries run one after the other measured the second 1-10% slower on compute-bound shapes (forty-fifth session).
// Config: 0 the 64x128 ping-pong, 1 the 64x64 ping-pong, 2 the 128x256 cooperative, 3 the 128x240 cooperative,
// 4 the 64x256 ping-pong, 5 and 6 the fit-width 128x128 and 128x160 cooperative, 7 the 192x192 cooperative
// (launch_impl.inc); 10-13 scaled_mm's e4m3 launches (128x256 and 128x192 cooperative, 64x64 and 64x256 ping-pong:
// 8-bit operands, scales 1, plain epilogue only); AB_NEW_CFG gives the new side another config than the line's.
// Prints how many D elements differ and the largest distance in units in the last place.
//   bash benchmarks/experiments/header_ab/run.sh [commit, default HEAD~1] < shapes   (lines "M N K config")
// AB_OLD_ENV / AB_NEW_ENV ("VAR=value[+VAR=value...]"): launch-time variables set while that side's graph is captured
// (the launch reads them then), so one build also compares two settings of the same headers.
// AB_OLD_EPI / AB_NEW_EPI: that side's epilogue, "plain" (D = A B, the default: the bare kernels), "scaled"
// (D = A B / 2: the epilogue kernels, no bias), "bias" (+ bias[n]) or "bias+<activation>" (relu, gelu, gelu_tanh,
// silu): one build also times what an epilogue costs over plain.
// AB_ALONE_MS=<ms> (e.g. 800): also times each side alone, as the board's power cap charges it: after 300 ms idle, its
// graph replayed back to back for that long, the median over the window's second half; old, new, new, old, means.
// The alternating rounds above run both sides at the clock of their mix, so a kernel that draws more power is not
// charged for it there (fiftieth session: the 64x256 ping-pong tiles won alternating A/Bs and lost run alone).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "cutorch_gemm/device/gemm_args.h"
#include "../graph_timing.cuh"
extern "C" int launch_old(const void*, int, cudaStream_t);
extern "C" int launch_new(const void*, int, cudaStream_t);
int main(int argc, char** argv) {
  using namespace cutorch_gemm;
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]), cfg = std::atoi(argv[4]);
  const bool fp8 = cfg >= 10;  // (operands of one byte)
  __nv_bfloat16 *a, *b, *d1, *d2;
  EXP_CHECK(cudaMalloc(&a, size_t(M) * K * 2)); EXP_CHECK(cudaMalloc(&b, size_t(N) * K * 2));
  EXP_CHECK(cudaMalloc(&d1, size_t(M) * N * 2)); EXP_CHECK(cudaMalloc(&d2, size_t(M) * N * 2));
  if (fp8) {
    exp_fill_e4m3<<<256, 256>>>(reinterpret_cast<uint8_t*>(a), size_t(M) * K, 1u);
    exp_fill_e4m3<<<256, 256>>>(reinterpret_cast<uint8_t*>(b), size_t(N) * K, 2u);
  } else {
    exp_fill_bf16<<<256, 256>>>(a, size_t(M) * K, 1u); exp_fill_bf16<<<256, 256>>>(b, size_t(N) * K, 2u);
  }
  GemmArgs g{};
  g.dtype = DType::kBFloat16; g.batch = 1; g.a = a; g.b = b; g.alpha = 1.0;
  g.shape.mode = GroupMode::kBatched; g.shape.m = M; g.shape.n = N; g.shape.k = K;
  g.shape.a_sm = K; g.shape.a_sk = 1; g.shape.b_sk = 1; g.shape.b_sn = K; g.shape.d_sm = N; g.shape.d_sn = 1;
  if (fp8) {  // D = 1 * 1 * acc (per-tensor scales)
    float* ones;
    EXP_CHECK(cudaMalloc(&ones, 2 * sizeof(float)));
    const float host_ones[2] = {1.0f, 1.0f};
    EXP_CHECK(cudaMemcpy(ones, host_ones, sizeof(host_ones), cudaMemcpyHostToDevice));
    g.scale_a = ones; g.scale_b = ones + 1; g.scale_a_rows = false; g.scale_b_cols = false;
  }
  GemmArgs g2 = g; g.d = d1; g2.d = d2;
  __nv_bfloat16* bias = nullptr;
  auto epilogue = [&](const char* var, GemmArgs& side) {
    const std::string e = std::getenv(var) ? std::getenv(var) : "plain";
    if (e == "plain") return;
    if (fp8) {
      std::printf("%s=%s: the 8-bit configs (10-13) take the plain epilogue only\n", var, e.c_str());
      std::exit(2);
    }
    if (e == "scaled") { side.alpha = 0.5; return; }  // (exact: a power of two)
    if (e.rfind("bias", 0) != 0) {
      std::printf("%s=%s: expected plain, scaled, bias or bias+<activation>\n", var, e.c_str());
      std::exit(2);
    }
    if (!bias) {
      EXP_CHECK(cudaMalloc(&bias, size_t(N) * 2));
      exp_fill_bf16<<<64, 256>>>(bias, size_t(N), 3u);
    }
    side.bias = bias;
    const std::string act = e.size() > 5 ? e.substr(5) : "none";  // ("bias+" then the activation's name)
    bool found = false;
    for (int a = 0; a <= int(Activation::kSilu); ++a) {
      if (act == activation_name(Activation(a))) side.act = Activation(a), found = true;
    }
    if (!found) {
      std::printf("%s=%s: unknown activation %s\n", var, e.c_str(), act.c_str());
      std::exit(2);
    }
  };
  epilogue("AB_OLD_EPI", g);
  epilogue("AB_NEW_EPI", g2);
  const int cfg_new = std::getenv("AB_NEW_CFG") ? std::atoi(std::getenv("AB_NEW_CFG")) : cfg;
  cudaStream_t s; EXP_CHECK(cudaStreamCreate(&s));
  auto launcher = [&](bool old) {
    return [&, old] { EXP_CHECK(old ? launch_old(&g, cfg, s) : launch_new(&g2, cfg_new, s)); };
  };
  auto captured_with = [&](const char* spec_var, bool old) {
    const char* spec = std::getenv(spec_var);
    std::vector<std::pair<std::string, const char*>> saved;  // (name, the value it had, or nullptr)
    for (std::string rest = spec ? spec : ""; !rest.empty();) {
      const size_t plus = rest.find('+');
      const std::string kv = rest.substr(0, plus);
      rest = plus == std::string::npos ? "" : rest.substr(plus + 1);
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = kv.substr(0, eq);
      const char* had = std::getenv(name.c_str());
      saved.emplace_back(name, had ? strdup(had) : nullptr);
      setenv(name.c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    const cudaGraphExec_t ge = exp_capture(launcher(old), s, 50);
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {  // (restored, so the other side sees the outer value)
      if (it->second) setenv(it->first.c_str(), it->second, 1);
      else unsetenv(it->first.c_str());
    }
    return ge;
  };
  const cudaGraphExec_t go = captured_with("AB_OLD_ENV", true), gn = captured_with("AB_NEW_ENV", false);
  auto once = [&](cudaGraphExec_t ge) { return exp_replay_us(ge, s, 50); };
  for (int i = 0; i < 3; ++i) { once(go); once(gn); }
  std::vector<double> to, tn;
  for (int r = 0; r < 10; ++r) {
    if (r % 2 == 0) { to.push_back(once(go)); tn.push_back(once(gn)); }
    else { tn.push_back(once(gn)); to.push_back(once(go)); }
  }
  const double alone_ms = std::getenv("AB_ALONE_MS") ? std::atof(std::getenv("AB_ALONE_MS")) : 0.0;
  double alone_old = 0, alone_new = 0;
  if (alone_ms > 0) {
    auto alone = [&](cudaGraphExec_t ge) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::vector<double> t;
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < alone_ms) {
        t.push_back(once(ge));
      }
      return exp_median(std::vector<double>(t.begin() + t.size() / 2, t.end()));
    };
    alone_old = alone(go);
    alone_new = alone(gn);
    alone_new = (alone_new + alone(gn)) / 2;
    alone_old = (alone_old + alone(go)) / 2;
  }
  std::vector<__nv_bfloat16> h1(size_t(M) * N), h2(size_t(M) * N);
  EXP_CHECK(cudaMemcpy(h1.data(), d1, h1.size() * 2, cudaMemcpyDeviceToHost));
  EXP_CHECK(cudaMemcpy(h2.data(), d2, h2.size() * 2, cudaMemcpyDeviceToHost));
  size_t diff = 0;
  int max_ulp = 0;  // (bf16 bit patterns as a signed-magnitude order: adjacent values differ by one)
  auto ordered = [](__nv_bfloat16 v) {
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return b & 0x8000u ? -int(b & 0x7FFFu) : int(b);
  };
  for (size_t i = 0; i < h1.size(); ++i) {
    diff += __bfloat162float(h1[i]) != __bfloat162float(h2[i]);
    max_ulp = std::max(max_ulp, std::abs(ordered(h1[i]) - ordered(h2[i])));
  }
  if (cfg_new != cfg) std::printf("(new side: cfg%d) ", cfg_new);
  std::printf("%dx%dx%d cfg%d: old %.2f us, new %.2f us, new/old %.3f, differing outputs %zu (at most %d ulp)\n", M, N,
              K, cfg, exp_median(to), exp_median(tn), exp_median(tn) / exp_median(to), diff, max_ulp);
  if (alone_ms > 0) {
    std::printf("   alone (%g ms each): old %.2f us, new %.2f us, new/old %.3f\n", alone_ms, alone_old, alone_new,
                alone_new / alone_old);
  }
  return 0;
}
