"""The report as one self-contained HTML file: inline CSS, SVG and script, no network (a
Content-Security-Policy forbids every request), light and dark. The plan comes first (blockers,
the work in order, the folder tree, effort), the file list last. Readable without JavaScript; the
inline script only sorts and filters the tables."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from neuron_migrate.report.markdown import hours
from neuron_migrate.report.model import (
    KINDS,
    STATUS_MEANING,
    STATUSES,
    CountRow,
    FileRow,
    FolderRow,
    Item,
    Report,
    fallback_text,
)

COLOURS = {
    "blocked": "#8250df",
    "manual": "#cf222e",
    "unsafe": "#bc4c00",
    "auto": "#0969da",
    "done": "#1a7f37",
    "clean": "#6e7781",
    "safe": "#0969da",
}
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#161b22;--line:#3d444d;--link:#4493f8}}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
main{max-width:1240px;margin:0 auto;padding:16px}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid var(--line)}
h3{font-size:1.1rem;margin:1rem 0 .25rem}
nav ul{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:4px 14px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.95rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
thead th{background:var(--panel)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.path{min-width:16ch;overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em;overflow-wrap:anywhere}
.badge{display:inline-block;white-space:nowrap;border-radius:1em;padding:0 .55em;font-size:.85em;font-weight:600;
line-height:1.6;color:#fff;vertical-align:baseline}
.badges{display:flex;flex-wrap:wrap;gap:6px;margin:.5rem 0;padding:0;list-style:none}
.charts{display:flex;flex-wrap:wrap;gap:24px}
figure{margin:0;flex:1 1 420px;min-width:0}
figcaption{font-weight:600}
svg{width:100%;height:auto;display:block}
#chart-status{height:44px}figure.narrow{max-width:760px}
svg text{fill:var(--fg)}svg text.in{fill:#fff}
.legend{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:4px 12px}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border-radius:2px}
.note{color:var(--muted)}
.big{font-size:1.15rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,340px),1fr));gap:12px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--panel);min-width:0}
.card h3{margin-top:0}
th button{font:inherit;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-decoration:underline dotted}
th[aria-sort=ascending] button::after{content:" \\25B2"}th[aria-sort=descending] button::after{content:" \\25BC"}
.filters{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center;margin:.5rem 0}
.filters label{white-space:nowrap;display:inline-flex;gap:4px;align-items:center;max-width:100%;min-width:0}
.filters select,.filters input{font:inherit;max-width:100%;min-width:0;flex:0 1 auto;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:4px}
ul.items{padding-left:1.2rem}ul.items li{margin:.2rem 0;overflow-wrap:anywhere}
details.tree{margin:0 0 0 .9rem}details.tree>summary{cursor:pointer;padding:2px 0}
.tree-top{margin-left:0}
.fold{display:inline-flex;flex-wrap:wrap;gap:4px 8px;align-items:baseline}
.mini{display:inline-block;width:90px;height:10px;vertical-align:middle;border-radius:2px;overflow:hidden;background:var(--line)}
.mini span{display:block;float:left;height:100%}
"""

SCRIPT = """
(function(){
  function val(row,col){var c=row.cells[col];return c?(c.getAttribute('data-v')||c.textContent):'';}
  [].forEach.call(document.querySelectorAll('table.sortable'),function(table){
    var heads=table.tHead.rows[0].cells;
    [].forEach.call(heads,function(th,col){
      var b=document.createElement('button');b.type='button';b.textContent=th.textContent;
      th.textContent='';th.appendChild(b);
      b.addEventListener('click',function(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        [].forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var rows=[].slice.call(table.tBodies[0].rows);
        rows.sort(function(a,b){
          var x=val(a,col),y=val(b,col),nx=parseFloat(x),ny=parseFloat(y);
          var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
          return asc?c:-c;
        });
        rows.forEach(function(r){table.tBodies[0].appendChild(r);});
      });
    });
  });
  [].forEach.call(document.querySelectorAll('.filters'),function(bar){
    var table=document.getElementById(bar.getAttribute('data-for'));if(!table)return;
    var inputs=bar.querySelectorAll('select,input'),count=bar.querySelector('.shown');
    function apply(){
      var want={};[].forEach.call(inputs,function(i){want[i.name]=i.value.toLowerCase();});
      var shown=0;
      [].forEach.call(table.tBodies[0].rows,function(r){
        var folder=r.getAttribute('data-folder')||'';
        var ok=(!want.status||r.getAttribute('data-status')===want.status)
          &&(!want.concept||(' '+(r.getAttribute('data-concepts')||'')+' ').indexOf(' '+want.concept+' ')>=0)
          &&(!want.folder||want.folder==='.'||folder===want.folder||folder.indexOf(want.folder+'/')===0)
          &&(!want.text||r.textContent.toLowerCase().indexOf(want.text)>=0);
        r.hidden=!ok;if(ok)shown++;
      });
      if(count)count.textContent=shown+' of '+table.tBodies[0].rows.length+' shown';
    }
    [].forEach.call(inputs,function(i){i.addEventListener('input',apply);i.addEventListener('change',apply);});
    apply();
  });
})();
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _m(text: str) -> str:
    """Escaped text with `code` spans (as in finding messages) shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def badge(status: str, text: str | None = None) -> str:
    return f'<span class="badge" style="background:{COLOURS[status]}">{_e(text or status)}</span>'


def _legend(keys: Sequence[str]) -> str:
    items = "".join(f'<li><span class="sw" style="background:{COLOURS[k]}"></span>{_e(k)}</li>' for k in keys)
    return f'<ul class="legend" aria-hidden="true">{items}</ul>'


def _stack(
    values: Sequence[int], keys: Sequence[str], y: float, height: float, width: float, x0: float, labels: bool = True
) -> list[str]:
    total = sum(values) or 1
    x, parts = x0, []
    for key, value in zip(keys, values):
        if not value:
            continue
        w = width * value / total
        parts.append(
            f'<rect class="bar" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{height}" fill="{COLOURS[key]}">'
            f"<title>{_e(key)}: {value}</title></rect>"
        )
        if labels and w > 28:
            parts.append(
                f'<text class="in" x="{x + w / 2:.2f}" y="{y + height / 2 + 5}" font-size="15" '
                f'text-anchor="middle">{value}</text>'
            )
        x += w
    return parts


def status_chart(counts: dict[str, int]) -> str:
    """One stacked bar: how many files have each status."""
    values = [counts[s] for s in STATUSES]
    desc = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    return (
        f'<svg id="chart-status" role="img" aria-labelledby="cs-t cs-d" viewBox="0 0 600 50" preserveAspectRatio="none">'
        f'<title id="cs-t">Files by status</title><desc id="cs-d">{_e(desc)}</desc>'
        f"{''.join(_stack(values, STATUSES, 5, 40, 600, 0, labels=False))}</svg>"
    )


def family_chart(rows: Sequence[CountRow]) -> str:
    """One bar per family, stacked by safe, unsafe and manual findings."""
    top = max((r.total for r in rows), default=0) or 1
    bar_h, gap, label_w, width = 22, 8, 70, 600
    height = max(len(rows), 1) * (bar_h + gap) + gap
    parts = []
    for index, row in enumerate(rows):
        y = gap + index * (bar_h + gap)
        parts.append(f'<text x="0" y="{y + 16}" font-size="14">{_e(row.key)}</text>')
        x = float(label_w)
        for kind in KINDS:
            value = getattr(row, kind)
            if value:
                w = (width - label_w - 50) * value / top
                parts.append(
                    f'<rect class="bar" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar_h}" fill="{COLOURS[kind]}">'
                    f"<title>{_e(row.key)} {_e(kind)}: {value}</title></rect>"
                )
                x += w
        parts.append(f'<text x="{x + 4:.2f}" y="{y + 16}" font-size="14">{row.total}</text>')
    desc = "; ".join(f"{r.key}: {r.safe} safe, {r.unsafe} unsafe, {r.manual} manual" for r in rows) or "no findings"
    return (
        f'<svg id="chart-families" role="img" aria-labelledby="cf-t cf-d" viewBox="0 0 {width} {height}">'
        f'<title id="cf-t">Findings per family</title><desc id="cf-d">{_e(desc)}</desc>{"".join(parts)}</svg>'
    )


def compare_chart(old: Sequence[int], new: Sequence[int], old_label: str) -> str:
    """Two stacked bars, before and now: files by status."""
    top = max(sum(old), sum(new), 1)
    label_w, width = 70, 600
    parts = []
    for index, (label, values) in enumerate((("before", old), ("now", new))):
        y = 6 + index * 36
        parts.append(f'<text x="0" y="{y + 20}" font-size="14">{label}</text>')
        parts += _stack(values, STATUSES, y, 28, (width - label_w) * sum(values) / top, label_w)
    desc = f"before ({old_label}): " + ", ".join(f"{v} {s}" for s, v in zip(STATUSES, old))
    desc += "; now: " + ", ".join(f"{v} {s}" for s, v in zip(STATUSES, new))
    return (
        f'<svg id="chart-compare" role="img" aria-labelledby="cc-t cc-d" viewBox="0 0 {width} 80">'
        f'<title id="cc-t">Files by status, before and now</title><desc id="cc-d">{_e(desc)}</desc>'
        f"{''.join(parts)}</svg>"
    )


Cell = str | tuple[str, str]  # HTML, or (sort key, HTML)


def _td(cell: Cell, numeric: bool, path: bool = False) -> str:
    if not isinstance(cell, tuple):
        return f"<td class=n>{cell}</td>" if numeric else f"<td>{cell}</td>"
    key, html = cell  # the sort key, escaped by the caller
    classes = ' class="n"' if numeric else ' class="path"' if path else ""
    return f'<td{classes} data-v="{key}">{html}</td>'


def _table(
    caption: str,
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    numeric: Sequence[bool],
    table_id: str = "",
    row_attrs: Sequence[str] = (),
    path_col: int = -1,
) -> str:
    ident = f' id="{table_id}" class="sortable"' if table_id else ""
    head = "".join(f'<th scope="col"{" class=n" if n else ""}>{_e(h)}</th>' for h, n in zip(header, numeric))
    body = "".join(
        f"<tr{row_attrs[i] if row_attrs else ''}>"
        + "".join(_td(c, n, col == path_col) for col, (c, n) in enumerate(zip(row, numeric)))
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f'<div class="scroll"><table{ident}><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _counts(caption: str, rows: Sequence[CountRow], first: str) -> str:
    return _table(
        caption,
        (first, "area" if first == "family" else "name", "safe", "unsafe", "manual", "total"),
        [
            (f"<code>{_e(r.key)}</code>", _e(r.label), str(r.safe), str(r.unsafe), str(r.manual), str(r.total))
            for r in rows
        ],
        (False, False, True, True, True, True),
    )


def _items(items: Sequence[Item]) -> str:
    if not items:
        return "<p>None.</p>"
    lis = "".join(
        f"<li><code>{_e(i.location)}</code> <strong>{_e(i.code)}</strong> {_m(i.message)} "
        f'(<a href="{_e(i.guide)}">guide: {_e(i.code)}</a>)</li>'
        for i in items
    )
    return f'<ul class="items">{lis}</ul>'


def _options(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
    return f'<label>{_e(label)} <select name="{name}"><option value="">all</option>{opts}</select></label>'


def _filters(table_id: str, report: Report, rows: Sequence[FileRow], concepts: Sequence[str] = ()) -> str:
    statuses = [s for s in STATUSES if any(r.status == s for r in rows)]
    folders = sorted({f.path for f in report.folders})
    parts = [_options("status", "status", statuses), _options("folder", "folder", folders)]
    if concepts:
        parts.append(_options("concept", "concept", concepts))
    parts.append('<label>text <input type="search" name="text" size="14"></label>')
    return f'<div class="filters" data-for="{table_id}">{"".join(parts)}<span class="shown note" aria-live="polite"></span></div>'


def _file_table(
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
        path = _e(r.path)
        row += [
            (path, f"<code>{path}</code>"),
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
            f' data-status="{r.status}" data-folder="{_e(r.folder)}"'
            + (f' data-concepts="{_e(concept)}"' if concept else "")
        )
    all_concepts = sorted({c for v in concepts.values() for c in v.split()})
    return _filters(table_id, report, rows, all_concepts) + _table(
        caption, header, cells, numeric, table_id, attrs, path_col=1 if order else 0
    )


def _mini(f: FolderRow) -> str:
    spans = "".join(
        f'<span style="width:{100 * n / f.files:.1f}%;background:{COLOURS[s]}"></span>'
        for s, n in zip(STATUSES, f.statuses)
        if n
    )
    return f'<span class="mini" aria-hidden="true">{spans}</span>'


def _folder_tree(report: Report) -> str:
    """Nested <details>, one per folder, open down to the second level."""
    out: list[str] = []
    depth_open: list[int] = []
    for f in report.folders:
        while depth_open and depth_open[-1] >= f.depth:
            out.append("</details>")
            depth_open.pop()
        name = f.path if f.depth == 0 else f.path.rsplit("/", 1)[-1]
        work = [badge(s, f"{n} {s}") for s, n in zip(STATUSES, f.statuses) if n and s != "clean"]
        summary = (
            f'<span class="fold"><code>{_e(name)}</code> {_mini(f)} <span class="note">{f.files} files · '
            f"{f.total} findings · {f.blockers} blockers · {f.minutes} min</span> {' '.join(work)}</span>"
        )
        opened = " open" if f.depth < 2 else ""
        top = " tree-top" if f.depth == 0 else ""
        out.append(f'<details class="tree{top}" data-folder="{_e(f.path)}"{opened}><summary>{summary}</summary>')
        depth_open.append(f.depth)
    out += ["</details>"] * len(depth_open)
    return f'<div id="folders-tree">{"".join(out)}</div>'


def _smoke(report: Report) -> str:
    s = report.smoke
    if s is None:
        return ""
    rows = [
        ("script", f"<code>{_e(s.script)}</code>"),
        ("status", _e(s.status)),
        ("device", _e(s.device)),
        ("ranks", str(s.ranks)),
        ("optimizer steps", str(s.steps)),
        ("ops run on neuron", str(s.ops)),
        (
            "fallbacks" + (" (predicted)" if s.fallbacks_predicted else " (measured)"),
            _e(fallback_text(s)),
        ),
        ("device mixing", str(s.device_mixing)),
        ("float64 on the device", str(s.float64)),
        ("parity with CPU", _e(s.parity)),
    ]
    problems = "".join(f"<li>{_e(p)}</li>" for p in s.problems)
    return (
        '<h2 id="smoke">Smoke run</h2>'
        + _table("Smoke run", ("result", "value"), rows, (False, False))
        + (f"<ul>{problems}</ul>" if problems else "")
    )


def _relation(report: Report) -> str:
    r = report.relation
    if r is None:
        return ""
    rows = [
        ("findings (<code>check</code>: Found N; the sum of <code>check --statistics</code>)", str(r.found)),
        ("marked fixable by <code>check</code> (each finding's own fix)", str(r.fixable)),
        ("marked fixable with <code>--unsafe-fixes</code> too", str(r.unsafe_fixable)),
        ("left after <code>check --fix</code>", str(r.left_after_fix)),
        ("left after <code>check --fix --unsafe-fixes</code>", str(r.left_after_unsafe_fixes)),
    ]
    return (
        '<h2 id="check">How this relates to <code>check</code></h2>'
        '<p class="note">Same settings, same counts. Fixing also removes a torch_xla import once its uses are '
        "gone, so more findings go with <code>--fix</code> than <code>check</code> marks fixable.</p>"
        + _table("check and the report", ("count", "findings"), rows, (False, True))
    )


def _comparison(report: Report) -> str:
    c = report.comparison
    if c is None:
        return ""
    done = "".join(f"<li><code>{_e(p)}</code></li>" for p in c.newly_done) or "<li>None.</li>"
    worse = [(f"<code>{_e(f)}</code>", badge(o) if o in COLOURS else _e(o), badge(n)) for f, o, n in c.worse]
    rules = [(f"<code>{_e(code)}</code>", str(o), str(n), f"{n - o:+d}") for code, o, n in c.rules]
    return (
        f'<h2 id="progress">Progress since {_e(c.old_date or "the earlier report")}</h2>'
        f'<p class="big">{len(c.newly_done)} files newly done · findings {c.old_findings} → {c.new_findings} '
        f"({c.new_findings - c.old_findings:+d}) · blockers left: {c.new_blockers} (were {c.old_blockers})</p>"
        f'<figure class="narrow">{compare_chart(c.old_statuses, c.new_statuses, c.old_date)}{_legend(STATUSES)}</figure>'
        f"<h3>Newly done ({len(c.newly_done)})</h3><ul class=items>{done}</ul>"
        + (
            f"<h3>More work than before ({len(worse)})</h3>"
            + _table("More work than before", ("file", "before", "now"), worse, (False, False, False))
            if worse
            else ""
        )
        + (
            _table(
                "Findings per rule, before and now",
                ("rule", "before", "now", "change"),
                rules,
                (False, True, True, True),
            )
            if rules
            else ""
        )
    )


def _blockers(report: Report) -> str:
    if not report.blockers:
        return '<h2 id="blockers">Blockers</h2><p>None: no finding keeps a torch_xla import alive.</p>'
    cards = "".join(
        f'<div class="card" data-concept="{_e(g.concept)}"><h3>{_e(g.label)} {badge("blocked", str(g.count))}</h3>'
        f'<p><a href="{_e(g.guide)}">Guide: how to migrate {_e(g.label)}</a></p>'
        f'<p class="note">First occurrence in each of {len(g.first)} files:</p>{_items(g.first)}</div>'
        for g in report.blockers
    )
    return (
        f'<h2 id="blockers">Blockers ({report.blocker_count})</h2>'
        '<p class="note">APIs with no TorchNeuron counterpart a tool can write; each keeps a torch_xla import '
        f'alive until a person rewrites it.</p><div class="cards">{cards}</div>'
    )


def render(report: Report) -> str:
    run = report.run
    counts = report.status_counts()
    totals = report.kind_totals()
    concepts: dict[str, set[str]] = {}
    for group in report.manual:
        for item in group.items:
            concepts.setdefault(item.path, set()).add(group.concept)
    for bgroup in report.blockers:
        for item in bgroup.first:
            concepts.setdefault(item.path, set()).add(bgroup.concept)
    concept_text = {path: " ".join(sorted(c)) for path, c in concepts.items()}
    badges = "".join(f"<li>{badge(s, f'{counts[s]} {s}')}</li>" for s in STATUSES)
    status_rows = [(badge(s), _m(STATUS_MEANING[s]), str(counts[s])) for s in STATUSES]
    manual = (
        "".join(
            f"<details><summary><strong>{_e(g.label)}</strong> ({len(g.items)})</summary>{_items(g.items)}</details>"
            for g in report.manual
        )
        or "<p>Nothing: every finding has a fix.</p>"
    )
    effort_rows = [(_e(g.label), str(len(g.items)), str(g.minutes_each), str(g.minutes)) for g in report.manual]
    beta = "".join(f"<h3>{_e(label)} ({len(items)})</h3>{_items(items)}" for label, items in report.beta_limits)
    settings = [
        ("neuron-migrate", _e(run.tool_version)),
        ("target version (torch-neuronx)", _e(run.target_version)),
        ("from", _e(", ".join(run.families))),
        ("target", _e(run.target)),
        ("selection", _e(run.selection)),
        ("done also from", _e(run.history or "recognised neuron code only (give --since REF or --baseline FILE)")),
        ("paths", _e(" ".join(run.paths))),
        ("date", _e(run.date)),
    ]
    sections = [
        ("check", "check"),
        ("progress", "progress"),
        ("blockers", "blockers"),
        ("work", "work in order"),
        ("folders", "folders"),
        ("effort", "effort"),
        ("findings", "findings"),
        ("manual", "manual work"),
        ("beta", "beta limits"),
        ("files", "all files"),
    ]
    nav = "".join(
        f'<li><a href="#{key}">{_e(label)}</a></li>'
        for key, label in sections
        if key != "progress" or report.comparison is not None
    )
    work = (
        _file_table(
            "work-list", "The work, in order (select a heading to sort)", report.work, report, True, concept_text
        )
        if report.work
        else "<p>Nothing left to migrate.</p>"
    )
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        "<title>neuron-migrate: migration plan</title>",
        f"<style>{CSS}</style></head><body><main>",
        "<h1>Migration plan</h1>",
        (
            f'<p class="big">{len(report.files)} files; {sum(totals.values())} findings '
            f"({totals['safe']} fixed by <code>--fix</code>, {totals['unsafe']} by <code>--unsafe-fixes</code>, "
            f"{totals['manual']} manual); {report.blocker_count} blockers. Estimated manual effort: "
            f"<strong>{_e(hours(report))}</strong>.</p>"
        ),
        f'<ul class="badges" id="badges">{badges}</ul>',
        f"<figure>{status_chart(counts)}</figure>",
        f'<nav aria-label="sections"><ul>{nav}</ul></nav>',
        _relation(report),
        _comparison(report),
        _blockers(report),
        '<h2 id="work">The work, in order</h2>',
        (
            '<p class="note">Files that other files import come first (from the local import graph): a module '
            "imported by 30 scripts is migrated once, early. Then blocked before manual, unsafe and auto.</p>"
        ),
        work,
        '<h2 id="folders">By folder</h2>',
        _folder_tree(report),
        '<h2 id="effort">Effort estimate</h2>',
        f'<p class="big">About <strong>{_e(hours(report))}</strong>.</p>',
        (
            '<p class="note">An <strong>estimate</strong>: minutes per manual finding, by concept; the range is half to '
            f"twice the typical total ({report.total_minutes} minutes); a person-day is 6 hours. Change the table in "
            "<code>[tool.neuron-migrate.report-effort]</code> (docs/report.md lists the defaults).</p>"
        ),
        _table(
            "Estimated effort",
            ("concept", "findings", "minutes each", "minutes"),
            effort_rows,
            (False, True, True, True),
        ),
        '<h2 id="findings">Findings by family and rule</h2><div class="charts">',
        f'<figure class="narrow"><figcaption>Findings per family</figcaption>{family_chart(report.families)}{_legend(KINDS)}</figure></div>',
        _counts("Findings by family", report.families, "family"),
        _counts("Findings by rule", report.rules, "rule"),
        '<h2 id="manual">Manual work by concept</h2>',
        manual,
        '<h2 id="packaging">Packaging and launch scripts</h2>',
        _items(report.packaging),
        '<h2 id="beta">Beta limits hit</h2>',
        beta,
        _smoke(report),
        '<h2 id="settings">Settings</h2>',
        _table("The run's settings", ("setting", "value"), settings, (False, False)),
        '<h2 id="files">All files</h2>',
        _table("Files by status", ("status", "meaning", "files"), status_rows, (False, False, True)),
        _file_table("file-list", "Files (select a heading to sort)", report.files, report, False, concept_text),
        f"</main><script>{SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)
