"""`engine/add_imports.py`: where the imports and helpers a fix asks for go, as text (what `check`
reports and what `--fix` writes): into their group where isort and Ruff would sort them."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import HelperRequest, ImportRequest, Request
from neuron_migrate.engine.add_imports import import_edits, import_placement
from neuron_migrate.engine.apply import splice

OS = ImportRequest("os")
TORCH = ImportRequest("torch")
DIST = ImportRequest("torch.distributed", alias="dist")
TO_CPU = HelperRequest("to_cpu", "torch")


def _added(text: str, requests: tuple[Request, ...]) -> str:
    analysis = Analysis(text, ast.parse(text))
    return splice(text, import_edits(analysis, requests, import_placement(analysis)))


@pytest.mark.parametrize(
    ("before", "requests", "after"),
    [
        pytest.param(  # each joins its group where isort puts it; a comment stays on its code
            "import sys\n# torch\nimport torch.nn as nn\n\n# the model\nx = nn\n",
            (OS, DIST),
            "import os\nimport sys\n# torch\nimport torch.distributed as dist\nimport torch.nn as nn\n\n# the model\nx = nn\n",
            id="sorted-in-groups",
        ),
        pytest.param(  # `import x` before `from x import y`; nothing before `from __future__`
            "from __future__ import annotations\n\nimport sys\nfrom os import path\n\nx = path\n",
            (OS,),
            "from __future__ import annotations\n\nimport os\nimport sys\nfrom os import path\n\nx = path\n",
            id="straight-before-from",
        ),
        pytest.param(  # last in its group when it sorts after every import of it
            "import torch\nimport torch.nn as nn\n\nx = nn\n",
            (ImportRequest("torch.optim", alias="optim"),),
            "import torch\nimport torch.nn as nn\nimport torch.optim as optim\n\nx = nn\n",
            id="last-of-group",
        ),
        pytest.param(  # no group of its own: after all the imports, relative ones included
            '"""Doc."""\nfrom __future__ import annotations\n\nfrom . import local\n\nx = local\n',
            (TORCH,),
            '"""Doc."""\nfrom __future__ import annotations\n\nfrom . import local\nimport torch\n\nx = local\n',
            id="after-relative",
        ),
        pytest.param(  # a function's own `import os` does not bind it at module level
            "import torch\n\n\ndef f():\n    import os\n    return os\n\n\ny = os.sep\n",
            (OS,),
            "import torch\nimport os\n\n\ndef f():\n    import os\n    return os\n\n\ny = os.sep\n",
            id="function-local-import",
        ),
        pytest.param(  # already imported at module level: nothing added
            "import os\nimport torch\n\nx = os.sep\n",
            (OS, TORCH),
            "import os\nimport torch\n\nx = os.sep\n",
            id="present",
        ),
        pytest.param(  # no imports: after the header comments, apart from the code
            "#!/usr/bin/env python\n# licence\ndef f():\n    pass\n",
            (OS,),
            "#!/usr/bin/env python\n# licence\nimport os\n\n\ndef f():\n    pass\n",
            id="header",
        ),
        pytest.param(  # the blank line after a header stays after the new import
            "# licence\n\nx = 1\n",
            (OS,),
            "# licence\nimport os\n\nx = 1\n",
            id="header-gap",
        ),
        pytest.param(  # the file's newlines
            "import torch\r\n\r\nx = 1\r\n",
            (DIST,),
            "import torch\r\nimport torch.distributed as dist\r\n\r\nx = 1\r\n",
            id="crlf",
        ),
    ],
)
def test_imports_placed(before: str, requests: tuple[Request, ...], after: str) -> None:
    assert _added(before, requests) == after


def test_a_helper_goes_after_the_imports_two_blank_lines_each_side() -> None:
    after = _added("import torch\n# comment on x\nx = _to_cpu(1)\n", (TO_CPU,))
    assert after.startswith("import torch\n\n\ndef _to_cpu(data):\n")
    assert after.endswith("\n\n\n# comment on x\nx = _to_cpu(1)\n")


def test_a_helper_takes_the_files_indentation_and_newlines() -> None:
    after = _added("import torch\r\n\r\nif torch:\r\n  x = _to_cpu(1)\r\n", (OS, TO_CPU))
    assert "\r\n  if isinstance(data, torch.Tensor):\r\n    return data.cpu()\r\n" in after
    assert after.startswith("import torch\r\nimport os\r\n\r\n\r\ndef _to_cpu(data):")  # no group: after the imports
    compile(after, "x.py", "exec")
