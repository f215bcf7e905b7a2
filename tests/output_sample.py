"""A fixed, hand-built set of results that every renderer's snapshot test renders.

It covers: a line with non-ASCII text before a finding, safe and unsafe fixes with several
edits (one an insertion), every severity, a tool finding on an unparseable file, a smoke finding
whose code the catalogue lacks, a notebook cell, an applied fix, and a clean file.
"""

from __future__ import annotations

from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.model import (
    FileResult,
    Finding,
    Fix,
    Position,
    Safety,
    Severity,
    TextEdit,
)

DOCS = "https://github.com/neuron-migrate/neuron-migrate/blob/main/rules/README.md#"

TRAIN = (
    "import torch_xla.core.xla_model as xm\n"
    "import os\n"
    "\n"
    'label = "café ünïcode"; device = xm.xla_device()\n'
    'os.environ["PJRT_DEVICE"] = "NEURON"\n'
    "for step in range(3):\n"
    "    xm.mark_step()\n"
)
LAUNCH = 'import os\nos.environ["NEURON_CC_FLAGS"] = "--model-type=transformer"\nxm.optimizer_step(opt)\n'
FIXED_BEFORE = "import torch_xla\ntorch_xla.sync()\nrun()\n"
FIXED_AFTER = "import torch_xla\nrun()\n"
NOTEBOOK = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'


def span(source: str, needle: str, line: int) -> tuple[Position, Position]:
    """Start and exclusive end (code-point columns) of `needle` on 1-based `line` of `source`."""
    text = source.splitlines()[line - 1]
    column = text.index(needle) + 1
    return Position(line, column), Position(line, column + len(needle))


def finding(
    path: str, code: str, name: str, message: str, where: tuple[Position, Position], **extra: object
) -> Finding:
    severity = extra.pop("severity", Severity.ERROR)
    return Finding(
        path=path,
        code=code,
        name=name,
        message=message,
        severity=severity,  # type: ignore[arg-type]
        start=where[0],
        end=where[1],
        url=DOCS + code.lower(),
        **extra,
    )  # type: ignore[arg-type]


def train_findings(path: str = "src/train.py") -> tuple[Finding, ...]:
    device = span(TRAIN, "xm.xla_device()", 4)
    env = span(TRAIN, 'os.environ["PJRT_DEVICE"] = "NEURON"', 5)
    step = span(TRAIN, "xm.mark_step()", 7)
    return (
        finding(
            path,
            "NM601",
            "xla_import",
            "Remove `import torch_xla.core.xla_model`; TorchNeuron does not use torch_xla",
            span(TRAIN, "import torch_xla.core.xla_model as xm", 1),
            snippet="import torch_xla.core.xla_model as xm",
        ),
        finding(
            path,
            "NM101",
            "xla_device_call",
            'Replace `xm.xla_device()` with `torch.device("neuron")`',
            device,
            snippet="xm.xla_device()",
            fix=Fix(
                Safety.SAFE,
                "Rewrite `xm.xla_device`",
                (
                    TextEdit(Position(3, 1), Position(3, 1), "import torch\n"),
                    TextEdit(device[0], device[1], 'torch.device("neuron")'),
                ),
            ),
        ),
        finding(
            path,
            "NM603",
            "xla_env_var",
            "Remove `PJRT_DEVICE`; TorchNeuron does not read it",
            env,
            severity=Severity.WARNING,
            snippet='os.environ["PJRT_DEVICE"] = "NEURON"',
            fix=Fix(Safety.SAFE, "Remove the assignment", (TextEdit(Position(5, 1), Position(6, 1), ""),)),
        ),
        finding(
            path,
            "NM201",
            "xla_mark_step_call",
            "Remove `xm.mark_step()`; TorchNeuron executes eagerly",
            step,
            snippet="xm.mark_step()",
            fix=Fix(Safety.SAFE, "Rewrite `xm.mark_step`", (TextEdit(step[0], step[1], "pass"),)),
        ),
    )


def launch_findings(path: str = "src/launch.py") -> tuple[Finding, ...]:
    flags = span(LAUNCH, 'os.environ["NEURON_CC_FLAGS"] = "--model-type=transformer"', 2)
    step = span(LAUNCH, "xm.optimizer_step(opt)", 3)
    return (
        finding(
            path,
            "NM604",
            "neuron_cc_flags_env",
            "Check `NEURON_CC_FLAGS`; TorchNeuron compiles only under `torch.compile`",
            flags,
            severity=Severity.INFO,
            snippet='os.environ["NEURON_CC_FLAGS"] = "--model-type=transformer"',
        ),
        finding(
            path,
            "NM204",
            "xla_optimizer_step",
            "Replace `xm.optimizer_step(opt)` with `opt.step()`; wrap the model in DDP",
            step,
            snippet="xm.optimizer_step(opt)",
            fix=Fix(Safety.UNSAFE, "Call `opt.step()`", (TextEdit(step[0], step[1], "opt.step()"),)),
        ),
    )


def sample_results() -> list[FileResult]:
    broken = finding(
        "broken.py",
        "NM901",
        "syntax_error",
        "Fix the syntax error before migrating: invalid syntax",
        (Position(1, 7), Position(1, 7)),
        category="tool",
    )
    smoke = Finding(
        path="smoke/run.py",
        code="NM701",
        name="cpu_fallback",
        message="Keep `x.double()` off the `neuron` device; the op fell back to the CPU",
        severity=Severity.WARNING,
        start=Position(1, 5),
        end=Position(1, 15),
        category="smoke",
        snippet="x.double()",
    )
    cell = finding(
        "notebooks/explore.ipynb",
        "NM101",
        "xla_device_call",
        'Replace `xm.xla_device()` with `torch.device("neuron")`',
        (Position(2, 10), Position(2, 25)),
        cell=2,
        snippet="xm.xla_device()",
    )
    applied = finding(
        "src/fixed.py",
        "NM201",
        "xla_mark_step_call",
        "Remove `torch_xla.sync()`; TorchNeuron executes eagerly",
        span(FIXED_BEFORE, "torch_xla.sync()", 2),
        snippet="torch_xla.sync()",
    )
    return [
        FileResult("broken.py", (broken,), source="def f(:\n"),
        FileResult("clean.py", (), source="print('ok')\n"),
        FileResult("notebooks/explore.ipynb", (cell,), source=NOTEBOOK),
        FileResult("smoke/run.py", (smoke,), source="y = x.double()\n"),
        FileResult("src/fixed.py", (), fixed=(applied,), source=FIXED_BEFORE, fixed_source=FIXED_AFTER),
        FileResult("src/launch.py", launch_findings(), source=LAUNCH),
        FileResult("src/train.py", train_findings(), source=TRAIN),
    ]


def sample_rules() -> tuple[RuleSpec, ...]:
    """Two hand-written catalogue entries; the other codes' SARIF rules come from the findings."""
    return (
        RuleSpec(
            code="NM101",
            name="xla_device_call",
            message='Replace `{old}()` with `torch.device("neuron")`',
            severity=Severity.ERROR,
            safety=Safety.SAFE,
            doc={
                "what": "Checks for torch_xla device acquisition.",
                "why": "TorchNeuron is a native device named `neuron`.",
                "references": ["https://example.org/torchneuron"],
            },
        ),
        RuleSpec(
            code="NM204",
            name="xla_optimizer_step",
            message="Replace `{old}(opt)` with `opt.step()`",
            severity=Severity.ERROR,
            safety=Safety.UNSAFE,
            detector="optimizer_step",
            doc={
                "what": "Checks for `xm.optimizer_step()`.",
                "why": "It all-reduces gradients, which DDP now does.",
                "fix_safety": "A multi-process run also needs DDP.",
            },
        ),
    )
