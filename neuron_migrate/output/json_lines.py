"""JSON Lines: one compact JSON object per finding, the same objects as the `json` format."""

from __future__ import annotations

import json
from collections.abc import Sequence

from neuron_migrate.model import FileResult
from neuron_migrate.output.base import PLAIN, RenderOptions, all_findings
from neuron_migrate.output.json import finding_to_dict


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    return "".join(json.dumps(finding_to_dict(f)) + "\n" for f in all_findings(results))
