"""The floors a check is compared with, each run by `bench.py` as its own child process.

    python tests/bench/floors.py KIND LISTFILE [COMPILEFILE]

Each kind reads every file named in LISTFILE and prints, as JSON on the last line of stderr,
the seconds its loop took inside the process; `bench.py` also times the whole process
(start-up included), as a check is timed. The kinds:

- `ast`: read + `ast.parse` (the issue's floor);
- `libcst`: read + `libcst.parse_module`;
- `design`: what every cold check in this design does before a rule runs, and no rule can make
  cheaper: start the CLI's stack and load the rules (`import neuron_migrate.cli`, the rule set
  the CLI's warm-up builds), then read each file, prefilter it, parse those that pass and run
  the name resolver over them, and compile the tree of each file named in COMPILEFILE (the
  files with findings, which a check compiles to report NM901). What a check costs above this
  is the rules' own work: narrowing, the walk and its detectors, planning, the exact counts.

It imports nothing of `bench.py`, so the whole process holds no more than its kind needs.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path


def _parse_each(paths: list[str], parse: Callable[[str], object], errors: tuple[type[Exception], ...]) -> None:
    for path in paths:
        text = Path(path).read_bytes().decode("utf-8", errors="surrogateescape")
        try:
            parse(text)
        except errors:
            continue  # a file the check reports as not parsing: its attempt is part of the floor


def _ast(paths: list[str]) -> None:
    import ast

    _parse_each(paths, ast.parse, (SyntaxError, ValueError))


def _libcst(paths: list[str]) -> None:
    import libcst

    _parse_each(paths, libcst.parse_module, (SyntaxError, ValueError, libcst.ParserSyntaxError))


def _design(paths: list[str], compiled: set[str]) -> None:
    import ast

    import neuron_migrate.cli  # noqa: F401 - the CLI's imports are part of every run
    from neuron_migrate.analysis.names import Resolver
    from neuron_migrate.engine.ruleset import build_ruleset, enabled_codes, might_match
    from neuron_migrate.settings import Settings

    settings = Settings()
    ruleset = build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)
    for path in paths:
        text = Path(path).read_bytes().decode("utf-8", errors="surrogateescape")
        if not might_match(text, ruleset):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        Resolver(tree, ruleset.index.known)
        if path in compiled:
            with warnings.catch_warnings(), contextlib.suppress(SyntaxError, ValueError):
                warnings.simplefilter("ignore")
                compile(tree, path, "exec", dont_inherit=True)  # NM901 when it fails


def main(argv: list[str]) -> None:
    kind, list_file = argv[0], Path(argv[1])
    compiled = set(Path(argv[2]).read_text().splitlines()) if len(argv) > 2 else set()
    paths = list_file.read_text().splitlines()
    start = time.perf_counter()
    if kind == "ast":
        _ast(paths)
    elif kind == "libcst":
        _libcst(paths)
    elif kind == "design":
        _design(paths, compiled)
    else:
        raise SystemExit(f"unknown floor: {kind}")
    print(json.dumps({"seconds": time.perf_counter() - start}), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
