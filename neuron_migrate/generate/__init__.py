"""Every generated file of the repository, and what writes them all: `neuron-migrate dev generate`
(as Ruff's `cargo dev generate-all`). tests/test_generated.py fails while one is stale.

A generated file is written whole, or is a named block inside a hand-written file (the README's
list of output formats, CONTRIBUTING's table of concepts), between a `<!-- generated: NAME ... -->` line and `<!-- end: NAME -->`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

COMMAND = "neuron-migrate dev generate"


@dataclass(frozen=True)
class Generated:
    """One generated file, or one generated block of a hand-written file."""

    path: str  # relative to the repository root, with forward slashes
    render: Callable[[], str]  # the file's text, or the block's lines between the markers
    block: str = ""  # the block's name; "" when the whole file is generated


class GenerateError(Exception):
    """A hand-written file lost the markers of its generated block, or is not a checkout."""


def _rules_readme() -> str:
    from neuron_migrate import docs

    return docs.render_rules("markdown")


def _guide() -> str:
    from neuron_migrate import guide

    return guide.render()


def _api_coverage() -> str:
    from neuron_migrate import api_coverage

    return api_coverage.render_api_coverage()


def _sources() -> str:
    from neuron_migrate import sources

    return sources.render_sources()


def _ops(version: str) -> Callable[[], str]:
    def render() -> str:
        from neuron_migrate.generate import ops

        return ops.render(version)

    return render


def _output_formats() -> str:
    """The README's list of output formats, from the table `--output-format` reads."""
    from neuron_migrate.output_formats import OUTPUT_FORMATS

    rows = ["| format | what it is | saved as | fixes as edits |", "|---|---|---|---|"]
    rows += [
        f"| `{f.name}`{''.join(f' (also `{alias}`)' for alias in f.aliases)} | {f.summary} | `report{f.suffix}` "
        f"| {'yes' if f.carries_fixes else 'no'} |"
        for f in OUTPUT_FORMATS
    ]
    return "\n".join(rows) + "\n"


# Where the Python of the concepts that have no `checks/<concept>.py` lives.
_OTHER_HOMES = {
    "packaging": "`engine/formats/textfiles.py`",
    "shell": "`engine/formats/textfiles.py`",
    "smoke": "`smoke/`",
    "engine": "`engine/`",
}


def _concepts() -> str:
    """CONTRIBUTING's table of concepts: each concept's rules (by code) and its Python."""
    from neuron_migrate.catalogue import CONCEPTS, MODULE_CONCEPTS, load_catalogue

    checks = Path(__file__).resolve().parents[1] / "checks"
    rows = ["| Concept | Rules | Python |", "|---|---|---|"]
    for concept in CONCEPTS:
        codes = [spec.code for spec in load_catalogue() if spec.concept == concept and not spec.retired]
        if concept in MODULE_CONCEPTS:
            halves = [
                f"checks/{concept}/" if (checks / concept).is_dir() else f"checks/{concept}.py",
                *([f"{concept}_cst.py"] if (checks / f"{concept}_cst.py").is_file() else []),
            ]
            home = ", ".join(f"`{half}`" for half in halves)
        else:
            home = _OTHER_HOMES[concept]
        rows.append(f"| `{concept}` | {_ranges(codes)} | {home} |")
    return "\n".join(rows) + "\n"


def _ranges(codes: list[str]) -> str:
    """`NM101, NM102, NM103, NM105` -> `NM101-NM103, NM105`."""
    numbers = sorted(int(code[2:]) for code in codes)
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"NM{run[0]}" + (f"-NM{run[-1]}" if len(run) > 1 else "") for run in runs)


GENERATED: tuple[Generated, ...] = (
    Generated("rules/README.md", _rules_readme),
    Generated("docs/migration-guide.md", _guide),
    Generated("docs/api-coverage.md", _api_coverage),
    Generated("docs/sources.md", _sources),
    Generated("rules/compat/2.13/ops.toml", _ops("2.13")),
    Generated("rules/compat/2.14/ops.toml", _ops("2.14")),
    Generated("README.md", _output_formats, block="output-formats"),
    Generated("CONTRIBUTING.md", _concepts, block="concepts"),
)


def begin_marker(block: str) -> str:
    return f"<!-- generated: {block} (`{COMMAND}`; do not edit) -->"


def end_marker(block: str) -> str:
    return f"<!-- end: {block} -->"


def expected(entry: Generated, current: str | None) -> str:
    """What the file at `entry.path` must hold, given what it holds now (`None`: no file)."""
    if not entry.block:
        return entry.render()
    begin, end = begin_marker(entry.block), end_marker(entry.block)
    if current is None or current.count(begin) != 1 or current.count(end) != 1:
        raise GenerateError(f"{entry.path}: needs one `{begin}` line and one `{end}` line around its block")
    head, rest = current.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{entry.render()}{end}{tail}"


def checkout_root() -> Path:
    """The source checkout this package runs from: the folder holding `pyproject.toml`, `rules/`
    and this package. An installed wheel has none of them beside it."""
    root = Path(__file__).resolve().parents[2]
    if not ((root / "pyproject.toml").is_file() and (root / "rules").is_dir() and (root / "docs").is_dir()):
        raise GenerateError(
            f"{COMMAND} writes into a source checkout of neuron-migrate; this one runs from {root.parent}"
        )
    return root


def stale(root: Path) -> list[str]:
    """The generated files under `root` that differ from what they must hold, in table order."""
    return [entry.path for entry, _ in _changes(root)]


def write(root: Path) -> list[str]:
    """Write every stale generated file under `root`; the paths written, in table order."""
    changes = _changes(root)  # every block's markers checked before the first write
    for entry, text in changes:
        path = root / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    return [entry.path for entry, _ in changes]


def _changes(root: Path) -> list[tuple[Generated, str]]:
    """Each stale entry with the text its file must hold."""
    changes = []
    for entry in GENERATED:
        current = _read(root / entry.path)
        text = expected(entry, current)
        if text != current:
            changes.append((entry, text))
    return changes


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
