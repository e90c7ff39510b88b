"""Read who printed a log line and when: rank, host and time, from prefixes, headers or the file name.

The browser page implements the same rules in static/diagnose-core.js; the shared test vectors keep
the two in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

# Rank markers that may appear anywhere in a line (interleaved output keeps several per line).
RANK_MARKERS = [
    re.compile(r"\[(?:rank|default)(\d+)\]:"),  # torchrun --tee / local_ranks_filter prefixes
    re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>:"),  # Open MPI --tag-output
    re.compile(r"\((?:VllmWorker|Worker)[\w-]* rank=(\d+)[^)]*\)"),  # vLLM workers
    re.compile(r"\[Rank (\d+)\]"),  # ProcessGroupNCCL messages
    re.compile(r"\(EngineCore_DP(\d+) pid=\d+\)"),  # vLLM data-parallel engine cores: the DP rank
]
SLURM_PREFIX = re.compile(r"^\s*(\d{1,6}): ")
# pdsh and similar prefix lines with the host name; a host name carries a digit (node07, gpu-a017).
PDSH_PREFIX = re.compile(r"^([A-Za-z][\w-]*\d[\w.-]*): ")
# NCCL's own header, host:pid:tid [cudaDev], with WARN lines adding the source file:line.
NCCL_HEADER = re.compile(r"(?:^|[\s:>\]])([A-Za-z][\w.-]*):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL ")
SYSLOG = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.+-]+) ([A-Za-z][\w.-]*) \w[\w./-]*(?:\[\d+\])?: "
)

MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), start=1)}
ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
GLOG = re.compile(r"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})")
VLLM = re.compile(r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
CTIME = re.compile(r"\[?[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]?")
SYSLOG_TIME = re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) ")
DMESG = re.compile(r"^\[\s*(\d+\.\d+)\]")

FILE_RANK = re.compile(r"(?:^|[^a-z])(?:rank|proc|worker)[-_.]?(\d+)", re.IGNORECASE)
FILE_HOST = re.compile(r"^([A-Za-z][A-Za-z-]*\d+)(?:[._-]|$)")


@dataclass(frozen=True)
class Origin:
    """Where a line came from, as far as the log says."""

    rank: int | None
    host: str | None
    time: str | None  # the timestamp as printed
    order: tuple[int, ...] | None  # a sortable key: (month, day, h, m, s, µs) or (seconds since boot,)
    clock: str | None  # which clock `order` is on: "wall" or "boot"


def file_origin(name: str) -> tuple[int | None, str | None]:
    """Rank or host named by a log file (rank-3.log, node07.err), for lines that carry neither."""
    stem = PurePath(name).name
    rank = FILE_RANK.search(stem)
    host = FILE_HOST.match(stem)
    return (int(rank.group(1)) if rank else None, host.group(1) if host and not rank else None)


def _time(line: str) -> tuple[str | None, tuple[int, ...] | None, str | None]:
    if m := ISO.search(line):
        frac = int((m.group(7) or "0").ljust(6, "0")[:6])
        return (
            m.group(0),
            (int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)), frac),
            "wall",
        )
    if m := GLOG.search(line):
        frac = int(m.group(6).ljust(6, "0")[:6])
        return (
            m.group(0)[1:],
            (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), frac),
            "wall",
        )
    if m := VLLM.search(line):
        return m.group(0).split(" ", 1)[1], (*(int(g) for g in m.groups()), 0), "wall"
    if (m := CTIME.search(line)) and m.group(1) in MONTHS:
        parts = (MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), 0)
        return m.group(0).strip("[]"), parts, "wall"
    if (m := SYSLOG_TIME.match(line)) and m.group(1) in MONTHS:
        parts = (MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), 0)
        return m.group(0).strip(), parts, "wall"
    if m := DMESG.match(line):
        seconds = float(m.group(1))
        return m.group(1), (int(seconds * 1_000_000),), "boot"
    return None, None, None


def origin(line: str, at: int, default_rank: int | None, default_host: str | None) -> Origin:
    """Attribute a line: the rank marker nearest before position `at`, else a line prefix, else the file."""
    rank = None
    best = -1
    for marker in RANK_MARKERS:
        for found in marker.finditer(line):
            if found.start() > at:
                break
            if found.start() > best:
                best, rank = found.start(), int(found.group(1))
    host = None
    if m := NCCL_HEADER.search(line):
        host = m.group(1)
    elif m := SYSLOG.match(line):
        host = m.group(1)
    if rank is None and (m := SLURM_PREFIX.match(line)):
        rank = int(m.group(1))
    if host is None and (m := PDSH_PREFIX.match(line)) and not m.group(1).lower().startswith("rank"):
        host = m.group(1)
    text, order, clock = _time(line)
    return Origin(rank if rank is not None else default_rank, host or default_host, text, order, clock)


def visible(line: str, at: int) -> str:
    """Return the segment of a carriage-return-overwritten line that holds position `at`."""
    start = line.rfind("\r", 0, at) + 1
    end = line.find("\r", at)
    return line[start:] if end == -1 else line[start:end]
