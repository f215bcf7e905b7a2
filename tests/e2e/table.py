"""Print the e2e closing-note table: `python tests/e2e/table.py` (runs `smoke` 2 times per program).

Columns: findings before any fix, left after `--fix`, left after `--fix --unsafe-fixes`, whether
the migrated program runs under `smoke` on 1 and on 2 emulated ranks, and the collectives seen.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import PROGRAMS, Program, collectives, migrate, problems, run_fixed


def _ran(program: Program, nproc: int) -> tuple[str, dict[str, int]]:
    if not program.runs and not program.ported:
        return "n/a (stays manual)", {}
    with tempfile.TemporaryDirectory() as folder:
        report = run_fixed(program, Path(folder), nproc)
    found = problems(program, report, nproc)
    if found:
        return f"no: {found[0]}", collectives(report)
    if program.ported:
        return "after the manual port: yes", collectives(report)
    if getattr(report, "independent", ""):
        return "yes; NM708 flags the independent ranks", collectives(report)
    replicas = getattr(report, "replicas", None)
    agree = ""
    if replicas is not None:
        agree = f", replicas {replicas.status} ({replicas.compared} compared, {replicas.sharded} sharded)"
    return f"yes{agree}", collectives(report)


def row(program: Program) -> str:
    before = len(migrate(program, fix=False, unsafe=False).findings)
    safe = len(migrate(program, fix=True, unsafe=False).findings)
    unsafe = migrate(program, fix=True, unsafe=True).findings
    left = f"{len(unsafe)}" + (f" ({', '.join(sorted({f.code for f in unsafe}))})" if unsafe else "")
    one, _ = _ran(program, 1)
    two, seen = _ran(program, 2)
    ops = ", ".join(f"{op.removeprefix('c10d::')}×{n}" for op, n in sorted(seen.items())) or "none"
    return f"| {program.name} | {before} | {safe} | {left} | {one} | {two} | {ops} |"


def main() -> None:
    start = time.monotonic()
    print(
        "| Program | Findings before | Left after `--fix` | Left after `--unsafe-fixes` | Runs, 1 rank | Runs, 2 ranks | Collectives seen (2 ranks) |"
    )
    print("|---|---|---|---|---|---|---|")
    for program in PROGRAMS:
        print(row(program), flush=True)
    print(
        f"\n{len(PROGRAMS)} programs in {time.monotonic() - start:.0f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
