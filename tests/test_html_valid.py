"""The Nu HTML Checker finds no errors in the built site."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import ROOT

VNU = ROOT / "node_modules" / "vnu-jar" / "build" / "dist" / "vnu.jar"


def vnu_errors(site: Path) -> str:
    result = subprocess.run(
        ["java", "-jar", str(VNU), "--errors-only", "--skip-non-html", str(site)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return (result.stdout + result.stderr).strip() if result.returncode else ""


def test_corpus_site_is_valid_html(corpus_site: Path) -> None:
    assert vnu_errors(corpus_site) == ""


def test_real_site_is_valid_html(real_site: Path) -> None:
    # Every page of the shipped content, in the layout readers get (side navigation, contents, icons).
    assert vnu_errors(real_site) == ""
