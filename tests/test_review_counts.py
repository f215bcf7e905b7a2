"""scripts/review_counts.py: the patterns a reviewer would rewrite, counted as the fix added them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "review_counts.py"
_SPEC = importlib.util.spec_from_file_location("review_counts", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
review = importlib.util.module_from_spec(_SPEC)
sys.modules["review_counts"] = review
_SPEC.loader.exec_module(review)


def _added(before: str, after: str) -> dict[str, int]:
    return {k: v for k, v in review.review_counts(before, after).items() if v}


def test_an_unchanged_file_counts_nothing() -> None:
    text = "if x:\n    pass\nelse:\n    pass\n\n\ndef f():\n    pass\n"
    assert _added(text, text) == {}


def test_branches_and_blocks() -> None:
    before = "if a:\n    f()\nelse:\n    g()\nif b():\n    h()\nif not c:\n    k()\n\n\ndef fn():\n    m()\n"
    after = "if a:\n    f()\nelse:\n    f()\nif b():\n    pass\nif not c:\n    pass\nelse:\n    k()\n\n\ndef fn():\n    pass\n"
    assert _added(before, after) == {
        "identical_branches": 1,
        "if_call_pass": 1,
        "inverted_pass": 1,
        "pass_functions": 1,
    }


def test_comments_left_over_other_code_and_deleted_section_headers() -> None:
    before = (
        "for x in y:\n"
        "    step(x)\n"
        "    # NOTE: prevent a broken pipe\n"
        "    xm.rendezvous('done')\n"
        "    break\n"
        "# Section: data\n"
        "xm.mark_step()\n"
        "load()\n"
    )
    after = "for x in y:\n    step(x)\n    # NOTE: prevent a broken pipe\n    break\nload()\n"
    assert _added(before, after) == {"comments_over_other_code": 1}
    header = "x = 1\n\n# Section: data\nxm.mark_step()\nload()\n"
    assert _added(header, "x = 1\n\n# Section: data\nload()\n") == {}  # a section header stays
    header_lost = "# Section: data\nload()\n"
    assert _added(header_lost, "load()\n") == {"comments_deleted_code_kept": 1}


def test_rank_reads_and_guards_after_an_unconditional_init() -> None:
    before = "import torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group('xla')\n    work()\n"
    after = (
        "import os\nimport torch.distributed as dist\n\n\ndef main():\n"
        "    dist.init_process_group('neuron')\n"
        "    rank = int(os.environ.get('RANK', 0))\n"
        "    if dist.is_initialized():\n"
        "        dist.barrier()\n"
        "    work()\n"
    )
    assert _added(before, after) == {
        "rank_env_reads": 1,
        "rank_env_after_init": 1,
        "init_guards": 1,
        "init_guards_after_init": 1,
    }


def test_groups_added_without_destroy_and_repeated_accelerator() -> None:
    accel = "(torch.accelerator.current_accelerator(check_available=True) or torch.device('cpu'))"
    after = f"dist.init_process_group('neuron')\na = x.to({accel})\nb = y.to({accel})\n"
    assert _added("a = x.cuda()\nb = y.cuda()\n", after) == {"groups_not_destroyed": 1, "repeated_accelerator": 1}
    destroyed = after + "dist.destroy_process_group()\n"
    assert "groups_not_destroyed" not in _added("a = x.cuda()\nb = y.cuda()\n", destroyed)


def test_under_indented_continuation_after_a_new_guard() -> None:
    before = "print(a,\n      b)\n"
    after = "if rank == 0:\n    print(a,\n      b)\n"
    assert _added(before, after) == {"under_indented": 1}


def test_torch_xla_calls_kept_with_rewritten_arguments() -> None:
    before = "import torch_xla.core.xla_model as xm\nxm.all_reduce(xm.REDUCE_SUM, t, groups=g)\nxm.mark_step()\n"
    after = "import torch_xla.core.xla_model as xm\nxm.all_reduce('sum', t, groups=g)\n"
    assert _added(before, after) == {"kept_xla_args_rewritten": 1, "kept_xla_constants_rewritten": 1}
    moved = "import torch_xla.distributed.spmd as xs\nxs.mark_sharding(t.to('xla'), mesh, (0,))\n"
    assert _added(moved, moved.replace("'xla'", "'neuron'")) == {"kept_xla_args_rewritten": 1}
