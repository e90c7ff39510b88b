"""`trainwreck serve` serves the site on 127.0.0.1 and rebuilds it when an entry changes."""

from __future__ import annotations

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
        assert _wait_for(lambda: "Demo loss turns Inf" in _get(url)), "the change was not rebuilt"
        entry.write_text(original.replace("severity: medium", "severity: severe"), encoding="utf-8")
        time.sleep(3)
        assert "Demo loss turns Inf" in _get(url), "a broken edit must leave the last good site served"
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0]
    assert "severity: expected one of: low, medium, high, critical; got 'severe'" in output
    assert "The previous site is still being served." in output
