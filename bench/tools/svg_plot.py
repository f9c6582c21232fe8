"""Minimal SVG bar charts for the benchmark report (standard library only, no matplotlib).

A chart is a row of panels that share nothing but the style; each panel has its own y scale
(networks differ by 100x in latency) and a list of bars, optionally grouped, optionally with
horizontal reference lines (e.g. the machine's FMA peak).
"""
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"]


def _nice_max(v):
    if v <= 0:
        return 1.0
    import math
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _fmt(v):
    if v == 0:
        return "0"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def bar_panels(title, panels, ylabel, legend=None, panel_width=None, height=340, value_labels=True):
    """panels: list of dicts {title, bars: [{label, value, color, note}], lines: [{value, label, color}]}.
    legend: list of (name, color). Returns the SVG text."""
    max_bars = max((len(p["bars"]) for p in panels), default=1)
    pw = panel_width or max(170, 26 * max_bars + 60)
    top, bottom, left = 48, 92, 52
    width = left + pw * len(panels) + 20
    total_h = height + (24 if legend else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<text x="14" y="{top + (height - top - bottom) / 2}" transform="rotate(-90 14 {top + (height - top - bottom) / 2})" '
           f'text-anchor="middle">{escape(ylabel)}</text>']
    plot_h = height - top - bottom
    for i, p in enumerate(panels):
        x0 = left + i * pw
        values = [b["value"] for b in p["bars"] if b["value"] is not None]
        values += [l["value"] for l in p.get("lines", [])]
        vmax = _nice_max(max(values, default=1) * 1.08)
        out.append(f'<text x="{x0 + pw / 2}" y="{top - 10}" text-anchor="middle" font-weight="bold">{escape(p["title"])}</text>')
        # axis and grid
        for k in range(5):
            v = vmax * k / 4
            y = top + plot_h - plot_h * k / 4
            out.append(f'<line x1="{x0 + 30}" x2="{x0 + pw - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 + 27}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{_fmt(v)}</text>')
        n = max(1, len(p["bars"]))
        slot = (pw - 44) / n
        bw = min(28, slot * 0.8)
        for j, b in enumerate(p["bars"]):
            cx = x0 + 34 + slot * (j + 0.5)
            if b["value"] is None:
                out.append(f'<text x="{cx:.1f}" y="{top + plot_h - 4}" text-anchor="middle" fill="#999">n/a</text>')
            else:
                h = plot_h * b["value"] / vmax
                y = top + plot_h - h
                tip = escape(f'{b["label"]}: {_fmt(b["value"])}' + (f' ({b["note"]})' if b.get("note") else ""))
                out.append(f'<rect x="{cx - bw / 2:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                           f'fill="{b.get("color", PALETTE[0])}"><title>{tip}</title></rect>')
                if value_labels:
                    out.append(f'<text x="{cx:.1f}" y="{y - 3:.1f}" text-anchor="middle" font-size="9">{_fmt(b["value"])}</text>')
            out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 10}" text-anchor="end" font-size="10" '
                       f'transform="rotate(-45 {cx:.1f} {top + plot_h + 10})">{escape(b["label"])}</text>')
        for l in p.get("lines", []):
            y = top + plot_h - plot_h * l["value"] / vmax
            out.append(f'<line x1="{x0 + 30}" x2="{x0 + pw - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="{l.get("color", "#c00")}" '
                       f'stroke-dasharray="5,3"/>')
            out.append(f'<text x="{x0 + pw - 8}" y="{y - 3:.1f}" text-anchor="end" fill="{l.get("color", "#c00")}" font-size="9">'
                       f'{escape(l["label"])}</text>')
    if legend:
        x = left
        y = height + 10
        for name, color in legend:
            out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>')
            out.append(f'<text x="{x + 14}" y="{y + 9}">{escape(name)}</text>')
            x += 24 + 7 * len(name)
    out.append("</svg>")
    return "\n".join(out) + "\n"
