"""Reading YAML with positions."""

from __future__ import annotations

from pathlib import Path

from generator.load import dotted, load_yaml


def _load(tmp_path: Path, text: str | bytes):
    path = tmp_path / "e.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_yaml(path, "entries/e.yaml")


def test_positions_of_keys_and_items(tmp_path: Path) -> None:
    doc, problems = _load(tmp_path, "id: x\nfix:\n  code:\n    - language: python\n      code: pass\n")
    assert problems == []
    assert doc.positions[("fix", "code", 0, "language")] == (4, 7)
    assert doc.locate(("fix", "code", 0, "missing")) == (4, 7)
    assert dotted(("fix", "code", 0, "language")) == "fix.code[0].language"


def test_aliases_are_refused(tmp_path: Path) -> None:
    _, problems = _load(tmp_path, "a: &x [1, 2]\nb: *x\n")
    assert [str(p) for p in problems] == ["entries/e.yaml:2:1: b: YAML anchors and aliases are not allowed"]


def test_unquoted_boolean_words_are_remembered(tmp_path: Path) -> None:
    doc, _ = _load(tmp_path, "tags: [on, 'no']\nflag: true\n")
    assert doc.boolean_words == {("tags", 0): "on", ("flag",): "true"}


def test_unreadable_inputs_are_problems_not_exceptions(tmp_path: Path) -> None:
    assert str(_load(tmp_path, "")[1][0]) == "entries/e.yaml:1:1: file is empty"
    assert (
        str(_load(tmp_path, "- a\n- b\n")[1][0]) == "entries/e.yaml:1:1: expected a mapping of fields at the top level"
    )
    assert str(_load(tmp_path, b"id: \xff\n")[1][0]) == "entries/e.yaml: file is not UTF-8 (byte 4)"
    assert str(_load(tmp_path, "a: [1,\n")[1][0]).startswith("entries/e.yaml:2:1: invalid YAML:")
    assert "larger than" in str(_load(tmp_path, "a: " + "x" * (1 << 20))[1][0])
