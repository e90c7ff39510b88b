"""The shipped content: builds with --strict, signatures are its own, pages are sound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.build import load_catalog
from generator.patterns import compile_signature
from tests.conftest import ROOT
from tests.site_checks import broken_links, policy_violations, soup
from tests.test_html_valid import vnu_errors

STARTER = [
    "nccl-sharp-corrupt-allreduce",
    "stability-divergence-no-grad-clipping",
    "deepspeed-zero3-stale-sync-nan-clip",
    "pg-watchdog-timeout-shape-mismatch",
    "megatron-tp-rng-divergence-deadlock",
    "xid-13-graphics-engine-exception",
    "precision-adam-epsilon-underflow-fp16",
]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT)


def test_starter_entries_and_hubs_exist(catalog) -> None:
    assert set(STARTER) <= set(catalog.entries)
    assert {"nccl", "deepspeed"} <= set(catalog.hubs)
    assert catalog.warnings == []


def test_every_example_belongs_to_its_own_entry_only(catalog) -> None:
    compiled = [(e.id, compile_signature(s.kind, s.pattern)) for e in catalog.entries.values() for s in e.signatures]
    for entry in catalog.entries.values():
        for sig in entry.signatures:
            for example in sig.examples:
                claimants = {eid for eid, rx in compiled if rx.search(example)}
                assert entry.id in claimants and claimants <= {entry.id, *sig.refines}, (entry.id, example, claimants)


def test_signatures_link_their_source_and_bound_interpolated_values(catalog) -> None:
    from generator.render import source_link

    for card in catalog.entries.values():
        entry = card.entry()  # the whole model: a card holds what other pages read of a signature, not its source
        for sig in entry.signatures:
            _label, url = source_link(sig.source)
            assert url is not None and url.startswith("https://"), sig.source
            if sig.kind == "regex":
                # An interpolated value is bounded by a class, never spanned with a dot; a dot inside a
                # class ([\w.+]+) is a literal character, so classes are set aside before the check.
                outside_classes = re.sub(r"\[(?:\\.|[^\]\\])*\]", "C", sig.pattern)
                assert not re.search(r"(?<!\\)\.[*+]", outside_classes), (entry.id, sig.pattern)


def test_every_line_signature_has_an_example_in_a_real_logs_shape(catalog) -> None:
    # Real logs put a rank label, a timestamp, a logger or host name before most lines; an example that
    # starts with the matched text only proves the pattern on a line no launcher or logger printed.
    # A pattern anchored with ^ is text a shell prints at column 0 ("Killed"), so it is exempt.
    bare = []
    for entry in catalog.entries.values():
        for sig in entry.signatures:
            if sig.kind == "regex" and sig.pattern.startswith("^"):
                continue
            rx = re.compile(sig.pattern if sig.kind == "regex" else re.escape(sig.pattern))
            if not any((m := rx.search(example)) and m.start() > 0 for example in sig.examples):
                bare.append((entry.id, sig.pattern))
    assert bare == []


def test_every_entry_is_on_a_hub(catalog) -> None:
    # A hub is where a reader compares a failure with its neighbours; an entry on none is hard to find.
    on_a_hub = {eid for rows in catalog.hub_rows.values() for eid, _ in rows}
    assert sorted(set(catalog.entries) - on_a_hub) == []
    assert len(catalog.hubs) >= 11


def test_a_reference_url_has_one_title_everywhere(catalog) -> None:
    # A title says what the page at the URL is; a second title for the same page is a second claim.
    titles: dict[str, set[tuple[str, str]]] = {}
    for entry in (card.entry() for card in catalog.entries.values()):
        for ref in entry.references:
            titles.setdefault(str(ref.url).rstrip("/"), set()).add((ref.title, entry.id))
    clashes = {url: sorted(t) for url, t in titles.items() if len({title for title, _ in t}) > 1}
    assert not clashes, "\n".join(f"{url}: {t}" for url, t in sorted(clashes.items()))


def test_no_sentence_is_shared_between_entries(catalog) -> None:
    def sentences(entry) -> set[str]:
        text = entry.model_dump_json()
        return {s.strip().lower() for s in re.split(r"(?<=[.!?])\s+|\\n", text) if len(s.split()) > 12}

    seen: dict[str, str] = {}
    for entry in (card.entry() for card in catalog.entries.values()):
        for sentence in sentences(entry):
            assert sentence not in seen or seen[sentence] == entry.id, (entry.id, seen.get(sentence), sentence)
            seen[sentence] = entry.id


def test_real_site_has_a_page_for_everything(real_site: Path, catalog) -> None:
    for eid in catalog.entries:
        assert (real_site / "failures" / eid / "index.html").is_file()
    for kind, keys in (
        ("hubs", catalog.hubs),
        ("tags", catalog.by_tag),
        ("categories", catalog.by_category),
        ("systems", catalog.by_system),
    ):
        for key in keys:
            assert (real_site / kind / key / "index.html").is_file(), (kind, key)
    hub = soup(real_site, "hubs/deepspeed/index.html")
    assert hub.select("table.compare tbody tr"), "the DeepSpeed hub lists its entries"


def test_real_site_links_and_policy(real_site: Path) -> None:
    assert broken_links(real_site, "/") == []
    assert policy_violations(real_site) == []


def test_real_site_is_valid_html(real_site: Path) -> None:
    assert vnu_errors(real_site) == ""


def test_packaged_index_is_current(catalog) -> None:
    from generator.index import API_DIR, build_signature_index

    packaged = (ROOT / "generator" / "data" / "signatures.jsonl").read_text(encoding="utf-8")
    built = build_signature_index(catalog)[f"{API_DIR}/signatures.jsonl"]
    assert packaged == built, "generator/data/signatures.jsonl is stale: run `trainwreck refresh`"
