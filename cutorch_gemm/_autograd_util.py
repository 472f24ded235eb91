"""Shared pieces of the ops' autograd.Functions (`_autograd.py` says how they fit together):
activation derivatives, accumulator dtypes, tangent and vmap helpers."""
from __future__ import annotations

import math

import torch

_below = torch._C._AutoDispatchBelowAutograd


def act_grad(z: torch.Tensor, act: str) -> torch.Tensor:
    """d act(z) / dz, evaluated in z's dtype."""
    if act == "relu":
        return (z > 0).to(z.dtype)
    if act == "gelu":
        cdf = 0.5 * (1.0 + torch.erf(z * (1.0 / math.sqrt(2.0))))
        pdf = torch.exp(-0.5 * z * z) * (1.0 / math.sqrt(2.0 * math.pi))
        return cdf + z * pdf
    if act == "gelu_tanh":
        k = math.sqrt(2.0 / math.pi)
        t = torch.tanh(k * (z + 0.044715 * z * z * z))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * z * z)
    if act == "silu":
        s = torch.sigmoid(z)
        return s * (1.0 + z * (1.0 - s))
    raise ValueError(f"unknown activation '{act}'")


def _acc(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _acc_out(dtype: torch.dtype):
    """out_dtype that makes an op return the accumulator dtype for inputs of `dtype`."""
    return None if dtype in (torch.float32, torch.float64) else torch.float32


def _sum_rows(dz: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """dz summed over its rows (a bias gradient) into `dtype`, the sum in fp32 (fp64 for fp64).
    One launch when dz already has `dtype`: torch's sum of a 16-bit tensor accumulates in fp32 and
    rounds once, as summing in fp32 and converting does with a second kernel."""
    if dz.dtype == dtype:
        return dz.sum(0)
    return dz.sum(0, dtype=_acc(dz.dtype)).to(dtype)


def _add(x, y):
    """x + y where either may be None (an absent tangent)."""
    if x is None:
        return y
    return x if y is None else x + y


def _tangent_out(t, shape, dtype, like: torch.Tensor) -> torch.Tensor:
    """A jvp's result: `t` (None: no tangent term at all, zeros) broadcast to the output's
    shape and cast to its dtype."""
    if t is None:
        return torch.zeros(shape, dtype=dtype, device=like.device)
    return t.expand(shape).to(dtype)


def _vmap_loop(info, in_dims, call, args):
    """The generic vmap rule: `call(*args)` once per batch entry (the ops have no batched form
    there), the results stacked along dim 0. A batch of zero entries takes the shapes from the
    op's fake kernel on meta tensors."""
    if info.batch_size == 0:
        metas = [a.new_empty([s for i, s in enumerate(a.shape) if i != d], device="meta")
                 if isinstance(a, torch.Tensor) and d is not None else
                 (a.to("meta") if isinstance(a, torch.Tensor) else a) for a, d in zip(args, in_dims)]
        with _below():
            shaped = call(*metas)
        many = isinstance(shaped, (list, tuple))
        outs = shaped if many else (shaped,)
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        empty = tuple(torch.empty((0, *o.shape), dtype=o.dtype, device=device) for o in outs)
        return (empty, (0,) * len(empty)) if many else (empty[0], 0)
    per = [call(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)])
           for i in range(info.batch_size)]
    if isinstance(per[0], (list, tuple)):
        return tuple(torch.stack([p[j] for p in per]) for j in range(len(per[0]))), (0,) * len(per[0])
    return torch.stack(per), 0
