"""Property-based tests: no input makes the loader, the validator, the regex rules or diagnose crash or hang.

The suite runs 150 examples per target from a fixed seed, so CI sees the same ones every time;
`TRAINWRECK_FUZZ_EXAMPLES=10000 python -m pytest tests/test_fuzz.py` runs a long, random campaign.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.diagnose.run import Engine
from generator.load import load_yaml
from generator.patterns import regex_problem

EXAMPLES = int(os.environ.get("TRAINWRECK_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="TRAINWRECK_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
CORPUS = Path(__file__).parent / "fixtures" / "corpus"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(["2026-13-45", "on", "no", "~", "0x1F", "1e400", "!!binary AAA", "&a", "*a"]),
)
trees = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
    max_leaves=30,
)
# Field names an entry really has, so the validator gets past the top level often.
FIELDS = ["id", "title", "summary", "category", "severity", "signatures", "examples", "fix", "verify", "tags"]
entry_like = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=10), trees, max_size=8)


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes_load_as_problems_never_exceptions(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("y") / "e.yaml"
    path.write_bytes(data)
    _doc, problems = load_yaml(path, "entries/e.yaml")
    assert all(p.path == "entries/e.yaml" for p in problems)


@FUZZ
@given(trees)
def test_any_yaml_tree_loads_as_data_or_problems(tmp_path_factory: pytest.TempPathFactory, tree: object) -> None:
    path = tmp_path_factory.mktemp("y") / "e.yaml"
    path.write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    load_yaml(path, "entries/e.yaml")


@FUZZ
@given(entry_like)
def test_any_entry_validates_to_ok_or_located_problems(tmp_path_factory: pytest.TempPathFactory, tree: dict) -> None:
    root = tmp_path_factory.mktemp("p") / "project"
    shutil.copytree(CORPUS, root)
    (root / "entries" / "demo" / "fuzz.yaml").write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    # 1 with located problems, or 0; never an exception out of main().
    assert main(["--root", str(root), "-q", "validate"]) in (0, 1)


# Regexes from the grammar signatures are written in: literals, classes, groups, alternation and
# quantifiers, nested. The classes overlap in many ways (a single character or '.' between two repeats
# can join them), repeats nest, bounded inside unbounded and the other way round, and up to five pieces
# stand side by side, as in the shapes that once slipped through: (?:.{0,3})*\d{2}, .*.[^,]*x.
atoms = st.sampled_from(
    ["a", "b", "x", "1", r"\d", r"\w", r"\s", r"\S", ".", "[ab]", "[a-z]", "[^,]", "[^ ]", r"[\d.]", r"\.", " ", ":"]
)
quantifiers = st.sampled_from(["", "", "", "*", "+", "?", "*?", "{0,3}", "{1,3}", "{1,40}", "{2}", "{2,}"])
anchors = st.sampled_from([r"\b", "^", "$"])


def _regex(depth: int = 3) -> st.SearchStrategy[str]:
    piece = st.builds(lambda a, q: a + q, atoms, quantifiers)
    if depth == 0:
        return st.lists(piece, min_size=1, max_size=5).map("".join)
    inner = _regex(depth - 1)
    group = st.builds(
        lambda alts, q: "(?:" + "|".join(alts) + ")" + q, st.lists(inner, min_size=1, max_size=3), quantifiers
    )
    return st.lists(piece | piece | group | anchors, min_size=1, max_size=5).map("".join)


def _too_slow(_signum: int, _frame: object) -> None:
    raise TimeoutError


ADVERSARIAL = [
    "a" * 3000 + "!",
    " " * 3000 + "!",
    "ab" * 1500 + "!",
    "1" * 3000 + "!",
    "x:" * 1500,
    "x" * 3000 + "!",
    "1." * 1500 + "!",
    "a " * 1500 + ",",
]


@FUZZ
@given(_regex())
def test_a_regex_the_rules_accept_runs_in_bounded_time(pattern: str) -> None:
    if regex_problem(pattern) is not None:
        return
    rx = re.compile(pattern, re.ASCII)
    for text in ADVERSARIAL:
        # Linear patterns take microseconds on 3,000 characters; a backtracking one takes seconds or
        # years, so the search is cut off by an alarm and reported rather than waited for.
        signal.signal(signal.SIGALRM, _too_slow)
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            rx.search(text)
        except TimeoutError:
            pytest.fail(f"the rules accept {pattern!r}, which backtracks on {text[:12]!r}…")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


@FUZZ
@given(st.binary(max_size=4000) | st.text(max_size=2000).map(str.encode))
def test_any_log_is_diagnosed_or_refused_with_a_message(
    engine: Engine, tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    log = tmp_path_factory.mktemp("l") / "train.log"
    log.write_bytes(data)
    report, problems = engine.diagnose([str(log)])
    assert all(isinstance(p, str) and p.startswith(str(log)) for p in problems)
    assert report.inputs == ([] if problems else [str(log)])
