"""The values that cross from rules to the engine: matches, plans, edits and the imports they ask for.

Imports nothing of the engine (as Fixit's `ftypes.py`): a detector makes a `Match`, a fix
returns a `Plan` of `Edit`s and the `ImportRequest`s and `HelperRequest`s its new code needs,
and the engine applies them. Every value is immutable.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from neuron_migrate.analysis.names import Scope
    from neuron_migrate.catalogue import MapEntry, RuleSpec
    from neuron_migrate.model import Safety


class Edit(NamedTuple):
    """Replace the text from offset `start` up to (not including) `end` with `text`.

    A tuple, so that the engine sorts, compares and unpacks thousands of them cheaply.
    """

    start: int
    end: int
    text: str


@dataclass(frozen=True, order=True)
class ImportRequest:
    """An import statement a fix's new code needs: `import <module> [as <alias>]`, or with
    `name`, `from <module> import <name>`. Applied once per file, after the edits."""

    module: str
    name: str | None = None
    alias: str | None = None

    @property
    def bound(self) -> str:
        """The name the statement binds (`torch`, `dist`, `checkpoint_wrapper`)."""
        return self.alias or self.name or self.module.split(".")[0]

    @property
    def statement(self) -> str:
        """The statement, as it is written into the file."""
        if self.name is not None:
            return f"from {self.module} import {self.name}" + (f" as {self.alias}" if self.alias else "")
        return f"import {self.module}" + (f" as {self.alias}" if self.alias else "")

    @property
    def sort_key(self) -> tuple[int, int, str, str]:
        """isort's and Ruff's order: the standard library first; in a section, `import x` before
        `from x import y`; then by module, case-insensitively."""
        section = 0 if self.module.split(".")[0] in sys.stdlib_module_names else 1
        return (section, 0 if self.name is None else 1, self.module.lower(), self.statement)


@dataclass(frozen=True, order=True)
class HelperRequest:
    """A helper (`checks/helpers.py` `HELPERS[name]`) written once into the file, after its
    imports; `module` is the name that the helper's module (torch's, or `dist`) goes by there."""

    name: str
    module: str


Request = ImportRequest | HelperRequest


def named_imports(*requests: ImportRequest) -> dict[str, ImportRequest]:
    """The requests by the name each binds: the placeholders a template may name (`{torch}`)."""
    return {request.bound: request for request in requests}


# What the NxD fixes write (checks/nxd/): the mesh, DTensor plans, the parallel loss, checkpoints.
NXD_IMPORTS = (
    ImportRequest("torch.nn", alias="nn"),
    ImportRequest("torch.nn.functional", alias="F"),
    ImportRequest("torch.distributed.checkpoint", alias="dcp"),
    ImportRequest("torch.distributed.device_mesh", name="init_device_mesh"),
    *(ImportRequest("torch.distributed.tensor", name=n) for n in ("DTensor", "Partial", "Replicate", "Shard")),
    *(ImportRequest("torch.distributed.checkpoint.state_dict", name=n) for n in ("get_state_dict", "set_state_dict")),
    *(
        ImportRequest("torch.distributed.tensor.parallel", name=n)
        for n in ("ColwiseParallel", "RowwiseParallel", "SequenceParallel", "loss_parallel", "parallelize_module")
    ),
)
# The imports the fixes ask for, by the placeholder that names them in a template.
IMPORTS = named_imports(
    ImportRequest("torch"),
    ImportRequest("torch.distributed", alias="dist"),
    ImportRequest("os"),
    ImportRequest("datetime"),
    ImportRequest("contextlib"),
    ImportRequest("torch.distributed.fsdp", alias="fsdp"),
    ImportRequest("torch.distributed.optim", alias="dist_optim"),
    *NXD_IMPORTS,
)


class Detail:
    """Base of the typed facts a detector hands to its fix through `Match.detail` (each kind a
    frozen dataclass of its concept module, such as `environment.EnvWrite`)."""


@dataclass(frozen=True)
class Match:
    """A rule matched at a node."""

    rule: RuleSpec
    node: ast.AST
    scope: Scope
    entry: MapEntry | None = None
    qualified: str = ""  # the API matched, fully qualified
    written: str = ""  # the API as the user wrote it
    values: tuple[tuple[str, str], ...] = ()  # the message template's values by name (`{new}`, `{callee}`)
    detail: Detail | None = None  # what the detector learned that its fix reads

    def value(self, name: str) -> str | None:
        """The message value `name`, or None."""
        return next((value for key, value in self.values if key == name), None)


EXPRESSION = "expression"  # a Transform's node: the expression its span holds
STATEMENT = "statement"  # a Transform's node: the statement standing on its span's lines


@dataclass(frozen=True)
class Transform:
    """A structural fix: the LibCST transform `function` rewrites the node at `span` when the
    file is fixed (or when a format shows the fix's edits); planning never imports LibCST.

    `function` is `"package.module:function"` (or the function itself), called as
    `function(node, options)` with the LibCST node parsed from the span; `options` is the
    transform's own frozen dataclass of values chosen at plan time (None when it takes none).
    See `engine/rewrite.py` for what a transform receives and returns.
    """

    function: str | Callable[..., Any]
    span: tuple[int, int]  # the text parsed into the node given to `function`
    kind: str = EXPRESSION
    options: object | None = None
    parenthesize: bool = False  # a low-precedence result needs parentheses where it stands


class Decline(Exception):
    """Raised by a transform that cannot rewrite its node: the fix is then not applied.

    The fix function checks the transform's preconditions on the `ast`, so a transform that
    declines is a bug the fixture tests catch (`tests/test_transforms.py`).
    """


@dataclass(frozen=True)
class Plan:
    """A planned fix: text edits by offset, or a structural `transform` (with any text edits
    outside its span), the imports they need, and its safety.

    A span edit (rename a callee, add or drop an argument, replace an expression) is text,
    planned at check time; a structural rewrite (a guard around a statement, a call rebuilt
    around a new one) is a `Transform` alone, which runs only when the file is fixed or its
    edits are shown.
    """

    edits: tuple[Edit, ...]
    imports: tuple[Request, ...] = ()
    safety: Safety | None = None  # overrides the rule's or entry's safety
    description: str = ""
    deletes: tuple[ast.stmt, ...] = ()  # whole statements removed (for empty-block repair)
    transform: Transform | None = None
    new: str = (
        ""  # what the matched code becomes, in one line (`{new}`, the fix's description), where no one edit spells it
    )

    @property
    def first(self) -> int:
        """Where the plan's first change starts."""
        starts = [edit.start for edit in self.edits]
        if self.transform is not None:
            starts.append(self.transform.span[0])
        return min(starts)
