"""Provenance: every signature's source has recorded evidence, and the lookups read real archives and clones."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator import provenance
from generator.build import load_catalog
from generator.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT)


def test_every_source_in_the_catalog_has_evidence_that_its_file_exists(catalog) -> None:
    claims = provenance.claims(c.entry() for c in catalog.entries.values())
    lock = provenance.load_lock(ROOT)
    assert provenance.unverified(claims, lock) == []
    # A record no signature cites is evidence for nothing; `sources --verify` drops it.
    assert provenance.stale(claims, lock) == []


def test_lock_records_say_how_and_where_they_were_read() -> None:
    for source, record in provenance.load_lock(ROOT).items():
        assert record["how"] in {"mirror", "wheel", "sdist", "stdlib", "github-index", "page"}, source
        assert record["at"], source
        if record["how"] == "mirror":
            assert len(record["at"]) == 40, source  # a commit, not a branch that moves


@pytest.mark.parametrize(
    ("pattern", "kind", "core"),
    [
        ("Gradient overflow, skipping update", "literal", "Gradient overflow, skipping update"),
        (
            r"Unable to determine the device handle for (?:GPU|gpu) ?[0-9A-Fa-f:. ]{1,24}: Unknown Error",
            "regex",
            "Unable to determine the device handle for",
        ),
        (r"size mismatch for [\w.]+: copying a param of torch\.Size\(\[", "regex", ": copying a param of torch.Size(["),
        (r"^Killed\s*$", "regex", "Killed"),
        # An interpolated number in a literal is not text the source file holds.
        (
            "Required library version not found: libbitsandbytes_cuda124.so",
            "literal",
            "Required library version not found: libbitsandbytes_cuda",
        ),
        (r"Skipping step, loss scaler \d+ reducing loss scale to ", "regex", "Skipping step, loss scaler"),
        # A quantified character is not fixed.
        (r"abcd+e", "regex", "abc"),
    ],
)
def test_literal_core_is_the_longest_fixed_text(pattern: str, kind: str, core: str) -> None:
    assert provenance.literal_core(pattern, kind) == core


def _claim(*texts: str) -> provenance.Claim:
    return provenance.Claim("x/y:f.py", tuple((f"e{i}", t) for i, t in enumerate(texts)))


def test_text_split_across_string_literals_counts_as_verbatim() -> None:
    source = (
        'raise E(\n    "CUDA kernels are not installed, this will "\n    f"result in slow {speed}")\n'
        'msg = "one \\\n  two"\n'
    )
    ev = provenance._judge(
        _claim("are not installed, this will result in slow", "one two", "slow kernels result", "nowhere at all"),
        source,
        provenance.Evidence(True, "mirror", "0" * 40),
    )
    assert ev.found == ["are not installed, this will result in slow", "one two"]
    assert ev.words == ["slow kernels result"]
    assert ev.missing == ["nowhere at all"]


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """A static server that honours single byte ranges, as PyPI's file host does, and serves the simple API."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        path = Path(self.directory) / self.path.lstrip("/")
        if self.path.startswith("/simple/"):
            body = (Path(self.directory) / "simple.json").read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = path.read_bytes()
        ranged = self.headers.get("Range")
        if ranged:
            start_s, end_s = ranged.removeprefix("bytes=").split("-")
            start, end = int(start_s), min(int(end_s), len(data) - 1)
            self.server.ranges.append((start, end))  # type: ignore[attr-defined]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            data = data[start : end + 1]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def pypi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, list[tuple[int, int]]]]:
    """A local package index with one release of one package."""
    wheel = tmp_path / "demo_pkg-1.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("demo_pkg/errors.py", 'raise RuntimeError(\n    "Demo failure: "\n    "the widget broke")\n')
        # Incompressible filler, so the archive is several range blocks long.
        z.writestr("demo_pkg/blob.bin", os.urandom(3 * provenance.RangeFile.BLOCK), zipfile.ZIP_STORED)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(RangeHandler, directory=str(tmp_path)))
    server.ranges = []  # type: ignore[attr-defined]
    base = f"http://127.0.0.1:{server.server_address[1]}"
    simple = {"files": [{"filename": wheel.name, "url": f"{base}/{wheel.name}", "size": wheel.stat().st_size}]}
    (tmp_path / "simple.json").write_text(json.dumps(simple))
    monkeypatch.setattr(provenance, "PYPI_SIMPLE", base + "/simple/{name}/")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield wheel, server.ranges  # type: ignore[attr-defined]
    server.shutdown()


def test_a_wheel_is_read_through_ranges_without_downloading_it(pypi: tuple[Path, list[tuple[int, int]]]) -> None:
    wheel, ranges = pypi
    claim = provenance.Claim("pypi:demo-pkg==1.2.0:demo_pkg/errors.py", (("demo", "Demo failure: the widget broke"),))
    ev = provenance.resolve(claim, None)
    assert ev is not None and ev.exists and ev.at == wheel.name and ev.found == ["Demo failure: the widget broke"]
    fetched = sum(end - start + 1 for start, end in ranges)
    assert fetched < wheel.stat().st_size  # the filler's blocks were never read


def test_a_path_missing_from_the_wheel_is_reported(pypi: tuple[Path, list[tuple[int, int]]]) -> None:
    ev = provenance.resolve(provenance.Claim("pypi:demo-pkg==1.2.0:demo_pkg/gone.py", (("demo", "x"),)), None)
    assert ev is not None and not ev.exists
    assert ev.note == "demo_pkg/gone.py is in none of these wheels"


def test_a_release_pypi_does_not_have_is_reported(pypi: tuple[Path, list[tuple[int, int]]]) -> None:
    ev = provenance.resolve(provenance.Claim("pypi:demo-pkg==9.9.9:demo_pkg/errors.py", (("demo", "x"),)), None)
    assert ev is not None and not ev.exists and ev.note == "no file of that release on PyPI"


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_a_clone_is_read_at_the_cited_tag(tmp_path: Path) -> None:
    repo = tmp_path / "owner+proj" / "repo"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "src" / "net.c").write_text('WARN("NET/IB : Got async event : %s", str);\n')
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "tag", "v1.0")
    (repo / "src" / "net.c").write_text('WARN("NET/IB : Got async error event: %s", str);\n')
    _git(repo, "commit", "-qam", "two")

    old = provenance.resolve(provenance.Claim("owner/proj@v1.0:src/net.c", (("e", "Got async event :"),)), tmp_path)
    new = provenance.resolve(provenance.Claim("owner/proj:src/net.c", (("e", "Got async event :"),)), tmp_path)
    gone = provenance.resolve(provenance.Claim("owner/proj:src/other.c", (("e", "x"),)), tmp_path)
    assert old is not None and old.exists and old.found == ["Got async event :"]
    assert old.at == _git(repo, "rev-parse", "v1.0").strip()
    assert new is not None and new.exists and new.found == [] and new.words == ["Got async event :"]
    assert gone is not None and not gone.exists and gone.note.startswith("src/other.c does not exist at ")


def test_sources_command_names_what_has_no_evidence(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(corpus), "sources"]) == 1
    captured = capsys.readouterr()
    sources = sorted({line.split(": no evidence")[0] for line in captured.err.splitlines()})
    assert sources and all(
        "no evidence recorded (run `trainwreck sources --verify`)" in line for line in captured.err.splitlines()
    )
    assert captured.out.startswith(f"0 of {len(sources)} sources found;")
    # With evidence for each, the command passes.
    (corpus / provenance.LOCK).write_text(
        json.dumps({s: {"exists": True, "how": "github-index", "at": "0" * 40, "found": []} for s in sources})
    )
    assert main(["--root", str(corpus), "sources"]) == 0
    assert capsys.readouterr().out.startswith(f"{len(sources)} of {len(sources)} sources found;")


def test_verify_keeps_evidence_recorded_by_hand_when_it_cannot_look_the_source_up(
    corpus: Path, pypi: tuple[Path, list[tuple[int, int]]], capsys: pytest.CaptureFixture[str]
) -> None:
    claims = provenance.claims(c.entry() for c in load_catalog(corpus).entries.values())
    by_hand = {"exists": True, "how": "github-index", "at": "1" * 40, "found": [], "note": "read by a maintainer"}
    (corpus / provenance.LOCK).write_text(json.dumps({c.source: by_hand for c in claims}))
    # The local index has no torch release, so the automatic lookup fails; the record stays.
    assert main(["--root", str(corpus), "sources", "--verify", "--recheck"]) == 0
    out = capsys.readouterr().out
    assert "pypi:torch==2.14.1:torch/lib/libtorch_cuda.so: not found here (no file of that release on PyPI); " in out
    assert provenance.load_lock(corpus) == {c.source: by_hand for c in claims}
