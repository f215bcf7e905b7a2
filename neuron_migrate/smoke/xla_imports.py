"""Record the user's attempts to import `torch_xla` during a smoke run. Imports no torch.

A migrated script that still says `try: import torch_xla ... except ImportError:` runs its
fallback once torch_xla is gone, and may train on the CPU while the run looks healthy. A finder
first on `sys.meta_path` notes each lookup of `torch_xla` (or a submodule) asked for by a user
file, directly (`import`, `importlib.import_module`, `importlib.util.find_spec`), and finds
nothing itself, so the import goes on as it would have. Lookups made by libraries (transformers
and accelerate probe for torch_xla on import) are not the user's and are not noted.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import Any

from neuron_migrate.smoke.report import XlaImport
from neuron_migrate.smoke.sites import Site, UserFiles, make_site

PACKAGE = "torch_xla"
_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__))


@dataclass
class XlaImportRecorder:
    """A `sys.meta_path` finder that finds nothing and notes the user's torch_xla lookups."""

    files: UserFiles
    seen: dict[Site, str] = field(default_factory=dict)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> None:
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return
        site = _asking_site(sys._getframe(1), self.files)
        if site is not None:
            self.seen.setdefault(site, fullname)

    def install(self) -> XlaImportRecorder:
        sys.meta_path.insert(0, self)
        return self

    def failed(self) -> list[XlaImport]:
        """The noted lookups whose module never got imported (with torch_xla absent: all)."""
        return [XlaImport(name, site) for site, name in sorted(self.seen.items()) if name not in sys.modules]


def _asking_site(frame: FrameType | None, files: UserFiles) -> Site | None:
    """The user line that asked for the module: the first frame outside the import machinery,
    when it lies in a user file (a library's probe is the library's business)."""
    while frame is not None and _is_import_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or not files.contains(frame.f_code.co_filename):
        return None
    return make_site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def _is_import_machinery(filename: str) -> bool:
    return (
        filename.startswith("<frozen importlib")
        or filename == __file__
        or os.path.dirname(os.path.abspath(filename)) == _IMPORTLIB
    )


def to_json(recorder: XlaImportRecorder) -> list[dict[str, Any]]:
    """This rank's failed torch_xla imports, as the rank report's `xla_imports`."""
    return [{"module": found.module, "site": found.site.to_json()} for found in recorder.failed()]


def merge(datas: Sequence[Mapping[str, Any]]) -> tuple[XlaImport, ...]:
    """The failed torch_xla imports of every rank, once per user line."""
    found = {Site.from_json(raw["site"]): str(raw["module"]) for data in datas for raw in data.get("xla_imports", ())}
    return tuple(XlaImport(name, site) for site, name in sorted(found.items()))
