"""The report's SVG charts: files by status, findings per family, before and now."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.report.html_assets import COLOURS, esc
from neuron_migrate.report.model import KINDS, STATUSES, CountRow


def stack(
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
            f"<title>{esc(key)}: {value}</title></rect>"
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
        f'<title id="cs-t">Files by status</title><desc id="cs-d">{esc(desc)}</desc>'
        f"{''.join(stack(values, STATUSES, 5, 40, 600, 0, labels=False))}</svg>"
    )


def family_chart(rows: Sequence[CountRow]) -> str:
    """One bar per family, stacked by safe, unsafe and manual findings."""
    top = max((r.total for r in rows), default=0) or 1
    bar_h, gap, label_w, width = 22, 8, 70, 600
    height = max(len(rows), 1) * (bar_h + gap) + gap
    parts = []
    for index, row in enumerate(rows):
        y = gap + index * (bar_h + gap)
        parts.append(f'<text x="0" y="{y + 16}" font-size="14">{esc(row.key)}</text>')
        x = float(label_w)
        for kind in KINDS:
            value = getattr(row, kind)
            if value:
                w = (width - label_w - 50) * value / top
                parts.append(
                    f'<rect class="bar" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar_h}" fill="{COLOURS[kind]}">'
                    f"<title>{esc(row.key)} {esc(kind)}: {value}</title></rect>"
                )
                x += w
        parts.append(f'<text x="{x + 4:.2f}" y="{y + 16}" font-size="14">{row.total}</text>')
    desc = "; ".join(f"{r.key}: {r.safe} safe, {r.unsafe} unsafe, {r.manual} manual" for r in rows) or "no findings"
    return (
        f'<svg id="chart-families" role="img" aria-labelledby="cf-t cf-d" viewBox="0 0 {width} {height}">'
        f'<title id="cf-t">Findings per family</title><desc id="cf-d">{esc(desc)}</desc>{"".join(parts)}</svg>'
    )


def compare_chart(old: Sequence[int], new: Sequence[int], old_label: str) -> str:
    """Two stacked bars, before and now: files by status."""
    top = max(sum(old), sum(new), 1)
    label_w, width = 70, 600
    parts = []
    for index, (label, values) in enumerate((("before", old), ("now", new))):
        y = 6 + index * 36
        parts.append(f'<text x="0" y="{y + 20}" font-size="14">{label}</text>')
        parts += stack(values, STATUSES, y, 28, (width - label_w) * sum(values) / top, label_w)
    desc = f"before ({old_label}): " + ", ".join(f"{v} {s}" for s, v in zip(STATUSES, old))
    desc += "; now: " + ", ".join(f"{v} {s}" for s, v in zip(STATUSES, new))
    return (
        f'<svg id="chart-compare" role="img" aria-labelledby="cc-t cc-d" viewBox="0 0 {width} 80">'
        f'<title id="cc-t">Files by status, before and now</title><desc id="cc-d">{esc(desc)}</desc>'
        f"{''.join(parts)}</svg>"
    )
