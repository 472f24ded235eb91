// Where one Hopper launch's time goes, per CTA (forty-fifth session, benchmarks/RESULTS.md): the 64x128 ping-pong,
// 64x64 ping-pong or 128x256 cooperative config on an M x N x K bf16 problem (A row-major, B = W^T with W (N, K)
// row-major, as nn.Linear), timed against cuBLAS in CUDA graphs of 50 launches (warm L2, no host time between them),
// and with CG_TIMELINE (benchmarks/experiments/sm90_timeline.patch applied) the clock64 stamps of one launch, min /
// median / max over the CTAs. FLUSH=1: a 256 MB memset before each stamped launch (do_bench's L2 flush).
// CHAIN=n: the stamped launch is the last of n + 1 of ours back to back (no cuBLAS call, memset or flush between them),
// so that with CUTORCH_GEMM_SM90_PDL=on it overlaps the launch before (programmatic dependent launch); then also the
// per-CTA mainloop time (first full wait to mainloop done) split by whether the CTA shared its TPC (SM id / 2) with
// another of the launch's CTAs, and PERCTA=1 prints every CTA of the last trial.
//   build and run: the patch's header; arguments M N K [config 0|1|2]. The stamps assume one tile per CTA.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cutorch_gemm/device/sm90_launch.cuh"
#include "graph_timing.cuh"

using namespace cutorch_gemm;

int main(int argc, char** argv) {
  const int M = argc > 1 ? std::atoi(argv[1]) : 1024, N = argc > 2 ? std::atoi(argv[2]) : 1024,
            K = argc > 3 ? std::atoi(argv[3]) : 1024;
  __nv_bfloat16 *a, *b, *d, *d2;
  EXP_CHECK(cudaMalloc(&a, size_t(M) * K * 2));
  EXP_CHECK(cudaMalloc(&b, size_t(N) * K * 2));
  EXP_CHECK(cudaMalloc(&d, size_t(M) * N * 2));
  EXP_CHECK(cudaMalloc(&d2, size_t(M) * N * 2));
  exp_fill_bf16<<<256, 256>>>(a, size_t(M) * K, 1u);
  exp_fill_bf16<<<256, 256>>>(b, size_t(N) * K, 2u);
  GemmArgs g{};
  g.dtype = DType::kBFloat16;
  g.batch = 1;
  g.a = a;
  g.b = b;
  g.d = d;
  g.alpha = 1.0;
  g.shape.mode = GroupMode::kBatched;
  g.shape.m = M; g.shape.n = N; g.shape.k = K;
  g.shape.a_sm = K; g.shape.a_sk = 1;
  g.shape.b_sk = 1; g.shape.b_sn = K;  // b = W^T, W (N, K) row-major
  g.shape.d_sm = N; g.shape.d_sn = 1;
  cudaStream_t s;
  EXP_CHECK(cudaStreamCreate(&s));
  const int cfg = argc > 4 ? std::atoi(argv[4]) : 0;  // 0: 64x128 ping-pong, 1: 64x64 ping-pong, 2: 128x256 coop
  auto ours = [&] {
    if (cfg == 0) EXP_CHECK((launch_sm90_layouts<Sm90_64x128x64_Pingpong_S8, __nv_bfloat16>(g, false, false, 132, s)));
    else if (cfg == 1) EXP_CHECK((launch_sm90_layouts<Sm90_64x64x64_Pingpong_S12, __nv_bfloat16>(g, false, false, 132, s)));
    else EXP_CHECK((launch_sm90_layouts<Sm90_128x256x64_Coop_S4, __nv_bfloat16>(g, false, false, 132, s)));
  };
  cublasHandle_t h;
  EXP_CHECK(cublasCreate(&h));
  EXP_CHECK(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  // column-major view: D^T (N x M) = W (N x K, col-major ld K: W^T stored...) -> D^T = op(B) * op(A)
  auto theirs = [&] {
    EXP_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, b, CUDA_R_16BF, K, a, CUDA_R_16BF, K, &zero, d2,
                    CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  // per-launch time from a CUDA graph of 50 launches (no host overhead between them), median of 20 replays
  auto graph_time = [&](auto fn) {
    const cudaGraphExec_t ge = exp_capture(fn, s, 50);
    exp_replay_us(ge, s, 50);
    std::vector<double> t;
    for (int r = 0; r < 20; ++r) t.push_back(exp_replay_us(ge, s, 50));
    return exp_median(t);
  };
  for (int round = 0; round < 3; ++round) {
    std::printf("round %d: per launch in a graph: ours %.2f us, cuBLAS %.2f us (warm L2)\n", round, graph_time(ours),
                graph_time(theirs));
  }
  // check
  EXP_CHECK(cudaStreamSynchronize(s));
  std::vector<__nv_bfloat16> h1(size_t(M) * N), h2(size_t(M) * N);
  EXP_CHECK(cudaMemcpy(h1.data(), d, h1.size() * 2, cudaMemcpyDeviceToHost));
  EXP_CHECK(cudaMemcpy(h2.data(), d2, h2.size() * 2, cudaMemcpyDeviceToHost));
  double maxdiff = 0;
  for (size_t i = 0; i < h1.size(); ++i)
    maxdiff = std::max(maxdiff, double(std::abs(__bfloat162float(h1[i]) - __bfloat162float(h2[i]))));
  std::printf("max |ours - cuBLAS| = %.4g\n", maxdiff);

#ifndef CG_TIMELINE
  return 0;
}
#else
  // timeline of one launch, after a warm-up one and a cuBLAS call (as in a loop of the two)
  const int slots = kTlSlots;
  std::vector<unsigned long long> tl(1024 * slots);
  void* sym;
  EXP_CHECK(cudaGetSymbolAddress(&sym, g_cg_tl));
  std::vector<std::vector<double>> agg(160);
  std::vector<double> entry_ns, exit_ns, clk_rate;
  const int kbs = (K + 63) / 64;
  const int ctas = 1024;  // (the stamp array's CTAs; those a launch does not have stay zero and are skipped)
  void* flushbuf = nullptr;
  const bool flush = std::getenv("FLUSH") != nullptr;
  const int chain = std::getenv("CHAIN") ? std::atoi(std::getenv("CHAIN")) : 0;
  const bool per_cta = std::getenv("PERCTA") != nullptr;
  std::vector<double> loop_single, loop_shared, wait_single, wait_shared;
  if (flush) EXP_CHECK(cudaMalloc(&flushbuf, size_t(256) << 20));
  for (int trial = 0; trial < 5; ++trial) {
    theirs();
    if (flush) EXP_CHECK(cudaMemsetAsync(flushbuf, trial, size_t(256) << 20, s));
    EXP_CHECK(cudaMemsetAsync(sym, 0, tl.size() * 8, s));
    for (int c = 0; c < chain; ++c) ours();  // (each overwrites the stamps; the last launch's stay)
    ours();
    EXP_CHECK(cudaStreamSynchronize(s));
    EXP_CHECK(cudaMemcpyFromSymbol(tl.data(), g_cg_tl, tl.size() * 8));
    unsigned long long g0 = ~0ull;
    for (int c = 0; c < ctas; ++c)
      if (tl[c * slots + 1]) g0 = std::min(g0, tl[c * slots + 1]);
    std::vector<int> per_tpc(1024, 0);
    for (int c = 0; c < ctas; ++c)
      if (tl[c * slots + 7]) ++per_tpc[tl[c * slots + 9] / 2];
    if (per_cta && trial == 4)
      std::printf("\nCTA  SM  TPC-shared  entry-ns  exit-ns  entry->barrier-cyc  mainloop-cyc  first-wait->done-ns\n");
    for (int c = 0; c < ctas; ++c) {
      const unsigned long long* t = &tl[c * slots];
      if (!t[0] || !t[7]) continue;
      entry_ns.push_back(double(t[1] - g0));
      exit_ns.push_back(double(t[8] - g0));
      clk_rate.push_back(double(t[7] - t[0]) / double(t[8] - t[1]));  // cycles per ns
      const bool shared_tpc = per_tpc[t[9] / 2] > 1;
      const double loop = double(t[5] - t[131]), setup = double(t[3] - t[0]);
      (shared_tpc ? loop_shared : loop_single).push_back(loop);
      (shared_tpc ? wait_shared : wait_single).push_back(setup);
      if (per_cta && trial == 4)
        std::printf("%3d %3llu %5d %12.0f %8.0f %12.0f %14.0f %12.0f\n", c, t[9], int(shared_tpc), double(t[1] - g0),
                    double(t[8] - g0), setup, loop, loop * double(t[8] - t[1]) / double(t[7] - t[0]));
      for (int i : {2, 3, 4, 5, 6, 7, 130, 131, 132, 133}) agg[i].push_back(double(t[i] - t[0]));
      for (int kb = 0; kb < std::min(kbs, 32); ++kb) {
        agg[10 + kb].push_back(double(t[10 + kb] - t[0]));
        agg[42 + kb].push_back(double(t[42 + kb] - t[0]));
        if (kb < 16) {
          agg[80 + kb].push_back(double(t[80 + kb] - t[0]));
          agg[96 + kb].push_back(double(t[96 + kb] - t[0]));
          agg[112 + kb].push_back(double(t[112 + kb] - t[0]));
        }
      }
    }
  }
  const double ghz = exp_median(clk_rate);
  std::printf("\nSM clock ~%.2f GHz (clock64 over globaltimer per CTA). CTA entry after the first CTA: median %.0f ns, "
              "max %.0f ns; CTA exit: median %.0f ns, max %.0f ns\n",
              ghz, exp_median(entry_ns), *std::max_element(entry_ns.begin(), entry_ns.end()), exp_median(exit_ns),
              *std::max_element(exit_ns.begin(), exit_ns.end()));
  auto med = [](std::vector<double> v) { return v.empty() ? 0.0 : exp_median(v); };
  std::printf("mainloop (first full wait -> done), cycles, median: CTAs alone on their TPC %.0f (%zu), sharing it %.0f "
              "(%zu); entry -> CTA barrier (setup and the wait for the launch before): %.0f / %.0f\n",
              med(loop_single), loop_single.size(), med(loop_shared), loop_shared.size(), med(wait_single),
              med(wait_shared));
  auto row = [&](const char* name, int i) {
    auto v = agg[i];
    std::sort(v.begin(), v.end());
    std::printf("%-34s %8.0f %8.0f %8.0f   (ns at %.2f GHz: %.0f)\n", name, v.front(), v[v.size() / 2], v.back(), ghz,
                v[v.size() / 2] / ghz);
  };
  std::printf("\ncycles from the CTA's entry (min / median / max over CTAs):\n");
  row("thread 0: early loads issued", 2);
  row("thread 0: after the CTA barrier", 3);
  row("consumer 0: after setmaxnreg", 4);
  row("consumer 0: first tile looked up", 130);
  row("consumer 0: at its first full wait", 131);
  row("producer warp 2: after setmaxnreg", 132);
  row("producer warp 2: first tile looked up", 133);
  for (int kb = 0; kb < std::min(kbs, 32); ++kb) {
    char n1[64], n2[64];
    std::snprintf(n1, 64, "producer: k-block %d issued", kb);
    std::snprintf(n2, 64, "consumer: k-block %d full", kb);
    if (kb < 16) {
      char n3[64], n4[64], n5[64];
      std::snprintf(n3, 64, "producer: k-block %d load_stage in", kb);
      std::snprintf(n4, 64, "producer: k-block %d stage free", kb);
      std::snprintf(n5, 64, "producer: k-block %d A issued", kb);
      row(n3, 80 + kb);
      row(n4, 96 + kb);
      row(n5, 112 + kb);
    }
    row(n1, 42 + kb);
    row(n2, 10 + kb);
  }
  row("consumer: mainloop done", 5);
  row("consumer: epilogue issued", 6);
  row("consumer: exit (store reads done)", 7);
  return 0;
}
#endif
