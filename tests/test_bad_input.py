"""Bad input raises ValueError (shape/device/value) or TypeError (dtype) whose message names
the offending argument. Checked for real tensors (the C++ checks, on cpu/cuda) and for
meta tensors (the fake kernels used under torch.compile)."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import gpu, offs_from_sizes, requires_cuda

ERRORS = (ValueError, TypeError, RuntimeError)

CHECK_DEVICES = [
    "cpu",
    "meta",
    pytest.param("cuda", marks=[gpu, requires_cuda], id="cuda"),
]


def R(device, *shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, device=device)


def offs(device, sizes, dtype=torch.int32):
    return offs_from_sizes(sizes, device).to(dtype)


def named(arg):
    """Regex that matches the argument name as a word."""
    return rf"\b{arg}\b"


# name -> (argname, fn(device)). Every case is invalid for shape/dtype/rank reasons alone,
# so it must fail on meta tensors (fake kernels) as well as on real ones.
f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
CASES = {
    # mm
    "mm_inner_mismatch": ("b", lambda d: cg.mm(R(d, 4, 5), R(d, 6, 3))),
    "mm_dtype_mismatch": ("b", lambda d: cg.mm(R(d, 4, 5), R(d, 5, 3, dtype=f64))),
    "mm_dtype_mismatch_half": ("b", lambda d: cg.mm(R(d, 4, 5, dtype=f16),
                                                    R(d, 5, 3, dtype=bf16))),
    "mm_a_rank3": ("a", lambda d: cg.mm(R(d, 2, 4, 5), R(d, 5, 3))),
    "mm_a_rank1": ("a", lambda d: cg.mm(R(d, 5), R(d, 5, 3))),
    "mm_b_rank1": ("b", lambda d: cg.mm(R(d, 4, 5), R(d, 5))),
    "mm_int_inputs": ("a", lambda d: cg.mm(torch.ones(4, 5, dtype=torch.int32, device=d),
                                           torch.ones(5, 3, dtype=torch.int32, device=d))),
    "mm_out_f16_for_f32": ("out_dtype", lambda d: cg.mm(R(d, 4, 5), R(d, 5, 3),
                                                        out_dtype=f16)),
    "mm_out_bf16_for_f32": ("out_dtype", lambda d: cg.mm(R(d, 4, 5), R(d, 5, 3),
                                                         out_dtype=bf16)),
    "mm_out_f64_for_f32": ("out_dtype", lambda d: cg.mm(R(d, 4, 5), R(d, 5, 3),
                                                        out_dtype=f64)),
    "mm_out_f32_for_f64": ("out_dtype", lambda d: cg.mm(R(d, 4, 5, dtype=f64),
                                                        R(d, 5, 3, dtype=f64), out_dtype=f32)),
    "mm_out_bf16_for_f16": ("out_dtype", lambda d: cg.mm(R(d, 4, 5, dtype=f16),
                                                         R(d, 5, 3, dtype=f16), out_dtype=bf16)),
    "mm_out_int": ("out_dtype", lambda d: cg.mm(R(d, 4, 5), R(d, 5, 3), out_dtype=torch.int32)),
    # gemm's scalars: a string, None, a complex number or a many-element tensor is no alpha / beta
    # (float() alone took "2" and named no argument for the others)
    "gemm_alpha_str": ("alpha", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), alpha="2")),
    "gemm_alpha_none": ("alpha", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), alpha=None)),
    "gemm_alpha_complex": ("alpha", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), alpha=1j)),
    "gemm_beta_tensor": ("beta", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), c=R(d, 4, 3),
                                                   beta=torch.ones(2))),
    # gemm
    "gemm_inner_mismatch": ("b", lambda d: cg.gemm(R(d, 4, 5), R(d, 4, 3))),
    "gemm_bias_len": ("bias", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), bias=R(d, 4))),
    "gemm_bias_rank2": ("bias", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), bias=R(d, 4, 3))),
    "gemm_bias_dtype": ("bias", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3),
                                                  bias=R(d, 3, dtype=f64))),
    "gemm_c_shape": ("c", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), c=R(d, 4, 4), beta=1.0)),
    "gemm_c_transposed_shape": ("c", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), c=R(d, 3, 4),
                                                       beta=0.5)),
    "gemm_c_rank1": ("c", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3), c=R(d, 3), beta=1.0)),
    "gemm_c_dtype": ("c", lambda d: cg.gemm(R(d, 4, 5, dtype=bf16), R(d, 5, 3, dtype=bf16),
                                            c=R(d, 4, 3, dtype=f32), beta=1.0)),
    "gemm_activation": ("activation", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3),
                                                        activation="swish")),
    "gemm_activation_case": ("activation", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3),
                                                             activation="GELU")),
    "gemm_out_dtype": ("out_dtype", lambda d: cg.gemm(R(d, 4, 5), R(d, 5, 3),
                                                      out_dtype=f16)),
    "gemm_b_dtype": ("b", lambda d: cg.gemm(R(d, 4, 5, dtype=f16), R(d, 5, 3))),
    # bmm
    "bmm_batch_mismatch": ("b", lambda d: cg.bmm(R(d, 2, 4, 5), R(d, 3, 5, 6))),
    "bmm_inner_mismatch": ("b", lambda d: cg.bmm(R(d, 2, 4, 5), R(d, 2, 4, 6))),
    "bmm_a_rank2": ("a", lambda d: cg.bmm(R(d, 4, 5), R(d, 2, 5, 6))),
    "bmm_b_rank4": ("b", lambda d: cg.bmm(R(d, 2, 4, 5), R(d, 1, 2, 5, 6))),
    "bmm_dtype": ("b", lambda d: cg.bmm(R(d, 2, 4, 5, dtype=bf16), R(d, 2, 5, 6, dtype=f16))),
    "bmm_out_dtype": ("out_dtype", lambda d: cg.bmm(R(d, 2, 4, 5), R(d, 2, 5, 6),
                                                    out_dtype=torch.int64)),
    # grouped_mm
    "gmm_offs_int64": ("offs", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                       offs(d, [3, 3, 4], torch.int64))),
    "gmm_offs_float": ("offs", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                       offs(d, [3, 3, 4], torch.float32))),
    "gmm_offs_rank2": ("offs", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                       offs(d, [3, 3, 4]).view(3, 1))),
    "gmm_offs_len_2d3d": ("offs", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                          offs(d, [5, 5]))),
    "gmm_offs_len_3d2d": ("offs", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 4, 10),
                                                          offs(d, [2, 2, 2, 2]))),
    "gmm_offs_missing_2d3d": ("offs", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5))),
    "gmm_offs_missing_2d2d": ("offs", lambda d: cg.grouped_mm(R(d, 6, 10), R(d, 10, 5))),
    "gmm_offs_for_3d3d": ("offs", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 3, 4, 5),
                                                          offs(d, [2, 2, 2]))),
    "gmm_inner_2d3d": ("b", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 5, 5),
                                                    offs(d, [3, 3, 4]))),
    "gmm_inner_3d2d": ("b", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 5, 10),
                                                    offs(d, [3, 3, 4]))),
    "gmm_inner_2d2d": ("b", lambda d: cg.grouped_mm(R(d, 6, 10), R(d, 9, 5),
                                                    offs(d, [3, 3, 3]))),
    "gmm_groups_3d3d": ("b", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 2, 4, 5))),
    "gmm_inner_3d3d": ("b", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 3, 5, 5))),
    "gmm_a_rank1": ("a", lambda d: cg.grouped_mm(R(d, 10), R(d, 3, 4, 5), offs(d, [3, 3, 4]))),
    "gmm_dtype": ("b", lambda d: cg.grouped_mm(R(d, 10, 4, dtype=bf16), R(d, 3, 4, 5),
                                               offs(d, [3, 3, 4]))),
    "gmm_bias_2d3d_len": ("bias", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                          offs(d, [3, 3, 4]), bias=R(d, 3, 6))),
    "gmm_bias_2d3d_groups": ("bias", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                             offs(d, [3, 3, 4]),
                                                             bias=R(d, 2, 5))),
    "gmm_bias_2d3d_rank1": ("bias", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                            offs(d, [3, 3, 4]), bias=R(d, 5))),
    "gmm_bias_3d2d": ("bias", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 4, 10),
                                                      offs(d, [3, 3, 4]), bias=R(d, 3, 10))),
    "gmm_bias_3d2d_len": ("bias", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 4, 10),
                                                          offs(d, [3, 3, 4]), bias=R(d, 6))),
    "gmm_bias_2d2d": ("bias", lambda d: cg.grouped_mm(R(d, 6, 10), R(d, 10, 5),
                                                      offs(d, [3, 3, 4]), bias=R(d, 3, 6))),
    "gmm_bias_3d3d": ("bias", lambda d: cg.grouped_mm(R(d, 3, 6, 4), R(d, 3, 4, 5),
                                                      bias=R(d, 5))),
    "gmm_bias_dtype": ("bias", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                       offs(d, [3, 3, 4]),
                                                       bias=R(d, 3, 5, dtype=f64))),
    "gmm_activation": ("activation", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                             offs(d, [3, 3, 4]),
                                                             activation="tanh")),
    "gmm_out_dtype": ("out_dtype", lambda d: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                           offs(d, [3, 3, 4]), out_dtype=f16)),
    # grouped_gemm
    "gg_unequal_lists": ("b", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                                        [R(d, 3, 4)])),
    "gg_bias_list_len": ("bias", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                                           [R(d, 3, 4), R(d, 5, 6)],
                                                           bias=[R(d, 4)])),
    "gg_bias_shape": ("bias", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                                        [R(d, 3, 4), R(d, 5, 6)],
                                                        bias=[R(d, 4), R(d, 5)])),
    "gg_inner_mismatch": ("b", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                                         [R(d, 3, 4), R(d, 6, 6)])),
    "gg_dtype": ("b", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                                [R(d, 3, 4), R(d, 5, 6, dtype=f64)])),
    "gg_rank": ("a", lambda d: cg.grouped_gemm([R(d, 2, 3), R(d, 1, 4, 5)],
                                               [R(d, 3, 4), R(d, 5, 6)])),
    "gg_activation": ("activation", lambda d: cg.grouped_gemm([R(d, 2, 3)], [R(d, 3, 4)],
                                                              activation="leaky_relu")),
    "gg_out_dtype": ("out_dtype", lambda d: cg.grouped_gemm([R(d, 2, 3)], [R(d, 3, 4)],
                                                            out_dtype=bf16)),
    # (the wrapper's grad check must let the op name a non-tensor in a list)
    "gg_not_a_tensor": ("a", lambda d: cg.grouped_gemm([R(d, 2, 3), 3], [R(d, 3, 4), R(d, 3, 4)])),
}


@pytest.mark.parametrize("device", CHECK_DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(device, case):
    arg, fn = CASES[case]
    with pytest.raises(ERRORS, match=named(arg)):
        fn(device)


@pytest.mark.parametrize("device", CHECK_DEVICES)
@pytest.mark.parametrize("case", ["mm_inner_mismatch", "gemm_bias_len", "gmm_offs_int64",
                                  "mm_dtype_mismatch", "gemm_c_dtype", "gemm_alpha_str", "gemm_alpha_complex"])
def test_bad_input_error_type(device, case):
    """Shape problems are ValueError, dtype problems TypeError (not a generic RuntimeError)."""
    arg, fn = CASES[case]
    expected = TypeError if ("dtype" in case or "int64" in case or "alpha" in case) else ValueError
    with pytest.raises(expected, match=named(arg)):
        fn(device)


# --------------------------------------------------------------------------------------
# device mismatch
# --------------------------------------------------------------------------------------

DEVICE_PAIRS = [
    pytest.param(("cpu", "meta"), id="cpu-meta"),
    pytest.param(("cuda", "cpu"), marks=[gpu, requires_cuda], id="cuda-cpu"),
    pytest.param(("cpu", "cuda"), marks=[gpu, requires_cuda], id="cpu-cuda"),
]

# name -> (argname, fn(main_device, other_device))
DEVICE_CASES = {
    "mm_b": ("b", lambda d, o: cg.mm(R(d, 4, 5), R(o, 5, 3))),
    "gemm_bias": ("bias", lambda d, o: cg.gemm(R(d, 4, 5), R(d, 5, 3), bias=R(o, 3))),
    "gemm_c": ("c", lambda d, o: cg.gemm(R(d, 4, 5), R(d, 5, 3), c=R(o, 4, 3), beta=1.0)),
    "bmm_b": ("b", lambda d, o: cg.bmm(R(d, 2, 4, 5), R(o, 2, 5, 3))),
    "gmm_b": ("b", lambda d, o: cg.grouped_mm(R(d, 10, 4), R(o, 3, 4, 5), offs(d, [3, 3, 4]))),
    "gmm_offs": ("offs", lambda d, o: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                    offs(o, [3, 3, 4]))),
    "gmm_offs_3d2d": ("offs", lambda d, o: cg.grouped_mm(R(d, 3, 6, 4), R(d, 4, 10),
                                                         offs(o, [3, 3, 4]))),
    "gmm_bias": ("bias", lambda d, o: cg.grouped_mm(R(d, 10, 4), R(d, 3, 4, 5),
                                                    offs(d, [3, 3, 4]), bias=R(o, 3, 5))),
    "gg_b": ("b", lambda d, o: cg.grouped_gemm([R(d, 2, 3), R(d, 4, 5)],
                                               [R(d, 3, 4), R(o, 5, 6)])),
    "gg_bias": ("bias", lambda d, o: cg.grouped_gemm([R(d, 2, 3)], [R(d, 3, 4)],
                                                     bias=[R(o, 4)])),
}


@pytest.mark.parametrize("pair", DEVICE_PAIRS)
@pytest.mark.parametrize("case", list(DEVICE_CASES))
def test_device_mismatch(pair, case):
    arg, fn = DEVICE_CASES[case]
    with pytest.raises(ERRORS, match=named(arg)):
        fn(*pair)


# --------------------------------------------------------------------------------------
# offsets values (checked on the CPU; clamped on the GPU, see test_gpu.py)
# --------------------------------------------------------------------------------------

OFFS_VALUE_CASES = {
    "2d3d_decreasing": lambda: cg.grouped_mm(R("cpu", 10, 4), R("cpu", 3, 4, 5),
                                             offs("cpu", [5, -2, 4])),
    "2d3d_past_rows": lambda: cg.grouped_mm(R("cpu", 10, 4), R("cpu", 3, 4, 5),
                                            offs("cpu", [5, 5, 3])),
    "2d3d_negative": lambda: cg.grouped_mm(R("cpu", 10, 4), R("cpu", 2, 4, 5),
                                           torch.tensor([-1, 4], dtype=torch.int32)),
    "3d2d_decreasing": lambda: cg.grouped_mm(R("cpu", 3, 6, 4), R("cpu", 4, 10),
                                             torch.tensor([4, 2, 9], dtype=torch.int32)),
    "3d2d_past_cols": lambda: cg.grouped_mm(R("cpu", 3, 6, 4), R("cpu", 4, 10),
                                            torch.tensor([4, 8, 11], dtype=torch.int32)),
    "2d2d_decreasing": lambda: cg.grouped_mm(R("cpu", 6, 10), R("cpu", 10, 5),
                                             torch.tensor([7, 3, 10], dtype=torch.int32)),
    "2d2d_past_k": lambda: cg.grouped_mm(R("cpu", 6, 10), R("cpu", 10, 5),
                                         torch.tensor([3, 6, 12], dtype=torch.int32)),
}


@pytest.mark.parametrize("case", list(OFFS_VALUE_CASES))
def test_bad_offs_values_cpu(case):
    with pytest.raises(ValueError, match=named("offs")):
        OFFS_VALUE_CASES[case]()


def test_bad_offs_values_cpu_requires_grad():
    """The forward check also fires when the inputs require grad."""
    a = torch.randn(10, 4, requires_grad=True)
    b = torch.randn(3, 4, 5, requires_grad=True)
    with pytest.raises(ValueError, match=named("offs")):
        cg.grouped_mm(a, b, torch.tensor([5, 3, 7], dtype=torch.int32))


def test_explain_bad_op_name():
    a, b = R("cpu", 4, 5), R("cpu", 5, 3)
    with pytest.raises((ValueError, KeyError, TypeError, RuntimeError)):
        cg.explain("conv", a, b)


def test_gemm_real_scalar_forms_accepted():
    """What float() takes as a real number stays accepted for alpha / beta: int, bool, numpy scalars, a
    one-element real tensor; each gives the same result as the float."""
    np = pytest.importorskip("numpy")
    a, b, c = R("cpu", 4, 5, dtype=f64), R("cpu", 5, 3, dtype=f64), R("cpu", 4, 3, dtype=f64)
    want = cg.gemm(a, b, c=c, alpha=2.0, beta=0.5)
    for alpha, beta in [(2, 0.5), (np.float32(2), np.float64(0.5)), (torch.tensor(2.0), torch.tensor([0.5])),
                        (np.int64(2), 0.5)]:
        torch.testing.assert_close(cg.gemm(a, b, c=c, alpha=alpha, beta=beta), want, rtol=0, atol=0)
    torch.testing.assert_close(cg.gemm(a, b, alpha=True), cg.mm(a, b), rtol=0, atol=0)
