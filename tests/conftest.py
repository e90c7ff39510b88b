"""Shared fixtures: the project, the test corpus, built sites, a local server and a browser."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator import search
from generator.build import build

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A writable copy of the small test corpus."""
    target = tmp_path / "project"
    shutil.copytree(CORPUS, target)
    return target


@pytest.fixture(scope="session")
def corpus_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test corpus, built once with search."""
    out = tmp_path_factory.mktemp("corpus") / "site"
    build_corpus(out)
    return out


def build_corpus(out: Path) -> None:
    """Build the test corpus with as many search shards as pages (some stay empty), so the search page merges them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "SHARD_PAGES", 1)
        build(CORPUS, out)


@pytest.fixture(scope="session")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped entries, built once with --strict."""
    out = tmp_path_factory.mktemp("real") / "site"
    build(ROOT, out, strict=True)
    return out


class _PrefixHandler(http.server.SimpleHTTPRequestHandler):
    """Serve a site folder under the path prefix its base_url names, and record every request."""

    prefix = "/"
    requests: list[str] = []

    def translate_path(self, path: str) -> str:
        self.requests.append(path)
        if path.startswith(self.prefix):
            path = "/" + path[len(self.prefix) :]
        return super().translate_path(path)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@functools.cache
def _server(site: Path, prefix: str) -> tuple[str, list[str]]:
    requests: list[str] = []
    handler = type("Handler", (_PrefixHandler,), {"prefix": prefix, "requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}{prefix}", requests


@pytest.fixture(scope="session")
def corpus_url(corpus_site: Path) -> str:
    """Base URL of the served test corpus (its base_url path is /docs/)."""
    return _server(corpus_site, "/docs/")[0]


@pytest.fixture(scope="session")
def real_url(real_site: Path) -> str:
    """Base URL of the served real site."""
    return _server(real_site, "/")[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's Chromium, headless, driven by Playwright."""
    # One per module: Playwright's sync API keeps an asyncio loop running while it is open, and the
    # language-server tests (pytest-lsp) need to start their own.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from the current build")


@pytest.fixture(scope="session")
def node_static(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The browser engine as a built site ships it: diagnose-core.js beside the generated rules."""
    from generator.diagnose.rules import browser_rules

    if shutil.which("node") is None:
        pytest.fail("Node.js is needed to test the browser's engine")
    folder = tmp_path_factory.mktemp("static")
    shutil.copy(ROOT / "static" / "diagnose-core.js", folder)
    (folder / "diagnose-rules.js").write_text(browser_rules(), encoding="utf-8")
    return folder
