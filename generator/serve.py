"""Serve the built site on 127.0.0.1, rebuild it when the content changes, and reload open pages."""

from __future__ import annotations

import functools
import gc
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from generator.build import THEME, build, cache_folder
from generator.cache import forget_pages
from generator.errors import ContentError, TrainwreckError
from generator.link import Catalog
from generator.render import Renderer
from generator.search import die_with_parent, reindex
from generator.validate import check_entry_file
from generator.write import write_files

WATCHED = ("entries", "hubs", "templates", "static", "tags.yaml", "site.yaml")
EVENTS = "__trainwreck/events"  # under the site's base path
LIVE = "__trainwreck/live.js"
# Served pages, never the written ones, load this script (from the server, as the pages' content
# security policy allows). On a rebuild that changed the page it fetches the page again and swaps
# the body in place, which keeps the scroll position and shows no blank flash; when a stylesheet or
# script changed, it reloads.
LIVE_SCRIPT = """(() => {
  const prefix = document.currentScript.dataset.prefix;
  const source = new EventSource(prefix + "EVENTS");
  source.onopen = () => { document.documentElement.dataset.live = "open"; };
  source.onmessage = async (event) => {
    const news = JSON.parse(event.data);
    const here = location.pathname.slice(prefix.length);
    const page = here === "" || here.endsWith("/") ? here + "index.html" : here;
    if (news.assets) { location.reload(); return; }
    if (!news.changed.includes(page)) return;
    const response = await fetch(location.href, {cache: "no-store"});
    const next = new DOMParser().parseFromString(await response.text(), "text/html");
    document.title = next.title;
    document.body.replaceWith(next.body);
    window.dispatchEvent(new CustomEvent("trainwreck:reloaded", {detail: news}));
  };
})();
""".replace("EVENTS", EVENTS)


class Changes:
    """The latest rebuild, for the pages that wait on it."""

    def __init__(self) -> None:
        self.version = 0
        self.news: dict[str, object] = {}
        self.condition = threading.Condition()

    def publish(self, changed: list[str], assets: bool) -> None:
        """Tell every open page which pages a rebuild changed."""
        with self.condition:
            self.version += 1
            self.news = {"version": self.version, "changed": changed, "assets": assets, "at": time.time()}
            self.condition.notify_all()

    def wait(self, seen: int, timeout: float) -> tuple[int, dict[str, object] | None]:
        """Wait for a rebuild after version seen; return the new version and its news, or None on timeout."""
        with self.condition:
            self.condition.wait_for(lambda: self.version > seen, timeout)
            return (self.version, self.news) if self.version > seen else (seen, None)


class _Handler(http.server.SimpleHTTPRequestHandler):
    # Pages link to the path of base_url (e.g. /docs/), so serve the site under that prefix.
    prefix = "/"
    changes: Changes
    live = True

    def translate_path(self, path: str) -> str:
        if path.startswith(self.prefix):
            path = "/" + path[len(self.prefix) :]
        return super().translate_path(path)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == self.prefix + EVENTS:
            self._events()
            return
        if self.path.split("?")[0] == self.prefix + LIVE:
            self._send(LIVE_SCRIPT.encode(), "text/javascript; charset=utf-8", 200)
            return
        target = Path(self.translate_path(self.path.split("?")[0]))
        if self.live and target.is_dir() and self.path.endswith("/"):
            target = target / "index.html"
        if self.live and target.suffix == ".html" and target.is_file():
            self._page(target)
            return
        super().do_GET()

    def _page(self, target: Path) -> None:
        tag = f'<script src="{self.prefix}{LIVE}" data-prefix="{self.prefix}"></script>'
        body = target.read_bytes().replace(b"</body>", tag.encode() + b"</body>", 1)
        self._send(body, "text/html; charset=utf-8", 200)

    def _send(self, body: bytes, kind: str, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        seen = self.changes.version
        try:
            self.wfile.write(b": connected\n\n")
            self.wfile.flush()
            while True:
                seen, news = self.changes.wait(seen, timeout=15)
                self.wfile.write(f"data: {json.dumps(news)}\n\n".encode() if news else b": still here\n\n")
                self.wfile.flush()
        except OSError:
            return  # the page was closed

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature of the base class
        pass


class _Rebuilder:
    """Rebuilds on change: a saved entry's page at once, from the first build's catalog; the rest in a child process.

    The other changed pages are written in place, and the search index replaced, by one rebuild for all
    the saves made while the last one ran. That rebuild runs as a process of its own at a lower priority:
    in this one it would hold the interpreter for hundreds of milliseconds at a time (loading the memo,
    taking page keys) while the next saved page waits, and this process's memory would hold two catalogs.
    """

    def __init__(self, root: Path, out_dir: Path, changes: Changes) -> None:
        self.root, self.out_dir, self.changes = root, out_dir, changes
        self.catalog: Catalog | None = None  # the first build's content, with each entry saved since
        self.renderer: Renderer | None = None  # kept, so an edited page renders with compiled templates
        self.pending: set[str] = set()  # paths changed since the last rebuild began
        self.previewed: set[str] = set()  # pages written on their own since the last rebuild began
        self.lock = threading.Lock()
        self.more = threading.Event()  # set when pending has paths
        threading.Thread(target=self._rebuild_forever, daemon=True).start()

    def first(self) -> str:
        """Build the whole site once; return its base path."""
        result = build(self.root, self.out_dir)
        self.catalog = result.catalog
        if result.catalog is not None and result.catalog.entries:
            self.renderer = Renderer(result.catalog, THEME / "templates", cache_folder(self.out_dir) / "templates")
            # Compile the entry template now rather than when the first edit is saved.
            self.renderer.render(self.renderer.render_entry(next(iter(result.catalog.entries.values()))))
        # What the first build left (the catalog) lives as long as the server: kept out of the
        # collector's walks, a full collection never stalls the writing of a saved entry's page.
        gc.freeze()
        return result.base_path

    def changed(self, paths: set[str]) -> None:
        """Take a change to paths: write a saved entry's page now and ask the background for the rest."""
        started = time.perf_counter()
        edited = self._edited_page(paths)
        with self.lock:
            if edited:
                self.previewed.add(edited)
            self.pending |= paths
        if edited:
            self.changes.publish([edited], False)
            print(f"Rebuilt {edited} in {time.perf_counter() - started:.3f}s.", flush=True)
        self.more.set()

    def _rebuild_forever(self) -> None:
        _yield_to_saves()
        while True:
            self.more.wait()
            self.more.clear()
            with self.lock:
                paths, self.pending = self.pending, set()
                previewed, self.previewed = self.previewed, set()
            self.rebuild(paths, previewed)

    def rebuild(self, paths: set[str], previewed: Iterable[str] = ()) -> None:
        """Rebuild in a child process after a change to paths, and tell the open pages what it changed.

        A page previewed on its own was rendered from an older catalog: it is forgotten from the record of
        what the site holds, so the rebuild writes it whatever its key.
        """
        started = time.perf_counter()
        forget_pages(cache_folder(self.out_dir), previewed)
        assets = any(Path(p).is_relative_to(self.root / "static") for p in paths)
        for news in _run_rebuild(self.root, self.out_dir):
            if "problems" in news:
                print(f"{news['problems']}\nThe previous site is still being served.", flush=True)
            elif "error" in news:
                print(f"error: {news['error']}\nThe previous site is still being served.", flush=True)
            elif "changed" in news:
                changed: list[str] = news["changed"]
                if changed or assets:
                    self.changes.publish(changed, assets)
                    took = time.perf_counter() - started
                    print(f"Rebuilt {len(changed)} of {news['pages']} pages in {took:.2f}s.", flush=True)
            elif "search" in news:
                print("Search index updated.", flush=True)
            elif "search_error" in news:
                print(f"error: the search index was not updated: {news['search_error']}", flush=True)

    def _edited_page(self, paths: set[str]) -> str | None:
        """Write the page of the one entry just saved, from its file and the first build, before anything else.

        The page is the one its author is looking at. What else the edit changes (lists that show its
        title or summary, the index, search) follows in the full rebuild, which writes this page again.
        Return the page's path, or None when the change is not one entry's.
        """
        if len(paths) != 1 or self.catalog is None or self.renderer is None:
            return None
        path = Path(next(iter(paths)))
        if not (path.suffix == ".yaml" and path.is_relative_to(self.root / "entries") and path.is_file()):
            return None
        display = path.relative_to(self.root).as_posix()
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        card, problems = check_entry_file((display, raw))[:2]
        if problems or card is None or self.catalog.entry_paths.get(card.id) != display:
            return None  # broken, renamed or new: the full rebuild reports or places it
        self.catalog = replace(self.catalog, entries={**self.catalog.entries, card.id: card})
        self.renderer.catalog = self.catalog
        view = self.renderer.render_entry(card)
        write_files(self.out_dir, {view.path: self.renderer.render(view)}, atomic=True)
        return view.path


# The child that rebuilds: the generator importable as this process imports it, whatever the working folder.
_CHILD = "from generator.serve import rebuild_child; rebuild_child()"
_HOME = str(Path(__file__).resolve().parent.parent)


def _run_rebuild(root: Path, out_dir: Path) -> Iterator[dict[str, Any]]:
    """Run one rebuild in a child process (at this thread's priority) and yield what it reports, line by line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_HOME, os.environ.get("PYTHONPATH")]))}
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(root), str(out_dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            preexec_fn=die_with_parent,
        )
    except OSError as exc:
        yield {"error": f"could not start the rebuild: {exc}"}
        return
    assert child.stdout is not None
    ended = False
    for line in child.stdout:
        try:
            news = json.loads(line)
        except ValueError:
            print(line.decode("utf-8", "replace"), end="", flush=True)  # printed by something else: passed on
            continue
        ended = ended or "changed" in news or "problems" in news or "error" in news
        yield news
    if child.wait() != 0 and not ended:
        yield {"error": f"the rebuild stopped with exit status {child.returncode}"}


def rebuild_child() -> None:
    """In the child: rebuild ROOT's site in OUT in place, index its search, and report each step as a JSON line."""
    root, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    began = time.time_ns()

    def newer(page: str) -> bool:
        # Written on its own since this rebuild began: this rebuild may have read its entry before the save.
        try:
            return (out_dir / page).stat().st_mtime_ns > began
        except OSError:
            return False

    def say(**news: object) -> None:
        print(json.dumps(news), flush=True)

    try:
        result = build(root, out_dir, search=False, update=True, keep=newer)
    except ContentError as exc:
        say(problems=exc.report())
        return
    except TrainwreckError as exc:
        say(error=str(exc))
        return
    say(changed=list(result.written), pages=result.pages)
    if result.written:
        try:
            reindex(out_dir, result.search, cache_folder(out_dir) / "search")
            say(search=True)
        except TrainwreckError as exc:
            say(search_error=str(exc))


def _yield_to_saves() -> None:
    """Lower this thread's priority, and so that of the rebuild it starts (its workers and Pagefind too).

    The background rebuild and indexing use both cores for seconds on a large site; the page of an entry
    just saved must not wait for them. Linux gives each thread a priority of its own, which a process
    started from it inherits.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass  # elsewhere they share the process's priority


def _saved_since(paths: list[Path], since_ns: int) -> Iterator[str]:
    """The files under paths modified since a time."""
    for path in paths:
        for file in path.rglob("*") if path.is_dir() else [path]:
            try:
                if file.is_file() and file.stat().st_mtime_ns >= since_ns:
                    yield str(file)
            except OSError:
                continue


def serve(root: Path, out_dir: Path, port: int, *, watch: bool = True, live: bool = True) -> None:
    """Build once, then serve out_dir until interrupted, rebuilding on change."""
    changes = Changes()
    rebuilder = _Rebuilder(root, out_dir, changes)
    began = time.time_ns()
    prefix = rebuilder.first()
    events = None
    if watch:
        from watchfiles import watch as watch_changes

        paths = [root / p for p in WATCHED if (root / p).exists()]
        # A short step: the change is handed over 10 ms after the editor's last write. The first
        # (timeout) answer says the watcher is listening; a file saved since the first build began is
        # then rebuilt, before the site is served.
        events = watch_changes(*paths, step=10, yield_on_timeout=True, rust_timeout=50)
        early = {path for _change, path in next(events)} | set(_saved_since(paths, began))
        if early:
            rebuilder.changed(early)
    # The handler resolves the folder per request, so it follows each atomic swap.
    handler_class = type("Handler", (_Handler,), {"prefix": prefix, "changes": changes, "live": live and watch})
    handler = functools.partial(handler_class, directory=str(out_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True  # open event streams must not keep the process alive
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    address = f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    print(f"Serving {out_dir} at {address} (Ctrl+C to stop)", flush=True)
    try:
        if events is not None:
            for found in events:
                if found:
                    rebuilder.changed({path for _change, path in found})
        else:
            thread.join()
    finally:
        server.shutdown()
