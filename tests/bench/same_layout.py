"""Prove the scanned layout of a Python file is tokenize's: compare both on every file, and time them.

    python3 tests/bench/same_layout.py                  # the four corpora, fixtures/, tests/e2e/programs
    python3 tests/bench/same_layout.py DIR...           # other folders

For each folder it prints the files compared, how many took the fast path (`scanned_layout`
answered) and how many fell back to tokenize, and the files whose `layout_of` differs from
`tokenized_layout` (must be 0; each is named). Then the CPU time (`time.process_time`, min of 3)
of tokenize alone and of `layout_of` over the folder's files, over those that mention `noqa`
(the files a check computes a layout for, with `--add-noqa`) and over those whose directives
can matter without it (`suppress._mentions_our_noqa`: the ones a plain check lays out). Runs
on any Python the package supports; from 3.12 `layout_of` is the tokenize pass itself.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from neuron_migrate.analysis.source import DecodeError, SourceText, decode  # noqa: E402
from neuron_migrate.engine.directives import FAST_PATH, layout_of, scanned_layout, tokenized_layout  # noqa: E402
from neuron_migrate.engine.suppress import _mentions_noqa, _mentions_our_noqa  # noqa: E402

BENCH = Path("/tmp/neuron-migrate-bench")
DEFAULT = [
    *sorted(BENCH.glob("src-*")),
    REPO / "fixtures",
    REPO / "tests" / "e2e" / "programs",
]


def texts(folder: Path) -> dict[str, str]:
    """Every .py file under `folder` that decodes, by path relative to it."""
    out = {}
    for path in sorted(folder.rglob("*.py")):
        try:
            out[str(path.relative_to(folder))] = decode(path.read_bytes())[0]
        except (DecodeError, OSError):
            continue
    return out


def cpu_time(layout: Callable[[SourceText], object], files: list[str]) -> float:
    """The least CPU seconds of 3 runs of `layout` over `files` (a fresh SourceText each)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for text in files:
            layout(SourceText(text))
        best = min(best, time.process_time() - start)
    return best


def compare(folder: Path) -> int:
    """Print the counts and times for one folder; return its number of differences."""
    files = texts(folder)
    fast = fallback = 0
    differ = []
    for name, text in files.items():
        if FAST_PATH and scanned_layout(SourceText(text)) is not None:
            fast += 1
        else:
            fallback += 1
        if layout_of(SourceText(text)) != tokenized_layout(SourceText(text)):
            differ.append(name)
    print(f"{folder}: {len(files)} files, fast path {fast}, fallback {fallback}, differences {len(differ)}")
    for name in differ:
        print(f"  DIFFERS: {name}")
    groups = {
        "all": list(files.values()),
        "noqa": [t for t in files.values() if _mentions_noqa(t)],
        "our noqa": [t for t in files.values() if _mentions_our_noqa(t)],
    }
    for group, members in groups.items():
        if not members:
            continue
        old, new = cpu_time(tokenized_layout, members), cpu_time(layout_of, members)
        ratio = f"{old / new:.1f}x" if new else "n/a"
        times = f"tokenize {old * 1000:8.1f} ms  layout_of {new * 1000:8.1f} ms"
        print(f"  {group:>8}: {len(members):5} files  {times}  {ratio}")
    return len(differ)


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or DEFAULT
    print(f"Python {sys.version.split()[0]}")
    differences = sum(compare(folder) for folder in folders if folder.is_dir())
    print(f"differences: {differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
