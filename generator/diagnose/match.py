"""Propose the lines of a log worth reading, fast, in bounded memory.

A multi-literal matcher (Hyperscan where it is installed) runs over whole chunks looking for every
line signature's required text, the grammar's literals and the metric names the detectors read. It
may propose too much, never too little: every proposed line is then read exactly (collect.py), so
the result means what the index contract says whichever matcher proposed it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from generator.diagnose import rules
from generator.diagnose.attribute import ANSI
from generator.diagnose.errors import MatcherError
from generator.diagnose.signatures import Signature


@dataclass(frozen=True)
class Needle:
    """A text whose presence makes a line worth reading, and the signatures it may belong to."""

    text: str
    caseless: bool
    owners: tuple[int, ...]  # signature positions; empty for the grammar's texts


def needles(signatures: list[Signature]) -> tuple[list[Needle], list[tuple[int, str]]]:
    """The scan's literals (each signature's required text, the grammar's literals, each watched metric's
    last word before its ':' or '='), and the patterns of the signatures that have no required text.

    static/diagnose-core.js builds the same list for the browser.
    """
    owners: dict[tuple[str, bool], list[int]] = {}
    patterns: list[tuple[int, str]] = []
    for s in signatures:
        if s.is_line and s.record.required:
            owners.setdefault((s.record.required, False), []).append(s.position)
        elif s.is_line:
            patterns.append((s.position, s.regex))
    for item in rules.STRUCTURE:
        for literal in item["literals"]:
            owners.setdefault((literal, False), [])
    metrics = sorted({m for s in signatures if s.record.detector for m in s.record.detector.metrics})
    for metric in metrics:
        for join in rules.METRIC_JOINS:
            owners.setdefault((metric.split("_")[-1] + join, True), [])
    found: list[Needle] = []
    for (text, caseless), positions in owners.items():
        # A line logged inside a JSON string has \" for each quote.
        for variant in quote_variants(text, literal=True):
            found.append(Needle(variant, caseless, tuple(positions)))
    return found, patterns


def quote_variants(text: str, literal: bool = False) -> list[str]:
    """The text, and for texts with a double quote also its JSON-escaped form (\\" for ")."""
    escaped = '\\"' if literal else '\\\\"'
    return [text, text.replace('"', escaped)] if '"' in text else [text]


Owners = tuple[int, ...] | None  # the signatures a candidate may belong to; None for every one


class Matcher:
    """Propose (owners, end offset) candidates in a chunk."""

    name = "base"

    def candidates(self, chunk: bytes) -> Iterable[tuple[Owners, int]]:
        """Yield candidate matches as (the signatures they may belong to, offset within the chunk)."""
        raise NotImplementedError


class HyperscanMatcher(Matcher):
    """Intel Hyperscan: one pass over the chunk for every literal at once (its Teddy and FDR matchers)."""

    name = "hyperscan"

    def __init__(self, signatures: list[Signature]) -> None:
        import hyperscan

        found, patterns = needles(signatures)
        expressions = [re.escape(n.text).encode("utf-8") for n in found]
        self.owners: list[Owners] = [n.owners for n in found]
        flags = [hyperscan.HS_FLAG_CASELESS if n.caseless else 0 for n in found]
        for owner, regex in patterns:
            for variant in quote_variants(regex):
                expressions.append(variant.encode("utf-8"))
                self.owners.append((owner,))
                # PREFILTER keeps any pattern Hyperscan cannot compile exactly as a superset, which the
                # per-line reading then narrows; MULTILINE gives ^ and $ their per-line meaning.
                flags.append(hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE)
        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
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

    def candidates(self, chunk: bytes) -> Iterable[tuple[Owners, int]]:
        found: list[tuple[Owners, int]] = []
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
    """Portable fallback: one alternation of the same literals Hyperscan gets, longest first.

    Each hit is mapped back to the signatures whose required text it is, as Hyperscan's are, so a
    proposed line is read only against those: a log full of near misses costs one lookup per hit,
    not every signature per line. The search resumes one byte after each hit's start rather than
    at its end, so a needle that overlaps another is found too.
    """

    name = "literal-prefilter"

    def __init__(self, signatures: list[Signature]) -> None:
        found, patterns = needles(signatures)
        self.needles = [(n.text.encode("utf-8"), n.caseless, n.owners) for n in found]
        texts = {(text, caseless) for text, caseless, _ in self.needles}
        # Longest first: of the needles that match at one position, the alternation takes the longest,
        # and the owners of the shorter ones (its prefixes) are added from the table below.
        ordered = sorted(texts, key=lambda t: (-len(t[0]), t))
        pieces = [b"(?i:" + re.escape(t) + b")" if caseless else re.escape(t) for t, caseless in ordered]
        # A signature with no required text is searched as its pattern (^ and $ per line) and is
        # proposed with every hit: a superset, which the per-line reading narrows.
        pieces += [f"(?m:{variant})".encode() for _owner, regex in patterns for variant in quote_variants(regex)]
        self.loose = {owner for owner, _regex in patterns}
        self.rx = re.compile(b"|".join(pieces))
        self.owners: dict[bytes, tuple[int, ...]] = {}

    def _owners(self, hit: bytes) -> tuple[int, ...]:
        """The signatures of every needle that matches at the start of this hit."""
        owners = self.owners.get(hit)
        if owners is None:
            folded = hit.lower()
            owners = tuple(
                sorted(
                    {
                        o
                        for text, caseless, own in self.needles
                        if (folded.startswith(text.lower()) if caseless else hit.startswith(text))
                        for o in own
                    }
                    | self.loose
                )
            )
            self.owners[hit] = owners
        return owners

    def candidates(self, chunk: bytes) -> Iterable[tuple[Owners, int]]:
        search = self.rx.search
        m = search(chunk)
        while m is not None:
            yield self._owners(m.group()), m.end()
            m = search(chunk, m.start() + 1)


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
    following: str | None = None  # the next line of the chunk, for a frame line wrapped onto it


def scan(chunks: Iterable[bytes], matcher: Matcher, stats: Stats) -> Iterator[Candidate]:
    """Yield every proposed line, in line order, over a stream of line-aligned chunks."""
    for chunk in chunks:
        stats.bytes += len(chunk)
        # The matcher reads the chunk as it is; colour codes come off the proposed lines only, so a
        # code inside a signature's required text hides that line (the browser does the same).
        found = sorted(set(matcher.candidates(chunk)), key=lambda c: c[1])
        counted = [0, 0]  # newlines counted while numbering the proposed lines, and up to where
        if found:
            yield from _lines(chunk, found, stats.lines, counted)
        # A piece of an endless line ends no line: the line is counted once, where its newline comes,
        # so both engines number it alike whatever size of piece each reads.
        stats.lines += counted[0] + chunk.count(b"\n", counted[1])


def _lines(chunk: bytes, found: list[tuple[Owners, int]], base: int, counted: list[int]) -> Iterator[Candidate]:
    line_start, line_number = 0, base + 1
    order: list[int] = []
    proposed: dict[int, set[int] | None] = {}
    numbers: dict[int, int] = {}
    for owners, end in found:
        start = chunk.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end else 0
        if start not in numbers:
            line_number += chunk.count(b"\n", line_start, start)
            line_start = start
            numbers[start] = line_number
            order.append(start)
            proposed[start] = set()
        sigs = proposed[start]
        if owners is None:
            proposed[start] = None
        elif sigs is not None:
            sigs.update(owners)
    counted[0], counted[1] = line_number - base - 1, line_start
    for start in order:
        stop = chunk.find(b"\n", start)
        text = _clean(chunk[start : stop if stop != -1 else len(chunk)])
        following = None
        if stop != -1:
            after = chunk.find(b"\n", stop + 1)
            following = _clean(chunk[stop + 1 : after if after != -1 else len(chunk)])
        sigs = proposed[start]
        yield Candidate(numbers[start], text, None if sigs is None else frozenset(sigs), following)


def _clean(raw: bytes) -> str:
    # NULs a crash left in the file are not text; the browser drops them too.
    text = raw.replace(b"\x00", b"").decode("utf-8", "replace") if b"\x00" in raw else raw.decode("utf-8", "replace")
    if text.endswith("\r"):
        text = text[:-1]
    return ANSI.sub("", text) if "\x1b" in text else text
