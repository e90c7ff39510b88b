"""The real-log corpus: every case well-formed, answered right (or listed as a known miss), and the
browser's engine (under Node) returning the very report the command line returns.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.contract import Diagnosis
from generator.diagnose.attribute import file_origin
from generator.diagnose.run import Engine
from tests.corpus_cases import CORPUS, FAMILIES, Case, load_cases
from tests.vectors import CASES as VECTOR_CASES
from tests.vectors import logs as vector_logs

ROOT = Path(__file__).resolve().parent.parent
CASES = load_cases()
# Cases the engine does not get right yet, each with what goes wrong. The list only shrinks: a case
# that starts passing fails the suite until it is taken off (strict xfail).
MISSES: dict[str, str] = yaml.safe_load((CORPUS.parent / "misses.yaml").read_text(encoding="utf-8")) or {}
ENTRIES = {p.stem for p in (ROOT / "entries").rglob("*.yaml")}


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


def test_the_corpus_is_as_large_and_varied_as_promised() -> None:
    failures = [c for c in CASES if c.kind == "failure"]
    assert len(CASES) >= 150
    assert sum(c.multi_rank for c in CASES) >= 30
    assert sum(c.kind == "negative" for c in CASES) >= 25
    covered = {c.family for c in failures if c.expected}
    assert covered >= FAMILIES - {"negative"}, FAMILIES - covered


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_is_well_formed(case: Case) -> None:
    assert case.family == case.name.split("/")[0] and case.family in FAMILIES
    assert set(case.expected) <= ENTRIES, set(case.expected) - ENTRIES
    assert case.source.scheme == "https"
    if case.kind == "negative":
        assert not case.expected and not case.uncovered and not case.initiating
    else:
        assert bool(case.expected) != bool(case.uncovered), "a failure names its entries or says what no entry covers"
    assert case.logs, "a case holds at least one log"
    for log in case.logs:
        assert log.stat().st_size > 0
        # The engine reads ranks and hosts from file names; a case's names must not invent them.
        assert file_origin(log.name) == (None, None), log.name


def _verdict(case: Case, report: Diagnosis) -> str | None:
    """What is wrong with the report for this case, or None when it is right."""
    alarms = [f.entry for f in report.findings if f.role != "note"]
    if case.kind == "negative":
        return f"false alarm: {alarms}" if alarms else None
    if not case.expected:
        named = [u.exception for u in report.unknown]
        if alarms or (case.exception is None and named) or (case.exception and case.exception in named):
            return None
        return f"says nothing of {case.exception or 'the failure'}: {named}"
    ranked = [f.entry for f in report.findings]
    if not ranked or ranked[0] not in case.expected:
        return f"top-1 {ranked[:3]}"
    if case.initiating:
        want = (case.initiating.get("rank"), case.initiating.get("host"))
        got = (report.initiating_rank, report.initiating_host)
        if (want[0] is not None and got[0] != want[0]) or (want[1] is not None and got[1] != want[1]):
            return f"initiating {got}"
    return None


def _params() -> list[Any]:
    out = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=MISSES[case.name])] if case.name in MISSES else []
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


def test_known_misses_name_real_cases() -> None:
    assert set(MISSES) <= {c.name for c in CASES}, set(MISSES) - {c.name for c in CASES}


@pytest.mark.parametrize("case", _params())
def test_case_is_diagnosed_right(case: Case, engine: Engine) -> None:
    report, problems = engine.diagnose([str(p) for p in case.logs])
    assert problems == []
    assert _verdict(case, report) is None, _verdict(case, report)


def _node_reports(static: Path, jobs: list[list[str]], tmp_path: Path, markdown: bool = False) -> list[dict[str, Any]]:
    batch = tmp_path / "jobs.json"
    batch.write_text(json.dumps(jobs), encoding="utf-8")
    index = ROOT / "generator" / "data" / "signatures.jsonl"
    result = subprocess.run(
        ["node", str(ROOT / "tools" / "diagnose-node.mjs"), str(index), "--batch", str(batch)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TRAINWRECK_STATIC": str(static), **({"TRAINWRECK_MARKDOWN": "1"} if markdown else {})},
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout))


def test_both_engines_return_the_same_report_on_every_case_and_vector(
    engine: Engine, node_static: Path, tmp_path: Path
) -> None:
    jobs = [[str(p) for p in c.logs] for c in CASES] + [[str(p) for p in vector_logs(v)] for v in VECTOR_CASES]
    names = [c.name for c in CASES] + [f"vector {v.name}" for v in VECTOR_CASES]
    browser = _node_reports(node_static, jobs, tmp_path)
    differ = []
    for name, logs, theirs in zip(names, jobs, browser, strict=True):
        report, problems = engine.diagnose(logs)
        ours = {"report": json.loads(report.model_dump_json()), "problems": problems}
        if ours != theirs:
            differ.append(name)
    assert differ == [], f"{len(differ)} reports differ, first: {differ[:5]}"


def test_every_grammar_pattern_contains_one_of_its_literals() -> None:
    # The browser's scanner looks for the literals, the command line for the patterns: a line one
    # proposes and the other skips would make the two engines disagree.
    import re

    from generator.diagnose import rules

    lines = [
        line
        for path in [p for c in CASES for p in c.logs] + [p for v in VECTOR_CASES for p in vector_logs(v)]
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]
    seen = 0
    for item in rules.STRUCTURE:
        pattern = re.compile(item["regex"], re.ASCII)
        for line in lines:
            if pattern.search(line):
                seen += 1
                assert any(lit in line for lit in item["literals"]), (item["regex"], line)
    assert seen > 500


WATCHDOG = (
    b"[rank1]:[E1130 01:02:03.123456 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
    b"timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
    b"milliseconds before timing out.\n"
)


def test_both_engines_read_damaged_and_endless_logs_alike(engine: Engine, node_static: Path, tmp_path: Path) -> None:
    # A page of NULs a crash left at the top of a log; a log written with no line breaks at all; and
    # binary data, which both refuse. Generated here, never committed.
    holed = tmp_path / "holed.log"
    holed.write_bytes(b"step 1 loss 2.31\n" + b"\x00" * 4096 + b"step 2 loss 2.30\n" + WATCHDOG)
    endless = tmp_path / "endless.log"
    # 21 MiB in one line, then one more: each engine reads the long line in pieces of its own size
    # (8 MiB, 4 MiB), and both count it once.
    endless.write_bytes(b"x" * (3 << 20) + WATCHDOG.rstrip(b"\n") + b" " + b"y" * (18 << 20) + b"\n" + WATCHDOG)
    binary = tmp_path / "core.bin"
    binary.write_bytes(random.Random(7).randbytes(65536))
    jobs = [[str(holed)], [str(endless)], [str(binary)]]
    browser = _node_reports(node_static, jobs, tmp_path)
    for logs, theirs in zip(jobs, browser, strict=True):
        report, problems = engine.diagnose(logs)
        ours = {"report": json.loads(report.model_dump_json()), "problems": problems}
        assert ours == theirs, logs
    holed_report, endless_report, binary_report = browser
    assert [f["entry"] for f in holed_report["report"]["findings"]] == ["pg-nccl-watchdog-collective-timeout"]
    assert holed_report["report"]["findings"][0]["first"]["line"] == 3
    assert [f["entry"] for f in endless_report["report"]["findings"]] == ["pg-nccl-watchdog-collective-timeout"]
    assert endless_report["report"]["lines"] == 2
    assert [e["line"] for e in endless_report["report"]["findings"][0]["evidence"]] == [1, 2]
    assert binary_report["problems"] == [f"{binary}: this is a binary file, not a text log"]


@pytest.mark.parametrize("matcher", ["re2", "literal"])
def test_every_matcher_gives_the_default_report_on_every_case(engine: Engine, matcher: str) -> None:
    # The fallbacks map each hit to the signatures that own its text, as Hyperscan does; the reports
    # must not depend on which matcher proposed the lines. Python's re over a thousand alternatives is
    # slow, so the last-resort matcher is held to every third case.
    other = Engine(matcher=matcher)
    cases = CASES if matcher == "re2" else CASES[::3]
    differ = [
        c.name for c in cases if engine.diagnose([str(p) for p in c.logs]) != other.diagnose([str(p) for p in c.logs])
    ]
    assert differ == []


def test_both_engines_write_the_same_markdown_report(engine: Engine, node_static: Path, tmp_path: Path) -> None:
    # What "Copy as Markdown" puts on the clipboard is what `diagnose --markdown` prints.
    from generator.diagnose.text import render_markdown

    jobs = [[str(p) for p in c.logs] for c in CASES]
    browser = _node_reports(node_static, jobs, tmp_path, markdown=True)
    differ = [
        logs
        for logs, theirs in zip(jobs, browser, strict=True)
        if render_markdown(engine.diagnose(logs)[0]) != theirs["markdown"]
    ]
    assert differ == []
