"""Merge the reports that `trainwreck diagnose --json` wrote on each node into one judged report.

Each node reads only its own logs; the login node merges the reports (a few kilobytes each) into one
timeline, so no log is shipped anywhere. Findings of the same entry are folded together, and the
roles and the initiating rank are judged again over all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from generator.contract import REPORT_VERSION, Diagnosis, Evidence
from generator.diagnose import rules
from generator.diagnose.attribute import file_origin
from generator.diagnose.collect import Collector, Group
from generator.diagnose.errors import InputError
from generator.diagnose.judge import judge
from generator.diagnose.signatures import load_index


def read_report(path: Path) -> Diagnosis:
    """Read one JSON report; raise InputError when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON report ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema_version") != REPORT_VERSION:
        raise InputError(f"{path}: not a version {REPORT_VERSION} report of `trainwreck diagnose --json`")
    try:
        return Diagnosis.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def merge_reports(paths: list[Path], index: Path | None = None) -> Diagnosis:
    """Fold several reports into one and judge it again."""
    signatures = {s.record.id: s for s in load_index(index)}
    collector = Collector([])
    for path in paths:
        report = read_report(path)
        # A report named after its node (node07.json) supplies the host its lines do not carry.
        _, node = file_origin(path.name)
        renamed = {name: _qualified(path, name, len(paths)) for name in report.inputs}
        for name in report.inputs:
            collector.inputs.append(renamed[name])
            rank, _host = file_origin(name)
            if rank is not None:
                collector.log_ranks[renamed[name]] = rank
        positions = {name: i for i, name in enumerate(collector.inputs)}
        collector.lines += report.lines
        collector.bytes += report.bytes
        for finding in report.findings:
            sig = signatures.get(finding.first.signature)
            if sig is None:
                raise InputError(f"{path}: signature {finding.first.signature!r} is not in the index")
            first = _moved(finding.first, renamed, node)
            group = Group(
                sig,
                count=finding.count,
                ranks=set(finding.ranks),
                hosts=set(finding.hosts) | ({node} if node and not finding.hosts else set()),
                evidence=[_moved(e, renamed, node) for e in finding.evidence],
                vias={e.via for e in finding.evidence},
            )
            group.first_seen, group.first_seen_at = first, (positions[first.file], first.line)
            if first.order is not None:
                group.first_timed = first
                group.first_timed_at = (tuple(first.order), positions[first.file], first.line)
            # A report written before onsets were reported still has its first line.
            for onset in finding.onsets or [finding.first]:
                e = _moved(onset, renamed, node)
                at = (positions[e.file], e.line)
                group.onset(e, at, (tuple(e.order), *at) if e.order is not None else None)
            collector.fold(group)
            if first.time and first.order is not None:
                collector.clocks.add("wall")
        if any(m == rules.SENTENCES["truncated"] for m in report.missing):
            collector.truncated = True
    merged = judge(collector)
    if not any(f.role != "note" for f in merged.findings):
        unknown = [u for path in paths for u in read_report(path).unknown][: rules.LIMITS["unknown_shown"]]
        merged = merged.model_copy(update={"unknown": unknown})
    return merged


def _moved(e: Evidence, renamed: dict[str, str], node: str | None) -> Evidence:
    return e.model_copy(update={"file": renamed.get(e.file, e.file), "host": e.host or node})


def _qualified(path: Path, name: str, reports: int) -> str:
    # Every node has its own rank-0.log; the report's name keeps them apart.
    return f"{path.stem}/{Path(name).name}" if reports > 1 else name
