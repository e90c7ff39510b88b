"""The code stays formatted, lint-clean and type-checked (mypy --strict on generator/)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_lint_and_format() -> None:
    lint = _run("ruff", "check", "generator", "tests", "benchmarks")
    assert lint.returncode == 0, lint.stdout
    fmt = _run("ruff", "format", "--check", "generator", "tests", "benchmarks")
    assert fmt.returncode == 0, fmt.stdout


def test_mypy_strict() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout
