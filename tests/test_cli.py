"""The command line: exit codes, messages instead of tracebacks, scaffolding, schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main


def test_validate_ok(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(corpus), "validate"]) == 0
    assert capsys.readouterr().out == "OK: 2 entries, 1 hubs, 2 signatures, 7 warning(s).\n"


def test_strict_turns_warnings_into_failure(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    assert main(["--root", str(corpus), "build", "--strict", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "warning: entries/demo/demo-nan.yaml:1:1: scale: section is empty" in err
    assert err.rstrip().endswith("Aborted with 7 warning(s) in strict mode.")
    assert not out.exists()


def test_new_scaffold_is_guided_by_the_validator(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(corpus), "new", "demo-fresh", "--system", "nccl"]) == 0
    path = corpus / "entries/nccl/demo-fresh.yaml"
    assert path.is_file()
    capsys.readouterr()
    assert main(["--root", str(corpus), "validate"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert "entries/nccl/demo-fresh.yaml:4:1: title: must not be empty" in err
    assert "entries/nccl/demo-fresh.yaml:7:1: severity: expected one of: low, medium, high, critical; got ''" in err
    assert "entries/nccl/demo-fresh.yaml:15:1: observations: needs at least 1 item(s)" in err
    assert "entries/nccl/demo-fresh.yaml:26:3: verify.step: must not be empty" in err
    assert err[-1] == "Found 17 problems in 1 file(s); nothing was written."
    assert main(["--root", str(corpus), "new", "demo-fresh"]) == 1
    assert "already exists" in capsys.readouterr().err


def test_new_rejects_bad_ids_and_systems(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(corpus), "new", "Bad_Id"]) == 1
    assert main(["--root", str(corpus), "new", "good-id", "--system", "ncl"]) == 1
    err = capsys.readouterr().err
    assert "must be kebab-case" in err and "did you mean 'nccl'?" in err


def test_schema_command_prints_entry_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "Trainwreck entry"
    assert "communication" in schema["properties"]["category"]["enum"]
    assert all("description" in field for field in schema["properties"].values())


def test_every_model_field_is_documented() -> None:
    from pydantic import BaseModel

    from generator import index, schema

    models = [
        m
        for mod in (schema, index)
        for m in vars(mod).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == mod.__name__
    ]
    undocumented = [f"{m.__name__}.{n}" for m in models for n, f in m.model_fields.items() if not f.description]
    assert undocumented == []


def test_outside_a_project_is_a_message(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "generator", "validate"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: no Trainwreck project (site.yaml and entries/)")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "command", [[sys.executable, "-m", "generator"], [str(Path(sys.executable).parent / "trainwreck")]]
)
def test_a_build_run_as_a_command_writes_its_report_and_site_before_it_exits(
    corpus: Path, tmp_path: Path, command: list[str]
) -> None:
    # A build leaves its objects to the process's exit, which must still flush what it printed.
    out = tmp_path / "site"
    result = subprocess.run(
        [*command, "--root", str(corpus), "build", "--no-search", "--out", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Built 19 pages (2 entries, 2 signatures) into {out} in ")
    assert result.stderr.count("warning: ") == 7
    assert (out / "failures/demo-nan/index.html").read_text(encoding="utf-8").endswith("</html>\n")
    failed = subprocess.run([*command, "--root", str(tmp_path), "build"], capture_output=True, text=True)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert "site.yaml: file is missing" in failed.stderr and "Traceback" not in failed.stderr


def test_committed_schemas_are_current() -> None:
    from generator.index import json_schemas
    from tests.conftest import ROOT

    for name, schema in json_schemas().items():
        committed = json.loads((ROOT / "schema" / name).read_text(encoding="utf-8"))
        assert committed == schema, f"schema/{name} is stale: run `trainwreck schema --out schema`"


def test_unused_tag_is_a_located_warning(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tags = corpus / "tags.yaml"
    tags.write_text(tags.read_text() + "  lonely:\n    title: Lonely\n    description: Used by nothing.\n")
    assert main(["--root", str(corpus), "validate", "--strict"]) == 1
    err = capsys.readouterr().err
    expected = "warning: tags.yaml:8:3: tags.lonely: tag is used by no entry (hint: remove it or tag an entry with it)"
    assert expected in err
