"""NeuronX Distributed (NM320-NM339): NxD training code to native PyTorch.

NxD (`neuronx_distributed`) is built on torch_xla; its native counterparts are a `DeviceMesh`,
DTensor tensor parallelism (`parallelize_module`), `loss_parallel`, `ZeroRedundancyOptimizer` and
`torch.distributed.checkpoint`. Each concept has its rule (`rules/NM320.toml` ...), with the effort
tier as rule data. The concept's Python is split by what it rewrites: `imports` (the NxD imports
and the catch-all), and one module per mechanism; this package's tables join them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.checks.nxd.calls import clip_grad_norm, divide, manual_seed, move_model_to_device, zero1_optimizer
from neuron_migrate.checks.nxd.checkpoint import load_checkpoint, save_checkpoint
from neuron_migrate.checks.nxd.imports import REMOVE_NXD_IMPORT, nxd_import, nxd_other_api, remove_nxd_import
from neuron_migrate.checks.nxd.layers import tp_layer
from neuron_migrate.checks.nxd.loss import parallel_cross_entropy
from neuron_migrate.checks.nxd.mesh import mesh_getter, mesh_init, src_rank
from neuron_migrate.checks.nxd.sequence import (
    delete_call,
    delete_grad_sum,
    sequence_gather,
    sequence_grad_sum,
    sequence_scatter,
)
from neuron_migrate.checks.toolkit import DetectorFn, FixFn

DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "nxd_import": ((ast.Import, ast.ImportFrom), nxd_import),
        "nxd_other_api": ((ast.Name, ast.Attribute), nxd_other_api),
        "nxd_sequence_grad_sum": ((ast.FunctionDef, ast.For), sequence_grad_sum),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        REMOVE_NXD_IMPORT: remove_nxd_import,
        "nxd_mesh_init": mesh_init,
        "nxd_mesh_getter": mesh_getter,
        "nxd_src_rank": src_rank,
        "nxd_tp_layer": tp_layer,
        "nxd_parallel_cross_entropy": parallel_cross_entropy,
        "nxd_sequence_scatter": sequence_scatter,
        "nxd_sequence_gather": sequence_gather,
        "nxd_delete_grad_sum": delete_grad_sum,
        "nxd_delete_call": delete_call,
        "nxd_zero1_optimizer": zero1_optimizer,
        "nxd_manual_seed": manual_seed,
        "nxd_clip_grad_norm": clip_grad_norm,
        "nxd_move_model_to_device": move_model_to_device,
        "nxd_divide": divide,
        "nxd_save_checkpoint": save_checkpoint,
        "nxd_load_checkpoint": load_checkpoint,
    }
)
