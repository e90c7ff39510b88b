"""Find every line of a log that a signature matches, fast, in bounded memory.

A multi-pattern matcher (Hyperscan where it is installed) proposes candidate lines from whole
chunks; every candidate is then confirmed with Python's `re` on the single line, so the result
means exactly what the index contract says whichever matcher proposed it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from generator.diagnose.context import ANSI_BYTES
from generator.diagnose.signatures import Signature


@dataclass(frozen=True)
class Hit:
    """One signature matching one line."""

    signature: int  # index into the signature list
    line_number: int  # 1-based, in the log as given
    text: str  # the whole line, decoded, ANSI removed
    at: int  # where the match starts in text


class Matcher:
    """Propose (signature index, end offset) candidates in a chunk; may over-report, never under-report."""

    name = "base"

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        """Yield candidate matches as (signature index, offset within the chunk)."""
        raise NotImplementedError


class HyperscanMatcher(Matcher):
    """Intel Hyperscan: one pass over the chunk for every pattern at once."""

    name = "hyperscan"

    def __init__(self, signatures: list[Signature]) -> None:
        import hyperscan

        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        patterns, ids = [], []
        for i, s in enumerate(signatures):
            for variant in quote_variants(s.regex):
                patterns.append(variant.encode("utf-8"))
                ids.append(i)
        # SINGLEMATCH would hide repeats on later lines; PREFILTER keeps any pattern Hyperscan
        # cannot compile exactly as a superset, which the per-line check then narrows.
        flags = [hyperscan.HS_FLAG_PREFILTER for _ in patterns]
        self.db.compile(expressions=patterns, ids=ids, elements=len(patterns), flags=flags)

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        found: list[tuple[int, int]] = []

        def on_match(sig: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            found.append((sig, end))

        self.db.scan(chunk, match_event_handler=on_match)
        return found


class LiteralMatcher(Matcher):
    """Portable fallback (and the browser's method): an alternation of each signature's required text.

    A line that holds any required text is proposed for every signature, because the alternation
    resumes after its first hit and could step over a second, overlapping one.
    """

    name = "literal-prefilter"

    def __init__(self, signatures: list[Signature]) -> None:
        pieces = {
            variant.encode()
            for s in signatures
            for variant in quote_variants(re.escape(s.required) if s.required else s.regex)
        }
        self.rx = re.compile(b"|".join(sorted(pieces)))
        self.count = len(signatures)

    def candidates(self, chunk: bytes) -> Iterable[tuple[int, int]]:
        for m in self.rx.finditer(chunk):
            for sig in range(self.count):
                yield sig, m.end()


class Re2Matcher(LiteralMatcher):
    """Google RE2's DFA over the same alternation of required texts: the fallback where Hyperscan is missing."""

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


def best_matcher(signatures: list[Signature], name: str = "auto") -> Matcher:
    """Return the requested matcher; 'auto' takes the fastest one installed (see benchmarks/)."""
    for candidate in ("hyperscan", "re2", "literal"):
        if name not in ("auto", candidate):
            continue
        try:
            if candidate == "hyperscan":
                return HyperscanMatcher(signatures)
            if candidate == "re2":
                return Re2Matcher(signatures)
        except ImportError:
            if name == candidate:
                raise
            continue
        return LiteralMatcher(signatures)
    raise ValueError(f"unknown matcher {name!r}")


def quote_variants(regex: str) -> list[str]:
    """The pattern, and for patterns with a double quote also its JSON-escaped form (\\" for ")."""
    return [regex, regex.replace('"', '\\\\"')] if '"' in regex else [regex]


def _normalise(chunk: bytes) -> bytes:
    """Remove colour codes; this never changes the count of newlines."""
    return ANSI_BYTES.sub(b"", chunk) if b"\x1b" in chunk else chunk


@dataclass
class Stats:
    """Bytes and lines scanned so far."""

    bytes: int = 0
    lines: int = 0


def scan(chunks: Iterable[bytes], signatures: list[Signature], matcher: Matcher, stats: Stats) -> Iterator[Hit]:
    """Yield every confirmed hit, in line order, over a stream of line-aligned chunks."""
    confirm = [re.compile(s.regex, re.ASCII) for s in signatures]
    for raw in chunks:
        stats.bytes += len(raw)
        chunk = _normalise(raw)
        found = sorted(set(matcher.candidates(chunk)), key=lambda c: c[1])
        if found:
            yield from _confirm(chunk, found, stats.lines, confirm)
        stats.lines += chunk.count(b"\n")


def _confirm(chunk: bytes, found: list[tuple[int, int]], base: int, confirm: list[re.Pattern[str]]) -> Iterator[Hit]:
    line_start, line_number = 0, base + 1
    by_line: dict[int, set[int]] = {}
    starts: dict[int, int] = {}
    for sig, end in found:
        start = chunk.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end else 0
        if start not in starts:
            line_number += chunk.count(b"\n", line_start, start)
            line_start = start
            starts[start] = line_number
        by_line.setdefault(start, set()).add(sig)
    for start, sigs in by_line.items():
        stop = chunk.find(b"\n", start)
        text = chunk[start : stop if stop != -1 else len(chunk)].decode("utf-8", "replace").rstrip("\r")
        for sig in sorted(sigs):
            if m := confirm[sig].search(text):
                yield Hit(sig, starts[start], text, m.start())
            elif '\\"' in text and (m := confirm[sig].search(unescaped := text.replace('\\"', '"'))):
                # A line logged inside a JSON string: match it as it was printed.
                yield Hit(sig, starts[start], unescaped, m.start())
