"""What the GEMM benchmark runs (benchmarks/bench_gemm.py): the suites of shapes, their defaults,
dtype names and the agreement bounds against PyTorch. Data only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional



@dataclass(frozen=True)
class Suite:
    """One panel of the plot: a list of (M, N, K) and how to run them."""
    shapes: tuple          # ((M, N, K, in_quick), ...)
    kind: str = "mm"       # "mm": ours mm vs torch.mm; "epilogue": bias + GELU; "scaled": fp8 scaled_mm;
    #                        "grouped": grouped_mm 2D x 3D (M = tokens) vs torch._grouped_mm
    dtype: Optional[str] = None  # fixed dtype (fp32 suites); None: the requested dtypes
    tf32: bool = False     # torch.backends.cuda.matmul.allow_tf32 while this suite runs
    rowwise: bool = False  # scaled: per-row / per-column scales (else one per tensor)
    experts: int = 0       # grouped: experts (groups); tokens routed with a fixed skew
    decode: bool = False   # grouped: M rows spread one per expert over M of them (MoE decode)
    layout: str = "nt"     # mm: "nt" nn.Linear's forward (x row-major, W.t()); "nn" b MN-major (the dX = dY W
    #                        form: a row-major (K, N) b); "tn" both operands MN-major (the dW = dY^T X form)


# The mid suites' shapes (M, N, K, in_quick).
MID_SHAPES = (
    (1536, 1536, 4096, True),
    (768, 3072, 4096, False),
    (1024, 2560, 4096, False),
    (2048, 1280, 4096, False),
    (1024, 1536, 8960, True),
    (512, 2560, 2560, False),
    (1536, 1536, 1536, False),
    (512, 1024, 4096, True),
    (1024, 1024, 4096, False),
    (3072, 3072, 4096, False),    # three rounds of fit tiles (thirty-eighth session)
    (1792, 5632, 4096, False),
    (4608, 1536, 4096, False),
)

# Token counts of 350-1600 against nn.Linear weights of 4096-8192 outputs and 4096-14336 inputs (M, N, K, in_quick):
# where the one- and two-round fit rules act (benchmarks/RESULTS.md, seventy-fifth session), and three where nothing
# does yet (784x4096x7168, 1040x4096x14336, 1424x4096x8192: the 128x256 tiles or 64x256 ping-pong ones).
TOKEN_SHAPES = (
    (544, 4096, 7168, True),
    (656, 4096, 7168, False),
    (784, 4096, 7168, False),
    (1184, 4096, 7168, False),
    (352, 4096, 14336, False),
    (1040, 4096, 14336, False),
    (1296, 4096, 14336, True),
    (544, 4096, 4096, False),
    (832, 3072, 4096, False),
    (1424, 4096, 8192, False),
    (576, 8192, 8192, False),
    (928, 5120, 8192, False),
)

# The big suites' shapes (M, N, K, in_quick): 320-wide, then 192x192.
BIG_SHAPES = (
    (2560, 4096, 4096, True),
    (4096, 3584, 4096, False),
    (3328, 3072, 4096, False),
    (3328, 1536, 4096, False),
    (3072, 3072, 4096, True),
    (6144, 3072, 4096, False),
    (2304, 6144, 4096, False),
    (3072, 1536, 4096, False),
)


SUITES = {
    "dense": Suite(shapes=(
        (4096, 4096, 4096, True),
        (8192, 8192, 8192, False),
        (8192, 4096, 4096, False),
        (8192, 14336, 4096, True),
        (8192, 4096, 14336, False),
        (16384, 8192, 8192, False),
        (4096, 28672, 8192, False),
        (2048, 2048, 2048, False),
        (1024, 1024, 1024, False),
        (3000, 5000, 1000, True),      # no tile divides it
    )),
    "small_m": Suite(shapes=(
        (16, 4096, 4096, True),
        (32, 14336, 4096, False),
        (64, 4096, 14336, False),
        (128, 8192, 8192, True),
        (1, 8192, 8192, False),
    )),
    "fp32": Suite(dtype="float32", tf32=False, shapes=(
        (4096, 4096, 4096, False),
        (2048, 8192, 1024, True),
    )),
    "tf32": Suite(dtype="float32", tf32=True, shapes=(
        (4096, 4096, 4096, True),
        (8192, 8192, 8192, False),
    )),
    # ours scaled_mm vs torch._scaled_mm: e4m3 x e4m3 -> bf16, a row-major, b = w.t()
    "fp8": Suite(kind="scaled", dtype="float8_e4m3fn", shapes=(
        (4096, 4096, 4096, True),
        (8192, 8192, 8192, False),
        (8192, 14336, 4096, True),
        (16384, 8192, 8192, False),
        (3072, 5120, 1024, False),
        (64, 8192, 8192, False),
    )),
    "fp8_rowwise": Suite(kind="scaled", dtype="float8_e4m3fn", rowwise=True, shapes=(
        (4096, 4096, 4096, False),
        (8192, 14336, 4096, True),
        (16384, 8192, 8192, False),
    )),
    # MoE expert GEMMs (ANCHORS.md): tokens x hidden -> intermediate (up) and back (down)
    "moe128": Suite(kind="grouped", experts=128, shapes=(
        (32768, 1536, 2048, True),    # Qwen3-30B-A3B up (gate | up)
        (32768, 2048, 768, False),    # Qwen3-30B-A3B down
    )),
    "moe8": Suite(kind="grouped", experts=8, shapes=(
        (16384, 14336, 4096, True),   # Mixtral up
        (16384, 4096, 14336, False),  # Mixtral down
    )),
    # MoE decode (not in the default run): a few routed rows, most experts empty
    "moe_decode": Suite(kind="grouped", experts=128, decode=True, shapes=(
        (8, 1536, 2048, True),        # Qwen3-30B-A3B up, one token (top-8)
        (8, 2048, 768, False),        # Qwen3-30B-A3B down, one token
        (64, 1536, 2048, False),      # eight tokens
    )),
    "moe_decode8": Suite(kind="grouped", experts=8, decode=True, shapes=(
        (2, 14336, 4096, True),       # Mixtral up, one token (top-2)
        (2, 4096, 14336, False),      # Mixtral down, one token
        (16, 4096, 14336, False),     # eight tokens
    )),
    # Mid-size dense problems (not in the default run; not ANCHORS.md's): partial rounds of the 128x256 tiles,
    # where the fit-width and narrow tiles and the mid-size rules act (benchmarks/RESULTS.md, thirty-first session;
    # the last three: thirty-eighth)
    "mid": Suite(shapes=MID_SHAPES),
    # Six of them with bias + GELU-tanh (not in the default run): since the thirty-ninth session these launches take
    # the fit widths too (their every tile defers its store).
    "mid_epilogue": Suite(kind="epilogue", shapes=tuple(MID_SHAPES[i] for i in (0, 2, 3, 5, 6, 9))),
    # The same shapes in the training backward's layouts (not in the default run): since the forty-first session
    # they take the fit widths from 160 up too.
    "mid_dx": Suite(layout="nn", shapes=MID_SHAPES),
    "mid_dw": Suite(layout="tn", shapes=MID_SHAPES),
    # nn.Linear-like mid-size token counts (not in the default run): the fit rules' one- and two-round shapes.
    "tokens": Suite(shapes=TOKEN_SHAPES),
    # Where the big tiles serve (choose_sm90_big: 128x320, 192x192 pairs; not in the default run): the shapes its rule
    # was set on and held-out ones (benchmarks/RESULTS.md, fifty-fourth session), plain and with bias + GELU-tanh.
    "big": Suite(shapes=BIG_SHAPES),
    "big_epilogue": Suite(kind="epilogue", shapes=BIG_SHAPES),
    "epilogue": Suite(kind="epilogue", shapes=(
        (8192, 14336, 4096, False),
        (4096, 4096, 4096, True),
        (16384, 8192, 8192, False),
        (2048, 11008, 4096, False),
    )),
}
DEFAULT_SUITES = ("dense", "small_m", "fp32", "epilogue", "fp8", "moe128", "moe8")
DEFAULT_DTYPES = ("bfloat16",)

DTYPE_ALIASES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp16": "float16", "f16": "float16", "half": "float16", "float16": "float16",
    "fp32": "float32", "f32": "float32", "float": "float32", "float32": "float32",
}
SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "e4m3"}

# NOTE: on CUDA, torch._addmm_activation(use_gelu=True) computes the tanh approximation of
# GELU (cuBLASLt's GELU_BIAS epilogue, and PyTorch's own fallback passes "tanh"), so our side
# uses the same function; the erf "gelu" would cost a few more instructions per element.
EPILOGUE_ACTIVATION = "gelu_tanh"

# ‖ours − torch‖ / ‖torch‖ allowed. Both sides round the output, so 16-bit bounds are
# about twice the float64-reference ones; TF32 rounds the inputs to 10 mantissa bits on both
# sides.
REL_ERR_BOUND = {"bfloat16": 2e-2, "float16": 5e-3, "float32": 1e-4, "tf32": 5e-3,
                 "float8_e4m3fn": 2e-2}  # both sides sum exact products in fp32, round to bf16
