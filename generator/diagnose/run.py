"""Run a diagnosis over log sources and render it for a terminal."""

from __future__ import annotations

import textwrap
from pathlib import Path

from generator.diagnose.context import file_origin
from generator.diagnose.engine import Matcher, Stats, best_matcher, scan
from generator.diagnose.report import Collector, Diagnosis, Evidence, Finding, build_report
from generator.diagnose.signatures import load_index
from generator.diagnose.sources import InputError, LogSource, read_chunks, resolve


def diagnose(paths: list[str], index: Path | None = None, engine: str = "auto") -> tuple[Diagnosis, list[str]]:
    """Scan the logs; return the report and the problems with inputs that could not be read."""
    signatures = load_index(index)
    sources, problems = resolve(paths)
    matcher = best_matcher(signatures, engine)
    collector = Collector(signatures)
    for position, source in enumerate(sources):
        try:
            _scan_source(source, position, matcher, collector)
        except InputError as exc:
            problems.append(str(exc))
    return build_report(collector), problems


def _scan_source(source: LogSource, position: int, matcher: Matcher, collector: Collector) -> None:
    rank, host = file_origin(source.name) if source.path else (None, None)
    stats = Stats()
    for hit in scan(read_chunks(source), collector.signatures, matcher, stats):
        collector.add(hit, source.name, position, rank, host)
    collector.inputs.append(source.name)
    collector.lines += stats.lines
    collector.bytes += stats.bytes


def _where(e: Evidence) -> str:
    parts = [f"{e.file}:{e.line}"]
    if e.rank is not None:
        parts.append(f"rank {e.rank}")
    if e.host:
        parts.append(e.host)
    if e.time:
        parts.append(e.time)
    return ", ".join(parts)


def _finding_text(f: Finding, number: int) -> list[str]:
    label = {"initiating": "INITIATING", "independent": "ALSO FOUND", "collateral": "COLLATERAL", "note": "NOTE"}[
        f.role
    ]
    ranks = f"ranks {_span(f.ranks)}" if len(f.ranks) > 1 else (f"rank {f.ranks[0]}" if f.ranks else "rank unknown")
    plural = "s" if f.count != 1 else ""
    lines = [
        f"{number}. [{label}] {f.title}",
        f"   {f.severity} severity, {f.confidence} confidence · {f.count} line{plural} · {ranks} · "
        f"first at {_where(f.first)}",
        f"   {f.url}",
    ]
    for e in f.evidence[:3]:
        lines.append(f"   > {_where(e)}: {e.text}")
    if f.role in ("initiating", "independent"):
        lines += textwrap.wrap(f"Fix: {f.fix}", 100, initial_indent="   ", subsequent_indent="        ")
        lines += textwrap.wrap(f"Verify: {f.verify}", 100, initial_indent="   ", subsequent_indent="           ")
    return lines


def _span(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) if len(ranks) <= 8 else f"{ranks[0]}–{ranks[-1]} ({len(ranks)} ranks)"


def render_text(report: Diagnosis) -> str:
    """Render the report for a terminal: the initiating failure and its fix first."""
    out = [f"Scanned {len(report.inputs)} log(s), {report.lines:,} lines, {report.bytes / 1e6:,.1f} MB."]
    if not report.findings:
        out.append("No known failure found.")
    elif report.initiating is not None:
        where = []
        if report.initiating_rank is not None:
            where.append(f"rank {report.initiating_rank}")
        if report.initiating_host:
            where.append(report.initiating_host)
        on = f" on {', '.join(where)}" if where else ""
        out.append(f"Most likely cause{on}: {report.initiating.title}")
    else:
        out.append("No initiating failure found; what the logs show is listed below.")
    for number, finding in enumerate(report.findings, start=1):
        out.append("")
        out.extend(_finding_text(finding, number))
    if report.missing:
        out.append("")
        out.append("What would settle it:")
        for fact in report.missing:
            out += textwrap.wrap(fact, 100, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out)
