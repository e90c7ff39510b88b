"""Per-rank onsets, the rank timeline drawn from them (the same SVG from both engines), and `diagnose --html`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from generator.contract import Diagnosis
from generator.diagnose.collect import Collector, Group
from generator.diagnose.inputs import resolve
from generator.diagnose.merge import merge_reports
from generator.diagnose.run import PARALLEL_MIN_BYTES, Engine, _scan_source
from generator.diagnose.text import headline, render_text
from generator.diagnose.timeline import timeline_svg
from tests.conftest import ROOT
from tests.corpus_cases import load_cases
from tests.test_html_valid import vnu_errors

SVG = "{http://www.w3.org/2000/svg}"
INDEX = ROOT / "generator" / "data" / "signatures.jsonl"
OOM = (
    "[rank{r}]:[E1130 {t} train.py:88] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
    "GPU {r} has a total capacity of 79.15 GiB of which 1.20 GiB is free."
)
WATCHDOG = (
    "[rank{r}]:[E1130 {t} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for "
    "600047 milliseconds before timing out."
)
STEP = "[rank{r}]:[I1130 {t} train.py:40] step {i} | loss 2.31 | grad_norm 0.91"


def job(folder: Path, ranks: int = 64, first: int = 3, silent: tuple[int, ...] = (17, 40)) -> list[Path]:
    """One log per rank of a job where `first` runs out of memory, the others time out ten minutes later
    and the `silent` ranks print nothing but their steps. Generated, never committed.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(ranks):
        lines = [STEP.format(r=r, t=f"12:00:{s:02d}.000000", i=s) for s in range(0, 60, 20)]
        if r == first:
            lines.append(OOM.format(r=r, t="12:01:07.000000"))
        elif r not in silent:
            lines.append(WATCHDOG.format(r=r, t=f"12:11:07.{r:06d}"))
        path = folder / f"rank-{r}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def big_job(path: Path, megabytes: int) -> None:
    """A multi-rank log of about that size: rank 3 runs out of memory at 60 %, most others time out near the end,
    rank 5 prints only steps. Generated, never committed.
    """
    step = "[rank{r}]:[I1130 12:{m:02d}:{s:02d}.{u:06d} train.py:212] step {i} | tokens/s 41233 | mfu 0.41 | lr 3e-4\n"
    oom = (
        "[rank3]:[E1130 12:{m:02d}:{s:02d}.000000 train.py:88] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.20 GiB is free.\n"
    )
    watchdog = (
        "[rank{r}]:[E1130 12:{m:02d}:{s:02d}.{u:06d} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, "
        "Timeout(ms)=600000) ran for 600047 milliseconds before timing out.\n"
    )
    total = megabytes << 20
    lines = total // len(step.format(r=0, m=0, s=0, u=0, i=100000))
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            m, s = divmod(i * 3000 // lines, 60)
            out.write(step.format(r=i % 8, m=m, s=s, u=i % 1000000, i=i))
            if i == lines * 6 // 10:
                out.write(oom.format(m=m, s=s))
        for r in (0, 1, 2, 4, 6, 7):
            out.write(watchdog.format(r=r, m=59, s=r, u=0))


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


def _diagnose(engine: Engine, paths: list[Path]) -> Diagnosis:
    report, problems = engine.diagnose([str(p) for p in paths])
    assert problems == []
    return report


def _svg(report: Diagnosis) -> ET.Element:
    text = timeline_svg(report)
    assert text is not None
    return ET.fromstring(text)


def _rows(root: ET.Element) -> dict[str, ET.Element]:
    return {
        g.get("data-rank") or g.get("data-host") or "": g
        for g in root.iter(f"{SVG}g")
        if "tl-row" in g.get("class", "")
    }


# -- onsets ------------------------------------------------------------------------------------------


def test_onsets_hold_the_earliest_line_of_each_rank_then_each_host(engine: Engine, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "\n".join(
            [
                WATCHDOG.format(r=5, t="12:00:05.000000"),
                WATCHDOG.format(r=2, t="12:00:06.000000"),
                WATCHDOG.format(r=5, t="12:00:01.000000"),  # earlier by the clock, later in the file
                "node07: "
                + WATCHDOG.format(r=0, t="12:00:09.000000").removeprefix("[rank0]:").replace("[Rank 0] ", ""),
                "node03: "
                + WATCHDOG.format(r=0, t="12:00:09.000000").removeprefix("[rank0]:").replace("[Rank 0] ", ""),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    [finding] = _diagnose(engine, [log]).findings
    # One file is ordered by its lines: rank 5's onset is its first line, not its earliest time.
    assert [(e.rank, e.host, e.line) for e in finding.onsets] == [
        (2, None, 2),
        (5, None, 1),
        (None, "node03", 5),
        (None, "node07", 4),
    ]


def test_across_files_an_onset_is_the_earliest_by_the_clock(engine: Engine, tmp_path: Path) -> None:
    # The same rank in two files (a restart, say): the wall clock says which line came first.
    (tmp_path / "a.log").write_text(WATCHDOG.format(r=1, t="12:10:00.000000") + "\n", encoding="utf-8")
    (tmp_path / "b.log").write_text(
        STEP.format(r=1, t="12:00:00.000000", i=1) + "\n" + WATCHDOG.format(r=1, t="12:05:00.000000") + "\n",
        encoding="utf-8",
    )
    [finding] = _diagnose(engine, [tmp_path / "a.log", tmp_path / "b.log"]).findings
    assert [(Path(e.file).name, e.line, e.time) for e in finding.onsets] == [("b.log", 2, "1130 12:05:00.000000")]


def test_onsets_are_capped_at_the_lowest_ranks(engine: Engine, tmp_path: Path) -> None:
    log = tmp_path / "many.log"
    # Highest rank first, so the cap must drop ranks it has already kept.
    log.write_text(
        "\n".join(WATCHDOG.format(r=r, t="12:00:00.000000") for r in range(1499, -1, -1)) + "\n", encoding="utf-8"
    )
    [finding] = _diagnose(engine, [log]).findings
    assert len(finding.ranks) == 1500
    assert [e.rank for e in finding.onsets] == list(range(1024))
    assert finding.onsets[0].line == 1500


def test_folding_groups_keeps_the_earliest_onset_and_the_lowest_keys(engine: Engine, tmp_path: Path) -> None:
    # A large file is scanned in two byte ranges, and reports of several nodes are merged: both fold groups.
    early, late = tmp_path / "early.log", tmp_path / "late.log"
    early.write_text("\n".join(WATCHDOG.format(r=r, t="12:00:00.000000") for r in range(0, 1500, 2)) + "\n")
    late.write_text("\n".join(WATCHDOG.format(r=r, t="12:00:00.000000") for r in range(1499, -1, -1)) + "\n")
    groups: list[Group] = []
    for position, path in enumerate((early, late)):
        collector = Collector(engine.signatures)
        [source], _ = resolve([str(path)])
        _scan_source(source, position, engine.signatures, engine.matcher, collector)
        groups.append(next(iter(collector.groups.values())))
    first, second = groups
    first.absorb(second)
    onsets = sorted(first.onsets.items())[:1024]
    assert [key[1] for key, _ in onsets] == list(range(1024))
    # Even ranks are in the first file (position 0), odd ones only in the second.
    assert {o.seen.file for key, o in onsets if key[1] % 2 == 0} == {str(early)}
    assert {o.seen.file for key, o in onsets if key[1] % 2 == 1} == {str(late)}


def test_merged_reports_carry_every_nodes_onsets(engine: Engine, tmp_path: Path) -> None:
    paths = job(tmp_path / "logs", ranks=8, first=3, silent=(5,))
    reports = []
    for node, part in (("node01", paths[:4]), ("node02", paths[4:])):
        out = tmp_path / f"{node}.json"
        out.write_text(_diagnose(engine, part).model_dump_json(), encoding="utf-8")
        reports.append(out)
    merged = merge_reports(reports)
    watchdog = next(f for f in merged.findings if f.entry == "pg-nccl-watchdog-collective-timeout")
    assert [e.rank for e in watchdog.onsets] == [0, 1, 2, 4, 6, 7]
    assert {e.file.split("/")[0] for e in watchdog.onsets} == {"node01", "node02"}
    # A report written before onsets existed still merges: its first line stands for its onsets.
    old = json.loads(reports[1].read_text(encoding="utf-8"))
    for finding in old["findings"]:
        del finding["onsets"]
    reports[1].write_text(json.dumps(old), encoding="utf-8")
    merged = merge_reports(reports)
    watchdog = next(f for f in merged.findings if f.entry == "pg-nccl-watchdog-collective-timeout")
    assert [e.rank for e in watchdog.onsets] == [0, 1, 2, 4]


def test_a_file_scanned_in_two_processes_has_the_onsets_of_one_pass(
    engine: Engine, node_static: Path, tmp_path: Path
) -> None:
    # Past PARALLEL_MIN_BYTES the command line splits a file between two processes and folds their
    # groups; the browser reads it in one pass. Rank 1 is only in the first part, the others in the second.
    log = tmp_path / "huge.log"
    big_job(log, (PARALLEL_MIN_BYTES >> 20) + 2)
    body = log.read_text(encoding="utf-8")
    log.write_text(WATCHDOG.format(r=1, t="12:00:00.000000") + "\n" + body, encoding="utf-8")
    report = _diagnose(engine, [log])
    watchdog = next(f for f in report.findings if f.entry == "pg-nccl-watchdog-collective-timeout")
    assert [e.rank for e in watchdog.onsets] == [0, 1, 2, 4, 6, 7]
    assert watchdog.onsets[1].line == 1 and watchdog.onsets[0].line > 100_000
    result = subprocess.run(
        ["node", str(ROOT / "tools" / "diagnose-node.mjs"), str(INDEX), str(log)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRAINWRECK_STATIC": str(node_static)},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["report"] == json.loads(report.model_dump_json())


# -- the picture -------------------------------------------------------------------------------------


def test_a_64_rank_failure_shows_who_went_first_and_who_was_silent(engine: Engine, tmp_path: Path) -> None:
    report = _diagnose(engine, job(tmp_path, ranks=64, first=3, silent=(17, 40)))
    assert report.initiating_rank == 3 and report.suspects == [3, 17, 40]
    root = _svg(report)
    assert root.get("role") == "img" and root.get("width") == "100%"
    assert root.get("viewBox") == f"0 0 360 {40 + 64 * 16 + 20}"
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
    assert title is not None and desc is not None and title.text and desc.text
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    assert desc.text.startswith("Rank 3 first at 12:01:07: torch.OutOfMemoryError: CUDA out of memory")
    assert "61 ranks report downstream errors after it: NCCL watchdog timeout" in desc.text
    assert "Ranks 17, 40 printed none of these lines." in desc.text
    assert desc.text.endswith("Across: time, from the lines' timestamps (10 min 0 s in all).")
    rows = _rows(root)
    assert list(rows) == [str(r) for r in range(64)]
    # The initiating failure is a diamond on rank 3's row, ahead of every other mark.
    [diamond] = list(rows["3"].iter(f"{SVG}polygon"))
    assert "tl-initiating" in diamond.get("class", "")
    assert [p for r, g in rows.items() if r != "3" for p in g.iter(f"{SVG}polygon")] == []
    circles = [c for g in rows.values() for c in g.iter(f"{SVG}circle")]
    assert len(circles) == 61 and all("tl-collateral" in c.get("class", "") for c in circles)
    first_x = int(diamond.get("points", "").split(",")[0])
    assert first_x == 76 and all(int(c.get("cx", "0")) > first_x for c in circles)
    for silent in ("17", "40"):
        assert "tl-silent" in rows[silent].get("class", "")
        assert [t.text for t in rows[silent].iter(f"{SVG}text")] == [f"rank {silent}", "no line"]
        assert list(rows[silent].iter(f"{SVG}circle")) == []


def test_the_picture_is_self_contained_and_follows_the_page_colours(engine: Engine, tmp_path: Path) -> None:
    text = timeline_svg(_diagnose(engine, job(tmp_path, ranks=8)))
    assert text is not None
    root = ET.fromstring(text)
    assert list(root.iter(f"{SVG}script")) == [] and list(root.iter(f"{SVG}style")) == []
    attributes = [(k, v) for element in root.iter() for k, v in element.attrib.items()]
    assert not [k for k, _ in attributes if "href" in k or k.startswith("on")]
    assert not re.search(r"url\(|https?://(?!www\.w3\.org/2000/svg\")", text)
    # Colours come from the page (currentColor, set per class by the stylesheet), never fixed.
    colours = {v for k, v in attributes if k in ("fill", "stroke")}
    assert colours <= {"currentColor", "none"}, colours


def test_more_rows_than_fit_are_collapsed_keeping_the_first_and_the_silent(engine: Engine, tmp_path: Path) -> None:
    report = _diagnose(engine, job(tmp_path, ranks=200, first=150, silent=(7, 190)))
    root = _svg(report)
    rows = _rows(root)
    shown = [k for k in rows if k]
    assert len(shown) == 63 and {"150", "7", "190"} <= set(shown)
    assert [int(k) for k in shown] == sorted(int(k) for k in shown)
    more = [g for g in root.iter(f"{SVG}g") if "tl-more" in g.get("class", "")]
    assert [t.text for g in more for t in g.iter(f"{SVG}text")] == ["\u2026 137 more ranks"]
    desc = root.find(f"{SVG}desc")
    assert desc is not None and "Showing 63 of 200 rows." in (desc.text or "")


def test_silent_ranks_leave_room_for_the_ranks_that_printed(engine: Engine, tmp_path: Path) -> None:
    # Only the last of 200 ranks printed anything: 199 silent rows cannot crowd it out.
    log = tmp_path / "job.log"
    log.write_text(WATCHDOG.format(r=199, t="12:00:00.000000") + "\n" + WATCHDOG.format(r=198, t="12:00:01.000000"))
    rows = _rows(_svg(_diagnose(engine, [log])))
    assert {"198", "199"} <= set(rows) and len([k for k in rows if k]) == 63
    assert [k for k in rows if k and "tl-silent" in rows[k].get("class", "")] == [str(r) for r in range(61)]


def test_without_timestamps_the_picture_says_it_orders_by_line(engine: Engine, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        + "".join(
            f"[rank{r}]: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
            "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.\n"
            for r in (0, 2, 3)
        ),
        encoding="utf-8",
    )
    root = _svg(_diagnose(engine, [log]))
    caption = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tl-caption"]
    assert caption == ["No timestamps: across is line order within each file."]
    axis = [t.text for g in root.iter(f"{SVG}g") if g.get("class") == "tl-axis" for t in g.iter(f"{SVG}text")]
    assert axis == ["line 1", "line 4"]


def test_one_row_is_no_picture(engine: Engine, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    report = _diagnose(engine, [log])
    assert report.findings and timeline_svg(report) is None


def test_hosts_are_rows_when_the_lines_carry_no_rank(engine: Engine, tmp_path: Path) -> None:
    line = WATCHDOG.format(r=0, t="12:00:09.000000").removeprefix("[rank0]:").replace("[Rank 0] ", "")
    # The file's name is in every mark's tooltip: escaped, the picture still parses.
    log = tmp_path / 'pdsh "a&b" <c>.log'
    log.write_text(f"gpu-a17: {line}\nb&<x9: {line}\ngpu-node-long-name-05: {line}\n", encoding="utf-8")
    root = _svg(_diagnose(engine, [log]))
    rows = _rows(root)
    assert list(rows) == ["gpu-a17", "gpu-node-long-name-05"]
    labels = [next(g.iter(f"{SVG}text")).text for g in rows.values()]
    assert labels == ["gpu-a17", "gpu-node-l\u2026"]
    title = root.find(f"{SVG}title")
    assert title is not None and (title.text or "").startswith("Host timeline")


# -- the two renderers -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_timeline(node_static: Path) -> Path:
    """A Node script that prints the browser engine's timelineSvg of each report in a JSON list."""
    script = node_static / "timeline.mjs"
    script.write_text(
        'import { readFileSync } from "node:fs";\n'
        'import { timelineSvg } from "./diagnose-core.js";\n'
        'const reports = JSON.parse(readFileSync(process.argv[2], "utf8"));\n'
        "process.stdout.write(JSON.stringify(reports.map((r) => timelineSvg(r))));\n",
        encoding="utf-8",
    )
    return script


def _browser_svgs(script: Path, reports: list[Diagnosis], tmp_path: Path) -> list[str | None]:
    batch = tmp_path / "reports.json"
    batch.write_text(json.dumps([json.loads(r.model_dump_json()) for r in reports]), encoding="utf-8")
    result = subprocess.run(
        ["node", str(script), str(batch)], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout))


def test_both_engines_draw_the_same_timeline_on_every_corpus_case(
    engine: Engine, node_timeline: Path, tmp_path: Path
) -> None:
    cases = load_cases()
    reports = [_diagnose(engine, c.logs) for c in cases]
    ours = [timeline_svg(r) for r in reports]
    theirs = _browser_svgs(node_timeline, reports, tmp_path)
    differ = [c.name for c, a, b in zip(cases, ours, theirs, strict=True) if a != b]
    assert differ == []
    drawn = [c.name for c, a in zip(cases, ours, strict=True) if a is not None]
    with_ranks = [c.name for c, r in zip(cases, reports, strict=True) if any(f.ranks for f in r.findings)]
    assert len(drawn) >= 50 and set(drawn) <= set(with_ranks) | {
        c.name for c, r in zip(cases, reports, strict=True) if any(f.hosts for f in r.findings)
    }


def test_both_engines_draw_the_same_timeline_on_shaped_jobs(
    engine: Engine, node_timeline: Path, tmp_path: Path
) -> None:
    # What the corpus lacks: collapsed rows, hosts, a span of days, a rank named only by its launcher.
    reports = [
        _diagnose(engine, job(tmp_path / "a", ranks=64)),
        _diagnose(engine, job(tmp_path / "b", ranks=200, first=150, silent=(7, 190))),
        _diagnose(engine, job(tmp_path / "c", ranks=5, first=0, silent=())),
    ]
    days = tmp_path / "days.log"
    days.write_text(
        OOM.format(r=2, t="23:59:58.100000")
        + "\n"
        + WATCHDOG.format(r=0, t="00:10:00.000000").replace("E1130", "E1201"),
        encoding="utf-8",
    )
    reports.append(_diagnose(engine, [days]))
    line = WATCHDOG.format(r=0, t="12:00:09.000000").removeprefix("[rank0]:").replace("[Rank 0] ", "")
    hosts = tmp_path / "hosts.log"
    hosts.write_text(f"gpu-a17: {line}\ngpu-node-long-name-05: {line}\n", encoding="utf-8")
    reports.append(_diagnose(engine, [hosts]))
    crowded = tmp_path / "crowded.log"
    crowded.write_text(WATCHDOG.format(r=199, t="12:00:00.000000") + "\n")
    reports.append(_diagnose(engine, [crowded]))
    launcher = next(c for c in load_cases() if c.name.startswith("pytorch-distributed/ms-swift-6301"))
    named = _diagnose(engine, launcher.logs)
    # The same report with its initiating line stripped of its rank, as when only the launcher names it.
    assert named.initiating is not None
    bare = named.initiating.first.model_copy(update={"rank": None})
    init = named.initiating.model_copy(update={"first": bare, "onsets": [], "ranks": []})
    reports.append(named.model_copy(update={"initiating": init, "findings": [init, *named.findings[1:]]}))
    ours = [timeline_svg(r) for r in reports]
    assert all(ours)
    assert "12-01 00:10:00" in (ours[3] or "") and "\u2026 137 more ranks" in (ours[1] or "")
    # The launcher's rank gets the initiating mark although the line names none.
    assert list(_rows(ET.fromstring(ours[-1] or ""))["11"].iter(f"{SVG}polygon"))
    assert ours == _browser_svgs(node_timeline, reports, tmp_path)


# -- diagnose --html ---------------------------------------------------------------------------------


def _cli(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _html(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_html_report_holds_the_whole_report(tmp_path: Path) -> None:
    logs = job(tmp_path / "logs", ranks=16, first=3, silent=(9,))
    out = tmp_path / "report.html"
    plain = _cli([*map(str, logs)])
    written = _cli(["--html", str(out), *map(str, logs)])
    # The terminal report is the same with or without --html; the file is said on standard error.
    assert written.returncode == plain.returncode == 1
    assert written.stdout == plain.stdout
    assert written.stderr == f"Wrote the HTML report to {out}\n"
    report = Diagnosis.model_validate_json(_cli(["--json", *map(str, logs)]).stdout)
    doc = _html(out)
    assert doc.html is not None and doc.html.get("lang") == "en"
    assert doc.title is not None and doc.title.string == f"Trainwreck diagnosis: {headline(report)}"
    assert doc.select_one(".headline").get_text() == headline(report) == render_text(report).splitlines()[1]
    svg = doc.select_one("figure.timeline-figure > svg.timeline")
    assert svg is not None and svg.get("role") == "img"
    assert str(timeline_svg(report)) in out.read_text(encoding="utf-8")
    items = doc.select("ol.findings > li.finding")
    assert len(items) == len(report.findings)
    for item, finding in zip(items, report.findings, strict=True):
        link = item.select_one("h3 a")
        assert link is not None and link["href"] == finding.url and link.get_text() == finding.title
        evidence = item.select_one("pre.log code")
        assert evidence is not None
        assert evidence.get_text().splitlines()[0].endswith(finding.evidence[0].text)
        if finding.role in ("initiating", "independent"):
            fix, verify = item.select_one("p.fix"), item.select_one("p.verify")
            assert fix is not None and verify is not None
            assert fix.get_text() == f"Fix: {finding.fix.replace('`', '')}"
            assert verify.get_text() == f"Verify: {finding.verify.replace('`', '')}"
            assert len(fix.select("code")) == finding.fix.count("`") // 2
    assert doc.select_one("p.suspects").get_text() == "Suspect ranks: 3, 9"
    assert [li.get_text() for li in doc.select("ul.missing > li")] == report.missing
    assert [li.get_text() for li in doc.select("ul.inputs > li")] == report.inputs
    # Self-contained: no script, no stylesheet or image to fetch, the style inline.
    assert doc.find_all("script") == [] and doc.find_all("link") == [] and doc.find_all(src=True) == []
    assert [s for s in doc.find_all("style") if "url(" in (s.string or "")] == []
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]


def test_html_report_names_unknown_exceptions_and_what_is_missing(tmp_path: Path) -> None:
    unknown = tmp_path / "train.log"
    unknown.write_text(
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 12, in <module>\n'
        "    model = create_model(name)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/timm/models/_factory.py", line 126, in create_model\n'
        "    raise RuntimeError(f'Unknown model ({model_name})')\n"
        "RuntimeError: Unknown model (vit_hgue_patch14_224) <b>&\n",
        encoding="utf-8",
    )
    out = tmp_path / "unknown.html"
    assert _cli(["--html", str(out), str(unknown)]).returncode == 0
    doc = _html(out)
    [item] = doc.select("ul.unknowns > li")
    assert item.select_one("p").get_text() == f"RuntimeError raised in timm, at {unknown}:6"
    assert "RuntimeError: Unknown model (vit_hgue_patch14_224) <b>&" in item.select_one("pre").get_text()
    assert item.select_one("p:last-of-type code").get_text() == f"trainwreck new --from-log {unknown}:6"
    assert doc.select("ol.findings") == [] and doc.select("svg") == []


def test_html_reports_are_valid_html(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    # A report of each shape: a timeline, collateral only, an unknown exception, control characters.
    watchdog = tmp_path / "rank-0.log"
    watchdog.write_text(WATCHDOG.format(r=0, t="12:00:00.000000") + "\n", encoding="utf-8")
    odd = tmp_path / "odd.log"
    odd.write_bytes(b"[rank1]: RuntimeError: boom \x1b[31m \x07 \xef\xbf\xbe <script>alert(1)</script>\n")
    runs = [job(tmp_path / "job", ranks=12), [watchdog], [odd]]
    for i, logs in enumerate(runs):
        assert _cli(["--html", str(folder / f"r{i}.html"), *map(str, logs)]).returncode in (0, 1)
    assert "<script>" not in (folder / "r2.html").read_text(encoding="utf-8")
    assert vnu_errors(folder) == ""


def test_html_report_is_written_by_rename(tmp_path: Path) -> None:
    logs = job(tmp_path / "logs", ranks=4)
    out = tmp_path / "report.html"
    out.write_text("an older report\n", encoding="utf-8")
    before = out.stat().st_ino
    assert _cli(["--html", str(out), *map(str, logs)]).returncode == 1
    # A new file took the old one's name: a reader of the old one never saw it half written.
    assert out.stat().st_ino != before and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "report.html"]


@pytest.mark.parametrize("where", ["no/such/folder/report.html", "a-folder"])
def test_html_report_that_cannot_be_written_is_a_message_and_exit_2(tmp_path: Path, where: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (tmp_path / "a-folder").mkdir()
    out = tmp_path / where
    result = _cli(["--html", str(out), str(log)])
    reason = "No such file or directory" if "/" in where else "Is a directory"
    assert result.returncode == 2
    assert result.stderr.endswith(f"error: cannot write the report to {out}: {reason}\n")
    assert "Traceback" not in result.stderr
    assert not [p for p in tmp_path.rglob("*.tmp")]
