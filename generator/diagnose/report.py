"""Turn hits into findings: group by entry, attribute, rank, find the initiating rank, say what is missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from generator.diagnose.context import Origin, origin, visible
from generator.diagnose.engine import Hit
from generator.diagnose.signatures import SEVERITY_RANK, Signature

REPORT_VERSION: Literal[1] = 1
EVIDENCE_LINES = 5
TEXT_LIMIT = 400


class Contract(BaseModel):
    """Base of the diagnosis report models: no unknown fields."""

    model_config = ConfigDict(extra="forbid")


class Evidence(Contract):
    """One log line behind a finding."""

    file: str = Field(description="The log file, as given on the command line ('<stdin>' for standard input).")
    line: int = Field(description="Line number in that file, from 1.")
    rank: int | None = Field(description="Rank that printed the line, from a prefix, a header or the file name.")
    host: str | None = Field(description="Host that printed the line, where the log or the file name says.")
    time: str | None = Field(description="Timestamp as printed on the line.")
    text: str = Field(description="The line (the carriage-return segment holding the match), cut to 400 characters.")
    signature: str = Field(description="Id of the matching signature in signatures.jsonl.")


class Finding(Contract):
    """One failure the logs show, with its evidence."""

    entry: str = Field(description="Entry id.")
    title: str = Field(description="Entry title.")
    url: str = Field(description="Entry page.")
    severity: Literal["low", "medium", "high", "critical"] = Field(description="Severity of the entry.")
    confidence: Literal["high", "medium", "low"] = Field(
        description="'low' for search-key matches and low-severity entries, which are leads rather than causes."
    )
    role: Literal["initiating", "independent", "collateral", "note"] = Field(
        description="'initiating': the earliest failure; 'collateral': usually a downstream report of it; "
        "'independent': another failure; 'note': a low-confidence lead."
    )
    count: int = Field(
        description="How many lines matched (a line matched by two of the entry's signatures counts once)."
    )
    ranks: list[int] = Field(description="Ranks that printed a matching line, sorted.")
    hosts: list[str] = Field(description="Hosts that printed a matching line, sorted.")
    first: Evidence = Field(description="The earliest matching line.")
    evidence: list[Evidence] = Field(description="Up to five matching lines, the first ones seen.")
    fix: str = Field(description="The fix, in one line.")
    verify: str = Field(description="How to prove the fix took.")


class Diagnosis(Contract):
    """The report of `trainwreck diagnose --json`."""

    schema_version: Literal[1] = Field(description="Version of this report format.")
    inputs: list[str] = Field(description="Logs scanned, in order.")
    lines: int = Field(description="Lines scanned, all logs together.")
    bytes: int = Field(description="Bytes scanned, after decompression.")
    initiating: Finding | None = Field(description="The finding judged to have started the failure, if any.")
    initiating_rank: int | None = Field(description="Rank of the initiating finding's first line, if known.")
    initiating_host: str | None = Field(description="Host of the initiating finding's first line, if known.")
    suspects: list[int] = Field(
        description="Ranks whose logs were given (named by file) but show none of the downstream errors the "
        "other ranks show: the collectives were most likely waiting for them."
    )
    findings: list[Finding] = Field(description="Every finding, most likely cause first.")
    missing: list[str] = Field(description="Facts the logs lack that would settle the diagnosis, each a sentence.")


# (0 for a wall-clock time or 1 for none, the time, file position, line): earliest first.
OrderKey = tuple[int, tuple[int, ...], int, int]


@dataclass
class _Group:
    signature: Signature
    entry: str
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    evidence: list[Evidence] = field(default_factory=list)
    first: Evidence | None = None
    first_key: OrderKey = (2, (), 0, 0)  # sorts after every real line
    last_line: tuple[int, int] = (-1, -1)


class Collector:
    """Accumulate hits into per-entry groups with bounded memory."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.signatures = signatures
        self.groups: dict[str, _Group] = {}
        self.inputs: list[str] = []
        self.lines = 0
        self.bytes = 0
        self.clocks: set[str] = set()
        # Ranks named by the log files given (rank-3.log): a rank with a log but no error is telling.
        self.log_ranks: dict[str, int] = {}

    def add(self, hit: Hit, file: str, file_index: int, default_rank: int | None, default_host: str | None) -> None:
        """Record one hit from one file."""
        sig = self.signatures[hit.signature]
        group = self.groups.get(sig.entry)
        if group is not None and group.last_line == (file_index, hit.line_number):
            # Two signatures of one entry on one line: one line of evidence, the more specific pattern.
            if sig.specificity > group.signature.specificity:
                group.signature = sig
            return
        where = origin(hit.text, hit.at, default_rank, default_host)
        evidence = Evidence(
            file=file,
            line=hit.line_number,
            rank=where.rank,
            host=where.host,
            time=where.time,
            text=visible(hit.text, hit.at)[:TEXT_LIMIT],
            signature=sig.id,
        )
        if group is None:
            group = self.groups[sig.entry] = _Group(sig, sig.entry)
        elif sig.specificity > group.signature.specificity:
            group.signature = sig
        group.last_line = (file_index, hit.line_number)
        group.count += 1
        if where.rank is not None:
            group.ranks.add(where.rank)
        if where.host:
            group.hosts.add(where.host)
        if len(group.evidence) < EVIDENCE_LINES:
            group.evidence.append(evidence)
        key = _order_key(where, file_index, hit.line_number)
        if where.clock:
            self.clocks.add(where.clock)
        if group.first is None or key < group.first_key:
            group.first, group.first_key = evidence, key

    def merge(self, part: Collector, line_offset: int) -> None:
        """Fold in the groups of a later byte range of the same file, whose lines start after line_offset."""
        for entry, theirs in part.groups.items():
            moved = [e.model_copy(update={"line": e.line + line_offset}) for e in theirs.evidence]
            first = theirs.first.model_copy(update={"line": theirs.first.line + line_offset}) if theirs.first else None
            clock, order, file_index, line = theirs.first_key
            key: OrderKey = (clock, order, file_index, line + line_offset)
            mine = self.groups.get(entry)
            if mine is None:
                self.groups[entry] = _Group(
                    theirs.signature, entry, theirs.count, set(theirs.ranks), set(theirs.hosts), moved, first, key
                )
                continue
            if theirs.signature.specificity > mine.signature.specificity:
                mine.signature = theirs.signature
            mine.count += theirs.count
            mine.ranks |= theirs.ranks
            mine.hosts |= theirs.hosts
            mine.evidence = (mine.evidence + moved)[:EVIDENCE_LINES]
            if key < mine.first_key:
                mine.first, mine.first_key = first, key
        self.clocks |= part.clocks


def _order_key(where: Origin, file_index: int, line: int) -> OrderKey:
    # Lines with a wall-clock time sort by it; the rest keep their order of appearance after them.
    if where.order is not None and where.clock == "wall":
        return (0, where.order, file_index, line)
    return (1, (), file_index, line)


def _confidence(sig: Signature) -> Literal["high", "medium", "low"]:
    if sig.search_key or sig.severity == "low":
        return "low"
    return "high" if sig.severity in ("high", "critical") else "medium"


def build_report(collector: Collector) -> Diagnosis:
    """Rank the findings and name the initiating one and what is missing."""
    groups = list(collector.groups.values())
    # Where two entries claim the same lines on purpose, keep the more specific one.
    shadowed = {
        o for g in groups for o in g.signature.overlaps if o in collector.groups and _shadows(g, collector.groups[o])
    }
    groups = [g for g in groups if g.entry not in shadowed]
    confident = [g for g in groups if _confidence(g.signature) != "low"]
    origins = [g for g in confident if not g.signature.collateral]
    initiating = min(origins, key=lambda g: g.first_key) if origins else None

    def role(g: _Group) -> Literal["initiating", "independent", "collateral", "note"]:
        if _confidence(g.signature) == "low":
            return "note"
        if g is initiating:
            return "initiating"
        return "collateral" if g.signature.collateral else "independent"

    order = {"initiating": 0, "independent": 1, "collateral": 2, "note": 3}
    groups.sort(key=lambda g: (order[role(g)], -SEVERITY_RANK[g.signature.severity], g.first_key))
    findings = [_finding(g, role(g)) for g in groups]
    first = findings[0] if findings and findings[0].role == "initiating" else None
    suspects = _suspects(collector, findings)
    return Diagnosis(
        schema_version=REPORT_VERSION,
        inputs=collector.inputs,
        lines=collector.lines,
        bytes=collector.bytes,
        initiating=first,
        initiating_rank=first.first.rank if first else None,
        initiating_host=first.first.host if first else None,
        suspects=suspects,
        findings=findings,
        missing=_missing(collector, findings, first, suspects),
    )


def _shadows(specific: _Group, generic: _Group) -> bool:
    return specific.signature.specificity > generic.signature.specificity and specific.count >= generic.count


def _finding(g: _Group, role: Literal["initiating", "independent", "collateral", "note"]) -> Finding:
    sig = g.signature
    assert g.first is not None
    return Finding(
        entry=g.entry,
        title=sig.title,
        url=sig.url,
        severity=sig.severity,  # type: ignore[arg-type]
        confidence=_confidence(sig),
        role=role,
        count=g.count,
        ranks=sorted(g.ranks),
        hosts=sorted(g.hosts),
        first=g.first,
        evidence=g.evidence,
        fix=sig.fix,
        verify=sig.verify,
    )


def _suspects(collector: Collector, findings: list[Finding]) -> list[int]:
    reporting = {r for f in findings if f.role == "collateral" for r in f.ranks}
    if not reporting or len(collector.log_ranks) < 2:
        return []
    return sorted({r for r in collector.log_ranks.values() if r not in reporting})


def _missing(
    collector: Collector, findings: list[Finding], initiating: Finding | None, suspects: list[int]
) -> list[str]:
    missing = []
    confident = [f for f in findings if f.role != "note"]
    ranks = sorted({r for f in confident for r in f.ranks})
    if suspects and initiating is None:
        names = ", ".join(map(str, suspects))
        noun = "Rank" if len(suspects) == 1 else "Ranks"
        missing.append(
            f"{noun} {names} printed none of the downstream errors that the other ranks printed, so the "
            f"collectives were most likely waiting for {noun.lower()} {names}. Read the end of that log and "
            "the kernel log (dmesg -T) of its node: an OOM kill, an Xid or a Python traceback there is the origin."
        )
    elif confident and initiating is None:
        titles = "; ".join(f.title for f in confident[:3])
        if len(ranks) <= 1 and len(collector.inputs) == 1:
            who = f"rank {ranks[0]}'s log" if ranks else "one log"
            missing.append(
                f"Only {who} was given, and what it shows is usually collateral ({titles}). Add the other "
                "ranks' logs and each node's kernel log (dmesg -T), or rerun with TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
                "and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 so the flight recorder names the rank that stopped first."
            )
        else:
            seen = ", ".join(map(str, ranks)) if ranks else "none named"
            missing.append(
                f"Every finding is usually a downstream report ({titles}); the failure that started it is not in "
                f"these logs (ranks seen: {seen}). Add the logs of the remaining ranks and each node's kernel "
                "log (dmesg -T)."
            )
    if initiating is not None and len(confident) > 1 and "wall" not in collector.clocks:
        missing.append(
            "These logs carry no wall-clock timestamps, so the initiating failure is chosen by order of "
            "appearance. Timestamped logs (torchrun --log-dir, or TORCH_CPP_LOG_LEVEL=INFO for glog headers) "
            "would settle which rank failed first."
        )
    return missing
