"""Build hook: the wheel ships each rule's `explain` example, and nothing else of `fixtures/`.

The files are `fixtures/<code>/basic.py` and `basic.fixed.py` (or the files of `basic/` for a
packaging file or script, without `.findings`) and `accel_basic.py` / `accel_basic.fixed.py`;
they go to `neuron_migrate/examples/<code>/`, where `neuron_migrate.data.examples_dir` finds
them. (Hatch's `sources` option could map them too, but it breaks editable installs.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CASES = ("basic.py", "basic.fixed.py", "accel_basic.py", "accel_basic.fixed.py")


def example_files(fixtures: Path) -> list[Path]:
    found = []
    for folder in sorted(p for p in fixtures.iterdir() if p.is_dir()):
        found += [folder / name for name in CASES if (folder / name).is_file()]
        text_case = folder / "basic"
        if text_case.is_dir():
            found += sorted(p for p in text_case.iterdir() if p.is_file() and p.suffix != ".findings")
    return found


class ExamplesHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return  # an editable install reads fixtures/ in the checkout
        fixtures = Path(self.root) / "fixtures"
        for path in example_files(fixtures):
            target = "neuron_migrate/examples/" + path.relative_to(fixtures).as_posix()
            build_data["force_include"][str(path)] = target
