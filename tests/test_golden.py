"""The small corpus builds to exactly the files in tests/golden/ (refresh with --update-golden)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
# Files compared byte for byte; the full file list is compared too.
SNAPSHOTS = [
    "api/v1/entries.json",
    "api/v1/signatures.jsonl",
    "sitemap.xml",
    "feed.xml",
    "robots.txt",
    "failures/demo-hang/index.html",
    "hubs/demo/index.html",
    "tags/hang/index.html",
]


def _files(site: Path) -> str:
    return "".join(f"{p.relative_to(site).as_posix()}\n" for p in sorted(site.rglob("*")) if p.is_file())


def test_golden_site(corpus_site: Path, request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--update-golden"):
        for name in SNAPSHOTS:
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_bytes((corpus_site / name).read_bytes())
        (GOLDEN / "files.txt").write_text(_files(corpus_site), encoding="utf-8")
    assert _files(corpus_site) == (GOLDEN / "files.txt").read_text(encoding="utf-8")
    for name in SNAPSHOTS:
        assert (corpus_site / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_two_builds_are_byte_identical(corpus_site: Path, tmp_path: Path) -> None:
    from tests.conftest import build_corpus

    again = tmp_path / "again"
    build_corpus(again)
    first = {p.relative_to(corpus_site): p.read_bytes() for p in corpus_site.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_builds_on_tmpfs_and_on_disk_are_byte_identical(corpus_site: Path) -> None:
    # Pagefind gets the pages in path order from memory, not in the order a folder walk returns
    # them, which differs between file systems (tmpfs lists newest first, ext4 by hash).
    import tempfile

    from tests.conftest import build_corpus

    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no tmpfs at /dev/shm")
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        other = Path(tmp) / "site"
        build_corpus(other)
        first = {p.relative_to(corpus_site): p.read_bytes() for p in corpus_site.rglob("*") if p.is_file()}
        second = {p.relative_to(other): p.read_bytes() for p in other.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []
