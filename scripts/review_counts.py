"""What a reviewer would not merge in a migrated file: counts of the patterns issue 37 (group C) lists.

Each count compares a file before (`old`) and after (`new`) a fix run and keeps what the fix added
(new minus old, never below 0), so code the user wrote that way is not charged to the tool.
`scripts/ecosystem.py` sums them per package and mode. Only `ast`, `tokenize` and `difflib`.
"""

from __future__ import annotations

import ast
import collections
import difflib
import io
import re
import tokenize
import warnings
from collections.abc import Iterator

# What each count means, in the order the report's table shows them.
REVIEW = {
    "identical_branches": "`if`/`else` with identical branches",
    "inverted_pass": "`if not X: pass` / `else: pass`",
    "if_call_pass": "`if call(): pass`",
    "pass_functions": "functions whose body is only `pass`",
    "comments_over_other_code": "comments glued to a deleted statement (code above them), now over other code",
    "comments_without_code": "comments left where their code was (before a blank line or block end)",
    "comments_deleted_code_kept": "comments deleted whose code stays",
    "under_indented": "continuation lines under-indented",
    "rank_env_reads": '`os.environ.get("RANK")` reads added',
    "rank_env_after_init": "... of those, after an unconditional `init_process_group`",
    "init_guards": "`if dist.is_initialized():` guards added",
    "init_guards_after_init": "... of those, after an unconditional `init_process_group`",
    "kept_xla_args_rewritten": "torch_xla calls kept with their arguments rewritten",
    "kept_xla_constants_rewritten": '... of those, a reduce-type constant written as its string (`"sum"`)',
    "groups_not_destroyed": "process groups added and never destroyed",
    "repeated_accelerator": "repeated `current_accelerator(...)` expressions",
}

_RANK_READ = re.compile(r"""os\.environ(?:\.get\(|\[)\s*["'](?:RANK|LOCAL_RANK)["']""")
_IS_INITIALIZED = re.compile(r"^\s*(?:el)?if\b[^#]*\bis_initialized\(\)")
_ACCELERATOR = "current_accelerator(check_available=True)"
_REDUCE_STRING = re.compile(r"""(["'])(?:sum|mul|and|or|min|max)\1""")


def review_counts(old: str, new: str) -> collections.Counter[str]:
    """The counts of `REVIEW` that the change from `old` to `new` added."""
    before, after = _facts(old), _facts(new)
    counts: collections.Counter[str] = collections.Counter()
    for key in REVIEW:
        if key.startswith(("comments_", "kept_xla_")):
            continue
        counts[key] = max(0, after[key] - before[key])
    counts.update(_comment_counts(old, new))
    rewritten = _kept_xla_calls_rewritten(old, new)
    counts["kept_xla_args_rewritten"] = len(rewritten)
    counts["kept_xla_constants_rewritten"] = sum(1 for _, arguments in rewritten if _REDUCE_STRING.search(arguments))
    return counts


def _parsed(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _facts(text: str) -> collections.Counter[str]:
    """The per-file totals that `review_counts` subtracts."""
    facts: collections.Counter[str] = collections.Counter()
    tree = _parsed(text)
    lines = text.splitlines()
    facts["under_indented"] = _under_indented(text)
    facts["repeated_accelerator"] = max(0, text.count(_ACCELERATOR) - 1)
    if tree is None:
        return facts
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            facts.update(_if_facts(node))
        elif isinstance(node, ast.IfExp) and ast.dump(node.body) == ast.dump(node.orelse):
            facts["identical_branches"] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _only_pass(node.body):
            facts["pass_functions"] += 1
    unconditional = _unconditional_init_lines(tree)
    for number, line in enumerate(lines, start=1):
        after_init = any(start < number <= end for start, end in unconditional)
        reads = len(_RANK_READ.findall(line))
        facts["rank_env_reads"] += reads
        facts["rank_env_after_init"] += reads if after_init else 0
        if _IS_INITIALIZED.match(line):
            facts["init_guards"] += 1
            facts["init_guards_after_init"] += 1 if after_init else 0
    inits = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and _callee(n).endswith("init_process_group"))
    destroys = sum(
        1 for n in ast.walk(tree) if isinstance(n, ast.Call) and _callee(n).endswith("destroy_process_group")
    )
    facts["groups_not_destroyed"] = max(0, inits - destroys)
    return facts


def _if_facts(node: ast.If) -> collections.Counter[str]:
    facts: collections.Counter[str] = collections.Counter()
    if node.orelse and _same(node.body, node.orelse):
        facts["identical_branches"] += 1
    else_is_elif = len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
    if node.orelse and (_only_pass(node.body) or (_only_pass(node.orelse) and not else_is_elif)):
        facts["inverted_pass"] += 1
    if _only_pass(node.body) and not node.orelse and isinstance(node.test, ast.Call):
        facts["if_call_pass"] += 1
    return facts


def _same(a: list[ast.stmt], b: list[ast.stmt]) -> bool:
    return [ast.dump(s) for s in a] == [ast.dump(s) for s in b]


def _only_pass(body: list[ast.stmt]) -> bool:
    rest = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(rest) == 1 and isinstance(rest[0], ast.Pass)


def _callee(call: ast.Call) -> str:
    parts: list[str] = []
    node: ast.AST = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _unconditional_init_lines(tree: ast.Module) -> list[tuple[int, int]]:
    """(line of an `init_process_group` call standing in a function's or the module's own body,
    last line of that body): the lines that run after a process group surely exists."""
    spans: list[tuple[int, int]] = []
    owners: list[ast.AST] = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
    ]
    for owner in owners:
        body: list[ast.stmt] = getattr(owner, "body", [])
        if not body:
            continue
        end = max(getattr(s, "end_lineno", 0) or 0 for s in body)
        for stmt in body:
            value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
            if isinstance(value, ast.Call) and _callee(value).endswith("init_process_group"):
                spans.append((stmt.lineno, end))
                break
    return spans


def _under_indented(text: str) -> int:
    """Continuation lines inside brackets left of where they belong (pycodestyle's E128 and E122):
    under a bracket followed by code on its line, left of the code after the bracket; under a
    bracket that ends its line, at or left of the statement's first line. A line that starts by
    closing a bracket is left alone."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return 0
    count = 0
    first_indent = 0
    opened: list[int] = []  # per open bracket: the column continuation lines align to (-1: hanging)
    last_row = 0
    for index, token in enumerate(tokens):
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        row, column = token.start
        if opened and row != last_row and token.string not in ")]}":
            aligned = opened[-1]
            if (aligned >= 0 and column < aligned) or (aligned < 0 and column <= first_indent):
                count += 1
        if not opened and row != last_row:
            first_indent = column
        last_row = token.end[0]
        if token.type == tokenize.OP and token.string in "([{":
            after = next((t for t in tokens[index + 1 :] if t.type != tokenize.COMMENT), None)
            same_line = after is not None and after.type not in (tokenize.NL, tokenize.NEWLINE)
            opened.append(after.start[1] if same_line and after is not None else -1)
        elif token.type == tokenize.OP and token.string in ")]}" and opened:
            opened.pop()
    return count


def _comment_counts(old: str, new: str) -> collections.Counter[str]:
    """Comments the fix left above code it deleted, and comments it deleted whose code stays."""
    counts: collections.Counter[str] = collections.Counter()
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    opcodes = matcher.get_opcodes()
    kept_old = {i1 + k: j1 + k for tag, i1, i2, j1, _ in opcodes if tag == "equal" for k in range(i2 - i1)}
    deleted = {i for tag, i1, i2, _, _ in opcodes if tag == "delete" for i in range(i1, i2)}
    for i, j in kept_old.items():
        if not _is_comment(old_lines[i]) or i + 1 not in deleted:
            continue  # a comment whose next line was deleted (not rewritten in place)
        below_old = old_lines[i + 1]
        if not below_old.strip() or _is_comment(below_old):
            continue  # the comment's code was not what changed
        below_new = new_lines[j + 1] if j + 1 < len(new_lines) else ""
        indent = _indent(old_lines[i])
        if below_new.strip() and _indent(below_new) == indent and not _is_comment(below_new):
            # after a blank line it is a section header over the code below, where it belongs
            counts["comments_over_other_code"] += 1 if _glued(old_lines, i) else 0
        elif not below_new.strip() or _indent(below_new) < indent:
            counts["comments_without_code"] += 1
    for tag, _, i2, _, _ in opcodes:
        if tag != "delete":
            continue
        last = i2 - 1
        if _is_comment(old_lines[last]) and i2 in kept_old and old_lines[i2].strip() and not _is_comment(old_lines[i2]):
            counts["comments_deleted_code_kept"] += 1
    return counts


def _glued(lines: list[str], index: int) -> bool:
    """Whether the comment block holding line `index` has code right above it (not a blank line,
    not the file's start)."""
    indent = _indent(lines[index])
    while index > 0 and _is_comment(lines[index - 1]) and _indent(lines[index - 1]) == indent:
        index -= 1
    return index > 0 and bool(lines[index - 1].strip())


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _xla_names(tree: ast.Module) -> set[str]:
    """Names bound by torch_xla imports anywhere in the module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name.split(".")[0] == "torch_xla")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch_xla":
            names.update(a.asname or a.name for a in node.names)
    return names


def _xla_calls(text: str) -> Iterator[tuple[str, str]]:
    tree = _parsed(text)
    if tree is None:
        return
    names = _xla_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _callee(node)
            if callee and callee.split(".")[0] in names:
                arguments = [ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords]
                yield callee, ", ".join(arguments)


def _kept_xla_calls_rewritten(old: str, new: str) -> list[tuple[str, str]]:
    """torch_xla calls that stay after the fix with arguments no call of that callee had before."""
    before = collections.Counter(_xla_calls(old))
    callees = {callee for callee, _ in before}
    found = []
    for call in _xla_calls(new):
        if before[call] > 0:
            before[call] -= 1
        elif call[0] in callees:
            found.append(call)
    return found
