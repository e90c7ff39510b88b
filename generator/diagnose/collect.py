"""Read every proposed line: confirm signatures, follow tracebacks, evaluate metric detectors.

The collector keeps bounded state per file: one traceback reader and one set of detector states per
rank (interleaved ranks keep their own), and per entry a group with its count, ranks, hosts and
first lines. static/diagnose-core.js does the same, line by line, in the same order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from generator.contract import Evidence, Via
from generator.diagnose import rules
from generator.diagnose.attribute import Origin, origin, payload, visible
from generator.diagnose.match import Candidate
from generator.diagnose.signatures import Signature

A = re.ASCII
HEADER = re.compile(rules.TRACEBACK["header"], A)
FRAME = re.compile(rules.TRACEBACK["frame"], A)
BOX_FRAME = re.compile(rules.TRACEBACK["box_frame"], A)
FRAME_PARTIAL = re.compile(rules.TRACEBACK["frame_partial"], A)
BOX_PARTIAL = re.compile(rules.TRACEBACK["box_partial"], A)
CHAIN = re.compile(rules.TRACEBACK["chain"], A)
EXCEPTION = re.compile(rules.TRACEBACK["exception"], A)
METRIC_LIST = re.compile(rules.METRIC["list"], A)
METRIC_ITEM = re.compile(rules.METRIC["item"], A)
METRIC_PAIR = re.compile(rules.METRIC["pair"], A)
RECORD_OPEN = re.compile(rules.LAUNCHER_RECORD["open"], A)
RECORD_FIELD = re.compile(rules.LAUNCHER_RECORD["field"], A)
RECORD_CLOSE = re.compile(rules.LAUNCHER_RECORD["close"], A)
ERROR_LINES = [(e["kind"], re.compile(e["regex"], A), e["package"]) for e in rules.ERROR_LINES]
KEY_SEPARATORS = re.compile(rules.METRIC_SEPARATORS, A)
LIMITS = rules.LIMITS


def metric_key(name: str) -> str:
    """Normalise a metric name as printed ('grad norm', 'train/loss') to the index's form ('grad_norm')."""
    return KEY_SEPARATORS.sub("_", name.lower())


def reading(text: str) -> float:
    """The value of a metric as printed; NaN and inf in any case."""
    bare = text.lower().lstrip("+-")
    if bare == "nan":
        return math.nan
    if bare in ("inf", "infinity"):
        return -math.inf if text.startswith("-") else math.inf
    return float(text)


@dataclass
class Frame:
    """One traceback frame as read from a log."""

    path: str
    line: int
    function: str
    number: int  # line number in the log
    text: str


@dataclass
class ExceptionRecord:
    """An exception line, with the traceback frames that led to it."""

    type: str
    message: str
    frames: list[Frame]
    file: str
    number: int
    where: Origin
    text: str
    matched: bool  # a signature matched the same log line
    package: str | None = None  # who printed it, where the line's form says (an error line's system)


@dataclass
class _Traceback:
    start: int
    frames: list[Frame] = field(default_factory=list)
    named: bool = False  # a signature that is proof matched one of its lines


@dataclass
class _DetectorState:
    run: int = 0
    last: float | None = None
    low: float | None = None
    readings: int = 0
    finite: bool = False  # a finite reading has been seen
    start: int = 0  # the reading the current run began at
    primed: bool = False  # a finite reading came before the current run


@dataclass
class _Stream:
    """What is open for one rank of one file: a traceback and the detectors' states."""

    traceback: _Traceback | None = None
    detectors: dict[int, _DetectorState] = field(default_factory=dict)


# A finding's onsets are keyed by rank, or by host for a line without a rank: (0, rank, "") sorts
# before (1, 0, host), so the rank rows come first, then the hosts.
OnsetKey = tuple[int, int, str]


def onset_key(e: Evidence) -> OnsetKey | None:
    """The row an evidence line belongs to: its rank, else its host; None when it names neither."""
    if e.rank is not None:
        return (0, e.rank, "")
    return (1, 0, e.host) if e.host else None


@dataclass
class Onset:
    """The earliest line of one rank (or host) for one entry, in file order and in wall-clock order."""

    seen: Evidence
    seen_at: tuple[int, int]  # (file position, line)
    timed: Evidence | None = None
    timed_at: tuple[tuple[int, ...], int, int] = ((), 0, 0)

    def add(self, e: Evidence, seen_at: tuple[int, int], timed_at: tuple[tuple[int, ...], int, int] | None) -> None:
        """Keep e where it is earlier than what is kept."""
        if seen_at < self.seen_at:
            self.seen, self.seen_at = e, seen_at
        if timed_at is not None and (self.timed is None or timed_at < self.timed_at):
            self.timed, self.timed_at = e, timed_at

    def absorb(self, other: Onset) -> None:
        """Keep the earlier of each of the two lines."""
        if other.seen_at < self.seen_at:
            self.seen, self.seen_at = other.seen, other.seen_at
        if other.timed is not None and (self.timed is None or other.timed_at < self.timed_at):
            self.timed, self.timed_at = other.timed, other.timed_at

    def shifted(self, offset: int) -> Onset:
        """The same onset with its line numbers moved down by offset."""
        order, timed_file, timed_line = self.timed_at
        return Onset(
            self.seen.model_copy(update={"line": self.seen.line + offset}),
            (self.seen_at[0], self.seen_at[1] + offset),
            self.timed.model_copy(update={"line": self.timed.line + offset}) if self.timed else None,
            (order, timed_file, timed_line + offset),
        )


@dataclass
class Group:
    """Everything found for one entry."""

    signature: Signature  # the most specific signature seen
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    evidence: list[Evidence] = field(default_factory=list)
    first_seen: Evidence | None = None  # the earliest line in file order
    first_seen_at: tuple[int, int] = (1 << 30, 0)  # (file position, line)
    first_timed: Evidence | None = None  # the line with the earliest wall-clock time
    first_timed_at: tuple[tuple[int, ...], int, int] = ((), 0, 0)
    vias: set[str] = field(default_factory=set)
    last_line: tuple[int, int] = (-1, -1)
    onsets: dict[OnsetKey, Onset] = field(default_factory=dict)

    def onset(self, e: Evidence, seen_at: tuple[int, int], timed_at: tuple[tuple[int, ...], int, int] | None) -> None:
        """Record e as a candidate for the earliest line of its rank (or host)."""
        key = onset_key(e)
        if key is None:
            return
        kept = self.onsets.get(key)
        if kept is None:
            self.onsets[key] = Onset(e, seen_at, e if timed_at is not None else None, timed_at or ((), 0, 0))
            self._prune()
        else:
            kept.add(e, seen_at, timed_at)

    def _prune(self) -> None:
        # Only the lowest keys are reported; a key dropped here has that many lower keys that stay, so
        # it could never be reported, and memory stays bounded however many ranks a log names.
        if len(self.onsets) > 2 * LIMITS["onsets_kept"]:
            for key in sorted(self.onsets)[LIMITS["onsets_kept"] :]:
                del self.onsets[key]

    def shifted(self, offset: int) -> Group:
        """The same group with its line numbers moved down by offset (a later byte range of a file)."""

        def move(e: Evidence | None) -> Evidence | None:
            return e.model_copy(update={"line": e.line + offset}) if e else None

        seen_file, seen_line = self.first_seen_at
        order, timed_file, timed_line = self.first_timed_at
        return Group(
            self.signature,
            self.count,
            set(self.ranks),
            set(self.hosts),
            [e.model_copy(update={"line": e.line + offset}) for e in self.evidence],
            move(self.first_seen),
            (seen_file, seen_line + offset),
            move(self.first_timed),
            (order, timed_file, timed_line + offset),
            set(self.vias),
            onsets={key: o.shifted(offset) for key, o in self.onsets.items()},
        )

    def absorb(self, other: Group) -> None:
        """Fold another group of the same entry into this one."""
        if other.signature.strength > self.signature.strength:
            self.signature = other.signature
        self.count += other.count
        self.ranks |= other.ranks
        self.hosts |= other.hosts
        self.vias |= other.vias
        self.evidence = (self.evidence + other.evidence)[: LIMITS["evidence_lines"]]
        if other.first_seen is not None and other.first_seen_at < self.first_seen_at:
            self.first_seen, self.first_seen_at = other.first_seen, other.first_seen_at
        if other.first_timed is not None and (self.first_timed is None or other.first_timed_at < self.first_timed_at):
            self.first_timed, self.first_timed_at = other.first_timed, other.first_timed_at
        for key, o in other.onsets.items():
            kept = self.onsets.get(key)
            if kept is None:
                self.onsets[key] = o
            else:
                kept.absorb(o)
        self._prune()


@dataclass
class _File:
    name: str
    position: int
    rank: int | None
    host: str | None
    last_order: tuple[int, ...] | None = None  # the latest wall-clock time seen in this file
    streams: dict[int | None, _Stream] = field(default_factory=dict)
    record: dict[str, str] | None = None  # the launcher's failure record being read: its host and rank


class Collector:
    """Accumulate what the lines show into per-entry groups, with bounded memory."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.signatures = signatures
        self.line_signatures = [s for s in signatures if s.is_line]
        self.confirm = {s.position: re.compile(s.regex, A) for s in self.line_signatures}
        self.frame_signatures = [s for s in signatures if s.record.kind == "frames"]
        self.watched: dict[str, list[Signature]] = {}
        for s in signatures:
            for metric in s.record.detector.metrics if s.record.detector else []:
                self.watched.setdefault(metric, []).append(s)
        self.groups: dict[str, Group] = {}
        self.inputs: list[str] = []
        self.lines = 0
        self.bytes = 0
        self.clocks: set[str] = set()
        # Ranks named by the log files given (rank-3.log): a rank with a log but no error is telling.
        self.log_ranks: dict[str, int] = {}
        self.exceptions: list[ExceptionRecord] = []
        self.truncated = False  # some traceback stops before its exception line
        self.file: _File | None = None

    # -- files -------------------------------------------------------------------------------------

    def begin(self, name: str, position: int, rank: int | None, host: str | None) -> None:
        """Start reading a file (or a byte range of one)."""
        self.file = _File(name, position, rank, host)

    def end(self) -> None:
        """Finish the current file: tracebacks still open lack their exception line."""
        assert self.file is not None
        for rank, stream in self.file.streams.items():
            if stream.traceback is not None:
                self._close(stream, rank, None)
        self.file = None

    # -- lines -------------------------------------------------------------------------------------

    def line(self, candidate: Candidate) -> None:
        """Read one proposed line."""
        f = self.file
        assert f is not None
        text = candidate.text
        rank, host = f.rank, f.host
        if f.record is not None:
            # Inside the launcher's record of a failed worker: its lines are that worker's.
            rank = int(f.record["rank"]) if f.record.get("rank", "").isdigit() else rank
            host = f.record.get("host", host)
        where = origin(text, 0, rank, host)
        if where.clock == "wall" and where.order is not None:
            f.last_order = where.order
        if where.clock:
            self.clocks.add(where.clock)
        matched, proof = self._signatures(candidate, where)
        escaped = "\\n" in text and ("Traceback" in text or 'File \\"' in text)
        # A traceback logged inside a JSON string (torchrun's error file, structured loggers) is read
        # as the lines it was before it was escaped.
        subs = [s.replace('\\"', '"') for s in text.split("\\n")] if escaped else [text]
        # Only a plain line can continue on the next one.
        following = candidate.following if not escaped and "\r" not in text else None
        for sub in subs:
            for segment in sub.split("\r"):
                if segment:
                    self._grammar(segment, candidate.number, where, matched, proof, following)

    def _signatures(self, candidate: Candidate, where: Origin) -> tuple[bool, bool]:
        """Record the signatures the line matches; return (any matched, one that is proof matched)."""
        text = candidate.text
        escaped = '\\"' in text
        unescaped = text.replace('\\"', '"') if escaped else text
        pool = (
            self.line_signatures
            if candidate.proposed is None
            else [self.signatures[p] for p in sorted(candidate.proposed)]
        )
        hits: list[tuple[Signature, str, int]] = []
        for sig in pool:
            rx = self.confirm[sig.position]
            if m := rx.search(text):
                hits.append((sig, text, m.start()))
            elif escaped and (m := rx.search(unescaped)):
                # A line logged inside a JSON string: match it as it was printed.
                hits.append((sig, unescaped, m.start()))
        if not hits:
            return False, False
        # Where a signature refines another entry's on this line, the refinement says more.
        refined = {e for sig, _, _ in hits for e in sig.record.refines}
        for sig, view, at in hits:
            if sig.entry not in refined:
                self._add(sig, candidate.number, view, at, origin(view, at, where.rank, where.host), "line")
        return True, any(not (sig.record.lead or sig.record.search_key) for sig, _, _ in hits)

    def _grammar(
        self, segment: str, number: int, where: Origin, matched: bool, proof: bool, following: str | None
    ) -> None:
        f = self.file
        assert f is not None
        body = payload(segment)
        if RECORD_OPEN.match(body):
            f.record = {}
        elif f.record is not None and (m := RECORD_FIELD.match(body)):
            f.record[m.group(1)] = m.group(2)
        elif RECORD_CLOSE.match(body):
            f.record = None
        stream = f.streams.get(where.rank)
        if stream is None:
            stream = f.streams[where.rank] = _Stream()
        if proof and stream.traceback is not None:
            stream.traceback.named = True
        if HEADER.search(body):
            if stream.traceback is not None and stream.traceback.frames:
                self._close(stream, where.rank, None)
            stream.traceback = _Traceback(number)
            return
        m = FRAME.match(body) or BOX_FRAME.match(body)
        if m is None and following is not None:
            m = _unwrapped_frame(body, payload(following))
        if m:
            if stream.traceback is None:
                stream.traceback = _Traceback(number, named=proof)  # the excerpt starts inside a traceback
            frames = stream.traceback.frames
            frames.append(Frame(m.group(1).replace("\\", "/"), int(m.group(2)), m.group(3), number, segment))
            if len(frames) > LIMITS["frames_kept"]:
                del frames[0]
            return
        if CHAIN.match(body):
            return
        m = EXCEPTION.match(body)
        if m:
            record = ExceptionRecord(
                m.group(1),
                (m.group(2) or "")[: LIMITS["text_limit"]],
                [],
                f.name,
                number,
                where,
                segment[: LIMITS["text_limit"]],
                matched,
            )
            if stream.traceback is not None:
                record.frames = stream.traceback.frames
                self._close(stream, where.rank, record)
            else:
                self._record(record)
            return
        for kind, rx, package in ERROR_LINES:
            if m := rx.search(body):
                # With two groups the first names the error (the Xid number), the second describes it.
                name, message = (f"{kind} {m.group(1)}", m.group(2)) if rx.groups > 1 else (kind, m.group(1))
                text = segment[: LIMITS["text_limit"]]
                self._record(
                    ExceptionRecord(
                        name, message[: LIMITS["text_limit"]], [], f.name, number, where, text, matched, package
                    )
                )
                return
        if self.watched:
            self._metrics(body, segment, number, where, stream)

    # -- metrics -----------------------------------------------------------------------------------

    def _metrics(self, body: str, segment: str, number: int, where: Origin, stream: _Stream) -> None:
        """Feed the line's metric readings to the detectors that watch them."""
        read: set[int] = set()
        for found in METRIC_LIST.finditer(body):
            detectors = self.watched.get(metric_key(found.group(1)))
            if not detectors:
                continue
            # Every item of a list is a reading, in order.
            at = found.start(2)
            for piece in found.group(2).split(","):
                item = METRIC_ITEM.match(piece)
                if item:
                    value = reading(item.group(1))
                    for sig in detectors:
                        read.add(sig.position)
                        if self._evaluate(sig, stream, value):
                            self._add(sig, number, segment, at + item.start(1), where, "metric")
                at += len(piece) + 1
        for found in METRIC_PAIR.finditer(body):
            detectors = self.watched.get(metric_key(found.group(1)))
            for sig in detectors or ():
                # One reading per detector and line: "loss=nan, train_loss=nan" is one step, not two.
                if sig.position in read:
                    continue
                read.add(sig.position)
                if self._evaluate(sig, stream, reading(found.group(2))):
                    self._add(sig, number, segment, found.start(2), where, "metric")

    # -- tracebacks --------------------------------------------------------------------------------

    def _close(self, stream: _Stream, rank: int | None, record: ExceptionRecord | None) -> None:
        """End the open traceback; when its message names nothing, its frames may."""
        tb = stream.traceback
        stream.traceback = None
        if tb is None:
            return
        if record is None:
            if tb.frames:
                self.truncated = True
        else:
            self._record(record)
        # Frames name the failure only when nothing in the traceback did: a message that was printed,
        # even cut or run together with another rank's output, says more than where it was raised.
        if (record is not None and record.matched) or tb.named:
            return
        for sig in self.frame_signatures:
            frame = _find_calls(tb.frames, sig)
            if frame is not None:
                assert self.file is not None
                self._add(sig, frame.number, frame.text, 0, origin(frame.text, 0, rank, self.file.host), "frames", rank)

    def _record(self, record: ExceptionRecord) -> None:
        if len(self.exceptions) < LIMITS["exceptions_kept"]:
            self.exceptions.append(record)

    def _evaluate(self, sig: Signature, stream: _Stream, value: float) -> bool:
        """Update one detector with a reading; return True when its condition holds on this reading."""
        d = sig.record.detector
        assert d is not None
        state = stream.detectors.get(sig.position)
        if state is None:
            state = stream.detectors[sig.position] = _DetectorState()
        finite = math.isfinite(value)
        last = state.last
        holds = False
        if d.condition == "non-finite":
            state.run = 0 if finite else state.run + 1
            holds = not finite
        elif d.condition in ("below", "above"):
            assert d.threshold is not None
            holds = finite and (value < d.threshold if d.condition == "below" else value > d.threshold)
            state.run = state.run + 1 if holds else 0
        elif d.condition == "halved":
            if last is not None and finite and math.isfinite(last) and last > 0:
                if value <= last / 2:
                    state.run += 1
                    holds = True
                elif value != last:
                    state.run = 0
        elif d.condition == "jump":
            assert d.threshold is not None
            holds = finite and state.low is not None and value >= state.low * 10**d.threshold
            state.run = state.run + 1 if holds else 0
            if finite and value > 0 and (state.low is None or value < state.low):
                state.low = value
        elif d.condition == "rising":
            if last is not None and finite and math.isfinite(last):
                if value > last:
                    state.run += 1
                    holds = True
                elif value < last:
                    state.run = 0
        state.last = value
        state.readings += 1
        if holds and state.run == 1:
            state.start, state.primed = state.readings, state.finite
        state.finite = state.finite or finite
        if d.within is not None and state.start > d.within:
            return False
        if d.after_finite and not state.primed:
            return False
        return holds and state.run >= d.count

    # -- groups ------------------------------------------------------------------------------------

    def _add(
        self, sig: Signature, number: int, view: str, at: int, where: Origin, via: Via, rank: int | None = None
    ) -> None:
        f = self.file
        assert f is not None
        group = self.groups.get(sig.entry)
        if group is not None and group.last_line == (f.position, number):
            # Two signatures of one entry on one line: one line of evidence, the stronger signature.
            if sig.strength > group.signature.strength:
                group.signature = sig
            return
        line_rank = where.rank if where.rank is not None else rank
        order = where.order if where.clock == "wall" and where.order is not None else f.last_order
        evidence = Evidence(
            file=f.name,
            line=number,
            rank=line_rank,
            host=where.host,
            time=where.time,
            order=list(order) if order is not None else None,
            text=visible(view, at)[: LIMITS["text_limit"]],
            signature=sig.record.id,
            via=via,
        )
        if group is None:
            group = self.groups[sig.entry] = Group(sig)
        elif sig.strength > group.signature.strength:
            group.signature = sig
        group.last_line = (f.position, number)
        group.count += 1
        group.vias.add(via)
        if line_rank is not None:
            group.ranks.add(line_rank)
        if where.host:
            group.hosts.add(where.host)
        if len(group.evidence) < LIMITS["evidence_lines"]:
            group.evidence.append(evidence)
        seen = (f.position, number)
        if group.first_seen is None or seen < group.first_seen_at:
            group.first_seen, group.first_seen_at = evidence, seen
        timed = (order, f.position, number) if order is not None else None
        if timed is not None and (group.first_timed is None or timed < group.first_timed_at):
            group.first_timed, group.first_timed_at = evidence, timed
        group.onset(evidence, seen, timed)

    def fold(self, group: Group) -> None:
        """Add a group found elsewhere (a later byte range, another node's report)."""
        mine = self.groups.get(group.signature.entry)
        if mine is None:
            self.groups[group.signature.entry] = group
        else:
            mine.absorb(group)

    def merge(self, part: Collector, line_offset: int) -> None:
        """Fold in a later byte range of the same file, whose lines start after line_offset."""
        for theirs in part.groups.values():
            self.fold(theirs.shifted(line_offset))
        self.clocks |= part.clocks
        self.truncated = self.truncated or part.truncated
        for record in part.exceptions:
            record.number += line_offset
            self._record(record)


def _unwrapped_frame(body: str, following: str) -> re.Match[str] | None:
    """A frame line the terminal wrapped onto the next line, read as the one line it was."""
    if FRAME_PARTIAL.match(body):
        head, tail = body.rstrip(" \t"), following.strip(" \t")
        return FRAME.match(head + tail) or FRAME.match(f"{head} {tail}")
    if BOX_PARTIAL.match(body):
        inner = body.strip(" \t\u2502") + following.strip(" \t\u2502")
        return BOX_FRAME.match(f"\u2502 {inner}")
    return None


def _find_calls(frames: list[Frame], sig: Signature) -> Frame | None:
    """Return the innermost frame of the first run of frames that matches the signature's calls."""
    calls = sig.record.calls
    for i in range(len(frames) - len(calls) + 1):
        run = frames[i : i + len(calls)]
        if all(
            f.function == c.function and ("/" + f.path).endswith("/" + c.path) for f, c in zip(run, calls, strict=True)
        ):
            return run[-1]
    return None
