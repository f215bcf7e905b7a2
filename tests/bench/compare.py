"""Time `check` and `--fix` of two source trees side by side, on the benchmark's corpora.

    git worktree add --detach /tmp/nm-main main
    python3 tests/bench/compare.py --base /tmp/nm-main            # this tree against main's

Each round runs every (tree, mode) once, interleaved, so a busy moment on a shared machine hits
both trees alike; the fastest of `--repeat` rounds counts. `--fix` works on a fresh copy of the
corpus each time. Prints a Markdown table with the ratios (this tree / base).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:] = [str(REPO), str(REPO / "tests")] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from bench.bench import (
    OPTIMUM_NEURON,
    TRANSFORMERS,
    download_package,
    generated_corpus,
    sampled,
)

MODES = {
    "check": ["--no-cache", "--jobs", "1"],
    "fix": ["--no-cache", "--jobs", "1", "--fix", "--unsafe-fixes"],
}


def run(tree: Path, mode: str, corpus: Path, work: Path) -> float:
    """Wall seconds of one run of `tree`'s neuron-migrate on `corpus` (a copy when fixing)."""
    target = corpus
    if mode == "fix":
        target = work / "fix-copy"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(corpus, target, ignore=shutil.ignore_patterns(".neuron_migrate_cache"))
    argv = [sys.executable, "-m", "neuron_migrate", "check", ".", "-q", "--exit-zero", *MODES[mode]]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    subprocess.run(argv, cwd=target, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other tree (e.g. a worktree of main)")
    parser.add_argument("--files", type=int, default=300, help="files in generated corpus (a)")
    parser.add_argument("--b-files", type=int, default=200, help="corpus (b): this many transformers files")
    parser.add_argument("--corpora", default="a,b,c")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "neuron-migrate-bench")
    opts = parser.parse_args(argv)
    work = opts.work_dir
    work.mkdir(parents=True, exist_ok=True)
    makers = {
        "a": lambda: generated_corpus(work, opts.files),
        "b": lambda: sampled(download_package(TRANSFORMERS, work), work, opts.b_files),
        "c": lambda: download_package(OPTIMUM_NEURON, work),
    }
    trees = {"base": opts.base.resolve(), "this": REPO}
    print("| corpus | mode | base s | this s | this / base |")
    print("|---|---|---|---|---|")
    for name in opts.corpora.split(","):
        corpus = makers[name]()
        best: dict[tuple[str, str], float] = {}
        for _ in range(opts.repeat):
            for mode in MODES:
                for label, tree in trees.items():
                    seconds = run(tree, mode, corpus, work)
                    best[label, mode] = min(seconds, best.get((label, mode), seconds))
        for mode in MODES:
            base, this = best["base", mode], best["this", mode]
            print(f"| {name} | {mode} | {base:.2f} | {this:.2f} | {this / base:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
