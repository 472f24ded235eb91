"""nn modules: `Linear` (a drop-in for torch.nn.Linear with an optional fused activation),
`GatedMLP` (the Llama-style gated feed-forward block on two GEMMs and one SwiGLU pass),
`replace_linear` (swap every nn.Linear of a model in place, optionally fusing activations and
gated MLPs) and `GroupedExperts` (a Mixture-of-Experts layer on grouped_mm)."""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch

from . import ops
from .dropin import _ACT_FN, linear, route_linear

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


# ---- gated MLP ------------------------------------------------------------------------------

def _packed(first: torch.Tensor, second: torch.Tensor) -> Optional[torch.Tensor]:
    """[first; second] along dim 0 as a view (no copy) when `second` starts where `first` ends in
    one storage (both contiguous, same dtype and device), else None."""
    if (first.dtype != second.dtype or first.device != second.device or first.shape[1:] != second.shape[1:]
            or not first.is_contiguous() or not second.is_contiguous()
            or first.untyped_storage().data_ptr() != second.untyped_storage().data_ptr()
            or second.data_ptr() != first.data_ptr() + first.numel() * first.element_size()):
        return None
    return first.as_strided((first.shape[0] + second.shape[0], *first.shape[1:]), first.stride())


def _gate_up_packed(gate: torch.nn.Linear, up: torch.nn.Linear) -> bool:
    return _packed(gate.weight, up.weight) is not None and (gate.bias is None or _packed(gate.bias, up.bias) is not None)


def _pack_gate_up(gate: torch.nn.Linear, up: torch.nn.Linear) -> None:
    """Moves gate's and up's weights (and biases) into one buffer each, [gate; up] along the output
    dimension, keeping the Parameter objects (their .data become views of the buffer): the two
    projections then run as one GEMM with N = 2F, their gradients as one GEMM, without copies."""
    with torch.no_grad():
        for name in ("weight", "bias"):
            g, u = getattr(gate, name), getattr(up, name)
            if g is None or u is None or _packed(g, u) is not None:
                continue
            buf = torch.cat([g.detach(), u.detach()], 0)
            g.data, u.data = buf[:g.shape[0]], buf[g.shape[0]:]


class _GatedMLPFunction(torch.autograd.Function):
    """y = down(silu(gate(x)) * up(x)) with gate and up as one GEMM (weights packed, see
    _pack_gate_up), SwiGLU in one pass, and a backward of four GEMMs and one pass:
    dh = dy @ W_down, d[gate | up] = swiglu_backward(dh, [gate | up]), dx = d[gate | up] @ W_gate_up
    (K = 2F: the two input gradients summed by the GEMM), dW_gate_up = d[gate | up]^T @ x.
    Saved: x, [gate | up] and h (PyTorch's silu and mul save gate, silu(gate), up and h)."""

    @staticmethod
    def forward(ctx, x, wg, wu, wd, bg, bu, bd):
        w_gu = _packed(wg, wu)
        b_gu = _packed(bg, bu) if bg is not None else None
        gu = ops.gemm(x, w_gu.t(), bias=b_gu)
        h = ops.swiglu(gu)
        y = ops.gemm(h, wd.t(), bias=bd)
        ctx.save_for_backward(x, wg, wu, wd, gu, h)
        ctx.biases = (bg is not None, bd is not None)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, wg, wu, wd, gu, h = ctx.saved_tensors
        need = ctx.needs_input_grad
        f = wg.shape[0]
        dy = dy.to(x.dtype)
        dgu = torch.ops.gemm.swiglu_backward(ops.mm(dy, wd), gu)
        dx = ops.mm(dgu, _packed(wg, wu)) if need[0] else None
        dwg = dwu = None
        if need[1] or need[2]:
            dw = ops.mm(dgu.t(), x)
            dwg, dwu = dw[:f], dw[f:]
        dwd = ops.mm(dy.t(), h) if need[3] else None
        dbg = dbu = dbd = None
        if ctx.biases[0] and (need[4] or need[5]):
            db = dgu.sum(0)  # (a 16-bit sum accumulates in fp32, rounded once)
            dbg, dbu = db[:f], db[f:]
        if ctx.biases[1] and need[6]:
            dbd = dy.sum(0)
        return dx, dwg, dwu, dwd, dbg, dbu, dbd


def _gated_fused(x: torch.Tensor, gate: torch.nn.Module, up: torch.nn.Module,
                 down: torch.nn.Module) -> Optional[torch.Tensor]:
    """The fused gated MLP of x, or None where it does not apply (the caller then runs the block
    as written): our Linears without activations, packed gate / up parameters, operands our
    GEMMs take, no autocast (the Linears' own path casts like torch.matmul)."""
    if not all(isinstance(m, Linear) and m.activation is None for m in (gate, up, down)):
        return None
    if (gate.bias is None) != (up.bias is None) or x.dim() == 0 or x.shape[-1] != gate.in_features:
        return None
    if up.in_features != gate.in_features or down.in_features != gate.out_features or up.out_features != gate.out_features:
        return None
    if torch.compiler.is_compiling() or torch.is_autocast_enabled(x.device.type):
        return None  # (compiled: the block as written on our Linears; the compiler fuses silu * up)
    if ops.transformed((x, gate.weight, up.weight, down.weight)):
        return None  # torch.func / forward-mode AD: the block as written (_GatedMLPFunction has no jvp)
    if route_linear(x, gate.weight, gate.bias) != "gemm" or route_linear(x, down.weight, down.bias) != "gemm":
        return None
    if not _gate_up_packed(gate, up):
        # Parameters moved apart (deepcopy, reassignment, .to()): pack them again, once.
        if gate.weight.dtype != up.weight.dtype or gate.weight.device != up.weight.device:
            return None
        _pack_gate_up(gate, up)
        if not _gate_up_packed(gate, up):
            return None
    x2 = x.reshape(-1, x.shape[-1])
    y = _GatedMLPFunction.apply(x2, gate.weight, up.weight, down.weight, gate.bias, up.bias, down.bias)
    return y.reshape(*x.shape[:-1], down.out_features)


class _GatedMLPMixin:
    """forward for gated MLP modules: the fused path, else the block's own unfused forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _gated_fused(x, self.gate_proj, self.up_proj, self.down_proj)
        return out if out is not None else self._cg_unfused_forward(x)


class GatedMLP(_GatedMLPMixin, torch.nn.Module):
    """The gated feed-forward block of Llama, Mistral and Qwen:
    ``down_proj(silu(gate_proj(x)) * up_proj(x))``, with their submodule names (so the same
    state_dict keys), on cutorch_gemm: gate and up as one GEMM (their weights share one buffer),
    SwiGLU in one pass (``cutorch_gemm.swiglu``), and a backward of four GEMMs and one pass (see
    _GatedMLPFunction). Where the fused path does not apply (autocast, torch.compile, CPU
    tensors, dtypes our GEMMs do not take) it runs the block as written. Gate and up parameters
    that were moved apart (deepcopy, reassignment) are packed again at the next forward.
    ``replace_linear(model, fuse_activations=True)`` converts such blocks of existing models."""

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(bias=bias, device=device, dtype=dtype)
        self.gate_proj = Linear(hidden_size, intermediate_size, **kw)
        self.up_proj = Linear(hidden_size, intermediate_size, **kw)
        self.down_proj = Linear(intermediate_size, hidden_size, **kw)
        self.act_fn = torch.nn.SiLU()
        _pack_gate_up(self.gate_proj, self.up_proj)

    def _cg_unfused_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


_GATED_CLASSES: dict = {}


def _is_silu(act: torch.nn.Module) -> bool:
    """nn.SiLU, or a parameter-free module that computes silu (model libraries have their own
    classes, e.g. transformers' SiLUActivation): checked on a few values on the CPU."""
    if type(act) is torch.nn.SiLU:
        return True
    if any(True for _ in act.parameters()) or any(True for _ in act.buffers()):
        return False
    probe = torch.tensor([-6.0, -1.5, -0.25, 0.0, 0.5, 2.0, 7.0])
    try:
        with torch.no_grad():
            out = act(probe)
    except Exception:  # not an element-wise activation
        return False
    return isinstance(out, torch.Tensor) and out.shape == probe.shape and \
        torch.allclose(out, torch.nn.functional.silu(probe), rtol=1e-6, atol=1e-7)


def _is_gated_mlp(m: torch.nn.Module, types: tuple) -> bool:
    """A block laid out as Llama's MLP: exactly the children gate_proj, up_proj, down_proj (Linears
    of an exact type in `types`) and act_fn (a SiLU, _is_silu), no parameters of its own, and matching
    extents. Its forward is taken to be down_proj(act_fn(gate_proj(x)) * up_proj(x)), the one
    these names mean in every model library using them."""
    kids = dict(m.named_children())
    if set(kids) != {"gate_proj", "up_proj", "down_proj", "act_fn"} or isinstance(m, _GatedMLPMixin):
        return False
    if not _is_silu(kids["act_fn"]) or any(True for _ in m.parameters(recurse=False)):
        return False
    g, u, d = kids["gate_proj"], kids["up_proj"], kids["down_proj"]
    if not all(type(x) in types for x in (g, u, d)):
        return False
    return (g.in_features == u.in_features and g.out_features == u.out_features == d.in_features
            and (g.bias is None) == (u.bias is None))


def _convert_gated(m: torch.nn.Module) -> None:
    """Turns a gated MLP block into its fused form in place: our Linears sharing its parameters
    (gate / up packed), and its class swapped for a subclass whose forward takes the fused path
    (attributes, isinstance and state_dict keys unchanged; the block's own forward remains the
    fallback). NOTE: pickling the whole converted module is not supported (the subclass is made
    at run time); state_dict is."""
    for name in ("gate_proj", "up_proj", "down_proj"):
        setattr(m, name, Linear.from_linear(getattr(m, name)))
    _pack_gate_up(m.gate_proj, m.up_proj)
    cls = type(m)
    if cls not in _GATED_CLASSES:
        _GATED_CLASSES[cls] = type(f"Gated{cls.__name__}", (_GatedMLPMixin, cls),
                                   {"_cg_unfused_forward": cls.forward, "__module__": cls.__module__})
    m.__class__ = _GATED_CLASSES[cls]


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
        is fused into its epilogue and replaced by nn.Identity. And gated MLP blocks (children
        gate_proj, up_proj, down_proj and a SiLU act_fn: Llama, Mistral, Qwen; `model` itself
        may be one) compute gate and up as one GEMM and SwiGLU in one pass (see GatedMLP);
        their three Linears count as replaced.
    """
    if include is None:
        keep = lambda name, mod: True  # noqa: E731
    elif callable(include):
        keep = include
    else:
        names = set(include)
        keep = lambda name, mod: name in names  # noqa: E731
    count = 0
    if fuse_activations:
        for name, mod in list(model.named_modules()):
            prefix = f"{name}." if name else ""
            if _is_gated_mlp(mod, types) and all(keep(prefix + c, getattr(mod, c))
                                                 for c in ("gate_proj", "up_proj", "down_proj")):
                _convert_gated(mod)
                count += 3
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


def _inverse_permutation(order: torch.Tensor) -> torch.Tensor:
    """inv with inv[order[p]] = p (on the device, no synchronisation)."""
    return torch.empty_like(order).index_copy_(0, order, torch.arange(order.numel(), device=order.device))


class _GatherRows(torch.autograd.Function):
    """x[token_of] (each token's row once per slot, in expert order); backward: the k slot
    gradients of each token summed by moe_combine (deterministic, one pass), where indexing's
    backward sorts the indices and accumulates."""

    @staticmethod
    def forward(ctx, x, token_of, inv, k):
        ctx.save_for_backward(inv)
        ctx.k = k
        return x.index_select(0, token_of)

    @staticmethod
    def backward(ctx, grad):
        (inv,) = ctx.saved_tensors
        return ops.moe_combine(grad.contiguous(), inv, None, ctx.k), None, None, None


class GroupedExperts(torch.nn.Module):
    """A Mixture-of-Experts feed-forward layer on `grouped_mm`.

    Parameters (E experts, hidden H, intermediate F):
        w_gate_up: (E, H, 2F), laid out [gate | up] along the last dimension.
        w_down:    (E, F, H).

    forward(x (T, H), expert_idx (T, k) integer, expert_weights (T, k) or None) -> (T, H)
        (None: each token's k expert outputs summed unweighted):
        the T*k (token, expert) pairs are sorted by expert on the device (a stable sort and a
        scatter-add of counts: no host synchronisation), gathered, run through the two grouped
        GEMMs with SwiGLU between them, weighted and summed back per token in one pass
        (ops.moe_combine; its backward also gives the weights' gradient; x's gradient sums
        each token's k slots the same way).

    `validate=True` checks expert_idx's range on the host (one synchronisation on CUDA); pass
    False inside CUDA graph capture or when the router is trusted.
    NOTE: without autograd (inference: no_grad, or neither x nor w_gate_up requires grad) the
    up-projection is grouped_mm(activation="swiglu"): on Hopper, the SwiGLU fused into the
    kernel's epilogue (H100: 1.2-1.3x torch._grouped_mm + silu * up). With autograd, SwiGLU runs
    as one element-wise pass (ops.swiglu, and its backward) on the saved 16-bit up-projection:
    the fused op's backward recomputes the up-projection, one more GEMM, which made the layer's
    fwd+bwd 16% slower.
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

    def forward(self, x: torch.Tensor, expert_idx: torch.Tensor,
                expert_weights: Optional[torch.Tensor]) -> torch.Tensor:
        from .ops import grouped_mm

        E, H = self.num_experts, self.hidden_size
        if x.dim() != 2 or x.shape[1] != H:
            raise ValueError(f"GroupedExperts: x must have shape (T, H={H}), got {tuple(x.shape)}")
        if expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0] or expert_idx.dtype.is_floating_point:
            raise ValueError(f"GroupedExperts: expert_idx must be an integer (T={x.shape[0]}, k) tensor, "
                             f"got {tuple(expert_idx.shape)} {expert_idx.dtype}")
        if expert_weights is not None and tuple(expert_weights.shape) != tuple(expert_idx.shape):
            raise ValueError(f"GroupedExperts: expert_weights must have shape {tuple(expert_idx.shape)}, "
                             f"got {tuple(expert_weights.shape)}")
        if self.validate and expert_idx.numel() and not (0 <= int(expert_idx.min()) and int(expert_idx.max()) < E):
            raise ValueError(f"GroupedExperts: expert_idx values must be in [0, {E}), got "
                             f"[{int(expert_idx.min())}, {int(expert_idx.max())}]")
        k = expert_idx.shape[1]
        order, token_of, offs = route_by_expert(expert_idx, E)
        inv = _inverse_permutation(order)  # pair t * k + j -> its row in expert order
        if not (torch.is_grad_enabled() and (x.requires_grad or self.w_gate_up.requires_grad)):
            act = grouped_mm(x.index_select(0, token_of), self.w_gate_up, offs, activation="swiglu")  # (T*k, F)
        else:
            # (under torch.func transforms the plain gather: its backward is index_add's)
            gather = x.requires_grad and not ops.transformed((x,))
            xs = _GatherRows.apply(x, token_of, inv, k) if gather else x.index_select(0, token_of)
            h = grouped_mm(xs, self.w_gate_up, offs)  # (T*k, 2F)
            act = ops.swiglu(h)  # (T*k, F), one pass
        y = grouped_mm(act, self.w_down, offs)  # (T*k, H), expert order
        return ops.moe_combine(y, inv, expert_weights, k)  # (T, H): weighted sums of each token's k rows
