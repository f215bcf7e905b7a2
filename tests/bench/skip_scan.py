"""How `analysis/reach.py` finds the words a statement must spell: one pass over every
identifier, or a search per word. Picks the word count up to which the searches win.

    python3 tests/bench/skip_scan.py DIR [DIR ...]

For every file of the DIRs that a check walks with skipping on, it takes the words the
skipper looks for (as `reach.skipper` computes them), checks that both ways find the same
places, and times each per file (best of 5). It prints, by number of words, the time of each
way, and the total of both files' times for each threshold `_FEW_WORDS` could take.
"""

from __future__ import annotations

import ast
import sys
import time
import warnings
from pathlib import Path

from neuron_migrate.analysis import reach
from neuron_migrate.analysis.names import Resolver
from neuron_migrate.engine.ruleset import build_ruleset, enabled_codes, might_match, narrowed
from neuron_migrate.settings import Settings

_BUCKETS = (8, 16, 24, 32, 48, 64, 128, 10**9)


def _cases(folders: list[Path]) -> list[tuple[str, set[str]]]:
    settings = Settings()
    full = build_ruleset(enabled_codes(settings), settings.target_version)
    cases = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            text = path.read_bytes().decode("utf-8", errors="surrogateescape")
            if not might_match(text, full):
                continue
            ruleset = narrowed(full, text)
            found = ruleset.index.reach
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            words = reach._bound_words(found, Resolver(tree, ruleset.index.known)) if found is not None else None
            if words is not None and all(reach._IDENTIFIER.fullmatch(w) for w in words):
                cases.append((text, words))
    return cases


def _best(scan: object, text: str, words: set[str]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        scan(text, words)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str]) -> None:
    cases = _cases([Path(a) for a in argv])
    rows = []
    for text, words in cases:
        by_pass = reach.spelled_by_pass(text, words)
        if reach.spelled_by_search(text, words) != by_pass:
            raise SystemExit("the two ways disagree")
        rows.append(
            (len(words), _best(reach.spelled_by_pass, text, words), _best(reach.spelled_by_search, text, words))
        )
    print(f"{len(rows)} files, both ways agree on each\n")
    print("| words | files | one pass ms | searches ms |\n|---:|---:|---:|---:|")
    low = 0
    for high in _BUCKETS:
        inside = [r for r in rows if low < r[0] <= high] if low else [r for r in rows if r[0] <= high]
        if inside:
            label = f"{low + 1 if low else 0}-{high}" if high < 10**9 else f">{low}"
            print(
                f"| {label} | {len(inside)} | {sum(r[1] for r in inside) * 1000:.1f} | {sum(r[2] for r in inside) * 1000:.1f} |"
            )
        low = high
    print("\n| `_FEW_WORDS` | total ms |\n|---:|---:|")
    for limit in (0, 8, 16, 24, 32, 48, 64):
        total = sum(r[2] if r[0] <= limit else r[1] for r in rows)
        print(f"| {limit} | {total * 1000:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
