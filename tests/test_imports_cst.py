"""`engine/add_imports_cst.py`: the imports and helpers `--fix` adds, placed by LibCST in one parse."""

from __future__ import annotations

import pytest

from neuron_migrate.analysis.values import ImportRequest
from neuron_migrate.engine.add_imports_cst import add_to_module

OS = ImportRequest("os")
TORCH = ImportRequest("torch")
DIST = ImportRequest("torch.distributed", alias="dist")
HELPER = 'def _helper(x):\n    """Doc."""\n    if x:\n        return 1\n    return 2\n'


@pytest.mark.parametrize(
    ("before", "imports", "after"),
    [
        pytest.param(  # each joins its group; a comment stays on the code it describes
            "import sys\n# torch\nimport torch.nn as nn\n\n# the model\nx = nn\n",
            [OS, DIST],
            "import sys\nimport os\n# torch\nimport torch.nn as nn\nimport torch.distributed as dist\n\n# the model\nx = nn\n",
            id="groups",
        ),
        pytest.param(  # no group of its own: after all the imports, relative ones included
            '"""Doc."""\nfrom __future__ import annotations\n\nfrom . import local\n\nx = local\n',
            [TORCH],
            '"""Doc."""\nfrom __future__ import annotations\n\nfrom . import local\nimport torch\n\nx = local\n',
            id="after-relative",
        ),
        pytest.param(  # a function's own `import os` does not bind it at module level
            "import torch\n\n\ndef f():\n    import os\n    return os\n\n\ny = os.sep\n",
            [OS],
            "import torch\nimport os\n\n\ndef f():\n    import os\n    return os\n\n\ny = os.sep\n",
            id="function-local-import",
        ),
        pytest.param(  # already imported at module level: nothing added
            "import os\nimport torch\n\nx = os.sep\n",
            [OS, TORCH],
            "import os\nimport torch\n\nx = os.sep\n",
            id="present",
        ),
        pytest.param(  # no imports: after the header comments, apart from the code
            "#!/usr/bin/env python\n# licence\ndef f():\n    pass\n",
            [OS],
            "#!/usr/bin/env python\n# licence\nimport os\n\n\ndef f():\n    pass\n",
            id="header",
        ),
        pytest.param(  # the blank line after a header stays after the new import
            "# licence\n\nx = 1\n",
            [OS],
            "# licence\nimport os\n\nx = 1\n",
            id="header-gap",
        ),
        pytest.param(  # the file's newlines
            "import torch\r\n\r\nx = 1\r\n",
            [DIST],
            "import torch\r\nimport torch.distributed as dist\r\n\r\nx = 1\r\n",
            id="crlf",
        ),
    ],
)
def test_imports_placed(before: str, imports: list[ImportRequest], after: str) -> None:
    assert add_to_module(before, imports, ()) == after


def test_helper_after_imports_two_blank_lines_each_side() -> None:
    before = "import torch\n# comment on x\nx = _helper(1)\n"
    after = add_to_module(before, [], [HELPER])
    assert after == f"import torch\n\n\n{HELPER}\n\n# comment on x\nx = _helper(1)\n"


def test_helper_takes_the_files_indentation_and_newlines() -> None:
    before = "import torch\r\n\r\nif torch:\r\n  x = _helper(1)\r\n"
    after = add_to_module(before, [OS], [HELPER])
    assert after is not None
    assert 'def _helper(x):\r\n  """Doc."""\r\n  if x:\r\n    return 1\r\n' in after
    assert after.startswith("import torch\r\nimport os\r\n\r\n\r\ndef _helper")
    assert after.endswith("\r\n\r\n\r\nif torch:\r\n  x = _helper(1)\r\n")
    compile(after, "x.py", "exec")


def test_helper_at_the_end_of_the_file() -> None:
    after = add_to_module("import torch\n", [], [HELPER])
    assert after == f"import torch\n\n\n{HELPER}"


def test_unparsable_text_is_left_to_the_text_edits() -> None:
    assert add_to_module("def f(:\n", [OS], ()) is None


@pytest.mark.parametrize(
    ("head", "follows", "after"),
    [
        pytest.param("", True, "import os\n", id="first-line-is-a-def"),  # code follows on the next line
        pytest.param("", False, "import os\n\n\n", id="opens-an-import-block"),
        pytest.param(
            "import torch\n\n\n# about f\n", True, "import torch\nimport os\n\n\n# about f\n", id="comment-kept-on-def"
        ),
    ],
)
def test_head_of_a_module(head: str, follows: bool, after: str) -> None:
    """Only the text before the first `def` is parsed; what it adds still joins the code after it."""
    assert add_to_module(head, [OS], (), more=True, indent="    ", follows_imports=follows) == after


def test_head_helper_before_the_first_def_in_a_two_space_file() -> None:
    after = add_to_module("import torch\n# about f\n", [], [HELPER], more=True, indent="  ", follows_imports=True)
    assert (
        after == 'import torch\n\n\ndef _helper(x):\n  """Doc."""\n  if x:\n    return 1\n  return 2\n\n\n# about f\n'
    )
