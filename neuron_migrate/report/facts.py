"""What the report reads from a file's `ast` besides the findings: the modules it imports (for
the local import graph that orders the work) and whether it holds TorchNeuron code the tool
recognises as migrated (`torch.device("neuron")`, `.to("neuron")`, `device="neuron"`,
`torch.neuron`, `import torch_neuronx`). The word `neuron` in a comment, a docstring or a name
such as `neurons` is not such code.

Facts are kept in the result cache's folder (`report-facts.idx`), stamped as the result cache
stamps a file (size, mtime_ns and content digest, the "racy git" rule included), so a warm report
reads no file it has read before.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import marshal
import os
import warnings
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.analysis.source import SourceText
from neuron_migrate.engine.budget import over_budget
from neuron_migrate.run.cache import read_stamped, tree_stamp

MAX_BYTES = 4 * 1024 * 1024
_MAGIC = b"NMFACTS1"
# Calls whose first argument is a device (or device type): `torch.device("neuron")`, `.to("neuron")`.
_DEVICE_CALLS = frozenset({"device", "to", "autocast", "GradScaler", "Generator", "set_device", "device_count"})


@dataclass(frozen=True)
class Facts:
    imports: tuple[tuple[int, str, tuple[str, ...]], ...]  # (level, module, names) per import
    neuron: bool  # holds TorchNeuron code the tool writes


NOTHING = Facts((), False)


def _neuron_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "neuron" or node.value.startswith("neuron:"))
    )


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def facts_of(source: str) -> Facts:
    """The imports of `source` and whether it holds recognised `neuron` code (its `ast`);
    nothing for a file too costly to parse (the check's NM904)."""
    if over_budget(source, fixing=False) is not None:
        return NOTHING
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NOTHING
    return facts_of_nodes(fact_nodes(tree, source))


_BODIES = ("body", "handlers", "orelse", "finalbody", "cases")  # where statements hold statements, in `_fields` order


def statements(tree: ast.AST) -> list[ast.AST]:
    """The statements of `tree` (with the `except` handlers and `case`s that hold some) in
    `ast.walk`'s order: an expression holds no statement, so pruning them keeps that order."""
    found = [tree]
    index = 0
    while index < len(found):
        for name in _BODIES:
            block = getattr(found[index], name, None)
            if type(block) is list:
                found.extend(block)
        index += 1
    return found


def fact_nodes(tree: ast.AST, source: str) -> list[ast.AST]:
    """The nodes of the module `tree` (parsed from `source`) that can give it facts: every
    statement, in `ast.walk`'s order (each import is one), then the expressions of the statements
    whose lines spell `neuron`, since a `neuron` fact outside an import is a string or an
    attribute that spells it. (A string that makes the word only by escapes or by implicit
    concatenation is not code the tool wrote.)"""
    found = statements(tree)
    lines = _lines_with(source, "neuron")
    if not lines:
        return found
    nodes = list(found)
    for stmt in found[1:]:
        if not isinstance(stmt, ast.match_case):  # a `case` has no position: its pattern is read
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])  # type: ignore[attr-defined]
            index = bisect_left(lines, first)
            if index == len(lines) or lines[index] > (stmt.end_lineno or stmt.lineno):  # type: ignore[attr-defined]
                continue
        for name, value in ast.iter_fields(stmt):
            if name not in _BODIES:
                for part in value if isinstance(value, list) else (value,):
                    if isinstance(part, ast.AST):
                        nodes.extend(ast.walk(part))
    return nodes


def _lines_with(source: str, word: str) -> list[int]:
    """The lines of `source` (1-based, as `ast` counts them) that contain `word`, in order."""
    lines: list[int] = []
    at = source.find(word)
    src = SourceText(source)
    while at >= 0:
        line = src.position(at).line
        lines.append(line)
        at = source.find(word, src.line_start(line + 1))
    return lines


def facts_of_nodes(nodes: Iterable[ast.AST]) -> Facts:
    """`facts_of` a module from its nodes: all of them in `ast.walk`'s order, or `fact_nodes`
    (from the check's tree, so the report parses no file twice)."""
    imports: list[tuple[int, str, tuple[str, ...]]] = []
    neuron = False
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((0, alias.name, ()))
                neuron = neuron or alias.name.split(".")[0] == "torch_neuronx" or alias.name.startswith("torch.neuron")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            imports.append((node.level, module, tuple(a.name for a in node.names)))
            if node.level == 0 and (module.split(".")[0] == "torch_neuronx" or module.startswith("torch.neuron")):
                neuron = True
            if node.level == 0 and module == "torch" and any(a.name == "neuron" for a in node.names):
                neuron = True
        elif not neuron and isinstance(node, ast.Call):
            callee = _dotted(node.func).rsplit(".", 1)[-1]
            args = [*(node.args[:1] if callee in _DEVICE_CALLS else ())]
            args += [k.value for k in node.keywords if k.arg in ("device", "device_type")]
            neuron = any(_neuron_string(a) for a in args)
        elif not neuron and isinstance(node, ast.Attribute):
            neuron = _dotted(node).startswith("torch.neuron")
    return Facts(tuple(imports), neuron)


@functools.cache
def _stamp() -> str:
    """This module's code: facts written by another version are not read."""
    return tree_stamp(Path(__file__).resolve().parent, ".py")


class FactsCache:
    """`report-facts.idx` in the cache folder: display path -> stamp and facts."""

    def __init__(self, folder: Path | None) -> None:
        self.path = folder / "report-facts.idx" if folder is not None else None
        self.entries: dict[str, tuple[int, int, str, bool, object]] = {}
        self.dirty = False
        if self.path is not None:
            try:
                data = self.path.read_bytes()
                if data.startswith(_MAGIC):
                    payload = data[len(_MAGIC) + 16 :]
                    if hashlib.blake2b(payload, digest_size=16).digest() == data[len(_MAGIC) : len(_MAGIC) + 16]:
                        stamp, entries = marshal.loads(payload)
                        if stamp == _stamp():
                            self.entries = entries
            except (OSError, ValueError, EOFError, TypeError):
                self.entries = {}

    def get(self, path: str, display: str) -> Facts:
        entry = self.entries.get(display)
        try:
            info = os.stat(path)
        except OSError:
            return NOTHING
        if entry is not None and entry[0] == info.st_mtime_ns and entry[1] == info.st_size and entry[3]:
            return _decode(entry[4])
        read = read_stamped(Path(path), MAX_BYTES)
        if read is None:
            return NOTHING
        data, stamp = read
        if entry is not None and entry[2] == stamp.digest:
            facts = _decode(entry[4])
        else:
            facts = facts_of(data.decode("utf-8", errors="replace"))
        new = (stamp.mtime_ns, stamp.size, stamp.digest, stamp.trusted, _encode(facts))
        if new != entry:
            self.entries[display] = new
            self.dirty = True
        return facts

    def put(self, display: str, stamp: Any, facts: Facts) -> None:
        """Facts learnt from the bytes `stamp` (a `run.cache.Stamp`) describes."""
        new = (stamp.mtime_ns, stamp.size, stamp.digest, stamp.trusted, _encode(facts))
        if new != self.entries.get(display):
            self.entries[display] = new
            self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from neuron_migrate.engine.writeback import write_atomic

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            payload = marshal.dumps((_stamp(), self.entries))
            write_atomic(self.path, _MAGIC + hashlib.blake2b(payload, digest_size=16).digest() + payload)
        except OSError:
            return  # the next report is slower, not wrong


def _encode(facts: Facts) -> object:
    return (facts.imports, facts.neuron)


def _decode(value: Any) -> Facts:
    imports, neuron = value
    return Facts(tuple((level, module, tuple(names)) for level, module, names in imports), bool(neuron))


def gather(
    files: Iterable[tuple[str, str]], folder: Path | None, known: Mapping[str, tuple[Facts, Any]] | None = None
) -> dict[str, Facts]:
    """Facts of each (path, display) that is a Python file, read through the facts cache;
    `known` holds (facts, stamp) already learnt by display path (from the check's own reading)."""
    cache = FactsCache(folder)
    for display, (facts, stamp) in (known or {}).items():
        cache.put(display, stamp, facts)
    found = {display: cache.get(path, display) for path, display in files if display.endswith((".py", ".pyi"))}
    cache.save()
    return found


# -- the local import graph -----------------------------------------------------------------


def _module_names(display: str) -> tuple[str, tuple[str, ...]]:
    """(the file's package, every dotted name it may be imported as: `a.b.c`, `b.c`, `c`)."""
    parts = display.removesuffix(".pyi").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
        package = parts
    else:
        package = parts[:-1]
    names = tuple(".".join(parts[i:]) for i in range(len(parts)) if parts[i:])
    return ".".join(package), names


def importers(facts: Mapping[str, Facts], wanted: Iterable[str] | None = None) -> dict[str, frozenset[str]]:
    """For each file (of `wanted`, default all), the local files that import it (directly), from
    their import statements.

    An absolute import names a local file when its whole path spells it, or a suffix of the path
    does and only one file has that suffix (`import utils.io` matches `src/pkg/utils/io.py`); a
    relative import is resolved from the importing file's package. `from pkg import mod` counts
    for `pkg/mod.py` when it exists, else for `pkg/__init__.py`.
    """
    owners: dict[str, str | None] = {}
    by_full: dict[str, str] = {}
    packages: dict[str, list[str]] = {}
    for display in facts:
        package, names = _module_names(display)
        packages[display] = package.split(".") if package else []
        if names:
            by_full[names[0]] = display
        for name in names:
            owners[name] = None if name in owners else display  # None: more than one file
    heads = {name.split(".", 1)[0] for name in owners}
    found: dict[str, set[str]] = {display: set() for display in (facts if wanted is None else wanted)}
    for display, fact in facts.items():
        for level, module, names in fact.imports:
            if level:
                base = packages[display]
                base = base[: len(base) - (level - 1)] if level > 1 else base
                module = ".".join([*base, module] if module else base)
                table: Mapping[str, str | None] = by_full
            else:
                if module.split(".", 1)[0] not in heads:
                    continue  # the standard library, torch, any package not in the tree
                table = owners
            hits = 0
            for name in names:
                target = table.get(f"{module}.{name}" if module else name) or (
                    by_full.get(f"{module}.{name}") if table is owners else None
                )
                if target:
                    hits += 1
                    if target != display and target in found:
                        found[target].add(display)
            if (module and hits < len(names)) or not names:
                target = table.get(module) or (by_full.get(module) if table is owners else None)
                if target and target != display and target in found:
                    found[target].add(display)
    return {display: frozenset(files) for display, files in found.items()}


def import_order(work: Sequence[str], graph: Mapping[str, frozenset[str]]) -> list[str]:
    """`work` with files imported by more local files first (then by path)."""
    return sorted(work, key=lambda display: (-len(graph.get(display, ())), display))


__all__ = ["Facts", "FactsCache", "facts_of", "facts_of_nodes", "gather", "import_order", "importers"]
