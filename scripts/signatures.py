#!/usr/bin/env python3
"""Write rules/signatures.toml and rules/signatures-nxd.toml: the parameters of the APIs the rules map.

The signatures are read statically, with `ast`, from the `.py` files of the library (it is never
imported: torch_xla needs a TPU runtime, neuronx_distributed a Neuron one). For torch_xla, from
its wheels; download them first:

    pip download torch_xla==2.5.0 --no-deps -d /tmp/scripts-wheels
    pip download torch_xla==2.8.0 --no-deps -d /tmp/scripts-wheels
    python scripts/signatures.py /tmp/scripts-wheels/torch_xla-2.5.0-*.whl /tmp/scripts-wheels/torch_xla-2.8.0-*.whl \
        --corpus /path/to/pytorch-xla-checkout --corpus /path/to/aws-neuron-samples

For neuronx_distributed (NxD), from the `src/` folder of two releases of the public
`aws-neuron/neuronx-distributed` repository (Neuron 2.21.1 and 2.29, NxD 0.10.1 and 0.18.0):

    git -C neuronx-distributed archive 977d3b7 src | tar -x -C /tmp/nxd-0.10.1
    git -C neuronx-distributed archive fbac349 src | tar -x -C /tmp/nxd-0.18.0
    python scripts/signatures.py --nxd /tmp/nxd-0.10.1/src --nxd /tmp/nxd-0.18.0/src \
        --corpus /path/to/neuronx-distributed/examples/training --corpus /path/to/aws-neuron-samples

Each run writes the table of the library it is given and leaves the other's file alone.

The torch_xla table holds every API a rule's `[[map]]` entry names (`old`, not `prefix`), plus each
public torch_xla symbol of the modules users import (xla_model, runtime, debug.metrics,
debug.profiler, test.test_utils, utils.utils, amp, distributed.*, experimental.*) that the `--corpus`
folders call, with the number of call sites seen. The NxD table holds every NxD API a rule names,
every other public path the same definition is exported under (`defined` names the definition),
and each public NxD symbol the corpus calls. `tests/test_signatures.py` checks each mapped API's
declared parameters (`params` in its `[[map]]` entry) against these tables, and
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
XLA_ROOT, NXD_ROOT = "torch_xla", "neuronx_distributed"
# A public NxD API: no part of its path starts with an underscore.
NXD_PUBLIC = re.compile(r"^neuronx_distributed(\.[A-Za-z][A-Za-z0-9_]*)+$")
FORWARDING = ("*args", "**kwargs")


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


class Library:
    """The `.py` files of one release of a library (`root`: its top-level package), and the
    top-level symbols of each module."""

    def __init__(self, root: str, version: str, files: dict[str, str]) -> None:
        self.root = root
        self.version = version
        self.sources: dict[str, str] = {}
        self.packages: set[str] = set()
        for name, text in files.items():  # `root/a/b.py` -> its text
            module = name[: -len(".py")].replace("/", ".")
            if module.endswith(".__init__"):
                module = module[: -len(".__init__")]
                self.packages.add(module)
            self.sources[module] = text
        self._cache: dict[str, dict[str, Symbol | tuple[str, str]]] = {}

    def ours(self, name: str) -> bool:
        return name == self.root or name.startswith(self.root + ".")

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
        table: dict[str, Symbol | tuple[str, str]] = {}
        self._cache[module] = table
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
                params = _params(item.args, drop_first=True)
                inherited = self._foreign_base(module, node) if params == FORWARDING else None
                return Symbol("class", UNKNOWN, inherits=inherited) if inherited else Symbol("class", params)
        for base in node.bases:
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
                if found is not None and found.kind == "class":
                    return found
            name = _dotted(base)
            if name is not None and not self.ours(name) and "." in name:
                return Symbol("class", UNKNOWN, inherits=name)  # e.g. `class Adam(torch.optim.Adam)`
        return Symbol("class", UNKNOWN)

    def _foreign_base(self, module: str, node: ast.ClassDef) -> str | None:
        """The base class imported from another library, whose `__init__` an `(*args, **kwargs)` one forwards to."""
        for base in node.bases:
            found = self.names(module).get(base.id) if isinstance(base, ast.Name) else None
            if isinstance(found, tuple) and not self.ours(found[0]):
                return f"{found[0]}.{found[1]}"
        return None

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
            if depth > 8 or not self.ours(found[0]):
                return None
            return self.resolve(found[0], found[1], depth + 1)
        return found

    def definition(self, qualified: str) -> str | None:
        """Where the name is defined (`pkg.mod.name`), following re-exports; None if it is not ours."""
        module, _, name = qualified.rpartition(".")
        if qualified in self.sources or module not in self.sources:
            return qualified if qualified in self.sources else None
        for _ in range(9):
            found = self.names(module).get(name)
            if not isinstance(found, tuple):
                return f"{module}.{name}" if found is not None else None
            if not self.ours(found[0]):
                return None
            module, name = found
        return None

    def public_names(self) -> list[tuple[str, str]]:
        """(public path, its definition) for every public name a package (`__init__.py`) exports:
        where users import re-exported APIs from (a module's own imports are not its API)."""
        found = []
        for module in sorted(self.packages):
            if any(part.startswith("_") for part in module.split(".")):
                continue
            for name in sorted(self.names(module)):
                definition = self.definition(f"{module}.{name}") if not name.startswith("_") else None
                if definition is not None:
                    found.append((f"{module}.{name}", definition))
        return found

    def lookup(self, qualified: str) -> Symbol | None:
        module, _, name = qualified.rpartition(".")
        if qualified in self.sources:
            return Symbol("module", ())
        return self.resolve(module, name) if module in self.sources else None


def wheel(path: Path) -> Library:
    """A torch_xla wheel (`torch_xla-<version>-*.whl`)."""
    found = re.search(r"torch_xla-([0-9.]+)", path.name)
    if found is None:
        raise SystemExit(f"{path}: not a torch_xla wheel (torch_xla-<version>-*.whl)")
    with zipfile.ZipFile(path) as archive:
        files = {
            name: archive.read(name).decode("utf-8", "replace")
            for name in archive.namelist()
            if name.startswith("torch_xla/") and name.endswith(".py")
        }
    return Library(XLA_ROOT, found.group(1), files)


def nxd_tree(folder: Path) -> Library:
    """A neuronx_distributed release: the folder that holds its `neuronx_distributed/` package."""
    package = folder / NXD_ROOT
    version = re.search(r'__version__ = "([^"]+)"', (package / "_version.py").read_text(encoding="utf-8"))
    if version is None:
        raise SystemExit(f"{folder}: no neuronx_distributed/_version.py with a __version__")
    files = {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(package.rglob("*.py"))
    }
    return Library(NXD_ROOT, version.group(1), files)


def mapped_apis(root: str) -> set[str]:
    """Every name of `root` (torch_xla, neuronx_distributed) a rule's `[[map]]` entry matches exactly."""
    names: set[str] = set()
    for path in sorted((ROOT / "rules").glob("NM*.toml")):
        for entry in toml_module().loads(path.read_text(encoding="utf-8")).get("map", []):
            if entry["old"].startswith(root + ".") and not entry.get("prefix"):
                names.add(entry["old"])
    return names


def _imports(tree: ast.Module, root: str) -> dict[str, str]:
    """Local name -> the module or symbol of `root` it stands for (module-level and nested imports)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root:
                    bound[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == root and not node.level:
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


def corpus_calls(folders: list[Path], root: str) -> collections.Counter[str]:
    """Qualified names of `root` called (or used as a constant) in the folders' .py files and notebooks."""
    counts: collections.Counter[str] = collections.Counter()
    for folder in folders:
        for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.ipynb")]):
            try:
                tree = ast.parse(_python_text(path))
            except (SyntaxError, ValueError):
                continue
            bound = _imports(tree, root)
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


def _api_lines(name: str, libraries: list[Library], mapped: set[str], calls: collections.Counter[str]) -> list[str]:
    symbols = {library.version: library.lookup(name) for library in libraries}
    kinds = {s.kind for s in symbols.values() if s is not None}
    lines = [
        f"[api.{_toml_string(name)}]",
        f"kind = {_toml_string(min(kinds) if kinds else 'absent')}",
        f"mapped = {'true' if name in mapped else 'false'}",
        f"calls = {calls.get(name, 0)}",
    ]
    inherits = {s.inherits for s in symbols.values() if s is not None and s.inherits}
    if inherits:
        lines.append(f"inherits = {_toml_string(min(inherits))}")
    defined = {d for d in (library.definition(name) for library in libraries) if d is not None and d != name}
    if defined:
        lines.append(f"defined = {_toml_string(min(defined))}")
    for version, symbol in symbols.items():
        if symbol is not None:
            lines.append(f"{_toml_string(version)} = [{', '.join(_toml_string(p) for p in symbol.params)}]")
    return [*lines, ""]


def render(wheels: list[Library], mapped: set[str], calls: collections.Counter[str]) -> str:
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
        lines += [line for line in _api_lines(name, wheels, mapped, calls) if not line.startswith("defined =")]
    return "\n".join(lines)


def render_nxd(releases: list[Library], mapped: set[str], calls: collections.Counter[str]) -> str:
    """The NxD table: the mapped APIs, every public path their definitions are exported under, and
    the public APIs the corpus calls."""
    chosen = set(mapped)
    for name in calls:
        if NXD_PUBLIC.match(name) and any(r.lookup(name) is not None for r in releases):
            chosen.add(name)
    definitions = {d for r in releases for d in (r.definition(n) for n in mapped) if d is not None}
    for release in releases:
        chosen |= {name for name, found in release.public_names() if found in definitions}
    versions = [r.version for r in releases]
    lines = [
        "# GENERATED by scripts/signatures.py from the neuronx_distributed "
        + " and ".join(versions)
        + " sources (ast over the .py files of",
        "# aws-neuron/neuronx-distributed's src/ at Neuron 2.21.1 and 2.29); do not edit. Each API: its kind,",
        "# whether a rule maps it, the call sites seen in the corpus (NxD's training examples,",
        "# aws-neuron-samples), the definition it re-exports (`defined`), and its parameters in each release",
        '# (a missing release: the API is absent there; ["..."]: not readable statically).',
        f"versions = [{', '.join(_toml_string(v) for v in versions)}]",
        "",
    ]
    for name in sorted(chosen):
        lines += _api_lines(name, releases, mapped, calls)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="*", type=Path, help="torch_xla wheels")
    parser.add_argument("--nxd", action="append", type=Path, default=[], help="a neuronx_distributed src/ folder")
    parser.add_argument("--corpus", action="append", type=Path, default=[], help="a folder of real code")
    parser.add_argument("--output", type=Path, help="where to write the table (default: rules/signatures*.toml)")
    args = parser.parse_args()
    if bool(args.wheels) == bool(args.nxd):
        parser.error("give either torch_xla wheels or --nxd folders")
    if args.wheels:
        text = render([wheel(path) for path in args.wheels], mapped_apis(XLA_ROOT), corpus_calls(args.corpus, XLA_ROOT))
        output = args.output or ROOT / "rules" / "signatures.toml"
    else:
        releases = [nxd_tree(path) for path in args.nxd]
        text = render_nxd(releases, mapped_apis(NXD_ROOT), corpus_calls(args.corpus, NXD_ROOT))
        output = args.output or ROOT / "rules" / "signatures-nxd.toml"
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output} ({text.count('[api.')} APIs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
