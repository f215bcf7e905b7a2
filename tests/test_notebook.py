"""Notebooks: cells checked as one module, magics masked, fixes written back surgically."""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.engine.formats.magics import mask, unmask
from neuron_migrate.engine.formats.notebook import code_cells
from neuron_migrate.engine.formats.notebook_json import Style, render_source
from neuron_migrate.engine.pipeline import check_source, process_file
from neuron_migrate.model import FileResult
from neuron_migrate.settings import Settings

FIX = Settings(fix=True)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\n"


def cell(kind: str, source: list[str], **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"cell_type": kind, "id": f"id{len(source)}{kind}", "metadata": {}, "source": source}
    if kind == "code":
        base.update({"execution_count": None, "outputs": []})
    base.update(extra)
    return base


def notebook(*cells: dict[str, Any], language: str = "python") -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
            "language_info": {"name": language, "version": "3.11.4"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def training_notebook() -> dict[str, Any]:
    outputs = [
        {"name": "stdout", "output_type": "stream", "text": ["loss 0.25 ✓\n", "done\n"]},
        {
            "data": {"image/png": PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
            "metadata": {"needs_background": "light"},
            "output_type": "display_data",
        },
    ]
    return notebook(
        cell("markdown", ["# Training — Überblick\n", "Steps on the device."]),
        cell(
            "code",
            ["import torch\n", "import torch_xla.core.xla_model as xm\n", "device = xm.xla_device()"],
            execution_count=1,
            metadata={"tags": ["setup"], "ExecuteTime": {"end_time": "2024-01-01T00:00:00.5Z"}},
        ),
        cell(
            "code",
            [
                "for step in range(3):\n",
                "    loss = torch.ones(2, device=device).sum()\n",
                "    xm.mark_step()\n",
                "print('loss', loss.item())\n",
            ],
            execution_count=2,
            outputs=outputs,
        ),
        cell("raw", ["not python: xm.mark_step()"]),
    )


def fixed_expectation(nb: dict[str, Any]) -> dict[str, Any]:
    expected = copy.deepcopy(nb)
    expected["cells"][1]["source"] = ["import torch\n", 'device = torch.device("neuron")']
    expected["cells"][2]["source"] = [
        "for step in range(3):\n",
        "    loss = torch.ones(2, device=device).sum()\n",
        "print('loss', loss.item())\n",
    ]
    return expected


Dump = Callable[[dict[str, Any]], str]
STYLES: dict[str, Dump] = {
    "jupyter": lambda nb: json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    "indent2-ascii-no-newline": lambda nb: json.dumps(nb, indent=2, ensure_ascii=True),
    "indent4-insertion-order": lambda nb: json.dumps(nb, indent=4, ensure_ascii=False) + "\n",
    "crlf": lambda nb: (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").replace("\n", "\r\n"),
    "one-line": lambda nb: json.dumps(nb),
    "compact": lambda nb: json.dumps(nb, separators=(",", ":")),
}


@pytest.mark.parametrize("style", STYLES)
def test_fix_round_trip_keeps_everything_but_the_source(style: str) -> None:
    dump = STYLES[style]
    nb = training_notebook()
    text = dump(nb)
    result = check_source(text, "train.ipynb", FIX)
    assert result.fixed_source == dump(fixed_expectation(nb))
    after = json.loads(result.fixed_source or "")
    for before_cell, after_cell in zip(nb["cells"], after["cells"]):
        assert {k: v for k, v in before_cell.items() if k != "source"} == {
            k: v for k, v in after_cell.items() if k != "source"
        }


def test_fix_changes_only_source_lines_and_outputs_byte_for_byte() -> None:
    text = STYLES["jupyter"](training_notebook())
    fixed = check_source(text, "train.ipynb", FIX).fixed_source or ""
    changed = [
        line
        for line in difflib.unified_diff(text.splitlines(), fixed.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == [
        '-    "import torch_xla.core.xla_model as xm\\n",',
        '-    "device = xm.xla_device()"',
        '+    "device = torch.device(\\"neuron\\")"',
        '-    "    xm.mark_step()\\n",',
    ]
    outputs = text[text.index('"outputs": [\n    {') : text.index('"source"', text.index('"outputs": [\n    {'))]
    assert outputs in fixed and PNG.strip() in fixed and "✓" in fixed


def test_unusual_json_outside_sources_is_kept_byte_for_byte() -> None:
    text = (
        '{"nbformat": 4, "nbformat_minor": 5,\n'
        '  "metadata": {"custom": {"ratio": 1.0E-5, "url": "http:\\/\\/example.com", "big": 12345678901234567890}},\n'
        '  "cells": [ {"cell_type": "code", "outputs": [], "metadata": {}, "execution_count": null,\n'
        '              "source": "import torch_xla.core.xla_model as xm\\nxm.mark_step()\\nx = 1\\n"} ]\n'
        "}"
    )
    result = check_source(text, "odd.ipynb", FIX)
    assert result.fixed_source == text.replace("import torch_xla.core.xla_model as xm\\nxm.mark_step()\\n", "")


def test_nothing_to_fix_is_byte_identical_and_not_written(tmp_path: Path) -> None:
    path = tmp_path / "clean.ipynb"
    data = STYLES["jupyter"](notebook(cell("code", ["x = 1\n", "%matplotlib inline"]))).encode()
    path.write_bytes(data)
    before = path.stat().st_mtime_ns
    result = process_file(path, "clean.ipynb", FIX)
    assert not result.changed and not result.findings
    assert path.read_bytes() == data and path.stat().st_mtime_ns == before


def test_findings_report_cell_and_line_in_cell() -> None:
    result = check_source(STYLES["jupyter"](training_notebook()), "train.ipynb", Settings())
    assert [(f.cell, f.start.line, f.start.column, f.code) for f in result.findings] == [
        (2, 2, 1, "NM601"),
        (2, 3, 10, "NM101"),
        (3, 3, 5, "NM201"),
    ]


def test_text_output_names_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "train.ipynb").write_text(STYLES["jupyter"](training_notebook()))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["nb", "-q"])
    assert result.stdout.splitlines()[1].startswith("nb/train.ipynb:cell 2:3:10: NM101")


MAGICS = [
    "%matplotlib inline\n",
    "import torch_xla.core.xla_model as xm\n",
    "files = !ls {xm}\n",
    "for f in files:\n",
    "    !echo {f} \\\n",
    "        more\n",
    "    xm.mark_step()\n",
    "xm.xla_device?\n",
    "%time xm.mark_step()",
]


def test_magics_are_masked_and_restored() -> None:
    text = STYLES["jupyter"](notebook(cell("code", MAGICS)))
    checked = check_source(text, "m.ipynb", Settings())
    assert [(f.start.line, f.code) for f in checked.findings] == [(2, "NM601"), (7, "NM201")]
    fixed = check_source(text, "m.ipynb", FIX)
    after = json.loads(fixed.fixed_source or "")
    assert after["cells"][0]["source"] == [line for line in MAGICS if line != "    xm.mark_step()\n"]


def test_mask_round_trip_and_names_kept_alive() -> None:
    source = "".join(MAGICS)
    masked, magics = mask(source, 7)
    assert masked.count("\n") == source.count("\n")
    assert "__nm_magic_12__(time, xm, mark_step)" in masked
    assert unmask(masked, magics) == source
    assert unmask(masked.replace("__nm_magic_8__", "x"), magics) is None


def test_cell_magics_choose_what_is_python() -> None:
    nb = notebook(
        cell("code", ["%%bash\n", "python -c 'import torch_xla.core.xla_model as xm; xm.mark_step()'\n"]),
        cell("code", ["%%writefile notes.txt\n", "import torch_xla.core.xla_model as xm\n"]),
        cell("code", ["%%time\n", "import torch_xla.core.xla_model as xm\n", "xm.mark_step()\n"]),
    )
    result = check_source(STYLES["jupyter"](nb), "c.ipynb", Settings(select=("NM201",)))
    assert [(f.cell, f.start.line) for f in result.findings] == [(3, 3)]


def test_writefile_py_cell_is_checked_and_fixed_as_its_own_module() -> None:
    nb = notebook(
        cell("code", ["import torch_xla.core.xla_model as xm\n"]),
        cell("code", ["%%writefile train.py\n", "import torch_xla.core.xla_model as xm\n", "\n", "xm.mark_step()\n"]),
        cell("code", ["%%writefile -a helpers.py\n", "xm.mark_step()\n"]),  # no import in this file: not torch_xla
    )
    text = STYLES["jupyter"](nb)
    result = check_source(text, "w.ipynb", Settings(select=("NM201", "NM601")))
    assert [(f.cell, f.start.line, f.code) for f in result.findings] == [
        (1, 1, "NM601"),
        (2, 2, "NM601"),
        (2, 4, "NM201"),
    ]
    fixed = json.loads(check_source(text, "w.ipynb", FIX).fixed_source or "")
    assert fixed["cells"][1]["source"] == ["%%writefile train.py\n", "\n"]
    assert fixed["cells"][2]["source"] == nb["cells"][2]["source"]


def test_noqa_works_inside_cells() -> None:
    nb = notebook(
        cell(
            "code",
            [
                "import torch_xla.core.xla_model as xm  # noqa: NM601\n",
                "xm.mark_step()  # noqa: NM201\n",
                "x = 1  # noqa: NM101\n",
            ],
        )
    )
    result = check_source(STYLES["jupyter"](nb), "q.ipynb", Settings())
    assert [(f.cell, f.start.line, f.code) for f in result.findings] == [(1, 3, "NM910")]
    assert [(f.cell, f.start.line) for f in result.suppressed] == [(1, 1), (1, 2)]


def test_add_noqa_in_a_notebook() -> None:
    nb = notebook(cell("markdown", ["x"]), cell("code", ["import torch_xla.core.xla_model as xm\n", "xm.mark_step()"]))
    result = check_source(STYLES["jupyter"](nb), "a.ipynb", Settings(add_noqa=True))
    assert json.loads(result.fixed_source or "")["cells"][1]["source"] == [
        "import torch_xla.core.xla_model as xm  # noqa: NM601\n",
        "xm.mark_step()  # noqa: NM201",
    ]


def test_cross_cell_names_resolve() -> None:
    nb = notebook(
        cell("code", ["import torch_xla.core.xla_model as xm\n"]),
        cell("markdown", ["text"]),
        cell("code", ["xm.mark_step()\n"]),
    )
    result = check_source(STYLES["jupyter"](nb), "x.ipynb", Settings(select=("NM201",)))
    assert [(f.cell, f.start.line) for f in result.findings] == [(3, 1)]


def test_syntax_error_points_at_the_cell() -> None:
    nb = notebook(cell("code", ["import torch_xla\n"]), cell("code", ["def broken(:\n"]))
    result = check_source(STYLES["jupyter"](nb), "s.ipynb", Settings())
    assert [(f.cell, f.start.line, f.code) for f in result.findings] == [(2, 1, "NM901")]


@pytest.mark.parametrize("text", ["{not json", '{"worksheets": []}', "[]"])
def test_invalid_notebook_is_nm911(text: str) -> None:
    result = check_source(text, "bad.ipynb", FIX)
    assert [f.code for f in result.findings] == ["NM911"] and result.fixed_source is None


def test_other_kernel_languages_are_skipped() -> None:
    nb = notebook(cell("code", ["import torch_xla.core.xla_model as xm\n", "xm.mark_step()\n"]), language="R")
    assert check_source(STYLES["jupyter"](nb), "r.ipynb", FIX) == FileResult("r.ipynb", source=STYLES["jupyter"](nb))


def test_empty_source_list_gets_the_notebooks_indentation() -> None:
    nb = notebook(cell("code", []))
    text = STYLES["jupyter"](nb)
    (empty,) = code_cells(text)
    rendered = render_source(text, empty.span, "import torch\nx = 1", Style.of(text))
    assert rendered == '[\n    "import torch\\n",\n    "x = 1"\n   ]'
    patched = text[: empty.span[0]] + rendered + text[empty.span[1] :]
    nb["cells"][0]["source"] = ["import torch\n", "x = 1"]
    assert patched == STYLES["jupyter"](nb)


@pytest.mark.parametrize("style", ["one-line", "compact"])
def test_one_line_lists_keep_their_separator(style: str) -> None:
    text = STYLES[style](notebook(cell("code", ["a = 1\n"])))
    (only,) = code_cells(text)
    assert render_source(text, only.span, "a = 1\nb = 2\n", Style.of(text)) == json.dumps(
        ["a = 1\n", "b = 2\n"], separators=json.loads('[", ", ","]') if style == "one-line" else (",", ":")
    )


def test_directory_discovery_includes_notebooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.ipynb").write_text(STYLES["jupyter"](training_notebook()))
    (tmp_path / "b.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [".", "--fix"])
    assert result.exit_code == 0 and "(5 fixed, 0 remaining)" in result.stdout
    assert json.loads((tmp_path / "a.ipynb").read_text()) == fixed_expectation(training_notebook())
    assert (tmp_path / "a.ipynb").read_text() == STYLES["jupyter"](fixed_expectation(training_notebook()))
