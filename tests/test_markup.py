"""The Markdown that pages write without the parser renders exactly as the parser renders it."""

from __future__ import annotations

import random

import pytest
import yaml

from generator.markup import _code_spans, _compose, _parser, markdown_text, render_inline, render_markdown
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
