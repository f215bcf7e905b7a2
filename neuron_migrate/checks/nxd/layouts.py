"""One NxD layer's call -> the plain torch layer and its DTensor plan entry (for `layers.py`).

The layout keywords become the plan's layouts, in NxD's meaning: `gather_output=True` (NxD's default)
-> `ColwiseParallel(output_layouts=Replicate())`; `input_is_parallel=False` (its default) ->
`RowwiseParallel(input_layouts=Replicate())`; `sequence_parallel_enabled=True` (NxD's `[S, B, H]`,
sharded on `sequence_dimension`, 0 by default) -> a column layer's `input_layouts=Shard(0)`, a row
layer's `output_layouts=Shard(0)` and a norm's `SequenceParallel(sequence_dim=0,
use_local_output=True)`. A flag given as an expression (`config.sequence_parallel`) picks the layout
when the plan is built, at the end of `__init__`, where that expression is still in scope.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument, literal

_LAYERS = "neuronx_distributed.parallel_layers."
COLUMN, ROW, EMBEDDING, LAYER_NORM, RMS_NORM = "column", "row", "embedding", "layer_norm", "rms_norm"
LAYERS = {
    **{f"{_LAYERS}{m}ColumnParallelLinear": COLUMN for m in ("", "layers.")},
    **{f"{_LAYERS}{m}RowParallelLinear": ROW for m in ("", "layers.")},
    **{f"{_LAYERS}{m}ParallelEmbedding": EMBEDDING for m in ("", "layers.")},
    f"{_LAYERS}layer_norm.LayerNorm": LAYER_NORM,
    "neuronx_distributed.modules.rms_norm.RMSNorm": RMS_NORM,
}
# The torch layer, its two positional parameters (NxD's names), and the keywords it keeps.
_TORCH = {
    COLUMN: ("{nn}.Linear", ("input_size", "output_size"), ("bias", "device", "dtype")),
    ROW: ("{nn}.Linear", ("input_size", "output_size"), ("bias", "device", "dtype")),
    EMBEDDING: ("{nn}.Embedding", ("num_embeddings", "embedding_dim"), ("padding_idx", "norm_type", "device", "dtype")),
    LAYER_NORM: ("{nn}.LayerNorm", ("normalized_shape", "eps"), ("elementwise_affine", "bias", "device", "dtype")),
    RMS_NORM: ("{nn}.RMSNorm", ("normalized_shape", "eps"), ("elementwise_affine", "device", "dtype")),
}
_SEQUENCE_PARALLEL = "{SequenceParallel}(sequence_dim=%s, use_local_output=True)"


@dataclass(frozen=True)
class Converted:
    """A layer's replacement: its constructor, its plan entry ("" for none) and its `init_method`."""

    text: str  # a template: `{nn}.Linear(d, h, bias=False)`
    style: str  # a template: `{ColwiseParallel}()`, or "" when the layer is not sharded
    init: str | None = None  # the `init_method` expression, called on the full weight
    condition: str | None = None  # a norm's `sequence_parallel_enabled` expression: the entry only when true


def convert(ctx: FixContext, kind: str, call: ast.Call) -> Converted | None:
    """The replacement of one NxD layer call of `kind`; None when an argument cannot be written."""
    cls, positional, kept = _TORCH[kind]
    values = [argument(call, name, index) for index, name in enumerate(positional)]
    if values[0] is None or (values[1] is None and kind in (COLUMN, ROW, EMBEDDING)):
        return None
    parts = [ctx.segment(v) for v in values if v is not None]
    if kind in (LAYER_NORM, RMS_NORM) and values[1] is not None and len(call.args) < 2:
        parts[-1] = f"eps={parts[-1]}"  # given by keyword: torch's second parameter is eps too
    parts += [f"{k.arg}={ctx.segment(k.value)}" for k in call.keywords if k.arg in kept]
    style = _style(ctx, kind, call)
    if style is None:
        return None
    init = argument(call, "init_method", -1)
    init_text = None if init is None or literal(init) is None else ctx.segment(init)
    sequence = _flag(ctx, call, "sequence_parallel_enabled", False)
    condition = sequence if kind in (LAYER_NORM, RMS_NORM) and isinstance(sequence, str) else None
    return Converted(f"{cls}({', '.join(parts)})", style, init_text, condition)


def _flag(ctx: FixContext, call: ast.Call, name: str, default: bool) -> bool | str | None:
    """A boolean keyword: its literal value, its expression's text (`cfg.sp`), or None if unreadable."""
    node = argument(call, name, -1)
    if node is None:
        return default
    value = literal(node)
    if isinstance(value, bool):
        return value
    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    return ctx.segment(node) if isinstance(chain, ast.Name) else None


def _choose(flag: bool | str, when: str, otherwise: str) -> str:
    """`when` or `otherwise` as the flag says, or a conditional expression of both."""
    if isinstance(flag, bool):
        return when if flag else otherwise
    return f"{when} if {flag} else {otherwise}"


def _style(ctx: FixContext, kind: str, call: ast.Call) -> str | None:
    """The plan entry's template for the layer ("" when it stays replicated), or None."""
    sequence = _flag(ctx, call, "sequence_parallel_enabled", False)
    dim_node = argument(call, "sequence_dimension", -1)
    dim = ctx.segment(dim_node) if dim_node is not None and literal(dim_node) is not None else "0"
    if sequence is None:
        return None
    if kind in (LAYER_NORM, RMS_NORM):
        return "" if sequence is False else _SEQUENCE_PARALLEL % dim  # an expression: `Converted.condition`
    if kind == EMBEDDING:
        across = _flag(ctx, call, "shard_across_embedding", False)
        if across is None or not isinstance(across, bool):
            return None
        if across:
            return "{ColwiseParallel}(output_layouts={Replicate}())"
        return "{RowwiseParallel}(input_layouts={Replicate}())"
    layouts = []
    shard = f"{{Shard}}({dim})"
    if kind == COLUMN:
        gather = _flag(ctx, call, "gather_output", True)
        if gather is None:
            return None
        if sequence is not False:
            layouts.append("input_layouts=" + _choose(sequence, shard, "{Replicate}()"))
        if gather is not False:
            layouts.append("output_layouts=" + _choose(gather, "{Replicate}()", "{Shard}(-1)"))
        return f"{{ColwiseParallel}}({', '.join(layouts)})"
    parallel = _flag(ctx, call, "input_is_parallel", False)
    if parallel is None:
        return None
    if parallel is not True:
        layouts.append("input_layouts=" + _choose(parallel, "{Shard}(-1)", "{Replicate}()"))
    if sequence is not False:
        layouts.append("output_layouts=" + _choose(sequence, shard, "{Replicate}()"))
    return f"{{RowwiseParallel}}({', '.join(layouts)})"
