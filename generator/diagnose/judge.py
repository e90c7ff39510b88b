"""Turn groups into one answer: give each finding its role, rank them, name the initiating rank,
what no entry covers, and what is missing.
"""

from __future__ import annotations

import re
from typing import Literal

from generator.contract import REPORT_VERSION, SEVERITY_RANK, Diagnosis, Evidence, Finding, Role, Unknown
from generator.diagnose import rules
from generator.diagnose.collect import Collector, ExceptionRecord, Group

PACKAGE = re.compile(rules.TRACEBACK["package"], re.ASCII)
STDLIB = re.compile(rules.TRACEBACK["stdlib"], re.ASCII)
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", re.ASCII)
SENTENCES = rules.SENTENCES
Confidence = Literal["high", "medium", "low"]

# Sort key of a finding's first line: (0 with a wall-clock time, else 1; the time; file; line).
OrderKey = tuple[int, tuple[int, ...], int, int]


def confidence(g: Group) -> Confidence:
    """'low' for leads (search keys, by-design warnings, low severity); 'medium' for medium severity or
    evidence from frames or metrics alone.
    """
    r = g.signature.record
    if r.search_key or r.lead or r.severity == "low":
        return "low"
    if r.severity == "medium" or "line" not in g.vias:
        return "medium"
    return "high"


def _key(g: Group, positions: dict[str, int], by_time: bool) -> OrderKey:
    # One file is ordered by its lines; across files, wall-clock times say which came first.
    if by_time and g.first_timed is not None and g.first_timed.order is not None:
        e = g.first_timed
        return (0, tuple(e.order or ()), positions[e.file], e.line)
    seen = g.first_seen
    assert seen is not None
    return (1 if by_time else 0, (), positions[seen.file], seen.line)


def _carries(wrapper: Group, other: Group) -> bool:
    wraps = wrapper.signature.record.wraps
    return other is not wrapper and ("*" in wraps or other.signature.entry in wraps)


def judge(collector: Collector) -> Diagnosis:
    """Rank the findings and name the initiating one, the unknown exceptions and what is missing."""
    groups = list(collector.groups.values())
    positions = {name: i for i, name in enumerate(collector.inputs)}
    by_time = len(collector.inputs) > 1
    keys = {id(g): _key(g, positions, by_time) for g in groups}
    conf = {id(g): confidence(g) for g in groups}
    causes = [
        g for g in groups if conf[id(g)] != "low" and not g.signature.record.collateral and not g.signature.record.wraps
    ]
    if not causes and any(not r.matched for r in collector.exceptions):
        # A launcher that reports "any failure" of its worker carries an exception no entry covers
        # (the user's own KeyError, say): that exception is the account of the failure, not the launcher.
        for g in groups:
            if "*" in g.signature.record.wraps:
                conf[id(g)] = "low"
    confident = [g for g in groups if conf[id(g)] != "low"]
    wrappers = {
        id(w)
        for w in confident
        if w.signature.record.wraps and any(_carries(w, c) for c in confident if not c.signature.record.wraps)
    }
    # A wrapper that carries nothing found is the best account of the failure the log gives.
    causes += [
        g for g in confident if g.signature.record.wraps and id(g) not in wrappers and not g.signature.record.collateral
    ]
    initiating = min(causes, key=lambda g: keys[id(g)]) if causes else None

    def role(g: Group) -> Role:
        if conf[id(g)] == "low":
            return "note"
        if g is initiating:
            return "initiating"
        if id(g) in wrappers:
            return "wrapper"
        return "collateral" if g.signature.record.collateral else "independent"

    order = {r: i for i, r in enumerate(rules.ROLE_ORDER)}
    roles = {id(g): role(g) for g in groups}
    groups.sort(key=lambda g: (order[roles[id(g)]], -SEVERITY_RANK[g.signature.record.severity], keys[id(g)]))
    findings = [_finding(g, roles[id(g)], conf[id(g)], by_time) for g in groups]
    first = findings[0] if findings and findings[0].role == "initiating" else None
    launchers = {g.signature.entry for g in groups if g.signature.record.wraps}
    rank = first.first.rank if first else None
    if first is not None and rank is None:
        # A launcher in the same log names the worker that failed ("local_rank: 5") when the error does not.
        named = [
            f
            for f in findings
            if f.role in ("wrapper", "collateral") and f.entry in launchers and f.first.file == first.first.file
        ]
        rank = next((f.first.rank for f in named if f.first.rank is not None), None)
    host = first.first.host if first else None
    placed = (
        None if first else _placed([g for g in groups if roles[id(g)] == "collateral" and g.signature.record.local])
    )
    if placed:
        rank, host = placed[0], placed[1]
    suspects = _suspects(collector, findings)
    unknown = _unknown(collector) if not any(f.role != "note" for f in findings) else []
    return Diagnosis(
        schema_version=REPORT_VERSION,
        inputs=collector.inputs,
        lines=collector.lines,
        bytes=collector.bytes,
        initiating=first,
        initiating_rank=rank,
        initiating_host=host,
        suspects=suspects,
        findings=findings,
        unknown=unknown,
        missing=_missing(collector, findings, first, suspects, launchers, placed),
    )


def _placed(local: list[Group]) -> tuple[int | None, str | None, str] | None:
    """The one rank or host that reports failures of its own (a sticky CUDA error, its GPU's Xid), if one."""
    ranks = {r for g in local for r in g.ranks}
    hosts = {h for g in local for h in g.hosts}
    if len(ranks) > 1 or len(hosts) > 1 or not (ranks or hosts):
        return None
    return next(iter(ranks), None), next(iter(hosts), None), local[0].signature.record.title


def _finding(g: Group, role: Role, conf: Confidence, by_time: bool) -> Finding:
    r = g.signature.record
    first = g.first_timed if by_time and g.first_timed is not None else g.first_seen
    assert first is not None
    return Finding(
        entry=r.entry,
        title=r.title,
        url=r.url,
        severity=r.severity,
        confidence=conf,
        role=role,
        count=g.count,
        ranks=sorted(g.ranks),
        hosts=sorted(g.hosts),
        first=first,
        evidence=g.evidence,
        onsets=_onsets(g, by_time),
        fix=r.fix,
        verify=r.verify,
    )


def _onsets(g: Group, by_time: bool) -> list[Evidence]:
    """Each rank's (then each host's) earliest line, chosen as a finding's first line is."""
    kept = [o.timed if by_time and o.timed is not None else o.seen for _, o in sorted(g.onsets.items())]
    return kept[: rules.LIMITS["onsets_kept"]]


def _package(record: ExceptionRecord) -> str | None:
    if record.package:
        return record.package
    if record.frames:
        path = record.frames[-1].path
        if m := PACKAGE.search(path):
            return m.group(1)
        if STDLIB.search(path):
            return "python"
    return package_of_type(record.type)


def _unknown(collector: Collector) -> list[Unknown]:
    out: list[Unknown] = []
    seen: set[tuple[str, str]] = set()
    for record in collector.exceptions:
        key = (record.type, record.message[:80])
        if record.matched or key in seen:
            continue
        seen.add(key)
        where = record.where
        evidence = Evidence(
            file=record.file,
            line=record.number,
            rank=where.rank,
            host=where.host,
            time=where.time,
            order=list(where.order) if where.order is not None and where.clock == "wall" else None,
            text=record.text,
            signature="",
            via="line",
        )
        out.append(
            Unknown(
                exception=record.type,
                message=record.message,
                package=_package(record),
                frames=[f"{f.path}:{f.line} in {f.function}" for f in record.frames[-3:]],
                evidence=evidence,
                command=rules.NEW_COMMAND.format(file=record.file, line=record.number),
            )
        )
        if len(out) == rules.LIMITS["unknown_shown"]:
            break
    return out


def _suspects(collector: Collector, findings: list[Finding]) -> list[int]:
    reporting = {r for f in findings if f.role == "collateral" for r in f.ranks}
    if not reporting or len(collector.log_ranks) < 2:
        return []
    return sorted({r for r in collector.log_ranks.values() if r not in reporting})


def _missing(
    collector: Collector,
    findings: list[Finding],
    initiating: Finding | None,
    suspects: list[int],
    wrapping: set[str],
    placed: tuple[int | None, str | None, str] | None = None,
) -> list[str]:
    missing = []
    confident = [f for f in findings if f.role != "note"]
    ranks = sorted({r for f in confident for r in f.ranks})
    if placed is not None:
        rank, host, title = placed
        where = ", ".join(x for x in (f"rank {rank}" if rank is not None else None, host) if x)
        missing.append(SENTENCES["placed"].format(title=title, where=where))
    elif suspects and initiating is None:
        names = ", ".join(map(str, suspects))
        noun = "Rank" if len(suspects) == 1 else "Ranks"
        missing.append(SENTENCES["suspects"].format(noun=noun, noun_lower=noun.lower(), names=names))
    elif confident and initiating is None:
        titles = "; ".join(f.title for f in confident[:3])
        if all(f.entry in wrapping for f in confident):
            # Only errors that carry another inside them: the one they carry is not in these logs.
            missing.append(SENTENCES["wrapper_only"].format(title=confident[0].title))
        elif len(ranks) <= 1 and len(collector.inputs) == 1:
            who = f"rank {ranks[0]}'s log" if ranks else "one log"
            missing.append(SENTENCES["only_collateral_one_log"].format(who=who, titles=titles))
        else:
            seen = ", ".join(map(str, ranks)) if ranks else "none named"
            missing.append(SENTENCES["only_collateral"].format(titles=titles, seen=seen))
    if initiating is not None and len(confident) > 1 and "wall" not in collector.clocks:
        missing.append(SENTENCES["no_clock"])
    if collector.truncated and not confident:
        missing.append(SENTENCES["truncated"])
    return missing


def package_of_type(exception: str) -> str | None:
    """The package a dotted exception type names ('torch._dynamo.exc.Unsupported' → 'torch')."""
    head = exception.split(".")[0]
    if DOTTED.fullmatch(exception) and head not in rules.BUILTIN_MODULES:
        return head
    return None
