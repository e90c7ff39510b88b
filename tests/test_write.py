"""Writing the site: builds that are killed, race, or meet a full disk leave the previous site whole."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from generator import write
from generator.build import build
from generator.cli import main


def _snapshot(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


def _pagefind_processes() -> list[str]:
    """Pagefind processes still running; a zombie (state Z) has died and only awaits its reaper."""
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=True).stdout
    rows = [line.split(None, 2) for line in out.splitlines()[1:]]
    return [" ".join(r) for r in rows if len(r) == 3 and "pagefind" in r[2] and not r[1].startswith("Z")]


def test_leftovers_of_a_killed_build_are_removed_by_the_next(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    (tmp_path / ".site.tmp-k1ll3d").mkdir()
    (tmp_path / ".site.tmp-k1ll3d" / "index.html").write_text("half a page")
    (tmp_path / ".site.old-abc123").mkdir()
    (tmp_path / ".elsewhere.tmp-keep").mkdir()  # another output's folder is not this build's to remove
    build(corpus, out, search=False)
    deadline = time.monotonic() + 30
    while sorted(p.name for p in tmp_path.iterdir()) != [".elsewhere.tmp-keep", ".site.cache", "project", "site"]:
        assert time.monotonic() < deadline, f"the leftovers were not removed: {sorted(tmp_path.iterdir())}"
        time.sleep(0.05)


def test_a_build_does_not_wait_for_leftovers_to_be_removed(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A leftover can be a whole site (a killed build's, or the old one whose removal the last build began).
    out = tmp_path / "site"
    (tmp_path / ".site.old-abc123" / "failures").mkdir(parents=True)
    handed: list[str] = []
    monkeypatch.setattr(write, "_remove_later", lambda path: handed.append(path.name))
    build(corpus, out, search=False)
    assert handed == [".site.old-abc123"] and (tmp_path / ".site.old-abc123" / "failures").is_dir()


def test_a_large_previous_site_is_removed_after_the_build_returns(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    build(corpus, out, search=False)
    monkeypatch.setattr(write, "REMOVE_LATER", 1)  # every site counts as large
    (out / "from-the-first-build").write_text("old")
    build(corpus, out, search=False)
    assert (out / write.MARKER).is_file() and not (out / "from-the-first-build").exists()
    deadline = time.monotonic() + 30
    while sorted(p.name for p in tmp_path.iterdir()) != [".site.cache", "project", "site"]:
        assert time.monotonic() < deadline, f"the old site was not removed: {sorted(tmp_path.iterdir())}"
        time.sleep(0.05)


def test_the_swap_is_one_exchange_where_the_file_system_has_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "which").write_text("a")
    (b / "which").write_text("b")
    if not write.exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here; the two-rename swap is used")
    assert (a / "which").read_text() == "b" and (b / "which").read_text() == "a"


def test_two_builds_into_one_folder_take_turns(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            build(corpus, out, search=False)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (out / "index.html").is_file() and (out / write.MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.cache", "project", "site"]


def test_a_full_disk_is_a_message_and_the_previous_site_stays(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    assert main(["--root", str(corpus), "build", "--out", str(out), "--no-search"]) == 0
    before = _snapshot(out)
    real = Path.write_bytes

    def full(self: Path, data: bytes) -> int:
        if self.name == "sitemap.xml":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real(self, data)

    # Fault injection at the one write a full disk would fail; everything else is real.
    monkeypatch.setattr(Path, "write_bytes", full)
    assert main(["--root", str(corpus), "build", "--out", str(out), "--no-search"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"error: cannot write the site to {out}: No space left on device (")
    assert "Traceback" not in err
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.cache", "project", "site"]


def test_an_output_under_a_file_is_a_message(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain-file").write_text("x")
    assert main(["--root", str(corpus), "build", "--out", str(tmp_path / "plain-file" / "site")]) == 1
    err = capsys.readouterr().err
    parent = tmp_path / "plain-file"
    assert err == f"error: cannot write the site to {parent / 'site'}: File exists ({parent})\n"


def test_kill_9_at_random_points_never_damages_the_site(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["--root", str(corpus), "build", "--out", str(out)]) == 0
    before = _snapshot(out)
    script = f"from generator.cli import main; main(['--root', {str(corpus)!r}, 'build', '--out', {str(out)!r}])"
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", script], check=True)
    duration = time.monotonic() - started
    rng = random.Random(20261201)
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", script])
        time.sleep(rng.uniform(0.05, duration))
        child.send_signal(signal.SIGKILL)
        child.wait()
        # Whatever instant it died at, the site is the old one or the new one, never a mix or nothing.
        assert _snapshot(out).keys() == before.keys()
        assert (out / "index.html").read_bytes() == before["index.html"]
    time.sleep(0.2)
    assert _pagefind_processes() == [], "Pagefind died with the build"
    assert main(["--root", str(corpus), "build", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.cache", "project", "site"]
    assert _snapshot(out) == before  # and a build is byte-identical to the one before the kills


@pytest.mark.parametrize("atomic", [False, True])
def test_a_cache_file_removed_before_it_is_linked_is_a_message(tmp_path: Path, atomic: bool) -> None:
    from generator.errors import BuildError

    (tmp_path / "kept.html").write_text("<html></html>\n")
    pages = [("a/index.html", tmp_path / "kept.html"), ("b/index.html", tmp_path / "gone.html")]
    with pytest.raises(BuildError) as caught:
        write.write_pages(tmp_path / "site", pages, atomic=atomic)
    assert str(caught.value) == "the page cache lost gone.html during the build; build again"
    assert (tmp_path / "site" / "a" / "index.html").read_text() == "<html></html>\n"


@pytest.mark.parametrize("one_process", [True, False], ids=["cp", "file-by-file"])
def test_a_tree_is_linked_whole_but_the_names_skipped_at_its_top_in_folders_of_the_usual_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_process: bool
) -> None:
    if not one_process:
        monkeypatch.setattr(write, "_link_all", lambda source, target: False)
    source = tmp_path / "kept"
    source.mkdir(mode=0o700)  # as a cached search shard is: made by mkdtemp
    names = ("pagefind.js", "index/en_1.pf_index", "filter/en_2.pf_filter", ".complete", "index/.complete", "ui.js")
    for name in names:
        (source / name).parent.mkdir(exist_ok=True)
        (source / name).write_text(name)
    target = tmp_path / "site" / "pagefind" / "shard-2"
    write.link_tree(source, target, skip=(".complete", "ui.js", "absent.js"))
    found = {p.relative_to(target).as_posix(): p for p in target.rglob("*") if p.is_file()}
    # A name is skipped at the top only: a file of that name deeper down is the tree's own.
    assert sorted(found) == ["filter/en_2.pf_filter", "index/.complete", "index/en_1.pf_index", "pagefind.js"]
    assert all(p.stat().st_ino == (source / name).stat().st_ino for name, p in found.items())
    (tmp_path / "fresh").mkdir()
    usual = (tmp_path / "fresh").stat().st_mode
    assert {p.stat().st_mode for p in [target, *target.rglob("*")] if p.is_dir()} == {usual}
