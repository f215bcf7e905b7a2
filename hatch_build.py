"""Build hook: the wheel ships each rule's `explain` example, and nothing else of `fixtures/`,
and the rule files' TOML tables parsed (`neuron_migrate/rules/parsed.json`, see
`neuron_migrate/parsed_rules.py`), so an installed tool does not parse them on every run.

The files are `fixtures/<code>/basic.py` and `basic.fixed.py` (or the files of `basic/` for a
packaging file or script, without `.findings`) and `accel_basic.py` / `accel_basic.fixed.py`;
they go to `neuron_migrate/examples/<code>/`, where `neuron_migrate.data.examples_dir` finds
them. (Hatch's `sources` option could map them too, but it breaks editable installs.)
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
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
        self._parsed_dir = tempfile.mkdtemp(prefix="neuron-migrate-build-")
        parsed = Path(self._parsed_dir) / "parsed.json"
        module = _parsed_rules(Path(self.root))
        parsed.write_text(module.dumps(Path(self.root) / "rules"), encoding="utf-8")
        build_data["force_include"][str(parsed)] = "neuron_migrate/rules/" + module.PARSED

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        folder = getattr(self, "_parsed_dir", None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _parsed_rules(root: Path) -> Any:
    """`neuron_migrate/parsed_rules.py`, loaded from its file (the package is not installed here)."""
    spec = importlib.util.spec_from_file_location("_nm_parsed_rules", root / "neuron_migrate" / "parsed_rules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
