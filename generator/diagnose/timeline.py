"""The rank timeline: each finding's first line on each rank or host, and the silent ranks, as SVG."""

# static/diagnose-core.js `timelineSvg` writes the very same text, byte for byte (a test holds the two to
# it on every corpus case): every coordinate is a whole number computed with the same float operations
# in the same order, and every string is built from the tables in rules.TIMELINE.

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from generator.contract import Diagnosis, Evidence, Finding
from generator.diagnose import rules
from generator.diagnose.collect import OnsetKey, onset_key
from generator.diagnose.text import where

T = rules.TIMELINE
TEXT = T["text"]
W: int = T["width"]
X0: int = T["plot_left"]
X1: int = T["plot_right"]
TOP: int = T["rows_top"]
ROW: int = T["row_height"]
# The mark each role gets: a diamond for the initiating failure, a square for another failure, a
# hollow circle for what was reported downstream of it.
STYLE = {"initiating": "initiating", "independent": "failure", "collateral": "collateral", "wrapper": "collateral"}
DRAW_ORDER = {"collateral": 0, "failure": 1, "initiating": 2}
DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
# XML 1.0 and HTML both refuse these; a file name or a host is shown with U+FFFD in their place.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")


def _esc(text: str) -> str:
    text = _UNSAFE.sub("\ufffd", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + "\u2026"


@dataclass
class _Mark:
    e: Evidence
    style: str
    title: str
    finding: int  # the finding's position in the report


@dataclass
class _Row:
    key: OnsetKey
    marks: list[_Mark] = field(default_factory=list)
    silent: bool = False  # a rank that printed none of the findings' lines


def _micro(order: list[int]) -> int:
    """A timestamp as microseconds since the start of its year (the logs print no year)."""
    mo, d, h, mi, s, us = (list(order) + [0] * 6)[:6]
    month = min(max(mo, 1), 12)
    return ((((DAYS_BEFORE[month - 1] + d - 1) * 24 + h) * 60 + mi) * 60 + s) * 1_000_000 + us


def _clock(order: list[int], dated: bool, fine: bool) -> str:
    """A timestamp as 'HH:MM:SS', with the date when the marks span days, with milliseconds when they span
    less than a minute.
    """
    mo, d, h, mi, s, us = (list(order) + [0] * 6)[:6]
    day = f"{mo:02d}-{d:02d} " if dated else ""
    return f"{day}{h:02d}:{mi:02d}:{s:02d}" + (f".{us // 1000:03d}" if fine else "")


def _span(us: int) -> str:
    if us < 1_000_000:
        return f"{us // 1000} ms"
    seconds = us // 1_000_000
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds // 60 % 60} min"


def _label(key: OnsetKey) -> str:
    return f"rank {key[1]}" if key[0] == 0 else _cut(key[2], T["label_chars"])


def _who(key: OnsetKey) -> str:
    return f"rank {key[1]}" if key[0] == 0 else key[2]


def _titles(findings: list[Finding]) -> str:
    names = "; ".join(f.title for f in findings[:2])
    return names + (f" and {len(findings) - 2} more" if len(findings) > 2 else "")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _shape(m: _Mark, x: int, cy: int, row: str) -> str:
    tip = f"<title>{_esc(f'{row}: {m.title}, {where(m.e)}')}</title>"
    if m.style == "initiating":
        points = f"{x},{cy - 6} {x + 6},{cy} {x},{cy + 6} {x - 6},{cy}"
        return f'<polygon class="tl-initiating" points="{points}" fill="currentColor">{tip}</polygon>'
    if m.style == "failure":
        return (
            f'<rect class="tl-failure" x="{x - 4}" y="{cy - 4}" width="8" height="8" fill="currentColor">{tip}</rect>'
        )
    return (
        f'<circle class="tl-collateral" cx="{x}" cy="{cy}" r="4" fill="none" stroke="currentColor" '
        f'stroke-width="1.5">{tip}</circle>'
    )


def _legend() -> list[str]:
    a, b, c, d = TEXT["legend"]
    return [
        '<g class="tl-legend">',
        '<polygon class="tl-initiating" points="10,4 16,10 10,16 4,10" fill="currentColor"/>',
        f'<text x="20" y="14">{_esc(a)}</text>',
        '<rect class="tl-failure" x="88" y="6" width="8" height="8" fill="currentColor"/>',
        f'<text x="100" y="14">{_esc(b)}</text>',
        '<circle class="tl-collateral" cx="180" cy="10" r="4" fill="none" stroke="currentColor" stroke-width="1.5"/>',
        f'<text x="188" y="14">{_esc(c)}</text>',
        '<rect class="tl-missing" x="262" y="5" width="16" height="10" fill="none" stroke="currentColor" '
        'stroke-dasharray="4 3"/>',
        f'<text x="282" y="14">{_esc(d)}</text>',
        "</g>",
    ]


def timeline_svg(report: Diagnosis) -> str | None:
    """The report's rank timeline as SVG text; None when it would have fewer than two rows."""
    drawn = [f for f in report.findings if f.role != "note"]
    init = report.initiating
    # A launcher named the rank whose error names none ("local_rank: 5"): draw its line on that row.
    fallback = (
        init is not None
        and init.first.rank is None
        and report.initiating_rank is not None
        and not any(e.rank == report.initiating_rank for e in init.onsets)
    )
    marks: dict[OnsetKey, list[_Mark]] = {}
    for i, f in enumerate(drawn):
        for e in f.onsets:
            key = onset_key(e)
            if key is None or (
                fallback and f.role == "initiating" and (e.file, e.line) == (f.first.file, f.first.line)
            ):
                continue
            marks.setdefault(key, []).append(_Mark(e, STYLE[f.role], f.title, i))
    if fallback and init is not None and report.initiating_rank is not None:
        index = next(i for i, f in enumerate(drawn) if f.role == "initiating")
        marks.setdefault((0, report.initiating_rank, ""), []).append(_Mark(init.first, "initiating", init.title, index))
    if not marks:
        return None
    seen = {r for f in drawn for r in f.ranks} | {k[1] for k in marks if k[0] == 0}
    top = max(seen | set(report.suspects), default=-1)
    hosts = sorted(k for k in marks if k[0] == 1)
    total = top + 1 + len(hosts)
    if total < 2:
        return None
    silent_total = top + 1 - len(seen)
    # The first silent ranks, found without walking a range as long as the largest rank printed.
    silent: list[int] = []
    r = 0
    while r <= top and len(silent) < T["rows_shown"]:
        if r not in seen:
            silent.append(r)
        r += 1
    limit = T["rows_shown"]
    if total <= limit:
        keys = [(0, r, "") for r in range(top + 1)] + hosts
        hidden = 0
    else:

        def tier(key: OnsetKey) -> int:
            ms = marks.get(key, [])
            if any(m.style == "initiating" for m in ms) or (key[0] == 0 and key[1] == report.initiating_rank):
                return 0
            if not ms:
                return 1 if key[1] in report.suspects else 2
            return 3 if any(m.style == "failure" for m in ms) else 4

        pool = set(marks) | {(0, r, "") for r in silent} | {(0, r, "") for r in report.suspects if r not in seen}
        ordered = sorted(pool, key=lambda k: (tier(k), k))
        # Silent rows take at most half the room while rows with marks are left out, and the rest when not.
        quiet = [k for k in ordered if tier(k) in (1, 2)]
        loud = [k for k in ordered if tier(k) not in (1, 2)]
        room = limit - 1
        take = min(len(quiet), max(room // 2, room - len(loud)))
        keys = sorted(quiet[:take] + loud[: room - take])
        hidden = total - len(keys)
    rows = [_Row(k, marks.get(k, []), k[0] == 0 and k[1] not in seen) for k in keys]
    visible = [m for row in rows for m in row.marks]
    if not visible:
        return None
    timed = all(m.e.order is not None for m in visible)

    def at(m: _Mark) -> int:
        return _micro(m.e.order) if timed and m.e.order is not None else m.e.line

    low = min(visible, key=at)
    high = max(visible, key=at)
    t0, t1 = at(low), at(high)
    span = t1 - t0

    def x(m: _Mark) -> int:
        return X0 + math.floor(float(at(m) - t0) * float(X1 - X0) / float(span)) if span > 0 else X0

    dated = timed and low.e.order is not None and high.e.order is not None and low.e.order[:2] != high.e.order[:2]
    fine = span < 60_000_000

    def when(e: Evidence) -> str:
        if timed and e.order is not None:
            return _clock(e.order, dated, fine)
        return f"line {e.line} of {e.file.rsplit('/', 1)[-1]}"

    # The words: who went first, who reported after it, who printed nothing.
    ranked = top >= 0
    noun = "rank" if ranked else "host"
    said = []
    if init is not None:
        who = (
            f"Rank {report.initiating_rank}"
            if report.initiating_rank is not None
            else report.initiating_host or "An unnamed rank"
        )
        said.append(TEXT["first"].format(who=who, when=when(init.first), title=init.title))
    elif report.initiating_rank is not None or report.initiating_host:
        placed = f"Rank {report.initiating_rank}" if report.initiating_rank is not None else report.initiating_host
        said.append(TEXT["placed"].format(who=placed))
    else:
        first_row = next(row for row in rows if any(m is low for m in row.marks))
        said.append(TEXT["earliest"].format(who=_who(first_row.key), when=when(low.e)))
    down = [f for f in drawn if STYLE[f.role] == "collateral"]
    if down:
        count = len({r for f in down for r in f.ranks})
        what = "rank" if count else "host"
        count = count or len({h for f in down for h in f.hosts})
        if count:
            start = [at(m) for m in visible if m.style == "initiating"]
            later = [at(m) for m in visible if m.style == "collateral"]
            after = " after it" if timed and start and later and min(start) <= min(later) else ""
            said.append(
                TEXT["downstream"].format(
                    count=count,
                    noun=what if count == 1 else f"{what}s",
                    verb="reports" if count == 1 else "report",
                    after=after,
                    titles=_titles(down),
                )
            )
    also = [f for f in drawn if f.role == "independent"]
    if also:
        said.append(TEXT["also"].format(titles=_titles(also)))
    if silent_total:
        names = ", ".join(map(str, silent[: T["named"]]))
        if silent_total > T["named"]:
            names += f" and {silent_total - T['named']} more"
        said.append(TEXT["silent"].format(Noun="Rank" if silent_total == 1 else "Ranks", names=names))
    if hidden:
        said.append(TEXT["shown"].format(shown=len(keys), total=total))
    caption = TEXT["timed"].format(span=_span(span)) if timed else TEXT["untimed"]
    said.append(caption)

    # The row of the rank (or host) the report names as where the job failed first is labelled in bold.
    lead: OnsetKey | None = (
        (0, report.initiating_rank, "")
        if report.initiating_rank is not None
        else (1, 0, report.initiating_host)
        if report.initiating_host
        else None
    )
    count_rows = len(rows) + (1 if hidden else 0)
    height = TOP + count_rows * ROW + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" '
        f'aria-labelledby="timeline-title timeline-desc" viewBox="0 0 {W} {height}" width="100%" '
        f'fill="currentColor" font-family="system-ui, sans-serif" font-size="10">',
        f'<title id="timeline-title">{_esc(TEXT["title"].format(Noun=_capital(noun), noun=noun))}</title>',
        f'<desc id="timeline-desc">{_esc(" ".join(said))}</desc>',
        *_legend(),
    ]
    if timed and low.e.order is not None and high.e.order is not None:
        start_label, end_label = _clock(low.e.order, dated, fine), _clock(high.e.order, dated, fine)
    else:
        start_label, end_label = f"line {t0}", f"line {t1}"
    out.append('<g class="tl-axis">')
    out.append(f'<text x="{X0}" y="30">{_esc(start_label)}</text>')
    if span > 0:
        out.append(f'<text x="{X1}" y="30" text-anchor="end">{_esc(end_label)}</text>')
    out.append(f'<line x1="{X0}" y1="34" x2="{X1}" y2="34" stroke="currentColor"/>')
    out.append("</g>")
    for i, row in enumerate(rows):
        y = TOP + i * ROW
        cy = y + ROW // 2
        label = _label(row.key)
        attribute = f'data-rank="{row.key[1]}"' if row.key[0] == 0 else f'data-host="{_esc(row.key[2])}"'
        out.append(f'<g class="tl-row{" tl-silent" if row.silent else ""}" {attribute}>')
        weight = ' font-weight="bold"' if row.key == lead else ""
        out.append(f'<text x="4" y="{y + 12}"{weight}>{_esc(label)}</text>')
        if row.silent:
            out.append(
                f'<rect class="tl-missing" x="{X0}" y="{y + 2}" width="{X1 - X0}" height="12" fill="none" '
                f'stroke="currentColor" stroke-dasharray="4 3"/>'
            )
            out.append(
                f'<text x="{(X0 + X1) // 2}" y="{y + 11}" text-anchor="middle" font-size="9">'
                f"{_esc(TEXT['no_line'])}</text>"
            )
        else:
            out.append(
                f'<line class="tl-grid" x1="{X0}" y1="{cy}" x2="{X1}" y2="{cy}" stroke="currentColor" '
                f'stroke-opacity="0.3"/>'
            )
        for m in sorted(row.marks, key=lambda m: (DRAW_ORDER[m.style], at(m), m.finding)):
            out.append(_shape(m, x(m), cy, _who(row.key)))
        out.append("</g>")
    if hidden:
        y = TOP + len(rows) * ROW
        shown_hosts = sum(1 for k in keys if k[0] == 1)
        hidden_hosts = len(hosts) - shown_hosts
        what = "host" if hidden_hosts == hidden else "rank" if hidden_hosts == 0 else "row"
        more = TEXT["more"].format(count=hidden, noun=what if hidden == 1 else f"{what}s")
        out.append(f'<g class="tl-row tl-more"><text x="4" y="{y + 12}">{_esc(more)}</text></g>')
    y = TOP + count_rows * ROW
    out.append(f'<text class="tl-caption" x="4" y="{y + 14}">{_esc(caption)}</text>')
    out.append("</svg>")
    return "\n".join(out)
