"""Render a diagnosis for a terminal: the initiating failure and its fix first."""

from __future__ import annotations

import re
import textwrap

from generator.contract import Diagnosis, Evidence, Finding

LABELS = {
    "initiating": "INITIATING",
    "independent": "ALSO FOUND",
    "wrapper": "WRAPPER",
    "collateral": "COLLATERAL",
    "note": "NOTE",
}
VIA = {"line": "", "frames": " (traceback frames)", "metric": " (metric lines)"}


def where(e: Evidence) -> str:
    """Where a line was printed: 'file:line, rank 3, node07, <time>'."""
    parts = [f"{e.file}:{e.line}"]
    if e.rank is not None:
        parts.append(f"rank {e.rank}")
    if e.host:
        parts.append(e.host)
    if e.time:
        parts.append(e.time)
    return ", ".join(parts)


def _finding_text(f: Finding, number: int) -> list[str]:
    label = LABELS[f.role]
    ranks = f"ranks {_span(f.ranks)}" if len(f.ranks) > 1 else (f"rank {f.ranks[0]}" if f.ranks else "rank unknown")
    plural = "s" if f.count != 1 else ""
    lines = [
        f"{number}. [{label}] {f.title}",
        f"   {f.severity} severity, {f.confidence} confidence · {f.count} line{plural}{VIA[f.first.via]} · "
        f"{ranks} · first at {where(f.first)}",
        f"   {f.url}",
    ]
    for e in f.evidence[:3]:
        lines.append(f"   > {where(e)}: {e.text}")
    if f.role in ("initiating", "independent"):
        lines += textwrap.wrap(f"Fix: {f.fix}", 100, initial_indent="   ", subsequent_indent="        ")
        lines += textwrap.wrap(f"Verify: {f.verify}", 100, initial_indent="   ", subsequent_indent="           ")
    return lines


def _span(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) if len(ranks) <= 8 else f"{ranks[0]}–{ranks[-1]} ({len(ranks)} ranks)"


def _at(report: Diagnosis) -> str:
    """Where the job failed first, as 'rank 3, node07'; empty when the report does not say."""
    rank = f"rank {report.initiating_rank}" if report.initiating_rank is not None else ""
    return ", ".join(x for x in (rank, report.initiating_host or "") if x)


def scanned(report: Diagnosis) -> str:
    """The report's first line: how much was read."""
    return f"Scanned {len(report.inputs)} log(s), {report.lines:,} lines, {report.bytes / 1e6:,.1f} MB."


def headline(report: Diagnosis) -> str:
    """The report's answer in one sentence: the most likely cause and where, or why there is none."""
    if not report.findings:
        return "No known failure found." + (
            " The log ends in an exception no entry covers yet." if report.unknown else ""
        )
    if all(f.role == "note" for f in report.findings):
        return "No known failure found; the lines below are usually harmless or only leads."
    if report.initiating is not None:
        on = f" on {_at(report)}" if _at(report) else ""
        return f"Most likely cause{on}: {report.initiating.title}"
    if _at(report):
        # A rank that reported failures of its own places the origin although its first error is missing.
        return (
            f"Failed first at {_at(report)}; the error that started it is not in the logs, "
            "what they show is listed below."
        )
    return "No initiating failure found; what the logs show is listed below."


def render_text(report: Diagnosis) -> str:
    """Render the report for a terminal: the initiating failure and its fix first."""
    out = [scanned(report), headline(report)]
    for number, finding in enumerate(report.findings, start=1):
        out.append("")
        out.extend(_finding_text(finding, number))
    for u in report.unknown:
        out.append("")
        package = f" raised in {u.package}" if u.package else ""
        out.append(f"Unknown failure: {u.exception}{package}, at {where(u.evidence)}")
        if u.message:
            out.append(f"   {u.exception}: {u.message}")
        for frame in u.frames:
            out.append(f"   in {frame}")
        out.append(f"   No entry covers it yet. Scaffold one: {u.command}")
    if report.suspects:
        out.append("")
        out.append(f"Suspect rank{'s' if len(report.suspects) > 1 else ''}: {', '.join(map(str, report.suspects))}")
    if report.missing:
        out.append("")
        out.append("What would settle it:")
        for fact in report.missing:
            out += textwrap.wrap(fact, 100, initial_indent="  - ", subsequent_indent="    ")
    return visible("\n".join(out))


# Control characters other than tab and line break, C1 controls included: a log line quoted in the
# report must not move the cursor, retitle the window or ring the bell of the terminal that prints it.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ESC is ␛
    return "\u2421" if code == 0x7F else f"<{code:02X}>"


def visible(text: str) -> str:
    """Text with its control characters shown as symbols (ESC as U+241B) rather than sent to the terminal."""
    return _CONTROL.sub(lambda m: _picture(m.group()), text)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _fence(lines: list[str]) -> list[str]:
    """A code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *lines, fence]


def render_markdown(report: Diagnosis) -> str:
    """Render the report as Markdown for an issue thread; static/diagnose-core.js writes the same."""
    out = [f"**Trainwreck diagnosis** of {len(report.inputs)} log(s), {report.lines:,} lines", ""]
    if report.initiating is not None:
        on = f" on {_at(report)}" if _at(report) else ""
        out.append(f"**Most likely cause{on}: [{report.initiating.title}]({report.initiating.url})**")
    elif report.findings and all(f.role == "note" for f in report.findings):
        out.append("No known failure found; the lines below are usually harmless or only leads.")
    elif _at(report):
        out.append(f"**Failed first at {_at(report)}**; the error that started it is not in the logs.")
    elif report.findings:
        out.append("No initiating failure found; what the logs show is below.")
    else:
        out.append("No known failure found.")
    if report.findings:
        out += ["", "| # | Role | Failure | Ranks | First at |", "|---|---|---|---|---|"]
        for number, f in enumerate(report.findings, start=1):
            ranks = _span(f.ranks) if f.ranks else "unknown"
            title = f"[{_cell(f.title)}]({f.url})"
            out.append(f"| {number} | {LABELS[f.role].lower()} | {title} | {ranks} | {_cell(where(f.first))} |")
    for number, f in enumerate(report.findings, start=1):
        acted_on = f.role in ("initiating", "independent")
        if not acted_on and number > 1:
            continue  # collateral and notes are in the table; the first finding always shows its lines
        out += ["", f"**{number}. {_cell(f.title)}**", ""]
        out += _fence([f"{where(e)}: {e.text}" for e in f.evidence[:3]])
        if acted_on:
            out += ["", f"- **Fix:** {f.fix}", f"- **Verify:** {f.verify}"]
    for u in report.unknown:
        package = f" raised in {u.package}" if u.package else ""
        out += ["", f"**Not covered yet:** `{u.exception}`{package}, at {where(u.evidence)}", ""]
        out += _fence([f"{u.exception}: {u.message}" if u.message else u.exception, *(f"  in {f}" for f in u.frames)])
    if report.missing:
        out += ["", "**What would settle it:**", *(f"- {fact}" for fact in report.missing)]
    return visible("\n".join(out)) + "\n"
