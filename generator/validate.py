"""Turn parsed documents into typed models, reporting every schema problem with its position."""

from __future__ import annotations

import datetime as dt
import difflib
import gc
import hashlib
import io
import multiprocessing
import pickle
import re
import types
import typing
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel
from pygments.lexers import get_all_lexers

from generator.codecheck import blocks
from generator.codecheck import problems as block_problems
from generator.diagnose import rules
from generator.errors import Problem
from generator.load import Document, Example, Memo, Path_, Sources, parse_yaml, read_problem
from generator.markup import plain_text, render_inline
from generator.patterns import compile_signature, regex_problem
from generator.schema import (
    ID_PATTERN,
    SOURCE_PATTERN,
    URL_PATTERN,
    Entry,
    Hub,
    SiteConfig,
    Tags,
)
from generator.taxonomy import CATEGORIES, SYSTEMS

M = TypeVar("M", bound=BaseModel)


def closest(word: str, choices: typing.Iterable[str], n: int = 3) -> list[str]:
    """Return up to n choices that look like word, best first."""
    return difflib.get_close_matches(word, sorted(choices), n=n, cutoff=0.5)


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """Return a 'did you mean' hint, or '' when nothing is close."""
    near = [repr(c) for c in closest(word, choices)]
    if not near:
        return ""
    return "did you mean " + (", ".join(near[:-1]) + " or " + near[-1] if len(near) > 1 else near[0]) + "?"


def item_type(annotation: Any) -> Any:
    """Strip Annotated, Optional, list[...] and dict[...] down to the item type."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (list, typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = args[0]
        elif origin is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return annotation


def _model_at(model: type[BaseModel], loc: Path_) -> type[BaseModel] | None:
    """Return the model class that owns the last key of loc."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            # A dict[str, Model] level (tags.yaml): the key is data, not a field.
            continue
        current = item_type(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


# What a value that fails one of the schema's patterns should have been, in an author's words.
PATTERN_MEANINGS = {
    ID_PATTERN: "expected a kebab-case id (a-z, 0-9, '-')",
    URL_PATTERN: "expected an http(s) URL",
    SOURCE_PATTERN: "expected 'owner/repo:path', 'pypi:package==version:path' or 'docs:https://…'",
}


def _describe(error: Any, model: type[BaseModel], doc: Document) -> tuple[str, str]:
    """Return the message and hint for one pydantic error."""
    kind, loc, ctx = error["type"], tuple(error["loc"]), error.get("ctx") or {}
    value = error.get("input")
    if kind == "missing":
        return "required field is missing", ""
    if kind == "extra_forbidden":
        owner = _model_at(model, loc)
        names = list(owner.model_fields) if owner else []
        return "unknown field", did_you_mean(str(loc[-1]), names)
    if loc in doc.boolean_words and kind != "bool_type":
        word = doc.boolean_words[loc]
        return (
            f"expected text, but YAML read the unquoted word {word} as {str(value).lower()}",
            f"quote it: '{word}'",
        )
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        choices = [c.strip() for c in expected.split(",")]
        return f"expected one of: {expected}; got {value!r}", did_you_mean(str(value), choices)
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        expected = PATTERN_MEANINGS.get(pattern, f"does not match {pattern}")
        return f"{expected}; got {value!r}", ""
    if kind == "value_error":
        message = str(ctx.get("error", error["msg"]))
        if message.startswith("unknown category"):
            return message, did_you_mean(str(value), CATEGORIES) or f"choose one of: {', '.join(sorted(CATEGORIES))}"
        if message.startswith("unknown system"):
            return message, did_you_mean(str(value), SYSTEMS)
        return message, ""
    if kind == "string_too_short":
        return "must not be empty", ""
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length', 1)} item(s)", ""
    if kind == "string_too_long":
        return f"is longer than {ctx.get('max_length')} characters", ""
    if kind in (
        "string_type",
        "list_type",
        "dict_type",
        "model_type",
        "bool_type",
        "date_from_datetime_parsing",
        "date_parsing",
        "date_type",
        "model_attributes_type",
    ):
        expected = {
            "string_type": "text",
            "list_type": "a list",
            "dict_type": "a mapping",
            "model_type": "a mapping of fields",
            "model_attributes_type": "a mapping of fields",
            "bool_type": "true or false",
        }.get(kind, "a date as YYYY-MM-DD")
        return f"expected {expected}; got {_yaml_kind(value)}", ""
    return error["msg"], ""


def _yaml_kind(value: Any) -> str:
    """Name a YAML value's type the way an author thinks of it."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)


def validate_document(model: type[M], doc: Document) -> tuple[M | None, list[Problem]]:
    """Validate one document against a model; return the model or every problem found."""
    try:
        return model.model_validate(doc.data), []
    except pydantic.ValidationError as exc:
        problems = []
        for error in exc.errors():
            message, hint = _describe(error, model, doc)
            loc = tuple(error["loc"])
            # Model-level checks name their field as a 'field: message' prefix.
            if not loc and (named := re.match(r"^(\w+): (.*)$", message)):
                loc, message = (named.group(1),), named.group(2)
            problems.append(doc.problem(loc, message, hint))
        return None, problems


# Sections an entry may leave empty, which its page then leaves out (a warning, an error under --strict).
OPTIONAL = ("symptoms", "misread_as", "prevention", "references", "scale", "collateral")


class SystemCard(typing.NamedTuple):
    """A system an entry names, as its card holds it (SystemRef's fields)."""

    id: str
    note: str | None


class HubCard(typing.NamedTuple):
    """An entry's row in a hub, as its card holds it (HubRef's fields)."""

    hub: str
    indicates: str
    tell_apart: str | None
    group: str | None


class SignatureCard(typing.NamedTuple):
    """A signature as the cross-entry checks and hub rows read it (Signature's fields and properties)."""

    kind: str
    pattern: str
    examples: tuple[str, ...]
    refines: tuple[str, ...]
    search_key: bool
    lead: bool


class CollateralCard(typing.NamedTuple):
    """Whether an entry's error is usually collateral, as its card holds it (Collateral's fields)."""

    usually: bool
    local: bool
    note: str


class Packed:
    """An entry model, pickled and compressed, as its card holds it: given out of band where a pickler takes buffers.

    The memo's whole file is written so (load.Memo): ten thousand models, kept apart from the cards and
    mapped back in, are never read unless a page needs one.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes | memoryview | pickle.PickleBuffer) -> None:
        self.data = data

    def __reduce_ex__(self, protocol: typing.SupportsIndex) -> tuple[type[Packed], tuple[object]]:
        if int(protocol) >= 5:
            return Packed, (pickle.PickleBuffer(self.data),)  # in band as bytes, unless the pickler takes it
        return Packed, (bytes(self.data),)


@dataclass(frozen=True)
class EntryCard:
    """An entry as the rest of the build reads it, with its whole model kept pickled.

    Listings, hubs, feeds and the cross-entry checks read only these fields; the entry's own page and
    the index unpickle the model (entry()), so a large site's entries are never all held as models.
    """

    id: str
    title: str
    summary: str
    summary_html: str  # the summary's Markdown rendered, as every list of entries shows it
    description: str  # the summary as plain text, for meta descriptions, JSON-LD and the feed
    category: str
    severity: str
    # Plain tuples rather than the models: a warm build unpickles 10,000 cards, models at 2.5 times the cost.
    systems: tuple[SystemCard, ...]
    hubs: tuple[HubCard, ...]
    tags: list[str]
    related: list[str]
    wraps: list[str]
    signatures: tuple[SignatureCard, ...]
    collateral: CollateralCard | None
    added: dt.date
    updated: dt.date
    empty: tuple[str, ...]  # the OPTIONAL sections it leaves empty
    fix_code: bool  # whether its fix has code examples
    checked: str  # a digest of what the cross-entry signature checks read of it (link._signature_key)
    row: str  # a digest of what a listing's row of it reads (render.EntryRow), which many pages' keys take
    digest: str  # of the model's content: equal entries, equal digests, in any process
    model: Packed = field(repr=False, compare=False)  # the Entry, pickled and compressed

    @classmethod
    def of(cls, entry: Entry) -> EntryCard:
        """The card of a validated entry."""
        # Rendered here, in the process that checks the entry, and kept with it between builds.
        summary_html = render_inline(entry.summary)
        checked = [(s.kind, s.pattern, s.examples, s.refines) for s in entry.signatures]
        row = (entry.id, entry.title, summary_html, entry.category, entry.severity, [s.id for s in entry.systems])
        return cls(
            entry.id,
            entry.title,
            entry.summary,
            summary_html,
            plain_text(summary_html),
            entry.category,
            entry.severity,
            tuple(SystemCard(r.id, r.note) for r in entry.systems),
            tuple(HubCard(r.hub, r.indicates, r.tell_apart, r.group) for r in entry.hubs),
            entry.tags,
            entry.related,
            entry.wraps,
            tuple(
                SignatureCard(s.kind, s.pattern, tuple(s.examples), tuple(s.refines), s.search_key, s.lead)
                for s in entry.signatures
            ),
            CollateralCard(c.usually, c.local, c.note) if (c := entry.collateral) else None,
            entry.added,
            entry.updated,
            tuple(name for name in OPTIONAL if not getattr(entry, name)),
            bool(entry.fix.code),
            plain_digest((entry.id, checked, entry.wraps)),
            plain_digest(row),
            hashlib.sha256(entry.model_dump_json().encode()).hexdigest(),
            # Compressed: a large site holds thousands of cards, and unpacking one costs less than 0.1 ms.
            Packed(zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), 1)),
        )

    def entry(self) -> Entry:
        """The whole entry."""
        entry = pickle.loads(zlib.decompress(self.model.data))
        assert isinstance(entry, Entry)
        return entry


def plain_digest(value: object) -> str:
    """A SHA-256 of plain data (strings, numbers, dates, and containers and dataclasses of them): alike anywhere."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    # No memo: with one, two equal strings pickle as one or two by whether they are one object. Pickling
    # rather than repr: repr escapes every character of a string, and took a tenth of a warm build.
    # A dataclass pickles its __dict__, cached properties included: give a listing row as its digest
    # (render._rows_as_digests), never the row, which is digested far faster that way.
    pickler.fast = True
    pickler.dump(value)
    return hashlib.sha256(buffer.getbuffer()).hexdigest()


# What checking one entry file finds: its card (None when it is broken), its problems, the regexes
# among its signatures that are unsafe to run, and the id it declares (or its file name's).
Checked = tuple[EntryCard | None, list[Problem], frozenset[str], str]


def collect_from_here() -> None:
    """In a process forked from a build: collect cyclic garbage again, of the objects made from now on only.

    The build runs without collections (build.fewer_collections); the objects it made are frozen first, or
    the first collection would walk them all and copy every page of memory it shares with the build.
    """
    gc.freeze()
    gc.enable()


def check_entry(doc: Document, found: list[Problem] | None = None) -> Checked:
    """Validate one parsed entry and run the checks it passes on its own."""
    problems = list(found or [])
    model = None
    unsafe: frozenset[str] = frozenset()
    if doc.data is not None and not problems:
        model, problems = validate_document(Entry, doc)
        if model is not None:
            more, unsafe = entry_problems(model, doc)
            problems += more
    card = EntryCard.of(model) if model is not None else None
    return card, problems, unsafe, _declared_id(doc)


def check_entry_file(item: tuple[str, bytes]) -> Checked:
    """Parse and check one entry file's (name, bytes)."""
    display, raw = item
    doc, found = parse_yaml(display, raw)
    return check_entry(doc, found)


def read_and_check(item: tuple[str, str | Path]) -> tuple[bytes, Checked]:
    """Read, parse and check one entry file; return a digest of the bytes checked, and what was found."""
    display, path = item
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return b"", (None, [read_problem(display, exc)], frozenset(), _stem(display))
    return hashlib.sha256(raw).digest(), check_entry_file((display, raw))


# Below this many entries to check, starting worker processes costs more than it saves.
PARALLEL_MIN = 64


def _check_entries(docs: list[Document], memo: Memo | None, jobs: int) -> list[Checked]:
    """Check every entry document, reading those still pending, over jobs processes; in document order.

    A pending file is read in the worker that checks it, so the files' bytes are never all held at once;
    with a memo, each is read here first, to find whether these very bytes were checked before.
    """
    results: list[Checked | None] = [None] * len(docs)
    todo: list[int] = []
    for i, doc in enumerate(docs):
        if not doc.pending or doc.source is None:
            results[i] = check_entry(doc)
            continue
        if memo is not None:
            try:
                results[i] = memo.get(memo.file_key(doc.path, doc.source))
            except OSError:
                pass  # the worker reports it
        if results[i] is None:
            todo.append(i)
    items = [(docs[i].path, typing.cast(str, docs[i].source)) for i in todo]
    if jobs > 1 and len(items) >= PARALLEL_MIN and "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool(jobs, initializer=collect_from_here) as pool:
            fresh = list(pool.imap(read_and_check, items, chunksize=16))
    else:
        fresh = [read_and_check(item) for item in items]
    for i, (digest, checked) in zip(todo, fresh, strict=True):
        results[i] = checked
        if memo is not None and digest:
            memo.put(memo.key(docs[i].path, digest, digested=True), checked)
    for doc in docs:
        doc.pending = False
    if memo is not None:
        memo.forget_unseen()
    return [r for r in results if r is not None]


class Validated(typing.NamedTuple):
    """Every content file as typed models (entries as cards), each with the document it came from."""

    site: SiteConfig | None
    tags: Tags | None
    entries: list[tuple[EntryCard, Document]]
    hubs: list[tuple[Hub, Document]]
    problems: list[Problem]
    entry_ids: frozenset[str]
    hub_ids: frozenset[str]
    tags_doc: Document
    examples: dict[str, Example]
    unsafe: frozenset[str] = frozenset()  # regexes reported as unsafe, which no later check may run
    memo: Memo | None = None  # what a long-running process keeps between builds


def validate_sources(sources: Sources, jobs: int = 1) -> Validated:
    """Validate site.yaml, tags.yaml, every entry (over jobs processes) and every hub; collect all problems."""
    problems = list(sources.problems)
    broken = {p.path for p in problems}

    def check(model: type[M], doc: Document) -> M | None:
        if doc.path in broken or doc.data is None:
            return None
        result, found = validate_document(model, doc)
        problems.extend(found)
        return result

    site = check(SiteConfig, sources.site)
    tags = check(Tags, sources.tags)
    readable = [d for d in sources.entries if d.path not in broken]
    checked = _check_entries(readable, sources.memo, jobs)
    entries = []
    for doc, (card, found, _unsafe, _id) in zip(readable, checked, strict=True):
        problems.extend(found)
        if card is not None:
            entries.append((card, doc))
    unsafe = frozenset(regex for c in checked for regex in c[2])
    hubs = [(h, d) for d in sources.hubs if (h := check(Hub, d)) is not None]
    problems.extend(problem for h, d in hubs for problem in id_problems(h.id, d))
    # Ids of files that failed validation still count, so one broken file does not cascade
    # into "no entry has id" errors in every file that links to it.
    entry_ids = frozenset(c[3] for c in checked) | {_declared_id(d) for d in sources.entries if d.path in broken}
    hub_ids = frozenset(_declared_id(d) for d in sources.hubs)
    return Validated(
        site, tags, entries, hubs, problems, entry_ids, hub_ids, sources.tags, sources.examples, unsafe, sources.memo
    )


def id_problems(declared: str, doc: Document) -> list[Problem]:
    """The problem of an id that differs from its file's name, if it does."""
    stem = _stem(doc.path)
    if declared == stem:
        return []
    hint = f"rename the file to {declared}.yaml or set id: {stem}"
    return [doc.problem(("id",), f"id {declared!r} differs from the file name", hint)]


def _declared_id(doc: Document) -> str:
    declared = doc.data.get("id") if isinstance(doc.data, dict) else None
    return declared if isinstance(declared, str) else _stem(doc.path)


def _stem(path: str) -> str:
    """A file's name without its extension, as PurePosixPath(path).stem, without a path object per file."""
    name = path.rpartition("/")[2]
    return name.rpartition(".")[0] or name


LANGUAGES = frozenset(alias for _name, aliases, _files, _mimes in get_all_lexers() for alias in aliases)
FRAME_LINES = [re.compile(rules.TRACEBACK["frame"], re.ASCII), re.compile(rules.TRACEBACK["box_frame"], re.ASCII)]


def entry_problems(entry: Entry, doc: Document) -> tuple[list[Problem], frozenset[str]]:
    """The checks an entry passes on its own, and the regexes among its signatures that are unsafe to run.

    Its id is its file's name, its regexes are safe, its examples match their own signature, its frame
    examples show their calls in a row, its code blocks name a known language, its fix code is well
    formed, and it does not wrap itself.
    """
    problems: list[Problem] = id_problems(entry.id, doc)
    unsafe = set()
    for i, sig in enumerate(entry.signatures):
        if sig.regex is not None and (why := regex_problem(sig.regex)):
            problems.append(doc.problem(("signatures", i, sig.kind), f"unsafe regex: {why}"))
            unsafe.add(sig.regex)
            continue
        # A literal is a substring test, as the index contract says; compiling it would cost more.
        search = None if sig.kind == "literal" else compile_signature(sig.kind, sig.pattern).search
        for j, example in enumerate(sig.examples):
            if not (sig.pattern in example if search is None else search(example)):
                problems.append(
                    doc.problem(
                        ("signatures", i, "examples", j),
                        "example is not matched by its own signature",
                        f"pattern: {sig.pattern}",
                    )
                )
    for i, frames in enumerate(entry.frames):
        calls = [(c.path, c.function) for c in frames.calls]
        for j, example in enumerate(frames.examples):
            seen = _frames_of(example)
            runs = [seen[k : k + len(calls)] for k in range(len(seen) - len(calls) + 1)]
            if not any(
                all(("/" + p).endswith("/" + cp) and f == cf for (p, f), (cp, cf) in zip(run, calls, strict=True))
                for run in runs
            ):
                problems.append(
                    doc.problem(
                        ("frames", i, "examples", j),
                        "example does not show the calls in a row"
                        if seen
                        else "example holds no frame line ('  File \"…\", line N, in f')",
                        "calls: " + " > ".join(f"{p} in {f}" for p, f in calls),
                    )
                )
    for k, wrapped in enumerate(entry.wraps):
        if wrapped == entry.id:
            problems.append(doc.problem(("wraps", k), "an entry cannot wrap itself"))
    languages: list[tuple[tuple[str | int, ...], str]] = [
        (("confirm", i, "language"), c.language) for i, c in enumerate(entry.confirm) if c.command
    ]
    languages += [(("fix", "code", i, "language"), c.language) for i, c in enumerate(entry.fix.code)]
    if entry.verify.command:
        languages.append((("verify", "language"), entry.verify.language))
    for loc, language in languages:
        if language not in LANGUAGES:
            problems.append(
                doc.problem(
                    loc,
                    f"unknown code language {language!r}",
                    did_you_mean(language, LANGUAGES)
                    or "use a Pygments name such as python, shell, json, yaml or text",
                )
            )
    for block in blocks(entry):
        problems += [doc.problem(block.where, m) for m in block_problems(block, shell_syntax=False)]
    return problems, frozenset(unsafe)


def _frames_of(example: str) -> list[tuple[str, str]]:
    """The (path, function) of each frame line in a frame signature's example."""
    found = []
    for line in example.splitlines():
        for rx in FRAME_LINES:
            if m := rx.match(line.strip(" ")) or rx.match(line):
                found.append((m.group(1).replace("\\", "/"), m.group(3)))
                break
    return found
