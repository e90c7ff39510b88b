"""Lighthouse (mobile) scores of one page of every kind, the median of several runs.

    npm install --prefix /tmp/lh lighthouse@12.8.2
    python -m generator build --out /tmp/site
    python tools/lighthouse.py /tmp/site --lighthouse /tmp/lh/node_modules/.bin/lighthouse

The site is served from a local port with gzip, as static hosts serve it; Chromium is Debian's (CHROME_PATH).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PAGES = {
    "home": "",
    "all failures": "failures/",
    "entry": "failures/pg-nccl-watchdog-collective-timeout/",
    "hub": "hubs/nccl/",
    "tag": "tags/hang/",
    "category": "categories/communication/",
    "system": "systems/nccl/",
    "search": "search/?q=nccl",
    "diagnosis": "diagnose/",
}
CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]
TEXT = {".html", ".css", ".js", ".json", ".jsonl", ".svg", ".xml", ".txt"}


class _Host(http.server.SimpleHTTPRequestHandler):
    """Serve the site as a static host does: text compressed with gzip."""

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if "gzip" not in self.headers.get("Accept-Encoding", "") or path.suffix not in TEXT or not path.is_file():
            return super().send_head()
        body = gzip.compress(path.read_bytes(), mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _serve(site: Path) -> str:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Host, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def _scores(lighthouse: str, url: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [
                lighthouse,
                url,
                "--quiet",
                "--output=json",
                f"--output-path={report}",
                f"--only-categories={','.join(CATEGORIES)}",
                "--chrome-flags=--headless=new --no-sandbox",
            ],
            check=True,
            env={**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")},
        )
        data = json.loads(report.read_text(encoding="utf-8"))
    scores = {c: round(data["categories"][c]["score"] * 100) for c in CATEGORIES}
    scores["cls"] = data["audits"]["cumulative-layout-shift"]["numericValue"]
    return scores


def main() -> int:
    """Print the median score of each category on each page kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--lighthouse", default="lighthouse")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = _serve(args.site)
    print(f"{'page':<14}" + "".join(f"{c:>16}" for c in CATEGORIES) + f"{'CLS':>10}")
    worst = 100
    for name, path in PAGES.items():
        runs = [_scores(args.lighthouse, base + path) for _ in range(args.runs)]
        medians = {c: statistics.median(r[c] for r in runs) for c in [*CATEGORIES, "cls"]}
        worst = min(worst, *(medians[c] for c in CATEGORIES))
        row = "".join(f"{medians[c]:>16g}" for c in CATEGORIES)
        print(f"{name:<14}{row}{medians['cls']:>10.4f}", flush=True)
    return 0 if worst == 100 else 1


if __name__ == "__main__":
    sys.exit(main())
