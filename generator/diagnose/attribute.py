"""Read who printed a log line and when (rank, host, time), and peel its decoration off.

The rules are the tables of rules.py; static/diagnose-core.js interprets the same tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from generator.diagnose import rules

A = re.ASCII
ANSI = re.compile(rules.ANSI, A)
RANK_MARKERS = [re.compile(r, A) for r in rules.RANK_MARKERS]
MESSAGE_RANKS = [re.compile(r, A) for r in rules.MESSAGE_RANKS]
SLURM_PREFIX = re.compile(rules.SLURM_PREFIX, A)
PDSH_PREFIX = re.compile(rules.PDSH_PREFIX, A)
NCCL_HEADER = re.compile(rules.NCCL_HEADER, A)
SYSLOG = re.compile(rules.SYSLOG, A)
TIMES: list[tuple[re.Pattern[str], dict[str, Any]]] = [(re.compile(t["regex"], A), t) for t in rules.TIMES]
MONTHS = {m: i for i, m in enumerate(rules.MONTHS, start=1)}
FILE_RANK = re.compile(rules.FILE_RANK, A | re.IGNORECASE)
FILE_HOST = re.compile(rules.FILE_HOST, A)
DECORATION = re.compile(rules.DECORATION, A)


@dataclass(frozen=True)
class Origin:
    """Where a line came from, as far as the log says."""

    rank: int | None
    host: str | None
    time: str | None  # the timestamp as printed
    order: tuple[int, ...] | None  # a sortable key: (month, day, h, m, s, µs) or (µs since boot,)
    clock: str | None  # which clock `order` is on: "wall" or "boot"


def file_origin(name: str) -> tuple[int | None, str | None]:
    """Rank or host named by a log file (rank-3.log, node07.err), for lines that carry neither."""
    stem = PurePath(name).name
    rank = FILE_RANK.search(stem)
    host = FILE_HOST.match(stem)
    return (int(rank.group(1)) if rank else None, host.group(1) if host and not rank else None)


def _fraction(digits: str | None) -> int:
    return int((digits or "0").ljust(6, "0")[:6])


def read_time(line: str) -> tuple[str | None, tuple[int, ...] | None, str | None]:
    """Return the first timestamp format the line carries: (text, sortable order, clock)."""
    for pattern, spec in TIMES:
        m = pattern.search(line)
        if not m:
            continue
        if spec["clock"] == "boot":
            whole, _, frac = m.group(1).partition(".")
            return m.group(spec["text"]), (int(whole) * 1_000_000 + _fraction(frac),), "boot"
        fields = spec["fields"]
        if spec["month_name"]:
            month = MONTHS.get(m.group(fields[0]))
            if month is None:
                continue
        else:
            month = int(m.group(fields[0]))
        values = [month] + [int(m.group(g)) for g in fields[1:5]]
        values.append(_fraction(m.group(fields[5])) if fields[5] else 0)
        return m.group(spec["text"]), tuple(values), "wall"
    return None, None, None


def origin(line: str, at: int, default_rank: int | None, default_host: str | None) -> Origin:
    """Attribute a line: the rank marker nearest before `at`, else a prefix, else the message, else the file."""
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
    if rank is None:
        for marker in MESSAGE_RANKS:
            if m := marker.search(line):
                rank = int(m.group(1))
                break
    if host is None and (m := PDSH_PREFIX.match(line)) and not m.group(1).lower().startswith("rank"):
        host = m.group(1)
    text, order, clock = read_time(line)
    return Origin(rank if rank is not None else default_rank, host or default_host, text, order, clock)


def visible(line: str, at: int) -> str:
    """Return the segment of a carriage-return-overwritten line that holds position `at`."""
    start = line.rfind("\r", 0, at) + 1
    end = line.find("\r", at)
    return line[start:] if end == -1 else line[start:end]


def payload(line: str) -> str:
    """Return what the program printed: the line without rank, launcher, CI, time and level prefixes."""
    for _ in range(rules.LIMITS["decoration_passes"]):
        m = DECORATION.match(line)
        if not m or m.end() == 0:
            break
        line = line[m.end() :]
    return line.lstrip(" \t")
