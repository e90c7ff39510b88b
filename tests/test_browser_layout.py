"""The site's layout in a real browser: the phone header, the wide layout, tables and layout shift."""

from __future__ import annotations

import functools
import http.server
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}
HUBS = [
    "checkpoints",
    "cuda",
    "data-and-host-memory",
    "deepspeed",
    "gpu-health",
    "huggingface",
    "megatron",
    "nccl",
    "numerics",
    "pytorch-distributed",
    "torch-compile",
    "vllm",
    "xid",
]
EVERY_KIND = [
    "",
    "failures/",
    "failures/pg-nccl-watchdog-collective-timeout/",
    "hubs/nccl/",
    "tags/hang/",
    "categories/communication/",
    "systems/nccl/",
    "search/",
    "search/?q=nccl",
    "diagnose/",
]

# Sums every layout shift not caused by input, from the first paint on (buffered), as Lighthouse does.
CLS_OBSERVER = """
window.__cls = 0; window.__shifts = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.hadRecentInput) continue;
    window.__cls += e.value;
    // What moved, from where to where, so that a failure says what to fix.
    window.__shifts.push(e.sources.map((s) => [s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?",
      [s.previousRect.x, s.previousRect.y, s.previousRect.width, s.previousRect.height],
      [s.currentRect.x, s.currentRect.y, s.currentRect.width, s.currentRect.height]]));
  }
}).observe({ type: "layout-shift", buffered: true });
"""

# Finds every place a code element's text wraps to a new line, and keeps those that are not at a
# space, after a hyphen, or at a <wbr> the renderer placed: those split a token mid-word.
MID_TOKEN_BREAKS = """
(selector) => {
  const bad = [];
  for (const code of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let prevTop = null, prevChar = " ";
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      // The <wbr> is the text node's previous sibling, or its piece's when pieces are held together.
      const before = node.previousSibling || (node.parentNode !== code ? node.parentNode.previousSibling : null);
      const afterWbr = before !== null && before.nodeName === "WBR";
      for (let i = 0; i < node.data.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        // A space where a line wraps has no box; it still counts as the character before the break.
        if (rects.length === 0) { prevChar = node.data[i]; continue; }
        const top = rects[0].top;
        if (prevTop !== null && top > prevTop + 2) {
          const ok = /[\\s-]/.test(prevChar) || /\\s/.test(node.data[i]) || (i === 0 && afterWbr);
          if (!ok) bad.push(`${code.textContent.slice(0, 70)} … at ${prevChar}|${node.data[i]}`);
        }
        prevTop = top;
        prevChar = node.data[i];
      }
    }
  }
  return bad;
}
"""


def _open(browser, url: str, **context):
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.goto(url)
    return ctx, page


@pytest.mark.parametrize("path", ["", "failures/pg-nccl-watchdog-collective-timeout/", "hubs/nccl/", "diagnose/"])
def test_the_phone_header_is_one_row_of_named_icons(browser, real_url: str, path: str) -> None:
    ctx, page = _open(browser, real_url + path, **PHONE)
    header = page.locator("header.top").bounding_box()
    assert header is not None and header["height"] <= 64
    for role, name in (("link", "Search"), ("button", "Dark theme"), ("button", "Menu")):
        control = page.get_by_role(role, name=name, exact=True)
        assert control.is_visible(), name
        box = control.bounding_box()
        assert box is not None and box["width"] >= 40 and box["height"] >= 40, f"{name} is too small to tap"
    assert page.locator("#site-nav").is_hidden()
    assert page.locator(".quick-search").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    ctx.close()


def test_the_menu_opens_the_site_links_and_escape_closes_it(browser, real_url: str) -> None:
    ctx, page = _open(browser, real_url + "failures/pg-nccl-watchdog-collective-timeout/", **PHONE)
    menu = page.get_by_role("button", name="Menu")
    assert menu.get_attribute("aria-expanded") == "false"
    menu.click()
    assert menu.get_attribute("aria-expanded") == "true"
    links = page.locator("#site-nav a")
    assert links.all_inner_texts() == ["All failures", "Diagnose a log", "Hubs", "Categories", "Systems"]
    assert all(links.nth(i).is_visible() for i in range(links.count()))
    page.keyboard.press("Escape")
    assert menu.get_attribute("aria-expanded") == "false"
    assert page.locator("#site-nav").is_hidden()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Menu"
    menu.click()
    page.locator("#site-nav a", has_text="Hubs").click()
    page.wait_for_url("**/hubs/")
    assert page.locator("h1").inner_text() == "Hubs"
    ctx.close()


def test_without_javascript_the_links_stay_in_the_header(browser, real_url: str) -> None:
    ctx, page = _open(browser, real_url + "hubs/nccl/", java_script_enabled=False, **PHONE)
    assert page.locator("#site-nav a", has_text="All failures").is_visible()
    assert page.locator(".menu-toggle").is_hidden()
    assert page.locator(".theme-toggle").is_hidden()
    assert page.get_by_role("link", name="Search", exact=True).is_visible()
    ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_theme_toggle_shows_the_theme_in_use(browser, real_url: str, scheme: str) -> None:
    ctx, page = _open(browser, real_url, color_scheme=scheme, **PHONE)
    toggle = page.get_by_role("button", name="Dark theme")
    pressed = "true" if scheme == "dark" else "false"
    assert toggle.get_attribute("aria-pressed") == pressed
    assert toggle.get_attribute("title") == ("Dark theme: on" if scheme == "dark" else "Dark theme: off")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == ("false" if scheme == "dark" else "true")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(255, 255, 255)" if scheme == "dark" else "rgb(22, 22, 26)")
    ctx.close()


@pytest.mark.parametrize(
    ("path", "nav_label"),
    [("failures/pg-nccl-watchdog-collective-timeout/", "Communication failures"), ("hubs/nccl/", "Hubs")],
)
def test_wide_pages_have_their_contents_and_navigation_beside_them(
    browser, real_url: str, path: str, nav_label: str
) -> None:
    ctx, page = _open(browser, real_url + path, **DESKTOP)
    body = page.locator(".doc-body").bounding_box()
    toc = page.get_by_role("navigation", name="On this page")
    side = page.get_by_role("navigation", name=nav_label)
    assert toc.is_visible() and side.is_visible()
    toc_box, side_box = toc.bounding_box(), side.bounding_box()
    assert body and toc_box and side_box
    assert side_box["x"] + side_box["width"] <= body["x"] < body["x"] + body["width"] <= toc_box["x"]
    targets = toc.locator("a").evaluate_all("links => links.map(a => a.hash.slice(1))")
    assert len(targets) >= 4
    for anchor in targets:
        assert page.evaluate("id => document.getElementById(id)?.tagName", anchor) in ("H2", "H3"), anchor
    current = side.locator("a[aria-current='page']")
    assert current.count() == 1 and current.get_attribute("href") == page.evaluate("location.pathname")
    # Prose keeps a reading width even though the column is wider.
    paragraph = page.locator(".doc-body section p").first.bounding_box()
    assert paragraph and paragraph["width"] <= 800
    ctx.close()


def test_the_contents_mark_the_section_being_read(browser, real_url: str) -> None:
    ctx, page = _open(browser, real_url + "failures/pg-nccl-watchdog-collective-timeout/", **DESKTOP)
    page.evaluate("document.getElementById('verify').scrollIntoView({block: 'start'})")
    marked = page.locator(".toc a.here")
    # The page's CSP forbids eval, which wait_for_function needs, so the mark is polled.
    for _ in range(50):
        if marked.count() == 1 and marked.get_attribute("href") == "#verify":
            break
        page.wait_for_timeout(100)
    assert marked.count() == 1
    assert marked.get_attribute("href") == "#verify"
    ctx.close()


@pytest.mark.parametrize("path", ["failures/pg-nccl-watchdog-collective-timeout/", "hubs/nccl/"])
def test_a_phone_shows_the_page_alone(browser, real_url: str, path: str) -> None:
    ctx, page = _open(browser, real_url + path, **PHONE)
    assert page.locator(".toc").is_hidden() and page.locator(".sidenav").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    ctx.close()


@pytest.mark.parametrize("width", [1440, 1024, 390])
def test_comparison_tables_never_split_an_error_string_mid_token(browser, real_url: str, width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    split: list[str] = []
    scrolling: list[str] = []
    for hub in HUBS:
        page.goto(real_url + f"hubs/{hub}/")
        split += [f"{hub}: {s}" for s in page.evaluate(MID_TOKEN_BREAKS, "table.compare td:first-child code")]
        scrolling += page.evaluate(
            "hub => [...document.querySelectorAll('.table-wrap')]"
            ".filter(w => w.scrollWidth > w.clientWidth + 1).map(() => hub)",
            hub,
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{hub} scrolls sideways"
    assert split == []
    if width == 1440:
        assert scrolling == [], "at 1440 px every comparison table fits its column"
    ctx.close()


class _Trickle(http.server.SimpleHTTPRequestHandler):
    """Serve a site, sending each HTML page in pieces: cut after every element of its header, with a pause."""

    PAUSE = 0.15
    CUTS = re.compile(rb"</a>|</button>|<input[^>]*>|</nav>|</form>|</div>")

    def do_GET(self) -> None:  # noqa: N802
        path = Path(self.translate_path(self.path))
        page = path / "index.html" if path.is_dir() else path
        if page.suffix != ".html" or not page.is_file():
            return super().do_GET()
        html = page.read_bytes()
        header_end = html.index(b"</header>")
        cuts = [m.end() for m in self.CUTS.finditer(html, html.index(b'<header class="top">'), header_end)]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(html)))
        self.end_headers()
        start = 0
        for cut in [*cuts, len(html)]:
            self.wfile.write(html[start:cut])
            self.wfile.flush()
            start = cut
            time.sleep(self.PAUSE)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def trickle_url(real_site: Path) -> Iterator[str]:
    """The real site, served so that the browser paints each page's header while it is half parsed."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Trickle, directory=str(real_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.parametrize("width", [390, 1000, 1440])
def test_the_header_does_not_move_while_it_arrives_in_pieces(browser, trickle_url: str, width: int) -> None:
    # A browser paints what it has parsed so far: on a slow network, or a busy machine, that can be half
    # a header. Each item must be where it ends up from the moment it appears.
    device = PHONE if width == 390 else {"viewport": {"width": width, "height": 900}}
    ctx = browser.new_context(**device)
    ctx.add_init_script(CLS_OBSERVER)
    page = ctx.new_page()
    page.goto(trickle_url + "diagnose/", wait_until="load")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__shifts") == []
    ctx.close()


@pytest.mark.parametrize("device", ["phone", "desktop"])
def test_no_page_shifts_while_it_loads(browser, real_url: str, device: str) -> None:
    ctx = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    ctx.add_init_script(CLS_OBSERVER)
    shifted = {}
    for path in EVERY_KIND:
        # A page that shifted is loaded once more. A shift both loads show is the page's; one seen once
        # (in a full suite on a loaded runner, a frame painted late) is not counted.
        seen = []
        for attempt in range(2):
            page = ctx.new_page()
            page.goto(real_url + path)
            page.wait_for_load_state("networkidle")
            if path.startswith("search/?q="):
                page.wait_for_selector("#search-results li")
            page.wait_for_timeout(500)
            if page.evaluate("window.__cls") > 0:
                seen.append(page.evaluate("window.__shifts"))
            page.close()
            if len(seen) <= attempt:
                break
        if len(seen) == 2:
            shifted[path or "home"] = seen
    assert shifted == {}
    ctx.close()


def test_fingerprint_metrics_show_code_not_backticks(browser, real_url: str) -> None:
    ctx, page = _open(browser, real_url + "failures/", **DESKTOP)
    links = page.locator("table.entries td:first-child > a").evaluate_all("as => as.map(a => a.href)")
    checked = 0
    for href in links[:60]:
        page.goto(href)
        for text in page.locator(".fingerprint dt").all_inner_texts():
            assert "`" not in text, f"{href}: {text}"
            checked += 1
    assert checked > 0
    ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("device", ["phone", "desktop"])
@pytest.mark.parametrize("path", ["failures/pg-nccl-watchdog-collective-timeout/", "hubs/nccl/", "search/?q=nccl"])
def test_axe_finds_nothing_in_either_scheme_at_either_width(
    browser, real_url: str, path: str, device: str, scheme: str
) -> None:
    from tests.test_browser import _axe

    ctx = browser.new_context(bypass_csp=True, color_scheme=scheme, **(PHONE if device == "phone" else DESKTOP))
    page = ctx.new_page()
    page.goto(real_url + path)
    if path.startswith("search/"):
        page.wait_for_selector("#search-results li")
    if device == "phone":
        page.get_by_role("button", name="Menu").click()  # the open menu is checked too
    assert _axe(page) == []
    ctx.close()
