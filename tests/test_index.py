"""The signature index is a public contract: it must validate against the schemas it publishes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema

from generator.contract import INDEX_VERSION as SCHEMA_VERSION


def _schema(site: Path, name: str) -> dict:
    schema = json.loads((site / "api/v1/schema" / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_entries_json_matches_its_schema(corpus_site: Path) -> None:
    data = json.loads((corpus_site / "api/v1/entries.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, _schema(corpus_site, "entries.schema.json"))
    assert data["schema_version"] == SCHEMA_VERSION
    assert [e["id"] for e in data["entries"]] == ["demo-hang", "demo-nan"]
    assert data["entries"][0]["signatures"] == ["demo-hang/1", "demo-hang/2"]


def test_every_signature_line_matches_its_schema(corpus_site: Path) -> None:
    schema = _schema(corpus_site, "signature.schema.json")
    lines = (corpus_site / "api/v1/signatures.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    for line in lines:
        jsonschema.validate(json.loads(line), schema)


def test_schema_rejects_a_record_with_a_missing_field(corpus_site: Path) -> None:
    schema = _schema(corpus_site, "signature.schema.json")
    record = json.loads((corpus_site / "api/v1/signatures.jsonl").read_text(encoding="utf-8").splitlines()[0])
    del record["fix"]
    try:
        jsonschema.validate(record, schema)
    except jsonschema.ValidationError as exc:
        assert "'fix' is a required property" in exc.message
    else:
        raise AssertionError("schema accepted a record without 'fix'")


def test_grep_answers_a_question(corpus_site: Path) -> None:
    out = subprocess.run(
        ["grep", "-i", "watchdog caught", str(corpus_site / "api/v1/signatures.jsonl")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == 1
    record = json.loads(out[0])
    assert record["url"] == "https://example.org/docs/failures/demo-hang/"
    assert record["fix"].startswith("Fix the exception on the rank that left")


def test_entry_schema_validates_shipped_yaml_shape(corpus_site: Path) -> None:
    import yaml

    from tests.conftest import CORPUS

    schema = _schema(corpus_site, "entry.schema.json")
    for path in sorted((CORPUS / "entries").rglob("*.yaml")):
        data = json.loads(json.dumps(yaml.safe_load(path.read_text(encoding="utf-8")), default=str))
        jsonschema.validate(data, schema)
    bad = {**data, "category": "gpu"}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
