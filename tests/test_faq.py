"""FAQ answers are computed from fields, read as written, and skip questions without data."""

from __future__ import annotations

import pytest

from generator.build import load_catalog
from generator.faq import article, expand_faq
from tests.conftest import CORPUS, ROOT


@pytest.mark.parametrize(
    "word,expected",
    [
        ("communication", "a"),
        ("hardware", "a"),
        ("optimizer", "an"),
        ("NCCL", "an"),
        ("CUDA", "a"),
        ("MPI", "an"),
        ("HBM", "an"),
        ("unified", "a"),
        ("hour", "an"),
        ("unsafe", "an"),
        ("memory", "a"),
    ],
)
def test_article_follows_sound(word: str, expected: str) -> None:
    assert article(word) == expected


def _faq(entry_id: str) -> dict[str, str]:
    catalog = load_catalog(CORPUS)
    return {item.question: item.answer for item in expand_faq(catalog.entries[entry_id].entry(), catalog)}


def test_answers_keep_author_text_whole() -> None:
    faq = _faq("demo-hang")
    cheapest = faq["What is the cheapest way to confirm it?"]
    # The author's sentences appear intact, capitalised, never spliced into a template sentence.
    assert cheapest.startswith("Find the rank whose log ends first.")
    assert "The file it prints is the rank that left." in cheapest
    assert faq["How long does it take to fix?"] == "Minutes once the first failing rank is found."
    layer = faq["Is it a hardware or a software problem?"]
    assert "an communication" not in layer and "a communication failure" in layer
    assert "- A rank raised an exception and exited." in layer


def test_tags_are_not_treated_as_software() -> None:
    text = "\n".join(_faq("demo-hang").values())
    assert "Hangs is" not in text and "upgrade" not in text.lower()
    systems = _faq("demo-hang")["Does it hit training, inference or both?"]
    assert "- NCCL (NCCL over sockets)" in systems and "Hangs" not in systems


def test_diagnose_answer_depends_on_signatures() -> None:
    assert _faq("demo-hang")["Does trainwreck diagnose detect it automatically?"].startswith("Yes.")
    silent = _faq("demo-nan")["Does trainwreck diagnose detect it automatically?"]
    assert silent.startswith("No.") and "`loss`" in silent


def test_missing_fields_leave_questions_out() -> None:
    faq = _faq("demo-nan")
    for question in (
        "How long does it take to fix?",
        "Will it come back after the fix?",
        "How does it change from 1 GPU to 1,000?",
        "Where is it documented?",
        "Is there code to fix it?",
    ):
        assert question not in faq
    assert list(faq) == [
        "How does this failure show up in production?",
        "Is it a hardware or a software problem?",
        "Does it hit training, inference or both?",
        "What is the cheapest way to confirm it?",
        "Does trainwreck diagnose detect it automatically?",
        "Which metric fingerprints it?",
    ]


def test_answers_written_as_html_match_their_markdown_rendered_for_every_shipped_entry() -> None:
    from generator.markup import _parser, render_markdown

    catalog = load_catalog(ROOT)
    written = 0
    for card in catalog.entries.values():
        for item in expand_faq(card.entry(), catalog):
            parsed = str(_parser().render(item.answer))
            assert render_markdown(item.answer) == parsed, (card.id, item.question)
            if item.html is not None:
                written += 1
                assert item.html == parsed, (card.id, item.question)
    assert written > len(catalog.entries), "the related and documentation answers are written directly"


@pytest.mark.parametrize(
    "links,direct",
    [
        ([('A `b_c` & d "q" *e*', "/x/y/")], True),
        ([("Ü ' é", "https://example.com/ä?q=1&r=2'")], True),
        ([("_under_ **strong** ~~gone~~", "https://example.com/#frag")], True),
        ([("A <f>", "/x/y/")], False),
        ([("plain", "/x/"), ("[bracketed]", "/x/")], False),
        ([("back\\slash", "/y/")], False),
        ([("spaced", "/x y/")], False),
        ([("paren", "/x(1)/")], False),
        ([("script", "javascript:alert(1)")], False),
    ],
)
def test_a_link_list_renders_as_its_markdown_does_or_is_left_to_the_parser(
    links: list[tuple[str, str]], direct: bool
) -> None:
    from generator.markup import render_link_list, render_markdown

    for intro in ("", "Check these next:"):
        markdown = "\n".join(f"- [{label}]({url})" for label, url in links)
        written = render_link_list(intro, links)
        assert (written is not None) == direct
        if written is not None:
            assert written == render_markdown(f"{intro}\n\n{markdown}" if intro else markdown)
