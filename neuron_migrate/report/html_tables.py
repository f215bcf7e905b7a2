"""The report's HTML tables: sortable, filterable by status, folder, concept and text."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.report.html_assets import badge, code_spans, esc
from neuron_migrate.report.model import STATUSES, CountRow, FileRow, Item, Report

Cell = str | tuple[str, str]  # HTML, or (sort key, HTML)


def _td(cell: Cell, numeric: bool, path: bool = False, label: str = "") -> str:
    named = f' data-label="{esc(label)}"' if label else ""
    if not isinstance(cell, tuple):
        return f"<td class=n{named}>{cell}</td>" if numeric else f"<td{named}>{cell}</td>"
    key, html = cell  # the sort key, escaped by the caller
    classes = ' class="n"' if numeric else ' class="path"' if path else ""
    return f'<td{classes}{named} data-v="{key}">{html}</td>'


def table(
    caption: str,
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    numeric: Sequence[bool],
    table_id: str = "",
    row_attrs: Sequence[str] = (),
    path_col: int = -1,
    stack: bool = False,
) -> str:
    """A table in a `.scroll` box; `stack`: on a narrow screen each row becomes a block of
    `heading: value` cells (the `stack` CSS), so the table needs no sideways scrolling."""
    classes = " ".join(c for c, on in (("sortable", bool(table_id)), ("stack", stack)) if on)
    ident = (f' id="{table_id}"' if table_id else "") + (f' class="{classes}"' if classes else "")
    head = "".join(f'<th scope="col"{" class=n" if n else ""}>{esc(h)}</th>' for h, n in zip(header, numeric))
    labels = header if stack else [""] * len(header)
    body = "".join(
        f"<tr{row_attrs[i] if row_attrs else ''}>"
        + "".join(_td(c, n, col == path_col, labels[col]) for col, (c, n) in enumerate(zip(row, numeric)))
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f'<div class="scroll"><table{ident}><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def counts_table(caption: str, rows: Sequence[CountRow], first: str) -> str:
    return table(
        caption,
        (first, "area" if first == "family" else "name", "safe", "unsafe", "manual", "total"),
        [
            (f"<code>{esc(r.key)}</code>", esc(r.label), str(r.safe), str(r.unsafe), str(r.manual), str(r.total))
            for r in rows
        ],
        (False, False, True, True, True, True),
    )


def items_list(items: Sequence[Item]) -> str:
    if not items:
        return "<p>None.</p>"
    lis = "".join(
        f"<li><code>{esc(i.location)}</code> <strong>{esc(i.code)}</strong> {code_spans(i.message)} "
        f'(<a href="{esc(i.guide)}">guide: {esc(i.code)}</a>)</li>'
        for i in items
    )
    return f'<ul class="items">{lis}</ul>'


def _options(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return f'<label>{esc(label)} <select name="{name}"><option value="">all</option>{opts}</select></label>'


def _filters(table_id: str, report: Report, rows: Sequence[FileRow], concepts: Sequence[str] = ()) -> str:
    statuses = [s for s in STATUSES if any(r.status == s for r in rows)]
    folders = sorted({f.path for f in report.folders})
    parts = [_options("status", "status", statuses), _options("folder", "folder", folders)]
    if concepts:
        parts.append(_options("concept", "concept", concepts))
    parts.append('<label>text <input type="search" name="text" size="14"></label>')
    return f'<div class="filters" data-for="{table_id}">{"".join(parts)}<span class="shown note" aria-live="polite"></span></div>'


def file_table(
    table_id: str, caption: str, rows: Sequence[FileRow], report: Report, order: bool, concepts: dict[str, str]
) -> str:
    rank = {s: i for i, s in enumerate(STATUSES)}
    header: tuple[str, ...] = ("#",) if order else ()
    header += ("file", "status", "imported by", "safe", "unsafe", "manual", "blockers", "minutes")
    numeric = ((True,) if order else ()) + (False, False, True, True, True, True, True, True)
    cells: list[Sequence[Cell]] = []
    attrs = []
    for n, r in enumerate(rows, 1):
        row: list[Cell] = [str(n)] if order else []
        path = esc(r.path)
        tag = ' <span class="tag">inference only</span>' if r.inference_only else ""
        row += [
            (path, f"<code>{path}</code>{tag}"),
            (str(rank[r.status]), badge(r.status)),
            str(r.importers),
            str(r.safe),
            str(r.unsafe),
            str(r.manual),
            str(r.blockers),
            str(r.minutes),
        ]
        cells.append(row)
        concept = concepts.get(r.path)
        attrs.append(
            f' data-status="{r.status}" data-folder="{esc(r.folder)}"'
            + (f' data-concepts="{esc(concept)}"' if concept else "")
        )
    all_concepts = sorted({c for v in concepts.values() for c in v.split()})
    return _filters(table_id, report, rows, all_concepts) + table(
        caption, header, cells, numeric, table_id, attrs, path_col=1 if order else 0, stack=True
    )
