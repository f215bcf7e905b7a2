"""Prove a speed-up changed no output: snapshot what two trees print on the same corpora, then diff.

    python3 tests/bench/same_output.py snapshot --tree /tmp/nm-before --out /tmp/out-before DIR...
    python3 tests/bench/same_output.py snapshot --out /tmp/out-after DIR...       # this tree
    python3 tests/bench/same_output.py diff /tmp/out-before /tmp/out-after

Per folder it records `check` as JSON findings, `--statistics`, text output and
`--diff --unsafe-fixes` (all `--no-cache`), and `report --format json` and `--format md` cold
(empty cache), warm (the same cache again), after a `check` filled the result cache (a report that
finds check's results but none of its own), and with `--jobs 2` (the pool). Each command runs in
the folder on `.`; caches live in a temporary folder, so nothing is written into the corpus.
The report's date is masked. `diff` prints the commands whose output differs, and the file and
finding counts compared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = ["check", ".", "--exit-zero", "--no-cache", "--jobs", "1"]
COMMANDS: dict[str, list[str]] = {
    "json": [*CHECK, "--output-format", "json"],
    "statistics": [*CHECK, "--statistics"],
    "text": [*CHECK, "--output-format", "full", "--show-fixes"],
    "diff": [*CHECK, "--diff", "--unsafe-fixes"],
}
REPORTS: dict[str, tuple[str, list[str]]] = {  # name: (cache state, extra flags)
    "report-cold-json": ("empty", ["--format", "json"]),
    "report-warm-json": ("kept", ["--format", "json"]),
    "report-cold-md": ("empty", ["--format", "md"]),
    "report-warm-md": ("kept", ["--format", "md"]),
    "report-after-check-json": ("after-check", ["--format", "json"]),
    "report-jobs2-json": ("empty", ["--format", "json", "--jobs", "2"]),
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def _run(tree: Path, folder: Path, argv: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}"


def snapshot(tree: Path, out: Path, folders: list[Path]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        name = folder.resolve().name
        for key, argv in COMMANDS.items():
            (out / f"{name}.{key}").write_text(_run(tree, folder, argv))
        cache = Path(tempfile.mkdtemp(prefix="same-output-cache-"))
        try:
            for key, (state, flags) in REPORTS.items():
                if state != "kept":
                    shutil.rmtree(cache, ignore_errors=True)
                if state == "after-check":
                    _run(tree, folder, ["check", ".", "-q", "--exit-zero", "--cache-dir", str(cache)])
                argv = ["report", ".", "-q", "--jobs", "1", "--cache-dir", str(cache), *flags]
                (out / f"{name}.{key}").write_text(_DATE.sub("DATE", _run(tree, folder, argv)))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"[same-output] {name}: done", file=sys.stderr)


def diff(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    bad = [n for n in names if not (before / n).exists() or not (after / n).exists()]
    bad += [n for n in names if n not in bad and (before / n).read_bytes() != (after / n).read_bytes()]
    for name in sorted(p.name for p in before.glob("*.json")):
        body = (before / name).read_text().split("\n", 1)[1]
        found = json.loads(body) if body.strip() else []
        print(
            f"{name.rsplit('.', 1)[0]}: {len({f['filename'] for f in found})} files with findings, {len(found)} findings"
        )
    print(f"{len(names) - len(bad)} of {len(names)} outputs identical")
    for name in bad:
        print(f"DIFFERS: {name}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("--tree", type=Path, default=REPO, help="the source tree whose code runs")
    snap.add_argument("--out", type=Path, required=True)
    snap.add_argument("folders", type=Path, nargs="+")
    both = sub.add_parser("diff")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    opts = parser.parse_args(argv)
    if opts.command == "snapshot":
        snapshot(opts.tree.resolve(), opts.out, opts.folders)
        return 0
    return diff(opts.before, opts.after)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
