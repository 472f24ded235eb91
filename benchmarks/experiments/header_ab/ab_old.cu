// The other commit's headers (run.sh extracts them), renamed so that both builds link into one binary.
#define cutorch_gemm cutorch_gemm_old
#define AB_FN launch_old
#include "launch_impl.inc"
