"""The report as one self-contained HTML file: inline CSS, SVG and script, no network (a
Content-Security-Policy forbids every request), light and dark. The plan comes first (blockers,
the work in order, the folder tree, effort), the file list last. Readable without JavaScript; the
inline script only sorts and filters the tables."""

from __future__ import annotations

from neuron_migrate.report.html_assets import COLOURS, CSP, CSS, SCRIPT, badge, code_spans, esc, legend
from neuron_migrate.report.html_charts import compare_chart, family_chart, status_chart
from neuron_migrate.report.html_tables import counts_table, file_table, items_list, table
from neuron_migrate.report.markdown import hours
from neuron_migrate.report.model import KINDS, STATUS_MEANING, STATUSES, WORK_ORDER, FolderRow, Report, fallback_text
from neuron_migrate.words import counted


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
            f'<span class="fold"><code>{esc(name)}</code> {_mini(f)} <span class="note">{counted(f.files, "file")} · '
            f"{counted(f.total, 'finding')} · {counted(f.blockers, 'blocker')} · {f.minutes} min</span> "
            f"{' '.join(work)}</span>"
        )
        opened = " open" if f.depth < 2 else ""
        top = " tree-top" if f.depth == 0 else ""
        out.append(f'<details class="tree{top}" data-folder="{esc(f.path)}"{opened}><summary>{summary}</summary>')
        depth_open.append(f.depth)
    out += ["</details>"] * len(depth_open)
    return f'<div id="folders-tree">{"".join(out)}</div>'


def _smoke(report: Report) -> str:
    s = report.smoke
    if s is None:
        return ""
    rows = [
        ("script", f"<code>{esc(s.script)}</code>"),
        ("status", esc(s.status)),
        ("device", esc(s.device)),
        ("ranks", str(s.ranks)),
        ("optimizer steps", str(s.steps)),
        ("ops run on neuron", str(s.ops)),
        (
            "fallbacks" + (" (predicted)" if s.fallbacks_predicted else " (measured)"),
            esc(fallback_text(s)),
        ),
        ("device mixing", str(s.device_mixing)),
        ("float64 on the device", str(s.float64)),
        ("parity with CPU", esc(s.parity)),
    ]
    problems = "".join(f"<li>{esc(p)}</li>" for p in s.problems)
    return (
        '<h2 id="smoke">Smoke run</h2>'
        + table("Smoke run", ("result", "value"), rows, (False, False))
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
        + table("check and the report", ("count", "findings"), rows, (False, True))
    )


def _comparison(report: Report) -> str:
    c = report.comparison
    if c is None:
        return ""
    done = "".join(f"<li><code>{esc(p)}</code></li>" for p in c.newly_done) or "<li>None.</li>"
    worse = [(f"<code>{esc(f)}</code>", badge(o) if o in COLOURS else esc(o), badge(n)) for f, o, n in c.worse]
    rules = [(f"<code>{esc(code)}</code>", str(o), str(n), f"{n - o:+d}") for code, o, n in c.rules]
    return (
        f'<h2 id="progress">Progress since {esc(c.old_date or "the earlier report")}</h2>'
        f'<p class="big">{counted(len(c.newly_done), "file")} newly done · findings {c.old_findings} → {c.new_findings} '
        f"({c.new_findings - c.old_findings:+d}) · blockers left: {c.new_blockers} (were {c.old_blockers})</p>"
        f'<figure class="narrow">{compare_chart(c.old_statuses, c.new_statuses, c.old_date)}{legend(STATUSES)}</figure>'
        f"<h3>Newly done ({len(c.newly_done)})</h3><ul class=items>{done}</ul>"
        + (
            f"<h3>More work than before ({len(worse)})</h3>"
            + table("More work than before", ("file", "before", "now"), worse, (False, False, False))
            if worse
            else ""
        )
        + (
            table(
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
        f'<div class="card" data-concept="{esc(g.concept)}"><h3>{esc(g.label)} {badge("blocked", str(g.count))}</h3>'
        f'<p><a href="{esc(g.guide)}">Guide: how to migrate {esc(g.label)}</a></p>'
        f'<p class="note">First occurrence in {"the one file" if len(g.first) == 1 else f"each of {len(g.first)} files"}:'
        f"</p>{items_list(g.first)}</div>"
        for g in report.blockers
    )
    return (
        f'<h2 id="blockers">Blockers ({report.blocker_count})</h2>'
        '<p class="note">APIs with no TorchNeuron counterpart a tool can write; each keeps a torch_xla import '
        f'alive until a person rewrites it.</p><div class="cards">{cards}</div>'
    )


def _legend(report: Report) -> str:
    """Each status with its count and meaning: first, so every table after it reads."""
    counts = report.status_counts()
    items = "".join(
        f"<li>{badge(s, f'{counts[s]} {s}')}<span>{code_spans(STATUS_MEANING[s])}</span></li>" for s in STATUSES
    )
    return f'<ul class="statuses" id="legend" aria-label="what the statuses mean">{items}</ul>'


def _library(report: Report) -> str:
    lib = report.library
    if lib is None:
        return ""
    concepts = [
        (
            esc(c.label) + (' <span class="tag">inference</span>' if c.inference else ""),
            esc(", ".join(c.codes)),
            str(c.files),
            str(c.findings),
            str(c.left),
            str(c.minutes),
        )
        for c in lib.concepts
    ]
    files = [
        (
            (esc(f.path), f"<code>{esc(f.path)}</code>"),
            esc(", ".join(f"{lib.label(k)} {n}" for k, n in f.uses)),
            str(f.findings),
            str(f.left),
            str(f.minutes),
        )
        for f in lib.files
    ]
    return (
        f'<h2 id="library">Depends on {esc(lib.name)}</h2>'
        f'<p class="note">{counted(len(lib.files), "file")} use it. <em>manual</em>: findings no fix resolves; '
        "inference APIs block no training run.</p>"
        + table(
            "NxD concepts used",
            ("concept", "rules", "files", "findings", "manual", "minutes"),
            concepts,
            (False, False, True, True, True, True),
            table_id="library-concepts",
            stack=True,
        )
        + table(
            "Files that depend on NxD",
            ("file", "concepts (findings)", "findings", "manual", "minutes"),
            files,
            (False, False, True, True, True),
            table_id="library-files",
            path_col=0,
            stack=True,
        )
    )


def _effort(report: Report) -> str:
    rows = report.estimate_rows
    body: list[tuple[str, ...]] = [
        (
            f"{'tier' if r.tier else 'concept'} <code>{esc(r.key)}</code>",
            code_spans(r.label),
            str(r.fixed) if r.tier else "",
            str(r.left),
            str(r.minutes_each),
            str(r.minutes),
        )
        for r in rows
    ]
    fixed, left = sum(r.fixed for r in rows), sum(r.left for r in rows)
    body.append(("<strong>total</strong>", "", str(fixed), str(left), "", f"<strong>{report.total_minutes}</strong>"))
    return (
        '<h2 id="effort">Effort estimate</h2>'
        f'<p class="big">About <strong>{esc(hours(report))}</strong>.</p>'
        '<p class="note" id="why-estimate">Why this estimate: each finding no fix resolves costs its concept\'s '
        "minutes, or its effort tier's where its rule names one (every NxD finding does): <em>mechanical</em> is a "
        "local rewrite, <em>semi-mechanical</em> a rewrite a person checks against the model's code, "
        "<em>manual</em> a port by hand. A finding <code>--fix</code> or <code>--fix --unsafe-fixes</code> resolves "
        f"costs nothing. The range is half to twice the typical total ({report.total_minutes} minutes); a "
        "person-day is 6 hours. Change the minutes in <code>[tool.neuron-migrate.report-effort]</code> "
        "(docs/report.md lists the defaults).</p>"
        + table(
            "Estimated effort",
            ("costed by", "what", "fixed (no cost)", "left to a person", "minutes each", "minutes"),
            body,
            (False, False, True, True, True, True),
            table_id="effort-table",
            stack=True,
        )
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
    manual = (
        "".join(
            f"<details><summary><strong>{esc(g.label)}</strong> ({len(g.items)})</summary>{items_list(g.items)}</details>"
            for g in report.manual
        )
        or "<p>Nothing: every finding has a fix.</p>"
    )
    beta = "".join(f"<h3>{esc(label)} ({len(items)})</h3>{items_list(items)}" for label, items in report.beta_limits)
    settings = [
        ("neuron-migrate", esc(run.tool_version)),
        ("target version (torch-neuronx)", esc(run.target_version)),
        ("from", esc(", ".join(run.families))),
        ("target", esc(run.target)),
        ("selection", esc(run.selection)),
        ("done also from", esc(run.history or "recognised neuron code only (give --since REF or --baseline FILE)")),
        ("paths", esc(" ".join(run.paths))),
        ("date", esc(run.date)),
    ]
    sections = [
        ("check", "check"),
        ("progress", "progress"),
        ("blockers", "blockers"),
        ("work", "work in order"),
        ("library", "NxD"),
        ("folders", "folders"),
        ("effort", "effort"),
        ("findings", "findings"),
        ("manual", "manual work"),
        ("beta", "beta limits"),
        ("files", "all files"),
    ]
    nav = "".join(
        f'<li><a href="#{key}">{esc(label)}</a></li>'
        for key, label in sections
        if (key != "progress" or report.comparison is not None) and (key != "library" or report.library is not None)
    )
    work = (
        file_table(
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
            f'<p class="big">{counted(len(report.files), "file")}; {counted(sum(totals.values()), "finding")} '
            f"({totals['safe']} fixed by <code>--fix</code>, {totals['unsafe']} by <code>--unsafe-fixes</code>, "
            f"{totals['manual']} manual); {counted(report.blocker_count, 'blocker')}. Estimated manual effort: "
            f"<strong>{esc(hours(report))}</strong>.</p>"
        ),
        _legend(report),
        f"<figure>{status_chart(counts)}</figure>",
        f'<nav aria-label="sections"><ul>{nav}</ul></nav>',
        _relation(report),
        _comparison(report),
        _blockers(report),
        '<h2 id="work">The work, in order</h2>',
        f'<p class="note" id="work-order">{code_spans(WORK_ORDER)}</p>',
        work,
        _library(report),
        '<h2 id="folders">By folder</h2>',
        _folder_tree(report),
        _effort(report),
        '<h2 id="findings">Findings by family and rule</h2><div class="charts">',
        f'<figure class="narrow"><figcaption>Findings per family</figcaption>{family_chart(report.families)}{legend(KINDS)}</figure></div>',
        counts_table("Findings by family", report.families, "family"),
        counts_table("Findings by rule", report.rules, "rule"),
        '<h2 id="manual">Manual work by concept</h2>',
        manual,
        '<h2 id="packaging">Packaging and launch scripts</h2>',
        items_list(report.packaging),
        '<h2 id="beta">Beta limits hit</h2>',
        beta,
        _smoke(report),
        '<h2 id="settings">Settings</h2>',
        table("The run's settings", ("setting", "value"), settings, (False, False)),
        '<h2 id="files">All files</h2>',
        file_table("file-list", "Files (select a heading to sort)", report.files, report, False, concept_text),
        f"</main><script>{SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)
