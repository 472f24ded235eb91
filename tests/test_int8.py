"""`mm` on int8 operands: an exact int32 result like torch._int_mm, on the CPU reference and on
the sm80 family's IMMA kernels (mma.m16n8k32.s8, every operand-major combination, odd K and
sliced views through the narrow copies), with the usual input checks."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import DEVICES

CUDA_SM80 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8


def rand_i8(*shape, device="cpu", layout="row"):
    if layout == "col":
        return torch.randint(-128, 128, shape[::-1], dtype=torch.int8, device=device).t()
    return torch.randint(-128, 128, shape, dtype=torch.int8, device=device)


def exact(a, b):
    """int8 x int8 -> int32 reference (int64 on the CPU, checked to fit in int32)."""
    r = a.cpu().long() @ b.cpu().long()
    assert r.abs().max() < 2**31 if r.numel() else True
    return r.to(torch.int32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mnk", [(1, 1, 1), (7, 65, 129), (129, 7, 1000), (64, 64, 4096), (0, 5, 7), (5, 7, 0)],
                         ids=lambda s: "x".join(map(str, s)))
def test_int8_mm_is_exact(device, mnk):
    if device == "cuda" and not CUDA_SM80:
        pytest.skip("int8 runs on sm_80+ tensor cores")
    m, n, k = mnk
    a, b = rand_i8(m, k, device=device), rand_i8(k, n, device=device, layout="col")
    out = cg.mm(a, b)
    assert out.dtype == torch.int32 and out.shape == (m, n) and out.is_contiguous()
    assert torch.equal(out.cpu(), exact(a, b))
    assert torch.equal(cg.mm(a, b, out_dtype=torch.int32).cpu(), exact(a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_int8_extremes_accumulate_in_int32(device):
    if device == "cuda" and not CUDA_SM80:
        pytest.skip("int8 runs on sm_80+ tensor cores")
    k = 8192  # 8192 * 128 * 128 = 2^27: no overflow, but far past int16
    a = torch.full((33, k), -128, dtype=torch.int8, device=device)
    b = torch.full((k, 17), -128, dtype=torch.int8, device=device)
    b[::2] = 127
    assert torch.equal(cg.mm(a, b).cpu(), exact(a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_int8_input_checks(device):
    a, b = rand_i8(8, 16, device=device), rand_i8(16, 4, device=device)
    with pytest.raises(TypeError, match="expected int8"):
        cg.mm(a, b.float())
    with pytest.raises(TypeError, match="out_dtype.*int32"):
        cg.mm(a, b, out_dtype=torch.float32)
    with pytest.raises(ValueError, match=r"b must have shape \(K=16, N\)"):
        cg.mm(a, rand_i8(15, 4, device=device))
    with pytest.raises(ValueError, match="2-D"):
        cg.mm(a[None], b)
    with pytest.raises(TypeError, match="gemm.mm only"):
        cg.gemm(a, b)
    with pytest.raises(TypeError, match="gemm.mm only"):
        cg.bmm(a[None], b[None])
    # another integer type: mm's error names the int8 form it does take; gemm's does not offer it
    with pytest.raises(TypeError, match=r"a has dtype Short; expected float16.*\(or int8 x int8 -> int32\)"):
        cg.mm(a.to(torch.int16), b.to(torch.int16))
    with pytest.raises(TypeError, match=r"a has dtype Short; expected float16, bfloat16, float32 or float64$"):
        cg.gemm(a.to(torch.int16), b.to(torch.int16))


def test_int8_fake_and_opcheck():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        out = torch.ops.gemm.mm(torch.empty(5, 7, dtype=torch.int8), torch.empty(7, 3, dtype=torch.int8))
        # the fake kernel's dtype error names int8 for mm, as the real check does
        with pytest.raises(TypeError, match=r"int16; expected float16.*or int8 x int8 -> int32"):
            torch.ops.gemm.mm(torch.empty(5, 7, dtype=torch.int16), torch.empty(7, 3, dtype=torch.int16))
    assert out.shape == (5, 3) and out.dtype == torch.int32
    torch.library.opcheck(torch.ops.gemm.mm, (rand_i8(9, 13), rand_i8(13, 6)))


# --------------------------------------------------------------------------------------
# GPU: the sm80 IMMA kernels
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", ["128x256x128", "128x128x128"])
@pytest.mark.parametrize("layouts", [("row", "col"), ("row", "row"), ("col", "col"), ("col", "row")], ids="-".join)
@pytest.mark.parametrize("mnk", [(129, 257, 160), (1, 300, 1000), (300, 7, 33), (1024, 1024, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.gpu
@pytest.mark.skipif(not CUDA_SM80, reason="needs an sm_80+ GPU")
def test_int8_sm80_configs_and_majors(monkeypatch, config, layouts, mnk):
    smem = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    if config == "128x256x128" and smem < 145 * 1024:
        pytest.skip("needs 144 KB of shared memory")
    monkeypatch.setenv("CUTORCH_GEMM_SM80_CONFIG", config)
    m, n, k = mnk
    a, b = rand_i8(m, k, device="cuda", layout=layouts[0]), rand_i8(k, n, device="cuda", layout=layouts[1])
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm80" and f"_{config}_" in e.config and "int8" in e.reason, str(e)
    torch.full((m * n * 4,), 255, dtype=torch.uint8, device="cuda")  # poison a block the output may reuse
    assert torch.equal(cg.mm(a, b).cpu(), exact(a, b)), f"{config} {layouts} {mnk}"


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA_SM80, reason="needs an sm_80+ GPU")
def test_int8_sm80_misaligned_and_strided_and_agrees_with_int_mm():
    base = rand_i8(300, 1001, device="cuda")
    wb = rand_i8(1001, 130, device="cuda")
    for a, b in [(base[:, 1:300], wb[1:300, :]),          # 1-byte aligned base: element-wise copies
                 (base[:, 4:304], wb[4:304, 4:]),         # 4-byte aligned
                 (base[::2, ::3], wb[:1000:3, ::2]),      # no unit stride at all
                 (rand_i8(64, 99, device="cuda"), rand_i8(99, 40, device="cuda"))]:  # odd K
        b = b[: a.shape[1]]
        assert torch.equal(cg.mm(a, b).cpu(), exact(a, b)), f"a {a.stride()} b {b.stride()}"
    a, b = rand_i8(256, 512, device="cuda"), rand_i8(384, 512, device="cuda").t()
    assert torch.equal(cg.mm(a, b), torch._int_mm(a, b))


def test_int8_explain_names_the_path():
    a, b = rand_i8(8, 16), rand_i8(16, 4)
    e = cg.explain("mm", a, b)
    assert e.kernel == "cpu_reference", str(e)
