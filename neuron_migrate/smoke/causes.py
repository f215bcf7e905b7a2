"""The likely cause of a failed smoke run, from the exception type and message. No torch."""

from __future__ import annotations

import re
from types import MappingProxyType

# (pattern on "Type: message", cause). First match wins; order from specific to general.
_CAUSES: tuple[tuple[str, str], ...] = (
    (
        r"^BadReport",
        "The script or a process it started wrote over smoke's report file, or the rank died writing it",
    ),
    (
        r"No module named '?torch_xla",
        "The script still imports `torch_xla`; run `neuron-migrate --fix` on it first",
    ),
    (
        r"device type at start of device string: xla|not linked with support for xla devices|from the 'XLA' backend|xla:\d|'xla'",
        'The script still uses the `xla` device; use `torch.device("neuron")`',
    ),
    (
        r"Expected all tensors to be on the same device|same device",
        'A tensor is on the CPU while the model is on `neuron`; move it with `.to("neuron")`',
    ),
    (
        r"Torch not compiled with CUDA|Found no NVIDIA driver|CUDA driver|cuda",
        "The script still targets CUDA; use the `neuron` device",
    ),
    (
        r"Unknown c10d backend type|Invalid backend",
        'Initialize the process group with `dist.init_process_group("neuron")`',
    ),
    (
        r"MASTER_ADDR|MASTER_PORT|environment variable (RANK|WORLD_SIZE)",
        "The script expects torchrun; run smoke with `--nproc N`",
    ),
    (
        r"float64.*not supported|dtype float64",
        "Neuron has no float64; use float32 tensors",
    ),
    (
        r"^EmulationError|emulated device|CPU emulation",
        "The CPU emulation cannot model this; check it on Trainium (`--device neuron`)",
    ),
    (
        r"^RunTimeout",
        (
            "The script was still running at the time limit; raise `--timeout` or check for a "
            "loop without an optimizer step or model call"
        ),
    ),
    (r"^SystemExit", "The script called `sys.exit` with a failure status"),
    (
        r"^(ModuleNotFoundError|ImportError)",
        "A module the script imports is not installed",
    ),
)
_COMPILED = MappingProxyType({re.compile(p, re.IGNORECASE): c for p, c in _CAUSES})


def likely_cause(exc_type: str, message: str) -> str:
    """One line saying what probably went wrong; a generic line when nothing matches."""
    text = f"{exc_type}: {message}"
    for pattern, cause in _COMPILED.items():
        if pattern.search(text):
            return cause
    return "The script raised an error; see its traceback"
