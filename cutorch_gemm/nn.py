"""nn modules: `Linear` (a drop-in for torch.nn.Linear with an optional fused activation) and
`replace_linear` (swap every nn.Linear of a model in place)."""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch

from .dropin import _ACT_FN, linear

_FUSABLE = {torch.nn.ReLU: "relu", torch.nn.SiLU: "silu"}


class Linear(torch.nn.Linear):
    """torch.nn.Linear computed by cutorch_gemm: same constructor, parameters and state_dict
    keys, plus `activation` (none | relu | gelu | gelu_tanh | silu) fused into the epilogue."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None,
                 activation: Optional[str] = None) -> None:
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if activation not in _ACT_FN:
            raise ValueError(f"Linear: unknown activation {activation!r}")
        self.activation = None if activation == "none" else activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self) -> str:
        act = f", activation={self.activation}" if self.activation else ""
        return super().extra_repr() + act

    @classmethod
    def from_linear(cls, m: torch.nn.Linear, activation: Optional[str] = None) -> "Linear":
        """A Linear sharing `m`'s parameters (no copy)."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = m.in_features, m.out_features
        new.weight = m.weight
        new.bias = m.bias
        new.activation = None if activation in (None, "none") else activation
        if new.activation not in _ACT_FN:
            raise ValueError(f"Linear.from_linear: unknown activation {activation!r}")
        return new


def _activation_of(m: torch.nn.Module) -> Optional[str]:
    if type(m) in _FUSABLE:
        return _FUSABLE[type(m)]
    if type(m) is torch.nn.GELU:
        return "gelu_tanh" if m.approximate == "tanh" else "gelu"
    return None


def replace_linear(model: torch.nn.Module,
                   include: Optional[Union[Callable[[str, torch.nn.Module], bool], Iterable[str]]] = None,
                   types: tuple = (torch.nn.Linear,), fuse_activations: bool = False) -> int:
    """Replaces every nn.Linear (exact type in `types`) in `model` by cutorch_gemm.nn.Linear
    sharing its parameters, in place; returns how many were replaced.

    include: a predicate (qualified name, module) -> bool, or an iterable of qualified names.
    fuse_activations: inside nn.Sequential, a ReLU / GELU / SiLU right after a replaced Linear
        is fused into its epilogue and replaced by nn.Identity.
    """
    if include is None:
        keep = lambda name, mod: True  # noqa: E731
    elif callable(include):
        keep = include
    else:
        names = set(include)
        keep = lambda name, mod: name in names  # noqa: E731
    count = 0
    for parent_name, parent in list(model.named_modules()):
        children = list(parent.named_children())
        for i, (child_name, child) in enumerate(children):
            qual = f"{parent_name}.{child_name}" if parent_name else child_name
            if type(child) not in types or isinstance(child, Linear) or not keep(qual, child):
                continue
            act = None
            if fuse_activations and isinstance(parent, torch.nn.Sequential) and i + 1 < len(children):
                act = _activation_of(children[i + 1][1])
                if act is not None:
                    setattr(parent, children[i + 1][0], torch.nn.Identity())
            setattr(parent, child_name, Linear.from_linear(child, activation=act))
            count += 1
    return count
