"""Compute an entry's FAQ from its fields; a question whose fields are empty is left out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generator.contract import entry_path
from generator.link import Catalog
from generator.markup import render_link_list, show_controls
from generator.schema import Entry
from generator.taxonomy import CATEGORIES, SYSTEMS

EXAMPLE_LINES = 2
LIST_ITEMS = 3


@dataclass(frozen=True)
class FaqItem:
    """One question and its answer in Markdown."""

    question: str
    answer: str
    html: str | None = None  # the answer rendered, where writing its HTML costs less than parsing it


# An answer: Markdown, or Markdown with its HTML.
Answer = str | tuple[str, str]


def article(word: str) -> str:
    """Return 'a' or 'an' for the word that follows, by its sound rather than its spelling."""
    if word.isupper() and len(word) > 1:
        # Initialisms are read letter by letter: "an NCCL error", "a CUDA error" is read as a word.
        return "an" if word[0] in "AEFHILMNORSX" and not _pronounced(word) else "a"
    lowered = word.lower()
    if lowered.startswith(("uni", "use", "usu", "eu", "one")):
        return "a"
    if lowered.startswith(("hour", "honest", "honou")):
        return "an"
    return "an" if lowered[:1] in "aeiou" else "a"


def _pronounced(word: str) -> bool:
    """Return True for initialisms read as words (CUDA, NaN), which take the article of their sound."""
    return word in {"CUDA", "SHARP", "NASA", "RAM", "LAN", "NaN"}


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _code(text: str) -> str:
    """Wrap text as inline code, choosing a fence that the text does not contain."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _production(entry: Entry, _: Catalog) -> str:
    parts = []
    exact = [s for s in entry.signatures if not s.search_key]
    if exact:
        lines = [show_controls(ex) for s in exact for ex in s.examples][:EXAMPLE_LINES]
        block = "\n".join(lines)
        parts.append(f"The log shows lines like these:\n\n```text\n{block}\n```")
    elif entry.fingerprint:
        parts.append("It prints no error line of its own. What you see is in the metrics and the run itself:")
    parts.append(_bullets(entry.observations[:LIST_ITEMS]))
    return "\n\n".join(parts)


_LAYER = {
    "hardware": "It is a hardware problem: the fault sits in the GPU, its memory or its links, "
    "not in the training code.",
    "software": "It is a software problem: the hardware does what it is told.",
    "configuration": "It is a configuration problem: the code and the hardware are sound, "
    "but the settings that join them disagree.",
    "mixed": "It can be either: the same symptom comes from software on some jobs and from hardware on others.",
}


def _layer(entry: Entry, _: Catalog) -> str:
    category = CATEGORIES[entry.category].name.lower()
    lead = f"{_LAYER[entry.layer]} The encyclopedia files it as {article(category)} {category} failure."
    return f"{lead} Its root causes:\n\n{_bullets(entry.root_causes[:LIST_ITEMS])}"


def _time_to_fix(entry: Entry, _: Catalog) -> str | None:
    return entry.time_to_fix


_PHASE = {
    "training": "It strikes during training.",
    "inference": "It strikes during inference and serving.",
    "both": "It strikes in training and in inference alike.",
}


def _phase(entry: Entry, _: Catalog) -> str:
    systems = []
    for ref in entry.systems:
        name = SYSTEMS[ref.id].name
        systems.append(f"{name} ({ref.note})" if ref.note else name)
    return f"{_PHASE[entry.phase]} Systems involved:\n\n{_bullets(systems)}"


def _cheapest(entry: Entry, _: Catalog) -> str:
    first = entry.confirm[0]
    parts = [first.step]
    if first.command:
        parts.append(f"```{first.language}\n{first.command.rstrip()}\n```")
    parts.append(first.outcome)
    return "\n\n".join(parts)


def _diagnose(entry: Entry, _: Catalog) -> str:
    exact = [s for s in entry.signatures if not s.search_key]
    keys = [s for s in entry.signatures if s.search_key]
    if exact:
        noun = "this line" if len(exact) == 1 else "these lines"
        answer = f"Yes. `trainwreck diagnose` recognises it from {noun}:\n\n" + _bullets(
            [_code(s.pattern) for s in exact]
        )
        if entry.collateral and entry.collateral.usually:
            answer += (
                "\n\nThis error is usually a downstream report: look for an earlier failure, often on "
                "another rank, before acting on it."
            )
        return answer
    if keys:
        return (
            "Only as a lead. No upstream source was found that prints these words verbatim, so they are "
            "matched as search keys and reported with low confidence:\n\n" + _bullets([_code(s.pattern) for s in keys])
        )
    metrics = ", ".join(_code(f.metric) for f in entry.fingerprint)
    return (
        "No. This failure prints no log line of its own, so no log scan can find it. "
        f"Alert on {metrics} instead, as the [monitoring fingerprint](#fingerprint) describes."
    )


def _related(entry: Entry, catalog: Catalog) -> Answer | None:
    ids = catalog.related.get(entry.id, [])
    if not ids:
        return None
    return _links("Check these next:", [(catalog.entries[i].title, catalog.site.path(entry_path(i))) for i in ids])


def _links(intro: str, links: list[tuple[str, str]]) -> Answer:
    markdown = _bullets([f"[{label}]({url})" for label, url in links])
    markdown = f"{intro}\n\n{markdown}" if intro else markdown
    html = render_link_list(intro, links)
    return markdown if html is None else (markdown, html)


def _recurrence(entry: Entry, _: Catalog) -> str | None:
    if not entry.recurrence:
        return None
    if not entry.prevention:
        return entry.recurrence
    return f"{entry.recurrence}\n\nTo keep it away:\n\n{_bullets(entry.prevention[:LIST_ITEMS])}"


def _scale(entry: Entry, _: Catalog) -> str | None:
    if entry.scale is None:
        return None
    rows = [f"**On one GPU.** {entry.scale.single_gpu}"]
    if entry.scale.single_node:
        rows.append(f"**On one node.** {entry.scale.single_node}")
    rows.append(f"**At 64 GPUs and beyond.** {entry.scale.large_scale}")
    return "\n\n".join(rows)


def _fingerprint(entry: Entry, _: Catalog) -> str | None:
    if not entry.fingerprint:
        return None
    items = []
    for f in entry.fingerprint:
        window = f" Window: {f.window.rstrip('.')}." if f.window else ""
        items.append(f"{_code(f.metric)}: {f.shape}{window}")
    return _bullets(items)


def _documentation(entry: Entry, _: Catalog) -> Answer | None:
    if not entry.references:
        return None
    return _links("", [(r.title, r.url) for r in entry.references])


def _code_examples(entry: Entry, _: Catalog) -> str | None:
    if not entry.fix.code:
        return None
    stacks = [f"[{c.stack}](#fix-code-{i + 1})" for i, c in enumerate(entry.fix.code)]
    return "Yes, in the fix section, for:\n\n" + _bullets(stacks)


QUESTIONS: list[tuple[str, Callable[[Entry, Catalog], Answer | None]]] = [
    ("How does this failure show up in production?", _production),
    ("Is it a hardware or a software problem?", _layer),
    ("How long does it take to fix?", _time_to_fix),
    ("Does it hit training, inference or both?", _phase),
    ("What is the cheapest way to confirm it?", _cheapest),
    ("Does trainwreck diagnose detect it automatically?", _diagnose),
    ("Which failures are related?", _related),
    ("Will it come back after the fix?", _recurrence),
    ("How does it change from 1 GPU to 1,000?", _scale),
    ("Which metric fingerprints it?", _fingerprint),
    ("Where is it documented?", _documentation),
    ("Is there code to fix it?", _code_examples),
]


def expand_faq(entry: Entry, catalog: Catalog) -> list[FaqItem]:
    """Return the FAQ items whose fields are present, in the fixed question order."""
    items = []
    for question, answer_of in QUESTIONS:
        answer = answer_of(entry, catalog)
        if isinstance(answer, tuple):
            items.append(FaqItem(question, *answer))
        elif answer:
            items.append(FaqItem(question, answer))
    return items
