"""`torch.autocast("neuron")` for the emulated device, following CUDA's autocast op lists.

TorchNeuron autocast follows CUDA conventions (torchneuron-facts §3.10), so the emulation casts
the same ops: matmul-like ops to the autocast dtype, precision-sensitive ops to float32, and a
few multi-input ops to the widest input dtype. Child process only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

_LOWER_PRECISION = (
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "_convolution", "prelu", "addmm", "addmv", "addr",
    "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
    "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "scaled_dot_product_attention",
)  # fmt: skip
_FLOAT32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm",
    "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div",
    "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
    "prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "sum", "cross_entropy_loss",
)  # fmt: skip
_PROMOTE = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "index_put",
    "scatter_add", "tensordot", "cat", "stack",
)  # fmt: skip

_KEY = "AutocastPrivateUse1"


def _eligible(value: Any) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.is_floating_point()
        and value.dtype != torch.float64
        and value.device.type == "neuron"
    )


def _call_below_autocast(op: Any, cast: Callable[[Any], Any], args: Any, kwargs: Any) -> Any:
    # Missing from torch's stub (the ignore below).
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)  # type: ignore[attr-defined]
    with torch._C._ExcludeDispatchKeyGuard(keys):
        return op(*tree_map(cast, args), **tree_map(cast, kwargs))


def _kernel(op: Any, policy: str) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        if policy == "lower":
            dtype = torch.get_autocast_dtype("neuron")
        elif policy == "float32":
            dtype = torch.float32
        else:
            dtypes = [v.dtype for v in tree_leaves((args, kwargs)) if _eligible(v)]
            dtype = max(dtypes, key=lambda d: torch.finfo(d).bits, default=torch.float32)

        def cast(value: Any) -> Any:
            return value.to(dtype) if _eligible(value) and value.dtype != dtype else value

        return _call_below_autocast(op, cast, args, kwargs)

    return kernel


def _register_policy(lib: torch.library.Library, names: tuple[str, ...], policy: str) -> None:
    for name in names:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            if "out" in overload:
                continue
            qualified = name if overload == "default" else f"{name}.{overload}"
            lib.impl(qualified, _kernel(getattr(packet, overload), policy), _KEY)


def register(enabled: bool) -> list[object]:
    """Make `torch.autocast("neuron")` work; `enabled=False` accepts it but casts nothing."""
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, _KEY)
    if not enabled:
        return [fallthrough]
    lib = torch.library.Library("aten", "IMPL")
    _register_policy(lib, _LOWER_PRECISION, "lower")
    _register_policy(lib, _FLOAT32, "float32")
    _register_policy(lib, _PROMOTE, "promote")
    return [fallthrough, lib]
