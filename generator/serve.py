"""Serve the built site on 127.0.0.1 and rebuild it when the content changes."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

from generator.build import build
from generator.errors import ContentError, TrainwreckError

WATCHED = ("entries", "hubs", "templates", "static", "tags.yaml", "site.yaml")


class _Handler(http.server.SimpleHTTPRequestHandler):
    # Pages link to the path of base_url (e.g. /docs/), so serve the site under that prefix.
    prefix = "/"

    def translate_path(self, path: str) -> str:
        if path.startswith(self.prefix):
            path = "/" + path[len(self.prefix) :]
        return super().translate_path(path)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature of the base class
        pass


def _rebuild(root: Path, out_dir: Path) -> None:
    try:
        result = build(root, out_dir)
        print(f"Rebuilt {result.pages} pages.", flush=True)
    except ContentError as exc:
        print(exc.report() + "\nThe previous site is still being served.", flush=True)
    except TrainwreckError as exc:
        print(f"error: {exc}\nThe previous site is still being served.", flush=True)


def serve(root: Path, out_dir: Path, port: int, *, watch: bool = True) -> None:
    """Build once, then serve out_dir until interrupted, rebuilding on change."""
    result = build(root, out_dir)
    # The handler resolves the folder per request, so it follows each atomic swap.
    handler_class = type("Handler", (_Handler,), {"prefix": result.base_path})
    handler = functools.partial(handler_class, directory=str(out_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    address = f"http://127.0.0.1:{server.server_address[1]}{result.base_path}"
    print(f"Serving {out_dir} at {address} (Ctrl+C to stop)", flush=True)
    try:
        if watch:
            from watchfiles import watch as watch_changes

            paths = [root / p for p in WATCHED if (root / p).exists()]
            for _changes in watch_changes(*paths):
                _rebuild(root, out_dir)
        else:
            thread.join()
    finally:
        server.shutdown()
