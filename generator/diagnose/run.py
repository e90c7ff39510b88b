"""Run a diagnosis: inputs → proposed lines → collected groups → one judged report."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from generator.contract import Diagnosis
from generator.diagnose.attribute import file_origin
from generator.diagnose.collect import Collector
from generator.diagnose.errors import InputError
from generator.diagnose.inputs import LogSource, read_chunks, resolve, split_ranges
from generator.diagnose.judge import judge
from generator.diagnose.match import Matcher, Stats, best_matcher, scan
from generator.diagnose.signatures import Signature, load_index

# Both cores of a login node are worth using once a file is this large; below it, forking costs more.
PARALLEL_MIN_BYTES = 64 << 20
MAX_WORKERS = 2


class Engine:
    """A loaded index and its compiled matcher, ready to diagnose any number of log sets."""

    def __init__(self, index: Path | None = None, matcher: str = "auto") -> None:
        self.signatures = load_index(index)
        self.matcher = best_matcher(self.signatures, matcher)

    def diagnose(self, paths: list[str]) -> tuple[Diagnosis, list[str]]:
        """Scan the logs; return the report and the problems with inputs that could not be read."""
        sources, problems = resolve(paths)
        collector = Collector(self.signatures)
        for position, source in enumerate(sources):
            try:
                _scan_source(source, position, self.signatures, self.matcher, collector)
            except InputError as exc:
                problems.append(str(exc))
        return judge(collector), problems


def diagnose(paths: list[str], index: Path | None = None, engine: str = "auto") -> tuple[Diagnosis, list[str]]:
    """Scan the logs with a fresh engine; return the report and the input problems."""
    return Engine(index, engine).diagnose(paths)


@dataclass(frozen=True)
class _Part:
    """One byte range of a large file, scanned by a worker process that inherited the matcher."""

    signatures: list[Signature]
    matcher: Matcher
    source: LogSource
    position: int
    start: int
    end: int
    rank: int | None
    host: str | None

    def __call__(self) -> tuple[Collector, int, int]:
        collector = Collector(self.signatures)
        stats = _scan_into(
            collector, self.matcher, self.source, self.position, self.rank, self.host, self.start, self.end
        )
        collector.signatures = []  # the parent has them; do not send them back
        collector.confirm = {}
        collector.line_signatures = []
        collector.frame_signatures = []
        collector.watched = {}
        return collector, stats.lines, stats.bytes


def _work(part: _Part, conn: Connection) -> None:
    """Worker process body: scan one part and send the result (or the input error) back."""
    try:
        conn.send(("ok", part()))
    except InputError as exc:
        conn.send(("error", str(exc)))
    finally:
        conn.close()


def _scan_parallel(parts: list[_Part]) -> list[tuple[Collector, int, int]]:
    # A forked worker inherits its part, compiled matcher included, instead of pickling it.
    context = multiprocessing.get_context("fork")
    jobs = []
    for part in parts:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_work, args=(part, send))
        process.start()
        send.close()
        jobs.append((process, receive))
    results: list[tuple[Collector, int, int]] = []
    failure = None
    for process, receive in jobs:
        try:
            status, value = receive.recv()
        except EOFError:
            status, value = "error", "a worker process died while scanning"
        process.join()
        if status == "ok":
            results.append(value)
        else:
            failure = failure or value
    if failure:
        raise InputError(failure)
    return results


def _scan_source(
    source: LogSource, position: int, signatures: list[Signature], matcher: Matcher, collector: Collector
) -> None:
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
        parts = [_Part(signatures, matcher, source, position, a, b, rank, host) for a, b in ranges]
        # A traceback or a detector's run that spans the cut between two ranges is read as two.
        lines = size = 0
        for part, part_lines, part_bytes in _scan_parallel(parts):
            collector.merge(part, lines)
            lines += part_lines
            size += part_bytes
    collector.inputs.append(source.name)
    if rank is not None:
        collector.log_ranks[source.name] = rank
    collector.lines += lines
    collector.bytes += size


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
    """Read every proposed line of a log (or of one byte range of it) into a collector."""
    stats = Stats()
    collector.begin(source.name, position, rank, host)
    for candidate in scan(read_chunks(source, start, end), matcher, stats):
        collector.line(candidate)
    collector.end()
    return stats
