"""GPU check without the extension (fifty-fifth session): benchmarks/bench_timing._graph_of on callables that cannot
be captured leaves the current stream and the default CUDA generator usable. Mirrors
tests/test_bench_gemm.py::test_failed_capture_leaves_torch_usable; also shows the failure without the fix."""
import sys

import torch

sys.path.insert(0, ".")
import benchmarks.bench_timing as bt  # noqa: E402

a = torch.randn(64, 64, device="cuda")
stream = torch.cuda.current_stream()
torch.cuda.manual_seed(1234)
expected = torch.randn(8, device="cuda")


def syncs_when_captured():
    y = a @ a
    if torch.cuda.is_current_stream_capturing():
        torch.cuda.synchronize()
    return y


for name, fn in (("item", lambda: (a @ a).sum().item()), ("sync in capture", syncs_when_captured)):
    torch.cuda.manual_seed(1234)
    g = bt._graph_of(fn, 2)
    ok_stream = torch.cuda.current_stream() == stream
    torch.cuda.manual_seed(1234)
    try:
        same = torch.equal(torch.randn(8, device="cuda"), expected)
    except RuntimeError as exc:
        same = f"raised: {exc}"
    print(f"{name}: graph {g is not None}, stream restored {ok_stream}, randn after {same}")
