"""The /diagnose/ page's report in Chromium: the timeline, accessibility, no layout shift, and progress."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from generator.contract import Diagnosis
from generator.diagnose.timeline import timeline_svg
from tests.conftest import ROOT
from tests.test_browser import _axe, _page
from tests.test_timeline import big_job

pytestmark = pytest.mark.browser
REAL = ROOT / "tests" / "corpus" / "real"
# Real multi-rank cases whose thread settles which rank failed first, with ranks that printed nothing.
CASES = [
    "pytorch-distributed/ms-swift-6301-rank11-oom-then-watchdog",
    "pytorch-distributed/funasr-2006-rank2-oom-then-watchdog",
    "nccl/nccl-230-ib-local-catastrophic-error-mpirun-prefix",
]
PROGRESS = re.compile(r"(\d{1,3}) % · [\d.]+ MB/s · (about \d+ (s|min) left|under a second left|finishing)")
# Layout shifts and the progress line's texts, recorded from the first byte of the page on.
RECORDER = """
window.__shifts = [];
window.__progress = [];
window.__shown = null;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const moved = e.sources.map((s) => (s.node && s.node.nodeType !== 1 ? s.node.parentElement : s.node));
    const names = moved.map((n) => n && (n.id || n.className || n.nodeName));
    window.__shifts.push({ value: e.value, input: e.hadRecentInput, at: e.startTime, moved: names });
  }
}).observe({ type: "layout-shift", buffered: true });
document.addEventListener("DOMContentLoaded", () => {
  const text = document.getElementById("diagnose-progress-text");
  new MutationObserver(() => window.__progress.push([performance.now(), text.textContent]))
    .observe(text, { childList: true, characterData: true, subtree: true });
  const result = document.getElementById("diagnosis-result");
  new MutationObserver(() => { if (!result.hidden && window.__shown === null) window.__shown = performance.now(); })
    .observe(result, { attributes: true });
});
"""


def _logs(case: str) -> list[Path]:
    return sorted(p for p in (REAL / case).iterdir() if p.name != "case.yaml")


def _diagnose_on_page(page: Any, url: str, logs: list[Path], timeout: int = 20000) -> dict[str, Any]:
    page.goto(url + "diagnose/")
    page.set_input_files("#log-files", [str(p) for p in logs])
    expect(page.locator("#diagnose-status")).to_have_text(re.compile("^Done: "), timeout=timeout)
    return dict(json.loads(page.locator("#diagnosis-json").text_content() or "{}"))


def _silent(report: dict[str, Any]) -> list[int]:
    """Ranks from 0 to the highest seen (or suspected) that printed none of the findings' lines."""
    seen = {r for f in report["findings"] if f["role"] != "note" for r in f["ranks"]}
    top = max(seen | set(report["suspects"]), default=-1)
    return [r for r in range(top + 1) if r not in seen]


@pytest.mark.parametrize("case", CASES)
def test_the_timeline_shows_the_first_rank_and_the_silent_ones(browser, real_url: str, case: str) -> None:
    ctx, page, errors = _page(browser)
    data = _diagnose_on_page(page, real_url, _logs(case))
    report = data["report"]
    assert report["initiating_rank"] is not None
    svg = page.locator("#diagnosis-result figure.timeline-figure > svg.timeline")
    expect(svg).to_be_visible()
    # Above the findings.
    assert page.evaluate(
        "() => Boolean(document.querySelector('#diagnosis-result svg.timeline')"
        ".compareDocumentPosition(document.querySelector('#diagnosis-result ol.findings')) & 4)"
    )
    assert svg.get_attribute("role") == "img"
    # Named and described for a screen reader by its own title and desc.
    title = svg.locator(":scope > title").text_content() or ""
    expect(page.get_by_role("img", name=title)).to_have_count(1)
    assert title.startswith("Rank timeline") and "printed none of these lines" in (
        svg.locator(":scope > desc").text_content() or ""
    )
    # The initiating mark is on the row of the rank the report says failed first, whose label is bold.
    rows = svg.locator(".tl-row")
    first = rows.filter(has=page.locator("polygon.tl-initiating"))
    ranks = [first.nth(i).get_attribute("data-rank") for i in range(first.count())]
    assert str(report["initiating_rank"]) in ranks
    lead = svg.locator(f'.tl-row[data-rank="{report["initiating_rank"]}"] text[font-weight="bold"]')
    assert lead.text_content() == f"rank {report['initiating_rank']}"
    # Every rank that printed nothing is a labelled empty row.
    silent = svg.locator(".tl-row.tl-silent")
    assert [int(silent.nth(i).get_attribute("data-rank") or -1) for i in range(silent.count())] == _silent(report)
    assert _silent(report), "the case has silent ranks"
    for i in range(silent.count()):
        assert silent.nth(i).locator("text").all_text_contents()[1] == "no line"
        assert silent.nth(i).locator("circle, polygon").count() == 0
    # Chromium's engine draws the very SVG text the command line's does, from the same report.
    drawn = page.evaluate(
        "async ([url, report]) => (await import(url)).timelineSvg(report)",
        [real_url + "static/diagnose-core.js", report],
    )
    assert drawn == timeline_svg(Diagnosis.model_validate(report))
    assert rows.count() == drawn.count('class="tl-row')
    cli = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--json", *map(str, _logs(case))], capture_output=True
    )
    assert json.loads(cli.stdout)["initiating_rank"] == report["initiating_rank"]
    assert errors == []
    ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_on_the_rendered_report(browser, real_url: str, scheme: str) -> None:
    phone = {"viewport": {"width": 360, "height": 800}, "is_mobile": True, "has_touch": True}
    ctx, page, errors = _page(browser, bypass_csp=True, color_scheme=scheme, **(phone if scheme == "dark" else {}))
    _diagnose_on_page(page, real_url, _logs(CASES[0]))
    expect(page.locator("svg.timeline")).to_be_visible()
    assert _axe(page) == []
    # The picture takes its colours from the page: its text is the page's text colour in either scheme.
    colours = page.evaluate(
        "() => [getComputedStyle(document.body).color, getComputedStyle(document.querySelector('svg.timeline')).color,"
        " getComputedStyle(document.querySelector('svg.timeline text')).fill]"
    )
    assert colours[0] == colours[1] == colours[2]
    assert colours[0] == ("rgb(230, 230, 234)" if scheme == "dark" else "rgb(27, 27, 31)")
    if scheme == "dark":
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        box = page.locator("svg.timeline").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
    assert errors == []
    ctx.close()


def test_the_page_does_not_shift_on_load_or_while_it_scans(browser, real_url: str) -> None:
    ctx, page, errors = _page(browser, viewport={"width": 1000, "height": 1600})
    page.add_init_script(RECORDER)
    page.goto(real_url + "diagnose/")
    page.wait_for_timeout(1000)
    assert page.evaluate("window.__shifts") == []
    # Status and progress lines have their room from the start: only the report itself adds to the page.
    page.set_input_files("#log-files", [str(p) for p in _logs(CASES[1])])
    expect(page.locator("#diagnose-status")).to_have_text(re.compile("^Done: "), timeout=20000)
    shown = page.evaluate("window.__shown")
    assert shown is not None
    shifts = page.evaluate("window.__shifts")
    assert [s for s in shifts if s["at"] < shown] == []
    assert errors == []
    ctx.close()


def test_a_large_file_shows_percent_speed_and_time_left_and_ends_as_the_cli(browser, real_url: str, tmp_path: Path):
    log = tmp_path / "big-job.log"
    big_job(log, 32)
    cli = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--json", log.name], capture_output=True, cwd=tmp_path
    )
    assert cli.returncode == 1
    ctx, page, errors = _page(browser)
    page.add_init_script(RECORDER)
    data = _diagnose_on_page(page, real_url, [log], timeout=120000)
    texts: list[tuple[float, str]] = [(t, s) for t, s in page.evaluate("window.__progress") if s]
    scanning = [s for _, s in texts if PROGRESS.fullmatch(s)]
    assert scanning, texts
    percents = [int(PROGRESS.fullmatch(s).group(1)) for s in scanning]  # type: ignore[union-attr]
    assert percents == sorted(percents) and 0 < percents[0] < 100 and percents[-1] <= 100
    assert re.fullmatch(r"100 % · [\d.]+ MB/s · done in [\d.]+ s", texts[-1][1]), texts[-1]
    # Not chatty: while scanning, the live region changes at most about four times a second.
    times = [t for t, s in texts if PROGRESS.fullmatch(s)]
    assert all(b - a >= 240 for a, b in zip(times, times[1:], strict=False)), times
    live = page.locator("#diagnose-progress-text")
    assert live.get_attribute("aria-live") == "polite"
    # The report is the command line's, to the byte of every field.
    assert data["problems"] == []
    assert data["report"] == json.loads(cli.stdout)
    assert data["report"]["initiating"]["entry"] == "cuda-oom" and data["report"]["initiating_rank"] == 3
    assert page.locator('svg.timeline .tl-row.tl-silent[data-rank="5"]').count() == 1
    assert errors == []
    ctx.close()


def test_fix_and_check_lines_wrap_only_between_words_on_a_phone(browser, real_url: str) -> None:
    from tests.test_browser_layout import MID_TOKEN_BREAKS, PHONE

    ctx, page, errors = _page(browser, **PHONE)
    _diagnose_on_page(page, real_url, _logs("pytorch-distributed/ms-swift-6301-rank11-oom-then-watchdog"))
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is wider than a phone; it wraps at its joints.
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in page.locator(".finding .fix").first.inner_text()
    assert page.evaluate(MID_TOKEN_BREAKS, ".finding .fix, .finding .verify") == []
    assert errors == []
    ctx.close()
