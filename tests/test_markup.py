"""The Markdown and code that pages write without the parser or Pygments' own loop render exactly as those do."""

from __future__ import annotations

import functools
import random
import re
from typing import Any, ClassVar

import pytest
import yaml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups, default
from pygments.lexers import get_lexer_by_name
from pygments.token import Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

from generator import lexing
from generator.lexing import joinable, tokens
from generator.markup import (
    _code_spans,
    _compose,
    _lexer,
    _parser,
    highlight_code,
    markdown_text,
    render_inline,
    render_markdown,
)
from tests.conftest import ROOT

# Characters that open no inline rule, among some that do, and the whitespace the renderer splits on.
ALPHABET = "ab_Z09 .,:;#$%+-=>@]^{}|'\"/()?é\u2028\t*`[<&!~\\\n"


def _parsed(text: str) -> str:
    return str(_parser().renderInline(text))


@pytest.mark.parametrize("seed", range(4))
def test_random_lines_render_as_the_parser_renders_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2500):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        assert render_inline(text) == _parsed(text), repr(text)


@pytest.mark.parametrize("seed", range(4))
def test_random_lines_of_code_spans_and_names_render_as_the_parser_renders_them(seed: int) -> None:
    rng = random.Random(seed)
    written = 0
    for _ in range(5000):
        text = "".join(rng.choice("ab Zé9._`` `_\t()²-") for _ in range(rng.randint(0, 30)))
        assert render_inline(text) == _parsed(text), repr(text)
        written += "`" in text and _code_spans(text) is not None
    assert written > 1000, "the random lines reach the direct path"


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_every_line_of_the_shipped_entries_renders_as_the_parser_renders_it() -> None:
    plain = 0
    for path in sorted((ROOT / "entries").rglob("*.yaml")):
        for text in _strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for line in text.splitlines():
                assert render_inline(line) == _parsed(line), (path.name, line)
                plain += "`" not in line and "*" not in line
    assert plain > 1000, "the corpus has plain lines to compare"


@pytest.mark.parametrize("seed", range(4))
def test_random_paragraphs_render_as_the_parser_renders_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2500):
        text = rng.choice("aZé") + "".join(rng.choice(ALPHABET + "\r\x00   ") for _ in range(rng.randint(0, 40)))
        assert render_markdown(text) == str(_parser().render(text)), repr(text)


def test_every_field_of_the_shipped_entries_renders_as_the_parser_renders_it() -> None:
    composed = 0
    for path in sorted([*(ROOT / "entries").rglob("*.yaml"), *(ROOT / "hubs").glob("*.yaml")]):
        for text in _strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            assert render_markdown(text) == str(_parser().render(text)), (path.name, text)
            composed += "\n\n" in text and _compose(text) is not None
    assert composed > 200, "the corpus has prose of several paragraphs and lists written directly"


def _line(rng: random.Random) -> str:
    # Mostly starts that open no block, some that do or may.
    starts = ["a", "Z", "é", "`", "``", "**a", "[x](y) ", "[a b](/c)", "137 ", "3.5 "]
    others = ["```", "", " b", "- ", "#", "=", "1", "*", "[", "** ", "[x]: ", "12) ", "9.", "2. "]
    start = rng.choice(starts if rng.random() < 0.85 else others)
    return start + "".join(rng.choice(ALPHABET.replace("\n", "") + "      ") for _ in range(rng.randint(0, 30)))


def _block(rng: random.Random) -> str:
    lines = [_line(rng) for _ in range(rng.randint(1, 4))]
    lines[1:] = [
        rng.choice(["", "", "", "(", "'", "2. ", "1. ", "01) ", "1.", "[x]: y ", "3"]) + line for line in lines[1:]
    ]
    if rng.random() < 0.2:  # fenced code, which may hold blank lines and fences of its own
        body = rng.choice(["", "x = 1", "a\n\nb", "```python", "  ```", "````", "<b>&amp;</b>", "\tif x:\n\t\ty()"])
        close = rng.choice(["```", "```", "````", "``` ", "```x", ""])
        return f"```{rng.choice(['', 'python', 'text', 'bash', 'c++', 'x y'])}\n{body}\n{close}".rstrip("\n")
    if rng.random() < 0.5:
        return "\n".join(lines)  # a paragraph, or what only looks like one
    return "\n".join(rng.choice(["- ", "- ", "- ", "-", "* ", "1. ", "  "]) + line for line in lines)


@pytest.mark.parametrize("seed", range(4))
def test_random_paragraphs_and_lists_render_as_the_parser_renders_them(seed: int) -> None:
    rng = random.Random(seed)
    composed = 0
    for _ in range(2500):
        blocks = [_block(rng) for _ in range(rng.randint(1, 5))]
        text = "".join(block + rng.choice(["\n\n", "\n\n", "\n", "\n\n\n", "  \n\n"]) for block in blocks)
        text = text.rstrip("\n") if rng.random() < 0.8 else text
        assert render_markdown(text) == str(_parser().render(text)), repr(text)
        composed += _compose(text) is not None
    assert composed > 200, "the random texts reach the direct path"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("**Bold** and *emphasis*, 2*3*4 and a * b, `torch.cuda`.", "Bold and emphasis, 2*3*4 and a * b, torch.cuda."),
        ("# Heading\n- item one\n  2. nested *x*\n> quoted", "Heading\nitem one\nnested x\nquoted"),
        ("Before\n```python\nimport torch\n```\nAfter ~~~ tildes.", "Before\n \nAfter ~~~ tildes."),
        ("See [the guide](https://example.org/guide) first.", "See the guide first."),
        ("*start and end*", "start and end"),
        ("NCCL_DEBUG=INFO *not closed", "NCCL_DEBUG=INFO not closed"),
    ],
)
def test_markdown_text_keeps_the_words_and_drops_the_syntax(text: str, words: str) -> None:
    assert markdown_text(text) == words


@functools.cache
def _code_blocks() -> list[tuple[str, str]]:
    """Every code block of the shipped entries as (language, code): code fields and fenced blocks in prose."""
    blocks = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("code"), str):
                blocks.append((str(value.get("language") or "text"), value["code"]))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            blocks.extend((m[1] or "text", m[2]) for m in re.finditer(r"```(\w*)\n(.*?)```", value, re.DOTALL))

    for path in sorted((ROOT / "entries").rglob("*.yaml")):
        walk(yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    return blocks


@pytest.fixture
def joined_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lexer state joined at its first lookup (by default only a busy one is)."""
    monkeypatch.setattr(lexing, "JOIN_AFTER", 1)
    monkeypatch.setattr(lexing, "_STATES", {})


def test_every_shipped_code_block_highlights_as_pygments_highlights_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexing, "_STATES", {})  # states join part-way through, as in a build
    joined = 0
    for language, code in _code_blocks():
        lexer = _lexer(language)
        expected = highlight(code.rstrip("\n") + "\n", lexer, HtmlFormatter(nowrap=True))
        assert f">{expected}</code></pre>" in highlight_code(code, language), (language, code)
        joined += joinable(lexer)
    assert joined > 500, "most blocks are lexed with joined rules"
    busy = [state for state in lexing._STATES.values() if state.lookups >= lexing.JOIN_AFTER]
    assert busy and all(any(len(rules) > 1 for _, rules in state.runs) for state in busy), "busy states joined"


# Lexers whose rules carry inline flags (Python), backreferences (a Bash heredoc), verbose patterns (TOML),
# callbacks that read a rule's groups (Python's, Bash's) and line-start anchors (diff, INI).
@pytest.mark.parametrize("language", ["python", "bash", "toml", "docker", "ini", "diff", "javascript"])
@pytest.mark.usefixtures("joined_at_once")
def test_random_text_lexes_with_joined_rules_as_pygments_lexes_it(language: str) -> None:
    lexer = _lexer(language)
    assert joinable(lexer)
    code = "".join(code for _, code in _code_blocks())
    rng = random.Random(language)
    pieces = ["<<EOF\n", "EOF\n", "$(", "${x}", "f'{a!r}'", '"""', "\\\n", "#", "[x]\n", "+++ a\n", "-x\n", "/re/g"]
    for _ in range(600):
        start = rng.randrange(len(code))
        text = code[start : start + rng.randint(0, 300)]
        cut = rng.randint(0, len(text))
        text = text[:cut] + "".join(rng.choice(pieces + list(ALPHABET)) for _ in range(rng.randint(0, 8))) + text[cut:]
        assert list(tokens(lexer, text)) == list(lexer.get_tokens(text)), repr(text)
    assert any(len(rules) > 1 for state in lexing._STATES.values() for _, rules in state.runs), "rules were joined"


class _Awkward(RegexLexer):
    """Rules of every kind that an alternation must keep apart: flags, comments, backreferences, group names."""

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"(?i)select\b", Keyword),
            (r"(?x) [0-9]+ # digits, in a verbose pattern that ends in a comment", Number),
            (r"(['\"])(.*?)\1", String),  # a backreference: tried alone
            (r"(?P<w>[a-z]+)(=)", bygroups(Name, Operator)),  # a callback that reads the rule's own groups
            (r"(?P<w>[a-z]+)", Name),  # the same group name again
            (r"\(", Punctuation, "inner"),
            (r"\s+", Whitespace),
        ],
        "inner": [(r"\)", Punctuation, "#pop"), (r"[^()]+", Text), default("#pop")],
    }


@pytest.mark.usefixtures("joined_at_once")
def test_rules_of_every_kind_lex_with_joined_rules_as_pygments_lexes_them() -> None:
    lexer = _Awkward()
    rng = random.Random(7)
    pieces = ["SELECT", "select", "x=", "ab", "12", "'q'", '"r"', "'", "(", ")", " ", "\n", "=", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert list(tokens(lexer, text)) == list(lexer.get_tokens(text)), repr(text)


@pytest.mark.usefixtures("joined_at_once")
def test_a_lexer_with_options_and_filters_lexes_as_pygments_lexes_it() -> None:
    # Options that change the text before lexing, and a filter, which Pygments applies after it.
    for lexer in (get_lexer_by_name("python", tabsize=4, stripall=True), get_lexer_by_name("python")):
        lexer.add_filter("keywordcase", case="upper")
        text = "\n\n\tdef f(x):\n\t\treturn x  \n\n"
        assert list(tokens(lexer, text)) == list(lexer.get_tokens(text))
    plain = get_lexer_by_name("python", tabsize=4, stripall=True)
    assert list(tokens(plain, "\n\tif x:\n\t\ty()\n\n")) == list(plain.get_tokens("\n\tif x:\n\t\ty()\n\n"))
