"""`trainwreck serve` serves the site on 127.0.0.1 and rebuilds it when an entry changes."""

from __future__ import annotations

import gc
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode("utf-8")


def _wait_for(predicate, seconds: float = 120.0) -> bool:
    # Generous: a loaded two-core runner can take a while to build the site and rebuild it.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def test_serve_rebuilds_on_change_and_survives_a_broken_edit(corpus: Path, tmp_path: Path) -> None:
    port = _free_port()
    out = tmp_path / "served"
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator", "--root", str(corpus), "serve", "--port", str(port), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/docs/failures/demo-nan/"
    try:
        assert _wait_for(lambda: "Demo loss turns NaN" in _get(url)), "the site was never served"
        assert 'href="/docs/static/style.css"' in _get(url)
        assert "prefers-color-scheme" in _get(f"http://127.0.0.1:{port}/docs/static/style.css")
        entry = corpus / "entries/demo/demo-nan.yaml"
        original = entry.read_text(encoding="utf-8")
        entry.write_text(original.replace("title: Demo loss turns NaN", "title: Demo loss turns Inf"), encoding="utf-8")
        assert _wait_for(lambda: "Demo loss turns Inf" in _get(url)), "the saved page was not rebuilt"
        # The list of every failure shows the new title once the rest of the site is rebuilt.
        listing = f"http://127.0.0.1:{port}/docs/failures/"
        assert _wait_for(lambda: "Demo loss turns Inf" in _get(listing)), "the change was not rebuilt"
        entry.write_text(original.replace("severity: medium", "severity: severe"), encoding="utf-8")
        time.sleep(3)
        assert "Demo loss turns Inf" in _get(url), "a broken edit must leave the last good site served"
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0]
    assert "severity: expected one of: low, medium, high, critical; got 'severe'" in output
    assert "The previous site is still being served." in output
    # The saved entry's own page is written first, from its file and the last build; the rest follows.
    lines = output.splitlines()
    alone = [i for i, line in enumerate(lines) if line.startswith("Rebuilt failures/demo-nan/index.html in ")]
    whole = [i for i, line in enumerate(lines) if re.match(r"Rebuilt \d+ of \d+ pages in ", line)]
    assert len(alone) == 1 and whole and alone[0] < whole[0], output


def test_an_open_page_shows_a_saved_edit_in_place_without_reloading(corpus: Path, tmp_path: Path, browser) -> None:
    port, site = _free_port(), tmp_path / "s"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "generator",
            "--root",
            str(corpus),
            "serve",
            "--port",
            str(port),
            "--out",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/docs/failures/demo-nan/"
    other = corpus / "entries/demo/demo-hang.yaml"
    try:
        assert _wait_for(lambda: "Demo loss turns NaN" in _get(url)), "the site was never served"
        page = browser.new_page()
        page.goto(url)
        # Selectors, not predicates: the pages' content security policy forbids the eval a predicate needs.
        page.wait_for_selector("html[data-live=open]", state="attached")
        # A mark on the window survives an in-place update and is lost by a reload.
        page.evaluate("window.__kept = true; window.scrollTo(0, 200)")
        page.evaluate("window.__updates = 0; window.addEventListener('trainwreck:reloaded', () => window.__updates++)")
        # An edit to a part of another entry this page does not show leaves it alone.
        text = other.read_text(encoding="utf-8")
        other.write_text(text.replace("mechanism: |\n", "mechanism: |\n  Edited.\n", 1), encoding="utf-8")
        entry = corpus / "entries/demo/demo-nan.yaml"
        entry.write_text(
            entry.read_text(encoding="utf-8").replace("title: Demo loss turns NaN", "title: Demo loss turns Inf"),
            encoding="utf-8",
        )
        page.wait_for_selector("h1:has-text('Demo loss turns Inf')", timeout=60000)
        assert page.evaluate("() => window.__kept") is True, "the page was reloaded instead of updated in place"
        assert page.evaluate("() => window.__updates") == 1, "only the edit to this page updates it"
        assert page.title().startswith("Demo loss turns Inf")
        # The served page carries the live script; the written one does not.
        assert "__trainwreck/live.js" in _get(url)
        assert "__trainwreck/live.js" not in (site / "failures/demo-nan/index.html").read_text(encoding="utf-8")
        page.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_the_page_written_first_is_the_page_a_clean_build_writes(corpus: Path, tmp_path: Path) -> None:
    from generator.build import build
    from generator.serve import Changes, _Rebuilder

    rebuilder = _Rebuilder(corpus, tmp_path / "served", Changes())
    gc.unfreeze()
    rebuilder.first()
    # What the first build left is kept out of the collector's walks, which would stall a saved page.
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
    entry = corpus / "entries/demo/demo-nan.yaml"
    entry.write_text(entry.read_text(encoding="utf-8").replace("summary: ", "summary: Firstword ", 1), encoding="utf-8")
    assert rebuilder._edited_page({str(entry)}) == "failures/demo-nan/index.html"
    build(corpus, tmp_path / "clean", cache=False, search=False)
    page = "failures/demo-nan/index.html"
    assert b"Firstword" in (tmp_path / "served" / page).read_bytes()
    assert (tmp_path / "served" / page).read_bytes() == (tmp_path / "clean" / page).read_bytes()
    # A file that does not check out is left to the full rebuild, which reports it.
    entry.write_text(
        entry.read_text(encoding="utf-8").replace("severity: medium", "severity: severe"), encoding="utf-8"
    )
    assert rebuilder._edited_page({str(entry)}) is None
    assert rebuilder._edited_page({str(corpus / "tags.yaml")}) is None


def test_a_rebuild_rewrites_a_previewed_page_even_when_its_key_is_unchanged(corpus: Path, tmp_path: Path) -> None:
    from generator.build import build
    from generator.serve import Changes, _Rebuilder
    from generator.write import write_files

    changes = Changes()
    rebuilder = _Rebuilder(corpus, tmp_path / "served", changes)
    rebuilder.first()
    gc.unfreeze()
    page = tmp_path / "served" / "failures/demo-nan/index.html"
    # A preview is rendered from the first build's catalog, which later saves leave behind; the rebuild
    # that follows must not trust the record of the page it replaced.
    write_files(
        tmp_path / "served",
        {"failures/demo-nan/index.html": "<html>a preview from an older catalog</html>\n"},
        atomic=True,
    )
    rebuilder.rebuild(set(), previewed={"failures/demo-nan/index.html"})
    build(corpus, tmp_path / "clean", cache=False, search=False)
    assert page.read_bytes() == (tmp_path / "clean" / "failures/demo-nan/index.html").read_bytes()
    assert changes.news["changed"] == ["failures/demo-nan/index.html"]
    # Without the preview named, an unchanged page is left as the folder holds it.
    write_files(
        tmp_path / "served", {"failures/demo-nan/index.html": "<html>written by someone else</html>\n"}, atomic=True
    )
    rebuilder.rebuild(set())
    assert "someone else" in page.read_text(encoding="utf-8")
