"""`neuron-migrate report` on NxD code: findings costed by effort tier (one table of minutes, and
the headline, the estimate's rows and the work order agree), the library-dependency section,
inference-only files after the training work, the status legend first, the work table at 375 px
without sideways scrolling (Chromium), and the small texts (fallbacks, control characters)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_report import NOW, OPTIONS, cli, report_json

from neuron_migrate import report
from neuron_migrate.effort import TIER_EFFORT
from neuron_migrate.report import markdown
from neuron_migrate.report.command import collect
from neuron_migrate.report.model import WORK_ORDER, FileRow, SmokeSummary, fallback_text

pytestmark = pytest.mark.slow  # runs the CLI and the fixes several times per report

SERVE = (
    "import torch\nimport torch_neuronx\n\nfrom serve_utils import Head\n\n\n"
    "def serve(example):\n    traced = torch_neuronx.trace(Head(64, 1000), example)\n    return traced(example)\n"
)
NXD = {
    # a model module (NxD tensor-parallel layers, no mesh: findings), imported by the training script
    "model.py": (FIXTURES / "NM321" / "no_mesh.py").read_text(encoding="utf-8"),
    # the training script: mesh, a getter (unsafe fixes), the pipeline (manual), the parallel loss
    "train.py": (
        "import torch\nimport torch.distributed as dist\n"
        "from neuronx_distributed.parallel_layers import parallel_state\n"
        "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n"
        "from neuronx_distributed.pipeline import NxDPPModel\n\nfrom model import MLP\n\n\n"
        "def main(tp):\n"
        '    dist.init_process_group("neuron")\n'
        "    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)\n"
        "    rank = parallel_state.get_tensor_model_parallel_rank()\n"
        "    model = NxDPPModel(MLP(64, 256), transformer_layer_cls=MLP, num_microbatches=4)\n"
        "    loss = parallel_cross_entropy(model(torch.randn(4, 64)), torch.zeros(4, dtype=torch.long)).mean()\n"
        "    loss.backward()\n    return rank\n"
    ),
    # imported by two inference scripts only: more importers than any training file
    "serve_utils.py": (
        "import torch.nn as nn\nfrom neuronx_distributed.parallel_layers import layers\n\n\n"
        "class Head(nn.Module):\n    def __init__(self, hidden, vocab):\n        super().__init__()\n"
        "        self.out = layers.ColumnParallelLinear(hidden, vocab, gather_output=True)\n\n"
        "    def forward(self, x):\n        return self.out(x)\n"
    ),
    "serve.py": SERVE,
    "serve2.py": SERVE,
}


@pytest.fixture
def nxd(tmp_path: Path) -> Path:
    folder = tmp_path / "nxd"
    folder.mkdir()
    for name, text in NXD.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _number(text: str) -> int:
    return int(re.sub(r"<[^>]+>|\*", "", text).strip())


def test_nxd_findings_are_costed_by_tier(nxd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(nxd)
    rep = collect((), OPTIONS, nxd, now=NOW)
    items = [i for g in rep.manual for i in g.items]
    tiers = {(i.path, i.line, i.code): (i.tier, i.minutes) for i in items}
    assert tiers[("train.py", 14, "NM329")] == ("manual", TIER_EFFORT["manual"])  # NxDPPModel: a port by hand
    assert tiers[("train.py", 15, "NM325")] == ("mechanical", TIER_EFFORT["mechanical"])
    assert tiers[("model.py", 9, "NM321")] == ("semi-mechanical", TIER_EFFORT["semi-mechanical"])
    assert all(i.minutes == TIER_EFFORT[i.tier] for i in items if i.code.startswith(("NM32", "NM33")))
    rows = {r.key: r for r in rep.estimate_rows}
    assert set(rows) == set(TIER_EFFORT)  # every finding here is an NxD one
    # the getter, the mesh init (--unsafe-fixes) and the parallel_state import they free cost nothing;
    # the four imports whose names unported code still reads stay, as does the parallel loss without a mesh
    assert (rows["mechanical"].fixed, rows["mechanical"].left) == (3, 5)
    assert (rows["semi-mechanical"].left, rows["manual"].left) == (6, 1)  # the trace calls are semi-mechanical
    expected = 5 * TIER_EFFORT["mechanical"] + 6 * TIER_EFFORT["semi-mechanical"] + TIER_EFFORT["manual"]
    # the headline, the estimate's rows, the work order, the file list and the manual groups agree
    assert rep.total_minutes == expected == sum(r.minutes for r in rep.work) == sum(r.minutes for r in rep.files)
    assert sum(g.minutes for g in rep.manual) == expected and rep.estimate.minutes == expected
    data = json.loads(report.render("json", rep))
    assert data["effort"]["total_minutes"] == sum(r["minutes"] for r in data["effort"]["rows"]) == expected
    assert sum(r["minutes"] for r in data["work"]) == expected and data["effort"]["table"]["manual"] == 60
    md = report.render("md", rep)
    total = re.search(r"^\| \*\*total\*\* \|.*\| (\S+) \|$", md, re.MULTILINE)
    assert total and _number(total.group(1)) == expected
    assert f"typical total {expected} minutes" in md and "Why:" in md
    html = report.render("html", rep)
    assert 'id="why-estimate"' in html and f"<strong>{expected}</strong></td>" in html


def test_tier_minutes_come_from_the_config(nxd: Path) -> None:
    (nxd / "pyproject.toml").write_text(
        "[tool.neuron-migrate.report-effort]\nsemi-mechanical = 45\nmanual = 100\n", encoding="utf-8"
    )
    data = report_json(".", cwd=nxd)
    rows = {r["key"]: r for r in data["effort"]["rows"]}
    assert rows["semi-mechanical"]["minutes"] == 6 * 45 and rows["manual"]["minutes"] == 100
    assert data["effort"]["total_minutes"] == 5 * TIER_EFFORT["mechanical"] + 6 * 45 + 100
    (nxd / "pyproject.toml").write_text("[tool.neuron-migrate.report-effort]\nnxd = 240\n", encoding="utf-8")
    done = cli("report", ".", cwd=nxd)
    assert done.returncode == 2 and "costed by effort tier" in done.stderr and "`semi-mechanical`" in done.stderr


def test_library_section_groups_nxd_files_by_concept(nxd: Path) -> None:
    data = report_json(".", cwd=nxd)
    lib = data["library"]
    concepts = {c["concept"]: (c["files"], c["findings"], c["manual"]) for c in lib["concepts"]}
    assert concepts == {
        "mesh": (1, 2, 0),
        "tp-layers": (2, 4, 4),
        "loss": (1, 1, 1),
        "pipeline": (1, 1, 1),
        "imports": (3, 5, 4),  # four stay while unported code reads their names
        "trace": (2, 2, 2),
    }
    assert [c["concept"] for c in lib["concepts"]][-1] == "trace" and lib["concepts"][-1]["inference"]
    assert [f["filename"] for f in lib["files"]] == ["model.py", "train.py", "serve.py", "serve2.py", "serve_utils.py"]
    files = {f["filename"]: {u["concept"]: u["findings"] for u in f["uses"]} for f in lib["files"]}
    assert files["train.py"] == {"mesh": 2, "loss": 1, "pipeline": 1, "imports": 3}
    assert files["model.py"] == {"tp-layers": 3, "imports": 1} and files["serve.py"] == {"trace": 1}
    md = cli("report", ".", "--format", "md", cwd=nxd).stdout
    assert "### Depends on NeuronX Distributed (NxD)" in md
    assert (
        "| `train.py` | mesh and parallel state 2, parallel cross-entropy 1, pipeline parallelism 1, imports 3 |" in md
    )
    html = cli("report", ".", cwd=nxd).stdout
    assert 'id="library"' in html and 'href="#library"' in html and 'id="library-files"' in html


def test_inference_only_files_come_after_the_training_work(nxd: Path) -> None:
    data = report_json(".", cwd=nxd)
    order = [(r["filename"], r["inference_only"]) for r in data["work"]]
    assert order == [
        ("model.py", False),
        ("train.py", False),
        ("serve_utils.py", True),  # imported by 2 files, but only by inference scripts
        ("serve.py", True),
        ("serve2.py", True),
    ]
    assert data["work_order"] == WORK_ORDER
    md = cli("report", ".", "--format", "md", cwd=nxd).stdout
    work = md.index("### The work, in order")
    assert md.index(WORK_ORDER) > work and md.index(WORK_ORDER) < md.index("| # | file |", work)
    assert "| 3 | `serve_utils.py` (inference only) |" in md


def test_status_legend_comes_first(nxd: Path) -> None:
    md = cli("report", ".", "--format", "md", cwd=nxd).stdout
    legend = md.index("### What the statuses mean")
    assert legend < md.index("### How this relates to `check`") and legend < md.index("### Blockers")
    assert md.index("| status | meaning | files |") == md.index("|")  # the first table
    html = cli("report", ".", cwd=nxd).stdout
    assert html.index('id="legend"') < html.index("<table") and '<th scope="col">meaning</th>' not in html


def test_fallback_text_says_plainly_what_is_not_known() -> None:
    smoke = SmokeSummary("t.py", "ok", "emulated", 1, 2, 10, (), True, 3, 0, 0, "not run", ())
    assert fallback_text(smoke) == (
        "none predicted; 3 ops are not in the compat data, so whether they fall back is not known"
    )
    one = SmokeSummary("t.py", "ok", "emulated", 1, 2, 10, ("aten::svd",), True, 1, 0, 0, "not run", ())
    assert fallback_text(one) == "aten::svd; 1 op is not in the compat data, so whether it falls back is not known"
    measured = SmokeSummary("t.py", "ok", "neuron", 1, 2, 10, (), False, 3, 0, 0, "not run", ())
    assert fallback_text(measured) == "none"


def test_markdown_escapes_control_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A requirement line, a device string and a file name may hold raw control characters: the
    Markdown shows them escaped, so a pull-request comment or a terminal never gets them raw."""
    (tmp_path / "requirements.txt").write_text("torch_xla==2.5\x1b[31m\n", encoding="utf-8")
    (tmp_path / "we\x07ird.py").write_text(
        'import torch\nimport torch_xla.core.xla_model as xm\ndev = torch.device("xla:\x1b[2J0")\nxm.mark_step()\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    md = markdown.render(collect((), OPTIONS, tmp_path, now=NOW))
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", md), [line for line in md.splitlines() if "\x1b" in line]
    assert "torch_xla==2.5\\x1b[31m" in md and "we\\x07ird.py" in md


@pytest.mark.slow
def test_nxd_report_in_a_real_browser(nxd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 375 px the work table (and the NxD tables) need no sideways scrolling; at 375 and 1,400
    px the legend is above every table and the NxD section is there."""
    import browser

    binary = browser.chromium()
    deep = nxd / "src" / "very_long_package_name_for_wrapping" / "distributed_training_utilities"
    deep.mkdir(parents=True)
    (deep / "tensor_parallel_transformer_layers.py").write_text(NXD["model.py"], encoding="utf-8")
    monkeypatch.chdir(nxd)
    html = report.render("html", collect((), OPTIONS, nxd, now=NOW))
    work = tmp_path / "browser"
    work.mkdir()
    for width in (375, 1400):
        seen = browser.probe(binary, html, width, 900, work)
        assert seen["errors"] == [] and seen["console"] == [], seen
        assert seen["library"] and seen["legendFirst"], seen
        assert seen["scrollWidth"] <= width and seen["overflow"] == [], seen
        assert seen["narrowPaths"] == [] and seen["wrapped"] == [], seen
        for table in ("work-list", "library-concepts", "library-files", "effort-table"):
            box = seen["tables"][table]
            assert box["scrollWidth"] <= box["clientWidth"] and box["right"] <= width, (width, table, seen)
        assert seen["order"].index("work") < seen["order"].index("library") < seen["order"].index("effort")


def test_folders_of_absolute_paths_roll_up_once() -> None:
    """`report /abs/path`: the top counts each file once, and `/abs` is one level down."""
    from neuron_migrate.report.plan import folders

    rows = folders([FileRow("/work/a/x.py", "clean", 0, 0, 0), FileRow("/work/a/b/y.py", "clean", 0, 0, 0)])
    assert [(f.path, f.depth, f.files) for f in rows] == [
        (".", 0, 2),
        ("/work", 1, 2),
        ("/work/a", 2, 2),
        ("/work/a/b", 3, 1),
    ]
