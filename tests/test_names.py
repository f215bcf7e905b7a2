"""Table-driven tests for the alias resolver: every import spelling, scoping and shadowing."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.analysis.names import Resolver

MARK_STEP = "torch_xla.core.xla_model.mark_step"

CASES = [
    ("import torch_xla.core.xla_model as xm", "xm.mark_step", {MARK_STEP}),
    ("import torch_xla.core.xla_model", "torch_xla.core.xla_model.mark_step", {MARK_STEP}),
    ("import torch_xla", "torch_xla.core.xla_model.mark_step", {MARK_STEP}),
    ("from torch_xla.core import xla_model as m", "m.mark_step", {MARK_STEP}),
    ("from torch_xla.core import xla_model", "xla_model.mark_step", {MARK_STEP}),
    ("from torch_xla.core.xla_model import mark_step as ms", "ms", {MARK_STEP}),
    ("from torch_xla.core.xla_model import mark_step", "mark_step", {MARK_STEP}),
    ("import torch_xla.core.xla_model as xm\nstep = xm.mark_step", "step", {MARK_STEP}),
    (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None",
        "xm.mark_step",
        {MARK_STEP},
    ),
    ("def mark_step(): pass", "mark_step", set()),
    ("xm = object()", "xm.mark_step", set()),
    ("from . import xm", "xm.mark_step", set()),
    ("from .torch_xla import core", "core.xla_model.mark_step", set()),
    ("import torch_xla2 as xm", "xm.mark_step", {"torch_xla2.mark_step"}),
    ("", "xm.mark_step", set()),
]


@pytest.mark.parametrize(("source", "expression", "expected"), CASES)
def test_module_level_resolution(source: str, expression: str, expected: set[str]) -> None:
    resolver = Resolver(ast.parse(source))
    assert resolver.resolve_dotted(expression, resolver.module_scope) == expected


def _function_scope(source: str, name: str) -> tuple[Resolver, object]:
    tree = ast.parse(source)
    resolver = Resolver(tree)
    node = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.Lambda)) and getattr(n, "name", "lambda") == name
    )
    return resolver, resolver.scope_for(node)


def test_parameter_shadows_module_import() -> None:
    resolver, scope = _function_scope("import torch_xla.core.xla_model as xm\ndef f(xm):\n    xm.mark_step()", "f")
    assert resolver.resolve_dotted("xm.mark_step", scope) == set()


def test_function_local_import() -> None:
    resolver, scope = _function_scope("def f():\n    import torch_xla.runtime as xr\n    xr.world_size()", "f")
    assert resolver.resolve_dotted("xr.world_size", scope) == {"torch_xla.runtime.world_size"}
    assert resolver.resolve_dotted("xr.world_size", resolver.module_scope) == set()


def test_class_scope_is_invisible_to_methods() -> None:
    source = "import torch_xla.core.xla_model as xm\nclass C:\n    xm = None\n    def f(self):\n        return xm.mark_step()"
    resolver, scope = _function_scope(source, "f")
    assert resolver.resolve_dotted("xm.mark_step", scope) == {MARK_STEP}


def test_global_declaration_binds_module_name() -> None:
    source = "def setup():\n    global xm\n    import torch_xla.core.xla_model as xm\ndef use():\n    xm.mark_step()"
    resolver, scope = _function_scope(source, "use")
    assert resolver.resolve_dotted("xm.mark_step", scope) == {MARK_STEP}


def test_alias_cycle_terminates() -> None:
    resolver = Resolver(ast.parse("a = b\nb = a"))
    assert resolver.resolve_dotted("a.x", resolver.module_scope) == set()


def test_is_loaded_sees_every_scope() -> None:
    resolver = Resolver(ast.parse("import os\ndef f():\n    return os.sep"))
    assert resolver.is_loaded("os")
    assert not resolver.is_loaded("sys")


STAR = "from torch_xla.core.xla_model import *\n"


@pytest.mark.parametrize(
    ("source", "expression", "expected"),
    [
        (STAR, "mark_step", {MARK_STEP}),  # a known API name comes from the star import
        (STAR, "print", set()),  # builtins never do
        (STAR, "unknown_helper", set()),  # nor names the rules do not know
        (STAR + "def mark_step(): pass", "mark_step", set()),  # a local definition wins
        ("from os.path import *", "mark_step", set()),
    ],
)
def test_star_import_resolves_known_names(source: str, expression: str, expected: set[str]) -> None:
    resolver = Resolver(ast.parse(source), known=lambda name: name == MARK_STEP)
    assert resolver.resolve_dotted(expression, resolver.module_scope) == expected


def test_star_import_without_known_api_resolves_nothing() -> None:
    resolver = Resolver(ast.parse(STAR))
    assert resolver.resolve_dotted("mark_step", resolver.module_scope) == set()
