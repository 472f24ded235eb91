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


def route_by_expert(expert_idx: torch.Tensor, num_experts: int):
    """Sorts the T*k (token, expert) pairs of `expert_idx` (T, k) by expert on the device (stable
    sort, scatter-add of counts: no host synchronisation). Returns (order, token_of, offs): the
    pair permutation, the token of each sorted pair, and int32 cumulative group ends."""
    k = expert_idx.shape[1]
    flat = expert_idx.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    counts = torch.zeros(num_experts, dtype=torch.int32, device=expert_idx.device).scatter_add_(
        0, flat, torch.ones_like(flat, dtype=torch.int32))
    return order, order // k, torch.cumsum(counts, 0, dtype=torch.int32)


class GroupedExperts(torch.nn.Module):
    """A Mixture-of-Experts feed-forward layer on `grouped_mm`.

    Parameters (E experts, hidden H, intermediate F):
        w_gate_up: (E, H, 2F), laid out [gate | up] along the last dimension.
        w_down:    (E, F, H).

    forward(x (T, H), expert_idx (T, k) integer, expert_weights (T, k)) -> (T, H):
        the T*k (token, expert) pairs are sorted by expert on the device (a stable sort and a
        scatter-add of counts: no host synchronisation), gathered, run through the two grouped
        GEMMs with SwiGLU between them, weighted and summed back per token.

    `validate=True` checks expert_idx's range on the host (one synchronisation on CUDA); pass
    False inside CUDA graph capture or when the router is trusted.
    NOTE: without autograd (inference: no_grad, or neither x nor w_gate_up requires grad) the
    up-projection is grouped_mm(activation="swiglu"): on Hopper, the SwiGLU fused into the
    kernel's epilogue (H100: 1.2-1.3x torch._grouped_mm + silu * up). With autograd, SwiGLU runs
    as separate element-wise ops on the saved 16-bit up-projection: the fused op's backward
    recomputes the up-projection, one more GEMM, which made the layer's fwd+bwd 16% slower.
    """

    def __init__(self, num_experts: int, hidden_size: int, intermediate_size: int, activation: str = "swiglu",
                 device=None, dtype=None, validate: bool = True) -> None:
        super().__init__()
        if activation != "swiglu":
            raise ValueError(f"GroupedExperts: activation must be 'swiglu', got {activation!r}")
        if min(num_experts, hidden_size, intermediate_size) <= 0:
            raise ValueError("GroupedExperts: num_experts, hidden_size and intermediate_size must be positive")
        kw = dict(device=device, dtype=dtype)
        self.num_experts, self.hidden_size, self.intermediate_size = num_experts, hidden_size, intermediate_size
        self.validate = validate
        self.w_gate_up = torch.nn.Parameter(torch.empty(num_experts, hidden_size, 2 * intermediate_size, **kw))
        self.w_down = torch.nn.Parameter(torch.empty(num_experts, intermediate_size, hidden_size, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
        torch.nn.init.uniform_(self.w_gate_up, -self.hidden_size ** -0.5, self.hidden_size ** -0.5)
        torch.nn.init.uniform_(self.w_down, -self.intermediate_size ** -0.5, self.intermediate_size ** -0.5)

    def forward(self, x: torch.Tensor, expert_idx: torch.Tensor, expert_weights: torch.Tensor) -> torch.Tensor:
        from .ops import grouped_mm

        E, H, Fi = self.num_experts, self.hidden_size, self.intermediate_size
        if x.dim() != 2 or x.shape[1] != H:
            raise ValueError(f"GroupedExperts: x must have shape (T, H={H}), got {tuple(x.shape)}")
        if expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0] or expert_idx.dtype.is_floating_point:
            raise ValueError(f"GroupedExperts: expert_idx must be an integer (T={x.shape[0]}, k) tensor, "
                             f"got {tuple(expert_idx.shape)} {expert_idx.dtype}")
        if tuple(expert_weights.shape) != tuple(expert_idx.shape):
            raise ValueError(f"GroupedExperts: expert_weights must have shape {tuple(expert_idx.shape)}, "
                             f"got {tuple(expert_weights.shape)}")
        if self.validate and expert_idx.numel() and not (0 <= int(expert_idx.min()) and int(expert_idx.max()) < E):
            raise ValueError(f"GroupedExperts: expert_idx values must be in [0, {E}), got "
                             f"[{int(expert_idx.min())}, {int(expert_idx.max())}]")
        T = expert_idx.shape[0]
        order, token_of, offs = route_by_expert(expert_idx, E)
        if not (torch.is_grad_enabled() and (x.requires_grad or self.w_gate_up.requires_grad)):
            act = grouped_mm(x[token_of], self.w_gate_up, offs, activation="swiglu")  # (T*k, F)
        else:
            h = grouped_mm(x[token_of], self.w_gate_up, offs)              # (T*k, 2F)
            act = torch.nn.functional.silu(h[:, :Fi]) * h[:, Fi:]           # SwiGLU
        y = grouped_mm(act, self.w_down, offs)                          # (T*k, H)
        y = y * expert_weights.reshape(-1)[order].to(y.dtype).unsqueeze(1)
        return torch.zeros(T, H, dtype=y.dtype, device=y.device).index_add_(0, token_of, y)
