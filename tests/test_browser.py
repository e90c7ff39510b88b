"""What a browser does with the built site: search, accessibility, no third-party requests, no-JS reading."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import ROOT
from tests.vectors import CASES as VECTOR_CASES
from tests.vectors import expected as vector_expected
from tests.vectors import logs as vector_logs
from tests.vectors import project

pytestmark = pytest.mark.browser
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
ONE_PAGE_OF_EACH_KIND = [
    "",
    "failures/",
    "failures/demo-hang/",
    "failures/demo-nan/",
    "hubs/",
    "hubs/demo/",
    "tags/",
    "tags/hang/",
    "categories/",
    "categories/communication/",
    "systems/",
    "systems/nccl/",
    "search/?q=watchdog",
    "diagnose/",
    "404.html",
]


def _page(browser, **context):
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return ctx, page, errors


def _axe(page) -> list[dict]:
    # axe is injected as an inline script, so these pages are opened with bypass_csp.
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", AXE_TAGS)
    return [{"id": v["id"], "nodes": [n["target"] for n in v["nodes"]]} for v in result["violations"]]


def test_search_for_a_signature_lands_on_the_entry(browser, corpus_url: str) -> None:
    ctx, page, errors = _page(browser)
    page.goto(corpus_url)
    page.fill("#home-q", "Watchdog caught collective")
    page.click(".big-search button")
    page.wait_for_selector("#search-results li a", timeout=15000)
    assert page.locator("#search-status").inner_text().endswith("for “Watchdog caught collective”")
    first = page.locator("#search-results li a").first
    assert first.inner_text() == "Demo collective hangs after a rank exits"
    first.click()
    page.wait_for_load_state()
    assert urlsplit(page.url).path == "/docs/failures/demo-hang/"
    assert page.locator("h1").inner_text() == "Demo collective hangs after a rank exits"
    assert errors == []
    ctx.close()


def test_search_finds_a_page_of_a_merged_shard(browser, corpus_url: str) -> None:
    # The corpus site's hub is in a shard of its own, which the search page merges into the first.
    ctx, page, errors = _page(browser)
    page.goto(corpus_url + "search/?q=demo%20hub")
    page.wait_for_selector("#search-results li a", timeout=15000)
    assert "The demo hub" in page.locator("#search-results li a").all_inner_texts()
    assert errors == []
    ctx.close()


def test_search_filters_narrow_results(browser, corpus_url: str) -> None:
    ctx, page, errors = _page(browser)
    page.goto(corpus_url + "search/")
    page.wait_for_selector("#search-filters fieldset", timeout=15000)
    legends = page.locator("#search-filters legend").all_inner_texts()
    assert legends == ["Category", "System", "Severity", "Tag"]
    page.check("#f-category-Numerics")
    expect(page.locator("#search-results li")).to_have_count(1)
    assert page.locator("#search-results li a").inner_text() == "Demo loss turns NaN"
    assert errors == []
    ctx.close()


def test_search_shows_results_before_its_filters_have_loaded(browser, corpus_url: str) -> None:
    # The filters are four files a shard; held back here, they must not hold back the first results.
    ctx, page, errors = _page(browser)
    held: list = []
    released = False
    page.route("**/*.pf_filter", lambda route: route.continue_() if released else held.append(route))
    page.goto(corpus_url + "search/?q=watchdog")
    page.wait_for_selector("#search-results li a", timeout=15000)
    assert page.locator("#search-filters fieldset").count() == 0
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the filters were never asked for"
    released = True
    for route in held:
        route.continue_()
    page.wait_for_selector("#search-filters fieldset", timeout=15000)
    assert page.locator("#search-filters legend").all_inner_texts() == ["Category", "System", "Severity", "Tag"]
    assert errors == []
    ctx.close()


@pytest.mark.parametrize("path", ONE_PAGE_OF_EACH_KIND)
def test_axe_finds_no_violations(browser, corpus_url: str, path: str) -> None:
    ctx, page, errors = _page(browser, bypass_csp=True)
    page.goto(corpus_url + path)
    if path.startswith("search/"):
        page.wait_for_selector("#search-results li", timeout=15000)
    assert _axe(page) == []
    assert errors == []
    ctx.close()


def test_axe_in_dark_mode_on_a_phone(browser, corpus_url: str) -> None:
    ctx, page, _ = _page(
        browser,
        bypass_csp=True,
        color_scheme="dark",
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
    )
    page.goto(corpus_url + "failures/demo-hang/")
    assert _axe(page) == []
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "the page scrolls sideways on a phone"
    ctx.close()


def test_theme_toggle_persists(browser, corpus_url: str) -> None:
    ctx, page, _ = _page(browser, color_scheme="light")
    page.goto(corpus_url)
    toggle = page.locator(".theme-toggle")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.goto(corpus_url + "failures/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.locator(".theme-toggle").get_attribute("aria-pressed") == "true"
    ctx.close()


def test_no_request_leaves_the_site(browser, corpus_url: str) -> None:
    ctx, page, errors = _page(browser)
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    for path in ("", "failures/demo-hang/", "search/?q=nan"):
        page.goto(corpus_url + path)
        page.wait_for_load_state("networkidle")
    origin = urlsplit(corpus_url).netloc
    assert seen and all(urlsplit(url).netloc == origin for url in seen), seen
    assert errors == []
    ctx.close()


def test_entry_pages_read_without_javascript(browser, corpus_url: str) -> None:
    ctx, page, _ = _page(browser, java_script_enabled=False)
    page.goto(corpus_url + "failures/demo-hang/")
    assert page.locator("#fix").is_visible()
    assert page.locator("pre.sig").first.inner_text() == "Watchdog caught collective operation timeout: "
    assert page.locator(".theme-toggle").is_hidden()
    ctx.close()


def test_print_hides_the_chrome(browser, corpus_url: str) -> None:
    ctx, page, _ = _page(browser)
    page.goto(corpus_url + "failures/demo-hang/")
    page.emulate_media(media="print")
    assert page.locator("header.top").evaluate("e => getComputedStyle(e).display") == "none"
    ctx.close()


@pytest.mark.parametrize(
    "path",
    [
        "",
        "failures/",
        "failures/xid-13-graphics-engine-exception/",
        "failures/precision-adam-epsilon-underflow-fp16/",
        "hubs/nccl/",
        "hubs/deepspeed/",
        "tags/hang/",
        "systems/deepspeed/",
    ],
)
def test_axe_on_the_real_site(browser, real_url: str, path: str) -> None:
    ctx, page, errors = _page(browser, bypass_csp=True)
    page.goto(real_url + path)
    assert _axe(page) == []
    assert errors == []
    ctx.close()


def test_search_the_real_site_for_an_xid_line(browser, real_url: str) -> None:
    ctx, page, errors = _page(browser)
    page.goto(real_url + "search/?q=" + "NVRM Xid 13")
    page.wait_for_selector("#search-results li a", timeout=15000)
    # The Xid's own page is among the first results (entries that tell readers to look for Xid 13 rank too).
    top = page.locator("#search-results li a")
    paths = [urlsplit(top.nth(i).get_attribute("href") or "").path for i in range(min(3, top.count()))]
    assert "/failures/xid-13-graphics-engine-exception/" in paths, paths
    top.nth(paths.index("/failures/xid-13-graphics-engine-exception/")).click()
    page.wait_for_load_state()
    assert urlsplit(page.url).path == "/failures/xid-13-graphics-engine-exception/"
    assert errors == []
    ctx.close()


def test_the_page_diagnoses_several_files_with_get_requests_only(browser, real_url: str) -> None:
    # The engine's logic is checked on every case under Node (tests/test_corpus.py); this is the page.
    case = next(c for c in VECTOR_CASES if c.name == "xid-initiates-watchdog")
    ctx, page, errors = _page(browser)
    seen: list[tuple[str, str]] = []
    page.on("request", lambda request: seen.append((request.url, request.method)))
    page.on("worker", lambda worker: seen.append((worker.url, "GET")))
    page.goto(real_url + "diagnose/")
    page.set_input_files("#log-files", [str(p) for p in vector_logs(case)])
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=20000)
    data = json.loads(page.locator("#diagnosis-json").text_content())
    assert project(data["report"], data["problems"]) == vector_expected(case)
    origin = urlsplit(real_url).netloc
    assert all(urlsplit(url).netloc == origin and method == "GET" for url, method in seen), seen
    assert errors == []
    ctx.close()


def test_pasted_log_is_rendered_as_text(browser, real_url: str) -> None:
    ctx, page, errors = _page(browser)
    page.goto(real_url + "diagnose/")
    hostile = (
        '<img src=x onerror="document.title=1"> [rank4]: Exception: cuda rng state '
        "model-parallel-rng is not added <script>alert(1)</script>"
    )
    page.fill("#log-text", hostile)
    page.click("#paste-form button")
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=20000)
    assert page.locator("#diagnosis-result img").count() == 0
    assert page.locator("#diagnosis-result script").count() == 0
    assert "<img src=x" in page.locator(".finding pre.log").inner_text()
    assert page.locator(".finding").first.get_attribute("data-entry") == "megatron-tp-rng-divergence-deadlock"
    assert errors == []
    ctx.close()


def test_large_file_is_scanned_in_chunks_like_the_cli(browser, real_url: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    line = "[rank{r}]:[I1130 01:02:03.000000 train.py:10] step {i} | loss 2.0 | grad_norm 0.9 | tokens/s 41000\n"
    planted = "[rank{r}]: Exception: cuda rng state model-parallel-rng is not added\n"
    log = tmp_path / "big-rank.log"
    with log.open("w") as out:
        for i in range(160_000):  # about 13 MB: several 4 MiB slices in the worker
            out.write(planted.format(r=i % 8) if i % 40_000 == 39_999 else line.format(r=i % 8, i=i))
    cli = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--json", str(log)], capture_output=True, timeout=120
    )
    ctx, page, errors = _page(browser)
    page.goto(real_url + "diagnose/")
    page.set_input_files("#log-files", str(log))
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=60000)
    assert page.locator("#diagnose-progress").get_attribute("value") == "100"
    data = json.loads(page.locator("#diagnosis-json").text_content())
    assert project(data["report"], data["problems"]) == project(json.loads(cli.stdout), [])
    assert [e["line"] for e in data["report"]["findings"][0]["evidence"]] == [40_000, 80_000, 120_000, 160_000]
    assert errors == []
    ctx.close()


def test_axe_on_a_rendered_diagnosis(browser, real_url: str) -> None:
    ctx, page, errors = _page(browser, bypass_csp=True)
    page.goto(real_url + "diagnose/")
    case = next(c for c in VECTOR_CASES if c.name == "xid-initiates-watchdog")
    page.set_input_files("#log-files", [str(p) for p in vector_logs(case)])
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=20000)
    assert page.locator(".finding").first.get_attribute("data-role") == "initiating"
    assert page.locator(".finding .fix code").count() >= 1
    assert _axe(page) == []
    assert errors == []
    ctx.close()


def test_copy_as_markdown_puts_the_cli_markdown_on_the_clipboard(browser, real_url: str) -> None:
    import subprocess
    import sys

    case = next(c for c in VECTOR_CASES if c.name == "xid-initiates-watchdog")
    logs = [str(p) for p in vector_logs(case)]
    cli = subprocess.run(
        [sys.executable, "-m", "generator", "diagnose", "--markdown", *logs],
        capture_output=True,
        timeout=120,
        text=True,
    )
    ctx, page, errors = _page(browser)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=real_url.rstrip("/"))
    page.goto(real_url + "diagnose/")
    page.set_input_files("#log-files", logs)
    expect(page.locator("#diagnosis-result")).to_be_visible(timeout=20000)
    page.get_by_role("button", name="Copy as Markdown").click()
    expect(page.locator(".copy-note")).to_have_text("Copied: paste it into the issue.")
    copied = page.evaluate("navigator.clipboard.readText()")
    # The page knows files by name, the CLI by the path it was given.
    cli_text = cli.stdout
    for path in logs:
        cli_text = cli_text.replace(path, Path(path).name)
    assert copied == cli_text
    assert copied.startswith(f"**Trainwreck diagnosis** of {len(logs)} log(s)")
    assert errors == []
    ctx.close()


def test_try_a_real_log_loads_a_corpus_excerpt_and_diagnoses_it_like_the_cli(browser, real_url: str) -> None:
    import subprocess
    import sys

    import yaml

    site = yaml.safe_load((ROOT / "site.yaml").read_text(encoding="utf-8"))
    assert len(site["examples"]) >= 3
    ctx, page, errors = _page(browser)
    page.goto(real_url + "diagnose/")
    buttons = page.locator("button.try")
    assert buttons.count() == len(site["examples"])
    for i, example in enumerate(site["examples"]):
        case = ROOT / example["case"]
        logs = sorted(p for p in case.iterdir() if p.name != "case.yaml")
        cli = subprocess.run(
            [sys.executable, "-m", "generator", "diagnose", "--json", *map(str, logs)], capture_output=True, timeout=120
        )
        buttons.nth(i).click()
        expect(page.locator("#diagnose-status")).to_have_text(re.compile("^Done: "), timeout=20000)
        data = json.loads(page.locator("#diagnosis-json").text_content())
        assert project(data["report"], data["problems"]) == project(json.loads(cli.stdout), []), example["case"]
        # The case's settled answer is what the page reports first.
        expected = yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8"))["expected"]
        assert data["report"]["findings"][0]["entry"] in expected
    assert errors == []
    ctx.close()
