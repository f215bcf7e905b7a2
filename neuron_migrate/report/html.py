"""The report as one self-contained HTML file: inline CSS and SVG, no network, readable
without JavaScript (a small inline script only makes the file table sortable)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from neuron_migrate.report.model import KINDS, STATUS_MEANING, STATUSES, CountRow, Item, Report, fallback_text

COLOURS = {
    "done": "#1a7f37",
    "auto": "#0969da",
    "unsafe": "#bc4c00",
    "manual": "#cf222e",
    "clean": "#6e7781",
    "safe": "#0969da",
}

CSS = """
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1200px;margin:0 auto;padding:16px}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
h3{font-size:1.1rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.95rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em;overflow-wrap:anywhere}
td{overflow-wrap:anywhere}
.charts{display:flex;flex-wrap:wrap;gap:24px}
figure{margin:0;flex:1 1 420px;min-width:0}
figcaption{font-weight:600}
svg{width:100%;height:auto;display:block}
.legend{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:12px}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.status{font-weight:600}
.note{color:#57606a}
th button{font:inherit;background:none;border:0;padding:0;cursor:pointer;text-decoration:underline dotted}
ul.items{padding-left:1.2rem}ul.items li{margin:.2rem 0;overflow-wrap:anywhere}
"""

SCRIPT = """
(function(){
  var table=document.getElementById('files');
  if(!table)return;
  var heads=table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads,function(th,col){
    var label=th.textContent;var b=document.createElement('button');b.type='button';b.textContent=label;
    th.textContent='';th.appendChild(b);
    b.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var rows=Array.prototype.slice.call(table.tBodies[0].rows);
      rows.sort(function(a,b){
        var x=a.cells[col].getAttribute('data-v')||a.cells[col].textContent;
        var y=b.cells[col].getAttribute('data-v')||b.cells[col].textContent;
        var nx=parseFloat(x),ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
        return asc?c:-c;
      });
      rows.forEach(function(r){table.tBodies[0].appendChild(r);});
    });
  });
})();
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _m(text: str) -> str:
    """Escaped text with `code` spans (as in finding messages) shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _legend(keys: Sequence[str]) -> str:
    items = "".join(f'<li><span class="sw" style="background:{COLOURS[k]}"></span>{_e(k)}</li>' for k in keys)
    return f'<ul class="legend" aria-hidden="true">{items}</ul>'


def status_chart(counts: dict[str, int]) -> str:
    """One stacked bar: how many files have each status."""
    total = sum(counts.values()) or 1
    width, x, parts = 600.0, 0.0, []
    for status in STATUSES:
        if not counts[status]:
            continue
        w = width * counts[status] / total
        parts.append(
            f'<rect class="bar" x="{x:.2f}" y="10" width="{w:.2f}" height="40" fill="{COLOURS[status]}">'
            f"<title>{_e(status)}: {counts[status]}</title></rect>"
        )
        if w > 28:
            parts.append(
                f'<text x="{x + w / 2:.2f}" y="36" fill="#fff" font-size="16" text-anchor="middle">{counts[status]}</text>'
            )
        x += w
    desc = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    return (
        f'<svg id="chart-status" role="img" aria-labelledby="cs-t cs-d" viewBox="0 0 600 60" preserveAspectRatio="none">'
        f'<title id="cs-t">Status per file</title><desc id="cs-d">{_e(desc)}</desc>{"".join(parts)}</svg>'
    )


def family_chart(rows: Sequence[CountRow]) -> str:
    """One bar per family, stacked by safe, unsafe and manual findings."""
    top = max((r.total for r in rows), default=0) or 1
    bar_h, gap, label_w, width = 22, 8, 70, 600
    height = max(len(rows), 1) * (bar_h + gap) + gap
    parts = []
    for index, row in enumerate(rows):
        y = gap + index * (bar_h + gap)
        parts.append(f'<text x="0" y="{y + 16}" font-size="14" fill="#1f2328">{_e(row.key)}</text>')
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
        parts.append(f'<text x="{x + 4:.2f}" y="{y + 16}" font-size="14" fill="#1f2328">{row.total}</text>')
    desc = "; ".join(f"{r.key}: {r.safe} safe, {r.unsafe} unsafe, {r.manual} manual" for r in rows) or "no findings"
    return (
        f'<svg id="chart-families" role="img" aria-labelledby="cf-t cf-d" viewBox="0 0 {width} {height}">'
        f'<title id="cf-t">Findings per family</title><desc id="cf-d">{_e(desc)}</desc>{"".join(parts)}</svg>'
    )


Cell = str | tuple[str, str]  # HTML, or (sort key, HTML)


def _td(cell: Cell, numeric: bool) -> str:
    key, html = cell if isinstance(cell, tuple) else ("", cell)
    attrs = (" class=n" if numeric else "") + (f' data-v="{_e(key)}"' if key else "")
    return f"<td{attrs}>{html}</td>"


def _table(
    caption: str, header: Sequence[str], rows: Sequence[Sequence[Cell]], numeric: Sequence[bool], table_id: str = ""
) -> str:
    ident = f' id="{table_id}"' if table_id else ""
    head = "".join(f'<th scope="col"{" class=n" if n else ""}>{_e(h)}</th>' for h, n in zip(header, numeric))
    body = "".join("<tr>" + "".join(_td(c, n) for c, n in zip(row, numeric)) + "</tr>" for row in rows)
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


def _files(report: Report) -> str:
    order = {s: i for i, s in enumerate(STATUSES)}
    rows: list[Sequence[Cell]] = [
        (
            f"<code>{_e(r.path)}</code>",
            (str(order[r.status]), f'<span class="status" style="color:{COLOURS[r.status]}">{_e(r.status)}</span>'),
            str(r.safe),
            str(r.unsafe),
            str(r.manual),
        )
        for r in report.files
    ]
    return _table(
        "Files (select a column heading to sort)",
        ("file", "status", "safe", "unsafe", "manual"),
        rows,
        (False, False, True, True, True),
        table_id="files",
    )


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
        "<h3>Smoke run</h3>"
        + _table("Smoke run", ("result", "value"), rows, (False, False))
        + (f"<ul>{problems}</ul>" if problems else "")
    )


def render(report: Report) -> str:
    run = report.run
    counts = report.status_counts()
    totals = report.kind_totals()
    status_rows = [
        (f'<span class="sw" style="background:{COLOURS[s]}"></span>{_e(s)}', _m(STATUS_MEANING[s]), str(counts[s]))
        for s in STATUSES
    ]
    manual = (
        "".join(f"<h3>{_e(g.label)} ({len(g.items)})</h3>{_items(g.items)}" for g in report.manual)
        or "<p>Nothing: every finding has a fix.</p>"
    )
    effort_rows = [(_e(g.label), str(len(g.items)), str(g.minutes_each), str(g.minutes)) for g in report.manual]
    beta = "".join(f"<h3>{_e(label)} ({len(items)})</h3>{_items(items)}" for label, items in report.beta_limits)
    settings = [
        ("neuron-migrate", _e(run.tool_version)),
        ("target version (torch-neuronx)", _e(run.target_version)),
        ("selection", _e(run.selection)),
        ("paths", _e(" ".join(run.paths))),
        ("date", _e(run.date)),
    ]
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>neuron-migrate report</title>",
        f"<style>{CSS}</style></head><body><main>",
        "<h1>neuron-migrate report</h1>",
        (
            f"<p>{len(report.files)} files checked; {sum(totals.values())} findings: {totals['safe']} with a safe fix, "
            f"{totals['unsafe']} need <code>--unsafe-fixes</code>, {totals['manual']} manual. "
            f"Estimated manual effort: about {report.total_minutes} minutes.</p>"
        ),
        '<h2 id="status">Status per file</h2><div class="charts">',
        f"<figure><figcaption>Files by status</figcaption>{status_chart(counts)}{_legend(STATUSES)}</figure>",
        f"<figure><figcaption>Findings per family</figcaption>{family_chart(report.families)}{_legend(KINDS)}</figure></div>",
        _table("Files by status", ("status", "meaning", "files"), status_rows, (False, False, True)),
        _files(report),
        '<h2 id="families">Findings by family and rule</h2>',
        _counts("Findings by family", report.families, "family"),
        _counts("Findings by rule", report.rules, "rule"),
        '<h2 id="manual">Manual work by concept</h2>',
        manual,
        '<h2 id="packaging">Packaging and launch scripts</h2>',
        _items(report.packaging),
        '<h2 id="effort">Effort estimate</h2>',
        (
            '<p class="note">This is an <strong>estimate</strong>: minutes per manual finding, by concept. Change the '
            "numbers in <code>[tool.neuron-migrate.report-effort]</code>; see docs/report.md for the defaults.</p>"
        ),
        _table(
            "Estimated effort",
            ("concept", "findings", "minutes each", "minutes"),
            effort_rows,
            (False, True, True, True),
        ),
        f"<p>Total: about <strong>{report.total_minutes} minutes</strong> ({report.total_minutes / 60:.1f} hours).</p>",
        '<h2 id="beta">Beta limits hit</h2>',
        beta,
        _smoke(report),
        '<h2 id="settings">Settings</h2>',
        _table("The run's settings", ("setting", "value"), settings, (False, False)),
        f"</main><script>{SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)
