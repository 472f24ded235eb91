// The probes' timing harness (mma_sync_peak.cu, mufu_rate.cu): the best of `reps` event-timed launches,
// after one warm-up launch. launch(r) enqueues the kernel for repetition r.
#pragma once
#include <cuda_runtime.h>

template <class Launch>
float best_of_ms(Launch launch, int reps = 5) {
  launch(-1);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0);
    launch(r);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}
