"""Turn command-line paths into readable log streams, in complete lines and bounded memory."""

from __future__ import annotations

import glob
import gzip
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from generator.diagnose.errors import InputError

CHUNK_BYTES = 8 << 20
# A "line" longer than this is cut: a log without newlines must not be held whole in memory.
MAX_LINE_BYTES = 1 << 20
SNIFF_BYTES = 8192
# Control bytes a text log does not contain; tab, line breaks, backspace and ESC (colour codes) it does.
_NOT_TEXT = bytes(b for b in range(32) if b not in b"\t\n\r\f\b\x1b") + b"\x7f"
# Random binary data is about 11 % such bytes; a log damaged by a crash has a few.
MAX_NOT_TEXT_SHARE = 0.05


def is_binary(sample: bytes) -> bool:
    """Whether a sample is binary data rather than a log: by the share of control bytes, NULs aside.

    A log a crash left with a page of NULs, or one written through a preallocated file, is still a log;
    the lines read drop their NULs instead (match.py).
    """
    sample = sample.replace(b"\x00", b"")
    if not sample:
        return False
    return len(sample) - len(sample.translate(None, _NOT_TEXT)) > MAX_NOT_TEXT_SHARE * len(sample)


@dataclass(frozen=True)
class LogSource:
    """One log to scan: a display name and how to open it."""

    name: str
    path: Path | None  # None for standard input

    def open(self) -> BinaryIO:
        """Open the log for binary reading, decompressing .gz files."""
        if self.path is None:
            return sys.stdin.buffer
        if self.path.suffix == ".gz":
            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return self.path.open("rb")


def resolve(paths: list[str]) -> tuple[list[LogSource], list[str]]:
    """Expand files, folders, globs and '-' into sources; return them and the problems found."""
    sources: list[LogSource] = []
    problems: list[str] = []
    for raw in paths:
        if raw == "-":
            sources.append(LogSource("<stdin>", None))
            continue
        matches = sorted(glob.glob(raw, recursive=True)) if glob.has_magic(raw) else [raw]
        if not matches:
            problems.append(f"{raw}: no file matches this pattern")
        for match in matches:
            path = Path(match)
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
                if not files:
                    problems.append(f"{match}: the folder holds no files")
                sources.extend(LogSource(str(p), p) for p in files)
            elif path.is_file():
                sources.append(LogSource(match, path))
            elif path.exists():
                problems.append(f"{match}: not a regular file")
            else:
                problems.append(f"{match}: no such file or folder")
    return sources, problems


def split_ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Cut a plain file into byte ranges that start and end at line boundaries."""
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as f:
        for i in range(1, parts):
            f.seek(max(size * i // parts, cuts[-1]))
            f.readline()
            cuts.append(min(f.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def read_chunks(source: LogSource, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """Yield the log (or the byte range [start, end) of a plain file) in line-aligned chunks."""
    try:
        stream = source.open()
        if start:
            stream.seek(start)
    except OSError as exc:
        raise InputError(f"{source.name}: cannot open ({exc.strerror})") from exc
    try:
        yield from _chunks(stream, source.name, None if end is None else end - start, sniff=start == 0)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(
            f"{source.name}: cannot be read as {'gzip' if source.name.endswith('.gz') else 'a log'} ({exc})"
        ) from exc
    finally:
        if source.path is not None:
            stream.close()


def _chunks(stream: BinaryIO, name: str, limit: int | None, sniff: bool) -> Iterator[bytes]:
    carry = b""
    first = sniff
    while True:
        want = CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit)
        block = stream.read(want) if want else b""
        if limit is not None:
            limit -= len(block)
        if first:
            if not block:
                raise InputError(f"{name}: the log is empty")
            if is_binary(block[: SNIFF_BYTES * 4]):
                raise InputError(f"{name}: this is a binary file, not a text log")
            first = False
        if not block:
            if carry:
                yield carry
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            data = carry + block
            if len(data) > MAX_LINE_BYTES:
                yield data  # an endless line is scanned in pieces rather than held whole
                carry = b""
            else:
                carry = data
            continue
        # One copy per chunk: the short carry and the block up to its last line break.
        yield b"".join((carry, memoryview(block)[:cut])) if carry or cut < len(block) else block
        carry = block[cut:]
