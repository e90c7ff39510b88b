"""Propose the lines of a log worth reading, fast, in bounded memory.

A multi-pattern matcher (Hyperscan where it is installed) runs over whole chunks with every line
signature, the traceback grammar's markers and the metric names the detectors read. It may propose
too much, never too little: every proposed line is then read exactly (collect.py), so the result
means what the index contract says whichever matcher proposed it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from generator.diagnose import rules
from generator.diagnose.attribute import ANSI_BYTES
from generator.diagnose.errors import MatcherError
from generator.diagnose.signatures import Signature

ALL = -1  # "every signature may match this line"
GRAMMAR = -2  # "the traceback and metric grammar should read this line"


def metric_pattern(name: str) -> str:
    """The candidate pattern of a normalised metric name: any spelling that normalises to it, then ':' or '='."""

    def word(w: str) -> str:
        # Each letter in either case, so that 'Grad Norm' and 'grad_norm' are both read.
        return "".join(f"[{c}{c.upper()}]" if "a" <= c <= "z" else re.escape(c) for c in w)

    return rules.METRIC_SEPARATORS.join(word(w) for w in name.split("_")) + "['\"]? ?[:=]"


def candidate_patterns(signatures: list[Signature]) -> list[tuple[int, str]]:
    """Every candidate pattern as (signature position, or GRAMMAR, regex source)."""
    patterns = [(s.position, s.regex) for s in signatures if s.is_line]
    patterns += [(GRAMMAR, p["regex"]) for p in rules.STRUCTURE]
    metrics = sorted({m for s in signatures if s.record.detector for m in s.record.detector.metrics})
    patterns += [(GRAMMAR, metric_pattern(m)) for m in metrics]
    return patterns


def quote_variants(regex: str) -> list[str]:
    """The pattern, and for patterns with a double quote also its JSON-escaped form (\\" for ")."""
    return [regex, regex.replace('"', '\\\\"')] if '"' in regex else [regex]


class Matcher:
    """Propose (signature position or ALL, end offset) candidates in a chunk."""

    name = "base"

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        """Yield candidate matches as (signature position or ALL, offset within the chunk)."""
        raise NotImplementedError


class HyperscanMatcher(Matcher):
    """Intel Hyperscan: one pass over the chunk for every pattern at once."""

    name = "hyperscan"

    def __init__(self, signatures: list[Signature]) -> None:
        import hyperscan

        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        expressions, self.owners = [], []
        for owner, regex in candidate_patterns(signatures):
            for variant in quote_variants(regex):
                expressions.append(variant.encode("utf-8"))
                self.owners.append(owner)
        # SINGLEMATCH would hide repeats on later lines; PREFILTER keeps any pattern Hyperscan
        # cannot compile exactly as a superset, which the per-line reading then narrows; MULTILINE
        # gives ^ and $ their per-line meaning inside a chunk.
        flags = [hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE for _ in expressions]
        cached = _cache_path(expressions, flags)
        if cached is not None and cached.is_file():
            try:
                db = hyperscan.loadb(cached.read_bytes(), hyperscan.HS_MODE_BLOCK)
                db.scratch = hyperscan.Scratch(db)  # a loaded database comes without one
                self.db = db
                return
            except (OSError, hyperscan.error):
                pass  # a stale or broken cache is rebuilt below
        try:
            self.db.compile(
                expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions), flags=flags
            )
        except hyperscan.error as exc:
            raise MatcherError(f"Hyperscan cannot compile this index ({exc}); try --engine re2") from exc
        if cached is not None:
            _write_cache(cached, hyperscan.dumpb(self.db))

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        owners = self.owners

        def on_match(expression: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            found.append((owners[expression], end))

        self.db.scan(chunk, match_event_handler=on_match)
        return found


def _cache_path(expressions: list[bytes], flags: list[int]) -> Path | None:
    """Where a compiled database for exactly these patterns is kept: compiling takes longer than most scans."""
    try:
        import hyperscan

        version = getattr(hyperscan, "__version__", "") + str(getattr(hyperscan, "HS_VERSION", ""))
    except ImportError:
        return None
    digest = hashlib.sha256(repr((version, expressions, flags)).encode()).hexdigest()[:32]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "trainwreck" / f"hyperscan-{digest}.db"


def _write_cache(path: Path, data: bytes) -> None:
    # Written under a temporary name and renamed, so a concurrent run never reads half a file.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(path)
    except OSError:
        pass  # no cache where the home folder is read-only; the next run compiles again


class LiteralMatcher(Matcher):
    """Portable fallback (and the browser's method): one alternation of each signature's required text.

    A line that holds any of it is proposed for every signature, because the alternation resumes
    after its first hit and could step over a second, overlapping one.
    """

    name = "literal-prefilter"

    def __init__(self, signatures: list[Signature]) -> None:
        required = {s.position: s.record.required for s in signatures}
        pieces = {
            variant.encode()
            for owner, regex in candidate_patterns(signatures)
            for variant in quote_variants(re.escape(required[owner]) if required.get(owner) else regex)
        }
        # (?m): ^ and $ mean a line's start and end inside a chunk, in re and RE2 alike.
        self.rx = re.compile(b"(?m)" + b"|".join(sorted(pieces)))

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        for m in self.rx.finditer(chunk):
            yield ALL, m.end()


class Re2Matcher(LiteralMatcher):
    """Google RE2's DFA over the same alternation: the fallback where Hyperscan is missing."""

    name = "re2"
    # RE2 abandons its DFA for a slow NFA when the DFA outgrows its budget; a few hundred
    # alternatives need more than the default.
    MAX_MEMORY = 1 << 30

    def __init__(self, signatures: list[Signature]) -> None:
        import re2

        super().__init__(signatures)
        options = re2.Options()
        options.max_mem = self.MAX_MEMORY
        self.rx = re2.compile(self.rx.pattern, options)


MATCHERS = ("hyperscan", "re2", "literal")


def best_matcher(signatures: list[Signature], name: str = "auto") -> Matcher:
    """Return the requested matcher; 'auto' takes the fastest one installed (see benchmarks/)."""
    if name not in ("auto", *MATCHERS):
        raise MatcherError(f"unknown matcher {name!r}; choose one of: auto, {', '.join(MATCHERS)}")
    for candidate in MATCHERS:
        if name not in ("auto", candidate):
            continue
        try:
            if candidate == "hyperscan":
                return HyperscanMatcher(signatures)
            if candidate == "re2":
                return Re2Matcher(signatures)
        except ImportError as exc:
            if name == candidate:
                module = "hyperscan" if candidate == "hyperscan" else "google-re2"
                raise MatcherError(
                    f"--engine {candidate} needs the Python package {module}, which is not installed "
                    f"(pip install {module}); --engine auto picks the fastest matcher installed"
                ) from exc
            continue
        return LiteralMatcher(signatures)
    raise MatcherError(f"unknown matcher {name!r}")  # unreachable: 'literal' always succeeds


@dataclass
class Stats:
    """Bytes and lines scanned so far."""

    bytes: int = 0
    lines: int = 0


@dataclass(frozen=True)
class Candidate:
    """A proposed line: its number in the log, its text, and which line signatures may match it."""

    number: int  # 1-based
    text: str  # decoded, colour codes removed, without the line break
    proposed: frozenset[int] | None  # signature positions, or None for all of them


def _normalise(chunk: bytes) -> bytes:
    """Remove colour codes; this never changes the count of newlines."""
    return ANSI_BYTES.sub(b"", chunk) if b"\x1b" in chunk else chunk


def scan(chunks: Iterable[bytes], matcher: Matcher, stats: Stats) -> Iterator[Candidate]:
    """Yield every proposed line, in line order, over a stream of line-aligned chunks."""
    for raw in chunks:
        stats.bytes += len(raw)
        chunk = _normalise(raw)
        found = sorted(set(matcher.candidates(chunk)), key=lambda c: c[1])
        if found:
            yield from _lines(chunk, found, stats.lines)
        stats.lines += chunk.count(b"\n")


def _lines(chunk: bytes, found: list[tuple[int, int]], base: int) -> Iterator[Candidate]:
    line_start, line_number = 0, base + 1
    order: list[int] = []
    proposed: dict[int, set[int] | None] = {}
    numbers: dict[int, int] = {}
    for owner, end in found:
        start = chunk.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end else 0
        if start not in numbers:
            line_number += chunk.count(b"\n", line_start, start)
            line_start = start
            numbers[start] = line_number
            order.append(start)
            proposed[start] = set()
        sigs = proposed[start]
        if owner == ALL:
            proposed[start] = None
        elif sigs is not None and owner != GRAMMAR:
            sigs.add(owner)
    for start in order:
        stop = chunk.find(b"\n", start)
        text = chunk[start : stop if stop != -1 else len(chunk)].decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        sigs = proposed[start]
        yield Candidate(numbers[start], text, None if sigs is None else frozenset(sigs))
