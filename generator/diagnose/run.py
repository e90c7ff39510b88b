"""Run a diagnosis over log sources and render it for a terminal."""

from __future__ import annotations

import multiprocessing
import os
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from generator.diagnose.context import file_origin
from generator.diagnose.engine import Matcher, Stats, best_matcher, scan
from generator.diagnose.report import Collector, Diagnosis, Evidence, Finding, build_report
from generator.diagnose.signatures import Signature, load_index
from generator.diagnose.sources import InputError, LogSource, read_chunks, resolve, split_ranges

# Both cores of a login node are worth using once a file is this large; below it, forking costs more.
PARALLEL_MIN_BYTES = 64 << 20
MAX_WORKERS = 2


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
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    parallel = (
        source.path is not None
        and source.path.suffix != ".gz"
        and workers > 1
        and source.path.stat().st_size >= PARALLEL_MIN_BYTES
        and "fork" in multiprocessing.get_all_start_methods()
    )
    if not parallel:
        stats = _scan_into(collector, matcher, source, position, rank, host)
        lines, size = stats.lines, stats.bytes
    else:
        assert source.path is not None
        ranges = split_ranges(source.path, workers)
        # Forked workers inherit the compiled matcher instead of recompiling or pickling it.
        global _SHARED
        _SHARED = (collector.signatures, matcher)
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(len(ranges), mp_context=context) as pool:
            jobs = [(source, position, start, end, rank, host) for start, end in ranges]
            lines = size = 0
            for part, part_lines, part_bytes in pool.map(_scan_part, jobs):
                collector.merge(part, lines)
                lines += part_lines
                size += part_bytes
        _SHARED = None
    collector.inputs.append(source.name)
    if rank is not None:
        collector.log_ranks[source.name] = rank
    collector.lines += lines
    collector.bytes += size


_SHARED: tuple[list[Signature], Matcher] | None = None


def _scan_part(job: tuple[LogSource, int, int, int, int | None, str | None]) -> tuple[Collector, int, int]:
    """Scan one byte range in a worker process; line numbers are relative to the range."""
    source, position, start, end, rank, host = job
    assert _SHARED is not None
    signatures, matcher = _SHARED
    part = Collector(signatures)
    stats = _scan_into(part, matcher, source, position, rank, host, start, end)
    part.signatures = []  # the parent has them; do not send them back
    return part, stats.lines, stats.bytes


def _scan_into(
    collector: Collector,
    matcher: Matcher,
    source: LogSource,
    position: int,
    rank: int | None,
    host: str | None,
    start: int = 0,
    end: int | None = None,
) -> Stats:
    """Add every hit of a log (or of one byte range of it) to a collector."""
    stats = Stats()
    for hit in scan(read_chunks(source, start, end), collector.signatures, matcher, stats):
        collector.add(hit, source.name, position, rank, host)
    return stats


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
    elif all(f.role == "note" for f in report.findings):
        out.append("No known failure found; the lines below are usually harmless or only leads.")
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
    if report.suspects:
        out.append("")
        out.append(f"Suspect rank{'s' if len(report.suspects) > 1 else ''}: {', '.join(map(str, report.suspects))}")
    if report.missing:
        out.append("")
        out.append("What would settle it:")
        for fact in report.missing:
            out += textwrap.wrap(fact, 100, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out)
