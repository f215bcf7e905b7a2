#!/usr/bin/env python3
"""Write rules/signatures.toml: the parameters of the torch_xla APIs the rules map, and of those real code calls.

The signatures are read statically, with `ast`, from the `.py` files inside torch_xla wheels
(torch_xla is never imported; it needs a TPU runtime to import). Download the wheels first:

    pip download torch_xla==2.5.0 --no-deps -d /tmp/scripts-wheels
    pip download torch_xla==2.8.0 --no-deps -d /tmp/scripts-wheels
    python scripts/signatures.py /tmp/scripts-wheels/torch_xla-2.5.0-*.whl /tmp/scripts-wheels/torch_xla-2.8.0-*.whl \
        --corpus /path/to/pytorch-xla-checkout --corpus /path/to/aws-neuron-samples

The table holds every API a rule's `[[map]]` entry names (`old`, not `prefix`), plus each public
torch_xla symbol of the modules users import (xla_model, runtime, debug.metrics, debug.profiler,
test.test_utils, utils.utils, amp, distributed.*, experimental.*) that the `--corpus` folders
call, with the number of call sites seen. `tests/test_signatures.py` checks each mapped API's
declared parameters (`params` in its `[[map]]` entry) against this table, and
`docs/api-coverage.md` (`neuron-migrate rules --format api-coverage`) lists every symbol with its
action.

Parameters are written as in a signature: `name`, `name=default`, `*args`, `**kwargs`, `*` (the
keyword-only marker) and `/` (the positional-only marker); a class's are its `__init__`'s, less
`self`. `...` alone means the signature cannot be read statically (a C extension, an inherited
`__init__`).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.catalogue import toml_module

ROOT = Path(__file__).resolve().parent.parent
# The modules a user's code imports torch_xla's public API from (the list).
PUBLIC = re.compile(
    r"^torch_xla(\.core\.xla_model|\.runtime|\.debug\.metrics|\.debug\.profiler|\.test\.test_utils|\.utils\.utils"
    r"|\.utils\.checkpoint|\.utils\.serialization|\.amp(\..*)?|\.distributed(\..*)?|\.experimental(\..*)?"
    r"|\.core\.functions)?\.[A-Za-z_][A-Za-z0-9_]*$"
)
UNKNOWN = ("...",)


@dataclass(frozen=True)
class Symbol:
    kind: str  # "function", "class", "constant" or "module"
    params: tuple[str, ...]
    inherits: str = ""  # a class whose `__init__` is another library's (`torch.optim.Adam`)


def _default(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else "..."


def _params(args: ast.arguments, drop_first: bool = False) -> tuple[str, ...]:
    out: list[str] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if drop_first and index == 0:
            continue
        out.append(arg.arg if default is None else f"{arg.arg}={_default(default)}")
        if args.posonlyargs and index == len(args.posonlyargs) - 1:
            out.append("/")
    if args.vararg:
        out.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        out.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append(arg.arg if kw_default is None else f"{arg.arg}={_default(kw_default)}")
    if args.kwarg:
        out.append(f"**{args.kwarg.arg}")
    return tuple(out)


class Wheel:
    """The `.py` files of one torch_xla wheel, and the top-level symbols of each module."""

    def __init__(self, path: Path) -> None:
        self.version = re.search(r"torch_xla-([0-9.]+)", path.name).group(1)  # type: ignore[union-attr]
        self.sources: dict[str, str] = {}
        self.packages: set[str] = set()
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.startswith("torch_xla/") and name.endswith(".py"):
                    module = name[: -len(".py")].replace("/", ".")
                    if module.endswith(".__init__"):
                        module = module[: -len(".__init__")]
                        self.packages.add(module)
                    self.sources[module] = archive.read(name).decode("utf-8", "replace")
        self._cache: dict[str, dict[str, Symbol | tuple[str, str]]] = {}

    def _absolute(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = module if module in self.packages else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{node.module}" if node.module else package

    def _top_level(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, ast.If):
                out += self._top_level(stmt.body) + self._top_level(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                out += self._top_level(stmt.body)
            else:
                out.append(stmt)
        return out

    def names(self, module: str) -> dict[str, Symbol | tuple[str, str]]:
        """Name -> its symbol, or (module, name) where it is imported from."""
        if module in self._cache:
            return self._cache[module]
        self._cache[module] = table = {}
        try:
            tree = ast.parse(self.sources[module])
        except (KeyError, SyntaxError):
            return table
        for stmt in self._top_level(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                table[stmt.name] = Symbol("function", _params(stmt.args))
            elif isinstance(stmt, ast.ClassDef):
                table[stmt.name] = self._class(module, stmt)
            elif isinstance(stmt, ast.ImportFrom):
                source = self._absolute(module, stmt)
                for alias in stmt.names:
                    if alias.name == "*":
                        for name, value in self.names(source).items():
                            if not name.startswith("_"):
                                table.setdefault(name, value)
                    elif f"{source}.{alias.name}" in self.sources:
                        continue  # a submodule, not a symbol
                    else:
                        table[alias.asname or alias.name] = (source, alias.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                table[stmt.targets[0].id] = self._assigned(module, stmt.value, table)
        return table

    def _class(self, module: str, node: ast.ClassDef) -> Symbol:
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                return Symbol("class", _params(item.args, drop_first=True))
        for base in node.bases:
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
                if found is not None and found.kind == "class":
                    return found
            name = _dotted(base)
            if name is not None and not name.startswith("torch_xla") and "." in name:
                return Symbol("class", UNKNOWN, inherits=name)  # e.g. `class Adam(torch.optim.Adam)`
        return Symbol("class", UNKNOWN)

    def _assigned(self, module: str, value: ast.expr, table: dict) -> Symbol | tuple[str, str]:
        if isinstance(value, ast.Name) and value.id in table:
            return table[value.id]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "deprecated":
            # `old = deprecated(this_module, new, message)`: a wrapper that forwards to `new`.
            target = _dotted(value.args[1]) if len(value.args) > 1 else None
            found = self._dotted_symbol(module, target, table) if target else None
            return found or Symbol("function", UNKNOWN)
        if isinstance(value, ast.Lambda):
            return Symbol("function", _params(value.args))
        return Symbol("constant", ())

    def _dotted_symbol(self, module: str, target: str, table: dict) -> Symbol | None:
        head, _, rest = target.partition(".")
        if not rest:
            found = table.get(head)
            return self.resolve(*found) if isinstance(found, tuple) else found
        candidates = [target] + ([f"torch_xla.{rest}"] if head == "runtime" else [])
        for candidate in candidates:
            owner, _, name = candidate.rpartition(".")
            if owner in self.sources:
                return self.resolve(owner, name)
        return None

    def resolve(self, module: str, name: str, depth: int = 0) -> Symbol | None:
        found = self.names(module).get(name)
        if isinstance(found, tuple):
            if depth > 8 or not found[0].startswith("torch_xla"):
                return None
            return self.resolve(found[0], found[1], depth + 1)
        return found

    def lookup(self, qualified: str) -> Symbol | None:
        module, _, name = qualified.rpartition(".")
        if qualified in self.sources:
            return Symbol("module", ())
        return self.resolve(module, name) if module in self.sources else None


def mapped_apis() -> set[str]:
    """Every torch_xla name a rule's `[[map]]` entry matches exactly."""
    names: set[str] = set()
    for path in sorted((ROOT / "rules").glob("NM*.toml")):
        for entry in toml_module().loads(path.read_text(encoding="utf-8")).get("map", []):
            if entry["old"].startswith("torch_xla.") and not entry.get("prefix"):
                names.add(entry["old"])
    return names


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the torch_xla module or symbol it stands for (module-level and nested imports)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("torch_xla"):
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "torch_xla"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch_xla") and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _python_text(path: Path) -> str:
    """A `.py` file's text, or a notebook's code cells (less shell and magic lines)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return text
    try:
        cells = json.loads(text).get("cells", [])
    except ValueError:
        return ""
    lines: list[str] = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", [])
            source = "".join(source) if isinstance(source, list) else source
            lines += [line for line in source.splitlines() if not line.lstrip().startswith(("!", "%"))]
    return "\n".join(lines)


def corpus_calls(folders: list[Path]) -> collections.Counter[str]:
    """Qualified torch_xla names called (or used as a constant) in the folders' .py files and notebooks."""
    counts: collections.Counter[str] = collections.Counter()
    for folder in folders:
        for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.ipynb")]):
            try:
                tree = ast.parse(_python_text(path))
            except (SyntaxError, ValueError):
                continue
            bound = _imports(tree)
            if not bound:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call | ast.Attribute):
                    continue
                target = node.func if isinstance(node, ast.Call) else node
                name = _dotted(target)
                if name is None:
                    continue
                head, _, rest = name.partition(".")
                if head not in bound:
                    continue
                qualified = f"{bound[head]}.{rest}" if rest else bound[head]
                if isinstance(node, ast.Call) or qualified.rpartition(".")[2].isupper():
                    counts[qualified] += 1
    return counts


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(wheels: list[Wheel], mapped: set[str], calls: collections.Counter[str]) -> str:
    chosen = set(mapped)
    for name in calls:
        if PUBLIC.match(name) and any(w.lookup(name) is not None for w in wheels):
            chosen.add(name)
    versions = [w.version for w in wheels]
    lines = [
        "# GENERATED by scripts/signatures.py from the torch_xla "
        + " and ".join(versions)
        + " wheels (ast over their .py files); do not edit.",
        "# Each API: its kind, whether a rule maps it, the call sites seen in the corpus (pytorch/xla's",
        "# examples and tests, aws-neuron-samples), and its parameters in each version (a missing",
        '# version: the API is absent there; ["..."]: not readable statically).',
        f"versions = [{', '.join(_toml_string(v) for v in versions)}]",
        "",
    ]
    for name in sorted(chosen):
        symbols = {w.version: w.lookup(name) for w in wheels}
        kinds = {s.kind for s in symbols.values() if s is not None}
        lines.append(f"[api.{_toml_string(name)}]")
        lines.append(f"kind = {_toml_string(min(kinds) if kinds else 'absent')}")
        lines.append(f"mapped = {'true' if name in mapped else 'false'}")
        lines.append(f"calls = {calls.get(name, 0)}")
        inherits = {s.inherits for s in symbols.values() if s is not None and s.inherits}
        if inherits:
            lines.append(f"inherits = {_toml_string(min(inherits))}")
        for version, symbol in symbols.items():
            if symbol is not None:
                lines.append(f"{_toml_string(version)} = [{', '.join(_toml_string(p) for p in symbol.params)}]")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--corpus", action="append", type=Path, default=[], help="a folder of real torch_xla code")
    parser.add_argument("--output", type=Path, default=ROOT / "rules" / "signatures.toml")
    args = parser.parse_args()
    wheels = [Wheel(path) for path in args.wheels]
    text = render(wheels, mapped_apis(), corpus_calls(args.corpus))
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({text.count('[api.')} APIs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
