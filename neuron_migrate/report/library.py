"""The report's library-dependency section: which files depend on NeuronX Distributed (NxD, and
the XLA-era `torch_neuronx` inference API beside it), grouped by NxD concept, from the findings of
the NxD rules (NM320-NM340) and the requirement rule (NM624).

It also tells inference-only files apart, so that the work order puts what blocks a training run
first: an inference API (`ModelBuilder`, `torch_neuronx.trace`) stops no training script.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from neuron_migrate.model import Finding
from neuron_migrate.report.model import Library, LibraryConcept, LibraryFile

NAME = "NeuronX Distributed (NxD) and the torch_neuronx trace API"
# NxD concepts in the order a training port meets them: key -> (label, the rules that find it).
CONCEPTS: Mapping[str, tuple[str, tuple[str, ...]]] = MappingProxyType(
    {
        "mesh": ("mesh and parallel state", ("NM320",)),
        "tp-layers": ("tensor-parallel layers", ("NM321",)),
        "fused": ("fused QKV projections", ("NM322",)),
        "tp-regions": ("tensor-parallel regions (mappings)", ("NM324",)),
        "sp": ("sequence parallelism", ("NM323", "NM340")),
        "loss": ("parallel cross-entropy", ("NM325",)),
        "zero1": ("ZeRO-1 optimizer", ("NM326",)),
        "checkpoints": ("checkpoints", ("NM327",)),
        "utilities": ("seeds, clipping, device moves", ("NM333",)),
        "activation-checkpoint": ("activation checkpointing", ("NM334",)),
        "trainer": ("trainer config (initialize_parallel_model)", ("NM328",)),
        "pipeline": ("pipeline parallelism", ("NM329",)),
        "moe": ("mixture of experts", ("NM330",)),
        "kernels": ("NKI kernels", ("NM331",)),
        "lightning": ("Lightning integration", ("NM332",)),
        "lora": ("LoRA", ("NM335",)),
        "other": ("other NxD APIs", ("NM337",)),
        "imports": ("imports", ("NM338",)),
        "requirements": ("package requirements", ("NM624",)),
        "inference": ("NxD inference APIs (ModelBuilder, trace)", ("NM336",)),
        "trace": ("torch_neuronx trace API (XLA-era inference)", ("NM339",)),
    }
)
INFERENCE = frozenset({"inference", "trace"})
_CONCEPT_OF = {code: key for key, (_, codes) in CONCEPTS.items() for code in codes}
INFERENCE_CODES = frozenset(code for key in INFERENCE for code in CONCEPTS[key][1])
# Rules whose findings belong to a training run: the execution model (NM2) and distributed
# training (NM3), less the inference APIs and the NxD import (which goes with its uses).
_TRAINING_BANDS = ("NM2", "NM3")
_NEUTRAL = frozenset({"NM338"})


def concept_of(code: str) -> str | None:
    """The NxD concept of a finding of rule `code`; None when the rule is not an NxD one."""
    return _CONCEPT_OF.get(code)


def inference_only(findings: Sequence[Finding]) -> bool:
    """Whether a file's only migration work that touches a run is inference APIs: it has an
    inference finding and no finding of the execution-model or distributed rules besides them."""
    codes = {f.code for f in findings}
    if not codes & INFERENCE_CODES:
        return False
    return not any(c.startswith(_TRAINING_BANDS) for c in codes - INFERENCE_CODES - _NEUTRAL)


def inference_files(own: Mapping[str, bool], imported_by: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The inference-only files: those whose own findings say so (`own`), and those that only
    inference-only files import (`imported_by`: the local files importing each file), to a fixed
    point. No training program reaches such a file, so it blocks no training run."""
    found = {path for path, yes in own.items() if yes}
    grown = True
    while grown:
        grown = False
        for path, users in imported_by.items():
            if path in own and path not in found and users and users <= found:
                found.add(path)
                grown = True
    return frozenset(found)


def build_library(
    findings: Sequence[Finding],
    manual: Callable[[Finding], bool],
    minutes: Callable[[Finding], int],
    inference: frozenset[str] = frozenset(),
) -> Library | None:
    """The NxD section for `findings` (sorted); None when no file depends on NxD. `manual`:
    no fix resolves the finding; `minutes`: its typical cost; `inference`: the inference-only
    files, listed after the training files."""
    per_file: dict[str, dict[str, int]] = {}
    left: dict[str, int] = {}
    cost: dict[str, int] = {}
    totals: dict[str, list[int]] = {}  # concept -> [findings, left, minutes]
    files_of: dict[str, set[str]] = {}
    for finding in findings:
        key = concept_of(finding.code)
        if key is None:
            continue
        per_file.setdefault(finding.path, {}).setdefault(key, 0)
        per_file[finding.path][key] += 1
        is_manual = manual(finding)
        left[finding.path] = left.get(finding.path, 0) + is_manual
        cost[finding.path] = cost.get(finding.path, 0) + minutes(finding)
        row = totals.setdefault(key, [0, 0, 0])
        row[0] += 1
        row[1] += is_manual
        row[2] += minutes(finding)
        files_of.setdefault(key, set()).add(finding.path)
    if not per_file:
        return None
    order = list(CONCEPTS)
    concepts = tuple(
        LibraryConcept(key, CONCEPTS[key][0], CONCEPTS[key][1], key in INFERENCE, len(files_of[key]), *totals[key])
        for key in order
        if key in totals
    )
    files = tuple(
        LibraryFile(path, tuple((k, uses[k]) for k in order if k in uses), left[path], cost[path])
        for path, uses in sorted(per_file.items(), key=lambda kv: (kv[0] in inference, kv[0]))
    )
    return Library(NAME, concepts, files)
