"""Check the entries against each other and index them into one read-only Catalog."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import itemgetter

from generator.errors import ContentError, Problem
from generator.load import Document, Example, Memo
from generator.patterns import compile_signature, required_literal
from generator.schema import DiagnoseExample, Hub, SiteConfig, TagInfo
from generator.validate import EntryCard, HubCard, Validated, did_you_mean, plain_digest

RELATED_LIMIT = 6


@dataclass(frozen=True)
class Catalog:
    """All content, validated and cross-linked; built once, then only read."""

    site: SiteConfig
    entries: dict[str, EntryCard]  # by id; card.entry() is the whole model
    hubs: dict[str, Hub]
    tags: dict[str, TagInfo]
    entry_paths: dict[str, str]
    hub_paths: dict[str, str]
    by_tag: dict[str, list[str]]
    by_category: dict[str, list[str]]
    by_system: dict[str, list[str]]
    hub_rows: dict[str, list[tuple[str, HubCard]]]
    related: dict[str, list[str]]
    backlinks: dict[str, list[str]]
    warnings: list[Problem]
    examples: list[tuple[DiagnoseExample, Example]] = field(default_factory=list)  # for the diagnosis page


def _check_duplicates(validated: Validated, problems: list[Problem]) -> None:
    kinds: list[tuple[str, list[tuple[EntryCard, Document]] | list[tuple[Hub, Document]]]] = [
        ("entry", validated.entries),
        ("hub", validated.hubs),
    ]
    for kind, items in kinds:
        if len({item.id for item, _ in items}) == len(items):
            continue  # as in every site that builds: the loop below only says which
        seen: dict[str, str] = {}
        for item, doc in items:
            if item.id in seen:
                message = f"duplicate {kind} id {item.id!r}"
                problems.append(doc.problem(("id",), message, f"also used by {seen[item.id]}"))
            seen.setdefault(item.id, doc.path)


def _check_references(validated: Validated, problems: list[Problem]) -> None:
    entry_ids = validated.entry_ids
    hubs = {h.id: h for h, _ in validated.hubs}
    tags = validated.tags.tags if validated.tags else {}
    groups_of = {h.id: frozenset(g.id for g in h.groups) for h in hubs.values()}
    for entry, doc in validated.entries:
        if _references_hold(entry, entry_ids, tags, groups_of):
            continue  # as every entry of a site that builds: the checks below only say where it is wrong
        for i, rid in enumerate(entry.related):
            if rid == entry.id:
                problems.append(doc.problem(("related", i), "an entry cannot be related to itself"))
            elif rid not in entry_ids:
                problems.append(doc.problem(("related", i), f"no entry has id {rid!r}", did_you_mean(rid, entry_ids)))
            elif entry.related.index(rid) != i:
                problems.append(doc.problem(("related", i), f"{rid!r} is listed twice"))
        for i, tag in enumerate(entry.tags):
            if tag not in tags:
                hint = did_you_mean(tag, tags) or "declare it in tags.yaml"
                problems.append(doc.problem(("tags", i), f"unknown tag {tag!r}", hint))
            elif entry.tags.index(tag) != i:
                problems.append(doc.problem(("tags", i), f"tag {tag!r} is listed twice"))
        for i, ref in enumerate(entry.hubs):
            hub = hubs.get(ref.hub)
            if hub is None and ref.hub in validated.hub_ids:
                continue  # the hub file itself is broken and reported on its own
            if hub is None:
                problems.append(
                    doc.problem(("hubs", i, "hub"), f"no hub has id {ref.hub!r}", did_you_mean(ref.hub, hubs))
                )
                continue
            groups = [g.id for g in hub.groups]
            if groups and ref.group is None:
                problems.append(
                    doc.problem(
                        ("hubs", i), f"hub {hub.id!r} groups its rows; give a group", f"one of: {', '.join(groups)}"
                    )
                )
            elif ref.group is not None and ref.group not in groups:
                hint = did_you_mean(ref.group, groups) if groups else f"hub {hub.id!r} defines no groups; remove it"
                problems.append(doc.problem(("hubs", i, "group"), f"hub {hub.id!r} has no group {ref.group!r}", hint))


def _references_hold(
    entry: EntryCard, entry_ids: frozenset[str], tags: dict[str, TagInfo], groups_of: dict[str, frozenset[str]]
) -> bool:
    """Whether every id, tag and hub group an entry names exists, once each: the set operations of the checks."""
    related, tagged = entry.related, entry.tags
    if entry.id in related or not entry_ids.issuperset(related) or len(set(related)) != len(related):
        return False
    if not tags.keys() >= set(tagged) or len(set(tagged)) != len(tagged):
        return False
    for ref in entry.hubs:
        groups = groups_of.get(ref.hub)
        if groups is None or (ref.group not in groups if groups else ref.group is not None):
            return False
    return True


def _matcher(kind: str, pattern: str) -> Callable[[str], bool]:
    """Whether a line holds the signature; a literal is a substring test, as the index contract says."""
    if kind == "literal":
        return lambda line: pattern in line
    search = compile_signature(kind, pattern).search
    return lambda line: search(line) is not None


def _check_signatures(validated: Validated, problems: list[Problem]) -> dict[tuple[str, str], Callable[[str], bool]]:
    """Report a signature two entries claim; return a matcher for every signature that is safe to run."""
    owners: dict[tuple[str, str], str] = {}
    matchers: dict[tuple[str, str], Callable[[str], bool]] = {}
    for entry, doc in validated.entries:
        for i, sig in enumerate(entry.signatures):
            key = (sig.kind, sig.pattern)
            if sig.kind == "regex" and sig.pattern in validated.unsafe:
                continue  # reported with its entry; never run
            matchers.setdefault(key, _matcher(*key))
            if key in owners and owners[key] != entry.id:
                problems.append(
                    doc.problem(
                        ("signatures", i, sig.kind),
                        f"signature is already claimed by entry {owners[key]!r}",
                        "each signature belongs to one entry",
                    )
                )
            owners.setdefault(key, entry.id)
    return matchers


WORD = re.compile(r"\w+", re.ASCII)


class _SignatureFinder:
    """Every signature that matches a line, found in time linear in the content rather than quadratic.

    Each signature is filed under one whole word of the text every match must contain (its rarest
    such word), so a line is tried only against the signatures filed under its own words, and
    against the few that have no whole word to file under.
    """

    def __init__(self, signatures: list[tuple[str, tuple[str, str], Callable[[str], bool]]]) -> None:
        self.signatures = signatures
        words_of = [self._words(required_literal(*key)) for _, key, _ in signatures]
        frequency = Counter(word for words in words_of for word in words)
        self.always: list[int] = []
        self.by_word: dict[str, list[int]] = defaultdict(list)
        for position, words in enumerate(words_of):
            if words:
                self.by_word[min(words, key=lambda w: (frequency[w], w))].append(position)
            else:
                self.always.append(position)

    @staticmethod
    def _words(required: str) -> set[str]:
        """The words of the required text that stand whole in it, hence in any line that holds it."""
        return {m.group() for m in WORD.finditer(required) if m.start() > 0 and m.end() < len(required)}

    def owners(self, line: str) -> set[tuple[str, tuple[str, str]]]:
        """The (entry, signature key) of every signature that matches the line."""
        positions = set(self.always)
        for word in set(WORD.findall(line)):
            positions.update(self.by_word.get(word, ()))
        found = set()
        for position in positions:
            entry_id, key, matches = self.signatures[position]
            if matches(line):
                found.add((entry_id, key))
        return found


def _check_refinements(
    validated: Validated, problems: list[Problem], matchers: dict[tuple[str, str], Callable[[str], bool]]
) -> None:
    """Every example must be matched by its own entry only, unless this signature refines the other entry."""
    finder = _SignatureFinder(
        [
            (entry.id, key, matchers[key])
            for entry, _ in validated.entries
            for sig in entry.signatures
            if (key := (sig.kind, sig.pattern)) in matchers
        ]
    )
    refined_by: dict[str, set[str]] = defaultdict(set)
    for entry, _ in validated.entries:
        for sig in entry.signatures:
            for other in sig.refines:
                refined_by[other].add(entry.id)
    for entry, doc in validated.entries:
        for i, sig in enumerate(entry.signatures):
            own = (sig.kind, sig.pattern)
            for j, example in enumerate(sig.examples):
                # An identical signature in another entry is reported once, as a duplicate claim.
                others = sorted({eid for eid, key in finder.owners(example) if eid != entry.id and key != own})
                undeclared = [eid for eid in others if eid not in sig.refines]
                if undeclared:
                    problems.append(
                        doc.problem(
                            ("signatures", i, "examples", j),
                            f"example is also matched by entry {', '.join(map(repr, undeclared))}",
                            "make one of the signatures more specific, or, when this line says more than the "
                            "other entry's, list that entry in this signature's refines",
                        )
                    )
            for k, other in enumerate(sig.refines):
                if other not in validated.entry_ids:
                    problems.append(
                        doc.problem(
                            ("signatures", i, "refines", k),
                            f"no entry has id {other!r}",
                            did_you_mean(other, validated.entry_ids),
                        )
                    )
                elif other in refined_by[entry.id]:
                    problems.append(
                        doc.problem(
                            ("signatures", i, "refines", k),
                            f"entry {other!r} also refines {entry.id!r}",
                            "a refinement goes one way: keep it on the signature that says more",
                        )
                    )


def _check_wraps(validated: Validated, problems: list[Problem]) -> None:
    for entry, doc in validated.entries:
        for k, wrapped in enumerate(entry.wraps):
            if wrapped != "*" and wrapped != entry.id and wrapped not in validated.entry_ids:
                problems.append(
                    doc.problem(
                        ("wraps", k), f"no entry has id {wrapped!r}", did_you_mean(wrapped, validated.entry_ids)
                    )
                )


def _warnings(
    validated: Validated, by_tag: dict[str, list[str]], hub_rows: dict[str, list[tuple[str, HubCard]]]
) -> list[Problem]:
    warnings: list[Problem] = []
    if validated.tags is not None:
        for tag in validated.tags.tags:
            if not by_tag.get(tag):
                warnings.append(
                    validated.tags_doc.problem(
                        ("tags", tag), "tag is used by no entry", "remove it or tag an entry with it"
                    )
                )
    for hub, doc in validated.hubs:
        if not hub_rows.get(hub.id):
            warnings.append(doc.problem(("id",), "no entry lists this hub"))
    for entry, doc in validated.entries:
        for name in entry.empty:
            warnings.append(doc.problem((name,), "section is empty", "the page will leave it out"))
        if not entry.fix_code:
            warnings.append(doc.problem(("fix",), "fix has no code examples"))
    return sorted(warnings)


def _rank_related(entries: dict[str, EntryCard], by_category: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each entry's explicit related entries first, then same-category entries by shared tags, then by id."""
    # Entries that share no tag come in id order, so only those sharing one need counting: a count
    # over the category's per-tag lists rather than every pair of entries in the category.
    members: dict[tuple[str, str], list[str]] = defaultdict(list)
    for category, ids in by_category.items():
        for other in sorted(ids):
            for tag in set(entries[other].tags):
                members[(category, tag)].append(other)
    sorted_ids = {category: sorted(ids) for category, ids in by_category.items()}
    related = {}
    for entry in entries.values():
        chosen = list(entry.related)
        wanted = max(RELATED_LIMIT, len(chosen)) - len(chosen)
        shared = Counter(chain.from_iterable(members[(entry.category, tag)] for tag in set(entry.tags)))
        skip = {entry.id, *chosen}
        # Most shared tags first, ties by id: two stable sorts, which run in C, where a heap of
        # (-count, id) pairs built in Python cost most of linking at 10,000 entries.
        ranked = sorted(sorted(shared.items()), key=itemgetter(1), reverse=True)[: wanted + len(skip)]
        picked = [o for o, _ in ranked if o not in skip][:wanted]
        if len(picked) < wanted:
            skip.update(picked)
            picked += islice((o for o in sorted_ids[entry.category] if o not in skip), wanted - len(picked))
        related[entry.id] = chosen + picked
    return related


def _related(
    entries: dict[str, EntryCard], by_category: dict[str, list[str]], memo: Memo | None
) -> dict[str, list[str]]:
    """The ranking of related entries, or, with a memo, the one it kept if what the ranking reads is as it was."""
    if memo is None:
        return _rank_related(entries, by_category)
    key = plain_digest([(e.id, e.category, e.tags, e.related) for e in entries.values()])
    related: dict[str, list[str]] | None = memo.recall("related", key)
    if related is None:
        related = _rank_related(entries, by_category)
        memo.remember("related", key, related)
    return related


def _signature_key(validated: Validated) -> str:
    """Everything the signature checks read: each entry's id, signatures and wraps, the ids, the unsafe regexes."""
    # Each entry's part was digested when it was checked (EntryCard.checked): joining digests costs far less.
    checked = [e.checked for e, _ in validated.entries]
    return plain_digest((checked, sorted(validated.entry_ids), sorted(validated.unsafe)))


def link_catalog(validated: Validated) -> Catalog:
    """Run the cross-entry checks and index the content; raise ContentError on any problem."""
    problems = list(validated.problems)
    _check_duplicates(validated, problems)
    _check_references(validated, problems)
    # The signature checks cost the most and read only what _signature_key covers: a build with a
    # memo (serve's, or the one kept beside the output) skips them when that is as it was when they passed.
    key = _signature_key(validated)
    memo = validated.memo
    if memo is None or not memo.passed(key):
        matchers = _check_signatures(validated, problems)
        _check_refinements(validated, problems, matchers)
        _check_wraps(validated, problems)
    if problems or validated.site is None or validated.tags is None:
        raise ContentError(problems)
    if memo is not None:
        memo.passes(key)

    entries = {e.id: e for e, _ in sorted(validated.entries, key=lambda pair: pair[0].id)}
    by_tag: dict[str, list[str]] = defaultdict(list)
    by_category: dict[str, list[str]] = defaultdict(list)
    by_system: dict[str, list[str]] = defaultdict(list)
    hub_rows: dict[str, list[tuple[str, HubCard]]] = defaultdict(list)
    backlinks: dict[str, list[str]] = defaultdict(list)
    for entry in entries.values():
        for tag in entry.tags:
            by_tag[tag].append(entry.id)
        by_category[entry.category].append(entry.id)
        # Once per system, however often the entry names it: a set, since a system's list runs to thousands.
        for system_id in dict.fromkeys(system.id for system in entry.systems):
            by_system[system_id].append(entry.id)
        for ref in entry.hubs:
            hub_rows[ref.hub].append((entry.id, ref))
        for rid in entry.related:
            backlinks[rid].append(entry.id)

    return Catalog(
        site=validated.site,
        entries=entries,
        hubs={h.id: h for h, _ in sorted(validated.hubs, key=lambda pair: pair[0].id)},
        tags=dict(sorted(validated.tags.tags.items())),
        entry_paths={e.id: d.path for e, d in validated.entries},
        hub_paths={h.id: d.path for h, d in validated.hubs},
        by_tag=dict(sorted(by_tag.items())),
        by_category=dict(sorted(by_category.items())),
        by_system=dict(sorted(by_system.items())),
        hub_rows=dict(sorted(hub_rows.items())),
        related=_related(entries, by_category, memo),
        backlinks=dict(sorted(backlinks.items())),
        warnings=_warnings(validated, by_tag, hub_rows),
        examples=[(x, validated.examples[x.case]) for x in validated.site.examples],
    )
