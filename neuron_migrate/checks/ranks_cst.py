"""LibCST transforms of the ranks concept; imported only when a file is fixed.

Each is the one implementation of its fix; the fix in `checks/ranks.py` checks its
preconditions on the `ast` and chooses its options.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.ranks import Guard, GuardedCall, Save
from neuron_migrate.checks.toolkit_cst import by_name, call_statement, positional, realigned, relaid


def _guarded(stmt: cst.SimpleStatementLine, guard: str, inner: cst.BaseExpression) -> cst.If:
    """`if <guard>:` around the statement `inner`, which keeps the statement's trailing comment."""
    body = stmt.with_changes(body=[cst.Expr(inner)], leading_lines=())
    return cst.If(
        test=cst.parse_expression(guard), body=cst.IndentedBlock(body=[body]), leading_lines=stmt.leading_lines
    )


_BOOLS = ("False", "True")


def master_print(stmt: cst.CSTNode, options: Guard) -> cst.CSTNode:
    """`xm.master_print(x, fd=f)` -> `if <test>:` / `print(x, file=f)`, every comment kept."""
    line, call = call_statement(stmt)
    args = []
    dropped_last = False
    for index, arg in enumerate(call.args):
        if arg.star:
            raise Decline
        if arg.keyword is not None:
            if arg.keyword.value == "local" and isinstance(arg.value, cst.Name) and arg.value.value in _BOOLS:
                dropped_last = index == len(call.args) - 1
                continue  # which ranks print is the guard's choice
            if arg.keyword.value not in ("fd", "flush"):
                raise Decline
            if arg.keyword.value == "fd":
                arg = arg.with_changes(keyword=cst.Name("file"))
        args.append(arg)
    if args and dropped_last:  # the dropped `local=` was last: the argument before it closes the call
        args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
    return _guarded(line, options.test, realigned(call, call.with_changes(func=cst.Name("print"), args=args)))


def guarded_call(stmt: cst.CSTNode, options: GuardedCall) -> cst.CSTNode:
    """`xm.rendezvous(tag)` -> `if <test>:` / `<call>`, the trailing comment kept on the call."""
    line, _ = call_statement(stmt)
    return _guarded(line, options.test, cst.parse_expression(options.call))


_SAVE = ("data", "file_or_path", "master_only", "global_master", "sync")


def xla_save(stmt: cst.CSTNode, options: Save) -> cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]:
    """`xm.save(obj, path)` -> `if <guard>:` / `torch.save(_to_cpu(obj), path)` and, with a
    barrier, `if <barrier_guard>:` / `<barrier>` (the barrier alone without a guard); the call's
    comments and layout kept."""
    line, call = call_statement(stmt)
    given = by_name(call, _SAVE)
    data, path = given.get("data"), given.get("file_or_path")
    if data is None or path is None:
        raise Decline
    extra = [cst.Arg(value=cst.SimpleString('"cpu"'))] if options.helper == "_move_to_device" else []
    wrapped = cst.Call(func=cst.Name(options.helper), args=[cst.Arg(value=data.value), *extra])
    save = relaid(
        call, cst.parse_expression(options.save), [positional(data).with_changes(value=wrapped), positional(path)]
    )
    first: cst.BaseStatement = (
        _guarded(line, options.guard, save) if options.guard else line.with_changes(body=[cst.Expr(save)])
    )
    if not options.barrier:
        return first
    barrier = cst.SimpleStatementLine(body=[cst.Expr(cst.parse_expression(options.barrier))])
    if not options.barrier_guard:  # the process group surely exists
        return cst.FlattenSentinel([first, barrier])
    after = cst.If(test=cst.parse_expression(options.barrier_guard), body=cst.IndentedBlock(body=[barrier]))
    return cst.FlattenSentinel([first, after])
