"""How the smoke recorder finds the user line of an op: once per line, for every op at it."""

from __future__ import annotations

import runpy
import sys
import textwrap
from pathlib import Path

import pytest

from neuron_migrate.smoke import sites
from neuron_migrate.smoke.sites import (
    MAX_SITES,
    Site,
    SiteFinder,
    UserFiles,
    format_site,
)

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "fixtures" / "_smoke"


def _load(path: Path, source: str) -> dict[str, object]:
    path.write_text(textwrap.dedent(source))
    return runpy.run_path(str(path))


@pytest.fixture
def files(tmp_path: Path) -> tuple[UserFiles, dict[str, object], dict[str, object]]:
    """A user file whose `run(op, n)` calls `op` n times from one line, and `spread(op)` from
    seven lines, through a library file (outside the user's folder) that calls `op`."""
    user, library = tmp_path / "user", tmp_path / "library"
    user.mkdir()
    library.mkdir()
    lib = _load(
        library / "lib.py",
        """
        import sys
        def call(op):
            return op(sys._getframe(0))
    """,
    )
    script = _load(
        user / "train.py",
        """
        def run(call, op, n):
            for _ in range(n):
                call(op)  # line 4
        def spread(call, op):
            call(op)  # line 6
            call(op)
            call(op)
            call(op)
            call(op)
            call(op)
            call(op)  # line 12
    """,
    )
    return UserFiles.for_script(str(user / "train.py")), script, lib


def test_an_op_called_1000_times_from_one_line_builds_its_site_once(
    files: tuple[UserFiles, dict[str, object], dict[str, object]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user_files, script, lib = files
    built: list[tuple[str, int]] = []
    real_make_site = sites.make_site

    def counting_make_site(path: str, line: int, function: str) -> Site:
        built.append((path, line))
        return real_make_site(path, line, function)

    monkeypatch.setattr(sites, "make_site", counting_make_site)
    finder = SiteFinder(user_files)
    found: list[Site | None] = []
    script["run"](lib["call"], lambda frame: found.append(finder.site(frame)), 1000)  # type: ignore[operator]
    assert len(found) == 1000 and len(set(found)) == 1
    site = found[0]
    assert site is not None and (Path(site.path).name, site.line, site.function) == (
        "train.py",
        4,
        "run",
    )
    assert site.code == "call(op)  # line 4" and site.column == 9
    assert len(built) == 1  # the library frame is skipped, the user line read once


def test_every_line_gets_its_own_site_and_the_recorder_keeps_max_sites(
    files: tuple[UserFiles, dict[str, object], dict[str, object]],
) -> None:
    user_files, script, lib = files
    finder = SiteFinder(user_files)
    found: list[Site | None] = []
    script["spread"](lib["call"], lambda frame: found.append(finder.site(frame)))  # type: ignore[operator]
    assert [s.line for s in found if s] == list(range(6, 13))
    pytest.importorskip("torch")
    from neuron_migrate.smoke.child.recorder import OpStats, _count

    table: dict[str, OpStats] = {}
    for site in found * 2:
        _count(table, "aten::sin", site)
    stats = table["aten::sin"]
    assert stats.count == 14
    assert list(stats.sites) == found[:MAX_SITES] and set(stats.sites.values()) == {2}


def test_no_user_frame_means_no_site(tmp_path: Path) -> None:
    finder = SiteFinder(UserFiles.for_script(str(tmp_path / "elsewhere" / "x.py")))
    assert finder.site(sys._getframe(0)) is None


def test_a_forward_stack_reads_like_a_formatted_stack_and_keeps_its_site() -> None:
    pytest.importorskip("torch")
    from neuron_migrate.smoke.child.recorder import ForwardStack

    site = Site("/work/train.py", 7, "step", 5, "loss = model(x)")
    stack = ForwardStack(site)
    assert stack.site == site
    assert "".join(stack) == '  File "/work/train.py", line 7, in step\n    loss = model(x)\n'
    assert sites.site_from_formatted_stack(stack, UserFiles(("/work/",))) == Site("/work/train.py", 7, "step", 1, "")
    assert ForwardStack(None) == [] and format_site(site) == stack[0]


@pytest.mark.parametrize(
    "tree",
    [
        (),
        (1, None, [2, None, (3, 4)], {"a": 5, "b": None}),
        ([1, 2], {"dim": [0, 1], "out": None}),
        ("group", [[1], []], 2.5, True),
    ],
)
def test_flattening_op_arguments_gives_pytrees_leaves_and_structure(
    tree: object,
) -> None:
    pytest.importorskip("torch")
    from torch.utils._pytree import tree_leaves, tree_map

    from neuron_migrate.smoke.child.flat import leaves, map_leaves

    assert leaves(tree) == tree_leaves(tree)

    def double(v: object) -> object:
        return v * 2 if isinstance(v, (int, float)) else v

    assert map_leaves(double, tree) == tree_map(double, tree)
    assert type(map_leaves(double, tree)) is type(tree)


def test_flattening_hands_other_containers_to_pytree() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils._pytree import tree_leaves, tree_map

    from neuron_migrate.smoke.child.flat import leaves, map_leaves

    values, indices = torch.tensor([3.0, 1.0]).max(dim=0)
    result = torch.tensor([[3.0, 1.0]]).max(dim=1)  # a torch.return_types structseq
    tree = (result, torch.Size([2, 3]), [values, indices])
    assert [id(v) for v in leaves(tree)] == [id(v) for v in tree_leaves(tree)]
    rebuilt = map_leaves(lambda v: v, tree)
    assert type(rebuilt[0]) is type(tree_map(lambda v: v, tree)[0])
    assert rebuilt[1] == torch.Size([2, 3])


@pytest.mark.slow  # runs a script under smoke in a child process
def test_the_emulated_run_counts_every_op_and_keeps_each_line_once() -> None:
    pytest.importorskip("torch")
    from neuron_migrate.smoke import run_smoke
    from neuron_migrate.smoke.runner import SmokeOptions

    lines = (SCRIPTS / "op_sites.py").read_text().splitlines()

    def line(marker: str) -> int:
        return next(i for i, text in enumerate(lines, start=1) if f"# smoke: {marker}" in text)

    report = run_smoke(
        SCRIPTS / "op_sites.py",
        [],
        SmokeOptions(device="emulate", timeout_s=120.0, base_dir=ROOT),
    )
    assert report.status == "ok", report.failure
    ops = {op.op: op for op in report.ops}
    assert ops["aten::neg"].count == 1000
    assert [s.line for s in ops["aten::neg"].sites] == [line("repeated")]
    assert ops["aten::sin"].count == 7
    assert [s.line for s in ops["aten::sin"].sites] == [line(f"sin {i}") for i in range(1, MAX_SITES + 1)]
    assert [s.line for s in ops["aten::tanh_backward"].sites] == [line("forward")]
