"""Reading YAML with positions."""

from __future__ import annotations

import shutil
from pathlib import Path

from generator.load import dotted, load_sources, load_yaml


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


def test_hostile_values_are_problems_not_exceptions(tmp_path: Path) -> None:
    # Each of these once raised out of the loader: a date that does not exist, nesting past the
    # recursion limit, and a control character that made feed.xml ill-formed.
    assert [str(p) for p in _load(tmp_path, "added: 2026-13-45\n")[1]] == [
        "entries/e.yaml:1:1: added: '2026-13-45' is not a valid value: month must be in 1..12"
    ]
    deep = _load(tmp_path, "title: " + "[" * 999 + "]" * 999 + "\n")[1]
    assert [p.message for p in deep] == ["nested more than 32 levels deep"]
    assert [str(p) for p in _load(tmp_path, 'title: "a \\a bell"\n')[1]] == [
        "entries/e.yaml:1:1: title: control character U+0007 is not allowed "
        "(hint: remove it; pages, feeds and terminals cannot show it)"
    ]


def test_a_billion_laughs_key_is_refused_without_being_expanded(tmp_path: Path) -> None:
    lines = ['a: &a ["lol"' + ',"lol"' * 8 + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    # 9**9 strings if the key were built; as a key it is refused before anything is constructed.
    doc, problems = _load(tmp_path, "\n".join(lines) + "\n? *i\n: x\n")
    # An alias carries the position of its anchor, the list on line 9.
    assert "entries/e.yaml:9:4: a key must be plain text" in [str(p) for p in problems]
    assert set(doc.data) == set("abcdefghi")


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "fixtures" / "corpus", root)
    return root


def test_files_that_look_like_content_but_cannot_be_read_as_it_are_named(tmp_path: Path) -> None:
    root = _project(tmp_path)
    outside = tmp_path / "secret.yaml"
    outside.write_text("id: secret\n")
    (root / "entries" / "demo" / "out.yaml").symlink_to(outside)
    (root / "entries" / "demo" / "gone.yaml").symlink_to(tmp_path / "missing.yaml")
    shutil.copy(root / "entries" / "demo" / "demo-nan.yaml", root / "entries" / "demo" / "Upper.YAML")
    problems = load_sources(root).problems
    assert [str(p) for p in problems] == [
        "entries/demo/Upper.YAML: the extension must be lower case: rename it to Upper.yaml",
        "entries/demo/gone.yaml: symbolic link to a file that does not exist",
        "entries/demo/out.yaml: links to a file outside the project",
    ]


def test_an_empty_entries_folder_is_a_problem(tmp_path: Path) -> None:
    root = _project(tmp_path)
    shutil.rmtree(root / "entries")
    (root / "entries").mkdir()
    assert [str(p) for p in load_sources(root).problems] == [
        "entries/: no entries found (expected entries/<system>/<id>.yaml)"
    ]


def test_a_diagnosis_example_that_is_not_a_corpus_case_is_named(tmp_path: Path) -> None:
    root = _project(tmp_path)
    site = root / "site.yaml"
    site.write_text(
        site.read_text()
        + "examples:\n  - case: tests/no-such-case\n    label: Nothing\n  - case: ../..\n    label: Out\n"
    )
    assert [str(p) for p in load_sources(root).problems] == [
        "site.yaml:7:5: examples[0].case: tests/no-such-case: not a corpus case folder (no readable case.yaml)",
        "site.yaml:9:5: examples[1].case: the case folder is outside the project",
    ]
