// cp.async with an L2 cache policy: the form nvcc 13.0 miscompiles for sm_90a (twenty-eighth session).
//
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o cp_async_hint_fault cp_async_hint_fault.cu && ./cp_async_hint_fault
//   cuobjdump -sass cp_async_hint_fault | grep LDGSTS
//
// "hint": the shared destination is a uniform base plus the thread's offset; ptxas addresses it as
// [R + UR0] and puts the policy's descriptor in UR1 (desc[UR1]), and on an H100 the kernel faults with
// cudaErrorIllegalInstruction. "plain": the same copy without the policy runs. In the sm80 mainloop
// (csrc/include/cutorch_gemm/arch/sm80_cp_async.cuh) the hinted copies compile to [R + imm], desc[UR34]
// and run; their GPU tests would fault if a change brought the first form back.
#include <cstdint>
#include <cstdio>

template <bool kHint>
__global__ void copy_with_hint(const int4* src, int4* out) {
  __shared__ int4 buf[256];
  const uint32_t dst = uint32_t(__cvta_generic_to_shared(buf)) + 16u * threadIdx.x;
  if (kHint) {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src + threadIdx.x),
                 "l"(policy));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src + threadIdx.x));
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x ^ 1];
}

int main() {
  int4 *src, *out;
  cudaMalloc(&src, 4096);
  cudaMalloc(&out, 4096);
  cudaMemset(src, 1, 4096);
  for (int v = 0; v < 2; ++v) {  // the working form first: the fault ends the context
    cudaMemset(out, 0, 4096);
    if (v) copy_with_hint<true><<<1, 256>>>(src, out);
    else copy_with_hint<false><<<1, 256>>>(src, out);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    int4 h{};
    if (e == cudaSuccess) cudaMemcpy(&h, out, sizeof(h), cudaMemcpyDeviceToHost);
    printf("%-9s %s, first word %08x (expected 01010101)\n", v ? "hint" : "plain", cudaGetErrorString(e), h.x);
  }
  return 0;
}
