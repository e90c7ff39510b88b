"""Each folder under tests/invalid/ breaks the corpus one way; validation must print exactly expected.txt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.cli import main

CASES = sorted(p for p in (Path(__file__).parent / "invalid").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_invalid_entry_reports_exact_message(case: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(case / "entries", corpus / "entries", dirs_exist_ok=True)
    code = main(["--root", str(corpus), "validate"])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (case / "expected.txt").read_text(encoding="utf-8")
    assert "Traceback" not in err


def test_every_case_has_expected_output() -> None:
    assert len(CASES) >= 15
    for case in CASES:
        expected = (case / "expected.txt").read_text(encoding="utf-8")
        assert expected.rstrip().splitlines()[-1].startswith("Found "), case.name


def test_build_with_a_broken_entry_leaves_previous_site_untouched(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["--root", str(corpus), "build", "--out", str(out), "--no-search"]) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    shutil.copytree(CASES[0] / "entries", corpus / "entries", dirs_exist_ok=True)
    assert main(["--root", str(corpus), "build", "--out", str(out)]) == 1
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".site.cache", "project", "site"], "no staging folder is left behind"
