"""The search index: what each page gives Pagefind, shards of bounded size, and shards kept between builds."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from generator import build as build_module
from generator import search
from generator.build import build, cache_folder, load_catalog
from generator.render import Renderer, page_views
from generator.search import SearchRecord, search_records, shards
from tests.conftest import CORPUS, ROOT
from tests.test_incremental import _edit_yaml, _project, _tree


def _records(root: Path) -> dict[str, SearchRecord]:
    renderer = Renderer(load_catalog(root), ROOT / "templates")
    return {r.path: r for r in search_records(page_views(renderer), "en")}


def _fragments(bundle: Path) -> list[dict]:
    """The page records of one Pagefind bundle."""
    found = []
    for path in sorted((bundle / "fragment").iterdir()):
        raw = gzip.decompress(path.read_bytes())
        assert raw.startswith(b"pagefind_dcd")
        found.append(json.loads(raw[len(b"pagefind_dcd") :]))
    return found


def test_an_entry_is_searched_by_its_words_and_filtered_by_its_facets() -> None:
    records = _records(CORPUS)
    assert sorted(records) == ["failures/demo-hang/index.html", "failures/demo-nan/index.html", "hubs/demo/index.html"]
    doc = BeautifulSoup(records["failures/demo-hang/index.html"].html, "html.parser")
    assert doc.select_one("[data-pagefind-body]") is not None
    assert doc.select_one('h1[data-pagefind-meta="title"]').get_text() == "Demo collective hangs after a rank exits"
    filters = {(t["data-pagefind-filter"], t["data-value"]) for t in doc.select("[data-pagefind-filter]")}
    assert filters == {
        ("category[data-value]", "Communication"),
        ("severity[data-value]", "high"),
        ("system[data-value]", "NCCL"),
        ("system[data-value]", "PyTorch distributed"),
        ("tag[data-value]", "Hangs"),
    }
    assert doc.select_one("[data-pagefind-sort]")["data-value"] == "2026-11-02"
    # Error strings weigh most; Markdown reaches Pagefind as the words a reader sees.
    weighted = [p.get_text() for p in doc.select('p[data-pagefind-weight="5"]')]
    assert weighted == ["Watchdog caught collective operation timeout: ", r"demo rank \d+ left after [\d.]+ s"]
    text = doc.get_text(" ")
    assert "DEMO_DEBUG" not in text  # the hub's tell-apart, not this entry's
    assert "Fix the exception on the rank that left; the watchdog lines are collateral." in text
    assert "Bandwidth counters read zero." in text
    # Not indexed: fix code, example log lines and the FAQ, which only restates the fields above.
    assert "sort -t:" not in text
    assert "SeqNum=5" not in text
    assert "Common questions" not in text


def test_a_hub_is_searched_by_its_error_strings_and_what_tells_them_apart() -> None:
    doc = BeautifulSoup(_records(CORPUS)["hubs/demo/index.html"].html, "html.parser")
    assert [t["data-value"] for t in doc.select("[data-pagefind-filter]")] == ["NCCL"]
    weighted = [p.get_text() for p in doc.select('p[data-pagefind-weight="5"]')]
    assert weighted == ["Watchdog caught collective operation timeout: "]
    assert "DEMO_DEBUG=1 names the rank that left." in doc.get_text(" ")  # its backticks gone


def test_every_page_is_in_exactly_one_shard_and_the_first_lists_the_others(
    corpus_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # corpus_site is built with as many shards as pages, which its pages' digests share out.
    monkeypatch.setattr(search, "SHARD_PAGES", 1)
    layout = shards(list(_records(CORPUS).values()))
    assert len(layout) >= 2  # so the browser tests search a merged index
    assert layout[0][0] == "pagefind/" and all(path.startswith("pagefind/shard-") for path, _ in layout[1:])
    listed = json.loads((corpus_site / "pagefind" / "shards.json").read_text())
    assert listed == [path.removeprefix("pagefind/") for path, _ in layout[1:]]
    urls = [f["url"] for path, _ in layout for f in _fragments(corpus_site / path)]
    assert sorted(urls) == ["/failures/demo-hang/", "/failures/demo-nan/", "/hubs/demo/"]
    # Each bundle holds its index; only the first the scripts and WebAssembly that search them all, and none
    # Pagefind's own search interfaces, which no page loads (the browser tests search this site as it is).
    for n, (path, _) in enumerate(layout):
        held = {p.name for p in (corpus_site / path).iterdir() if p.is_file()}
        assert "pagefind-entry.json" in held and any(name.endswith(".pf_meta") for name in held)
        searching = {"pagefind.js", "pagefind-worker.js", "wasm.en.pagefind", "wasm.unknown.pagefind"}
        assert held & searching == (searching if n == 0 else set())
        assert not any(name.startswith("pagefind-") and "ui" in name for name in held)
        assert "pagefind-highlight.js" not in held


def test_shards_are_even_and_a_new_page_changes_only_its_own() -> None:
    records = [SearchRecord(f"failures/e{k}/index.html", "") for k in range(search.SHARD_PAGES * 5 // 2)]
    layout = shards(records)
    assert len(layout) == 3 == search.shard_count(len(records))
    assert sorted(r.path for _, shard in layout for r in shard) == sorted(r.path for r in records)
    assert all(abs(len(shard) - len(records) / 3) < 0.2 * len(records) / 3 for _, shard in layout)
    assert all([r.path for r in shard] == sorted(r.path for r in shard) for _, shard in layout)
    # An edit changes no record's path, hence no shard's membership; a new page changes its own shard only.
    for k in range(20):
        new = SearchRecord(f"failures/new-{k}/index.html", "")
        more = shards([*records, new])
        assert [path for path, _ in more] == [path for path, _ in layout]
        changed = [
            path
            for (path, before), (_, after) in zip(layout, more, strict=True)
            if [r.path for r in before] != [r.path for r in after]
        ]
        assert changed == [next(path for path, shard in more if new in shard)]


def test_an_edit_indexes_one_shard_again_and_gives_the_clean_builds_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "SHARD_PAGES", 60)  # the shipped entries and hubs in several shards
    root, _theme = _project(tmp_path)
    warm, clean = tmp_path / "warm", tmp_path / "clean"

    first = build(root, warm)
    count = len(shards(first.search.pages))
    assert count >= 5 and first.indexed == count
    assert build(root, warm).indexed == 0
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary="Searchableword " + d["summary"]))
    made = tmp_path / "made.txt"  # the indexing runs in a process of its own

    def counted(entry, facets, language: str) -> str:
        with made.open("a") as f:
            f.write(entry.id + "\n")
        return real(entry, facets, language)

    real = search._entry_document
    monkeypatch.setattr(search, "_entry_document", counted)
    again = build(root, warm)
    assert again.indexed == 1
    # The shard's other documents are the ones the last build made: only the edited entry's is made now.
    assert made.read_text().split() == ["cuda-oom"]
    monkeypatch.setattr(search, "_entry_document", real)
    build(root, clean, cache=False)
    assert _tree(warm) == _tree(clean)
    assert not cache_folder(clean).exists()
    edited = "failures/cuda-oom/index.html"
    shard = next(path for path, pages in shards(again.search.pages) if edited in {p.path for p in pages})
    assert any("Searchableword" in f["content"] for f in _fragments(warm / shard))
    # The cache holds the shards of this site only.
    assert len(list((cache_folder(warm) / "search").iterdir())) == count


def test_a_build_into_the_spare_links_only_the_bundles_that_changed_and_undoes_hand_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setattr(search, "SHARD_PAGES", 60)
    root, _theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    edited = "failures/cuda-oom/index.html"

    pinned: list[int] = []
    request.addfinalizer(lambda: [os.close(fd) for fd in pinned])

    def edit_and_build(word: str) -> dict[str, int]:
        """Edit the entry, build into the spare, and return the inode of each bundle folder the spare held."""
        _edit_yaml(entry, lambda d: d.update(summary=f"{word} {d['summary']}"))
        spare = cache_folder(out) / "spare"
        held = {}
        for folder in (p for p in spare.glob("pagefind/**/") if p.is_dir()):
            # An open folder keeps its inode number: one the build removes cannot lend it to a new folder.
            pinned.append(os.open(folder, os.O_RDONLY))
            held[folder.relative_to(spare).as_posix()] = os.fstat(pinned[-1]).st_ino
        build(root, out)
        build(root, clean, cache=False)
        assert _tree(out) == _tree(clean), f"after {word}"
        return held

    first = build(root, out)
    layout = shards(first.search.pages)
    assert len(layout) >= 5
    _edit_yaml(entry, lambda d: d.update(summary=f"Firstword {d['summary']}"))
    build(root, out)  # the first site is now the spare
    held = edit_and_build("Secondword")
    # The bundles of shards without the edited page are the spare's folders still; the edited one's is new.
    changed = next(path for path, pages in layout if edited in {p.path for p in pages})
    for path, _pages in layout:
        if path != changed and path != search.BUNDLE:
            assert (out / path).stat().st_ino == held[path.rstrip("/")], f"{path} was linked again"
    assert (out / changed).stat().st_ino != held[changed.rstrip("/")]

    # What is added to, replaced in or removed from a served site's bundles by hand is undone when that
    # folder is next brought up to date (two builds later: the build after next reuses it).
    other = next(path for path, _pages in layout if path not in (changed, search.BUNDLE))
    (out / other / "stray.txt").write_text("added by hand")
    fragment = next((out / other / "fragment").iterdir())
    fragment.unlink()
    fragment.write_bytes(b"replaced by hand")
    first_bundle_file = next(p for p in (out / search.BUNDLE).iterdir() if p.suffix == ".pf_meta")
    first_bundle_file.unlink()
    edit_and_build("Thirdword")
    edit_and_build("Fourthword")


def test_a_changed_shard_is_indexed_while_the_pages_are_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pagefind's work is the longest part of a one-entry rebuild: it begins from the catalog alone,
    # before the build makes a single page view, so the two run side by side.
    root, _theme = _project(tmp_path)
    site = tmp_path / "site"
    build(root, site)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary="Searchableword " + d["summary"]))
    begun = tmp_path / "begun"  # written by the indexing process, which the build forks
    real_index, real_views = search._index_shard, build_module.page_views

    def index(bundle: Path, records: list[SearchRecord]) -> None:
        begun.write_text(",".join(r.path for r in records))
        real_index(bundle, records)

    waited: list[bool] = []

    def views(renderer: Renderer) -> list:
        deadline = time.monotonic() + 20
        while not begun.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        waited.append(begun.exists())
        return real_views(renderer)

    monkeypatch.setattr(search, "_index_shard", index)
    monkeypatch.setattr(build_module, "page_views", views)
    result = build(root, site)
    assert waited == [True]
    assert result.indexed == 1 and "failures/cuda-oom/index.html" in begun.read_text().split(",")
    monkeypatch.setattr(build_module, "page_views", real_views)
    build(root, tmp_path / "clean", cache=False)
    assert _tree(site) == _tree(tmp_path / "clean")


def test_an_edited_entrys_shard_is_indexed_from_the_last_plan_before_the_catalog_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # index_ahead guesses, from the last build's plan and the entry files' statuses, the shards an edit
    # changes, and indexes them while the build loads its catalog: the build then finds them in the cache.
    # The files were just copied: the memo keeps no status of any, and the guide keeps each one's status.
    monkeypatch.setattr(search, "SHARD_PAGES", 60)
    root, _theme = _project(tmp_path)
    site, clean = tmp_path / "site", tmp_path / "clean"
    build(root, site)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary="Aheadword " + d["summary"]))
    begun = tmp_path / "begun"  # written by the process that indexes ahead, which the build forks
    real_index, real_load = search._index_shard, build_module.load_catalog

    def index(bundle: Path, records: list[SearchRecord]) -> None:
        begun.write_text(",".join(r.path for r in records))
        real_index(bundle, records)

    waited: list[bool] = []

    def load_waiting(*args, **kwargs):
        deadline = time.monotonic() + 20
        while not begun.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        waited.append(begun.exists())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(search, "_index_shard", index)
    monkeypatch.setattr(build_module, "load_catalog", load_waiting)
    result = build(root, site)
    assert waited == [True] and "failures/cuda-oom/index.html" in begun.read_text().split(",")
    assert result.indexed == 1  # the shard guessed is the one the build looked up: it indexed none itself
    monkeypatch.setattr(build_module, "load_catalog", real_load)
    build(root, clean, cache=False)
    assert _tree(site) == _tree(clean)
    assert _indexed(site, "Aheadword")


def _indexed(site: Path, word: str) -> bool:
    """Whether the text of some page in some shard of site's search index holds word."""
    return any(
        word in f["content"] for entry in site.glob("pagefind/**/pagefind-entry.json") for f in _fragments(entry.parent)
    )


def _twin(original: Path, twin_id: str) -> Path:
    """A new entry beside original: its copy as twin_id, each signature a literal of its own refining the original."""
    data = yaml.safe_load(original.read_text(encoding="utf-8"))
    signatures = []
    for sig in data["signatures"]:
        literal = f"[{twin_id}] " + sig["examples"][0][:200]
        sig = {k: v for k, v in sig.items() if k != "regex"}
        signatures.append(
            {**sig, "literal": literal, "examples": [literal], "refines": [data["id"], *sig.get("refines", [])]}
        )
    data.update(
        id=twin_id, title=f"{data['title']} (twin)", summary=f"Twinword {data['summary']}", signatures=signatures
    )
    data["related"] = []
    data.pop("hubs", None)  # a hub's search document lists its entries: one more hub row would change it
    twin = original.with_name(f"{twin_id}.yaml")
    twin.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return twin


def test_an_added_entrys_shard_is_indexed_ahead_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file added changes the status of its folder, which the guide keeps: index_ahead finds it there.
    root, _theme = _project(tmp_path)
    searchable = len(list((root / "entries").rglob("*.yaml"))) + len(list((root / "hubs").glob("*.yaml")))
    # One more page must not make one more shard: then every shard's pages would change.
    monkeypatch.setattr(search, "SHARD_PAGES", 60 if searchable % 60 else 61)
    site, clean = tmp_path / "site", tmp_path / "clean"
    build(root, site)
    _twin(next((root / "entries").rglob("cuda-oom.yaml")), "cuda-oom-twin")
    cache = cache_folder(site) / "search"
    assert search.index_ahead(root, cache) == 1
    result = build(root, site)
    assert result.indexed == 0  # the shard the new entry is in was found in the cache
    build(root, clean, cache=False)
    assert _tree(site) == _tree(clean)
    assert _indexed(site, "Twinword")
    # A new file with an id another entry has is no guess: the build reports it.
    _twin(root / "entries/nccl/nccl-duplicate-gpu.yaml", "cuda-oom")
    assert search.index_ahead(root, cache) == 0


def test_a_wrong_guess_of_index_ahead_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A tag's new title is in the documents of every entry that carries it; index_ahead guesses with the
    # last build's titles, so the shard it indexes is kept under a key the build never looks up.
    monkeypatch.setattr(search, "SHARD_PAGES", 60)
    root, _theme = _project(tmp_path)
    site, clean = tmp_path / "site", tmp_path / "clean"
    build(root, site)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    tag = yaml.safe_load(entry.read_text(encoding="utf-8"))["tags"][0]
    _edit_yaml(entry, lambda d: d.update(summary="Aheadword " + d["summary"]))
    _edit_yaml(root / "tags.yaml", lambda d: d["tags"][tag].update(title="Retitled " + d["tags"][tag]["title"]))
    cache = cache_folder(site) / "search"
    assert search.index_ahead(root, cache) == 1
    assert build(root, site).indexed >= 1  # the shards with the new title, indexed by the build itself
    # A guide that cannot be read is no guide.
    guide = cache.with_name("search" + search.GUIDE)
    guide.write_bytes(b"not a pickle")
    assert search.index_ahead(root, cache) == 0
    _edit_yaml(entry, lambda d: d.update(summary="Again " + d["summary"]))
    build(root, site)
    build(root, clean, cache=False)
    assert _tree(site) == _tree(clean)
    assert "Retitled" in (site / f"tags/{tag}/index.html").read_text(encoding="utf-8")


def test_a_build_that_fails_ends_the_indexing_it_began(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _theme = _project(tmp_path)
    site = tmp_path / "site"
    build(root, site)
    before = _tree(site)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary="Searchableword " + d["summary"]))
    pids = tmp_path / "pids"

    def index(bundle: Path, records: list[SearchRecord]) -> None:
        pids.write_text(str(os.getpid()))
        time.sleep(60)  # a long indexing, which the failed build must not wait for

    def views(renderer: Renderer) -> list:
        deadline = time.monotonic() + 20
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(search, "_index_shard", index)
    monkeypatch.setattr(build_module, "page_views", views)
    started = time.monotonic()
    with pytest.raises(OSError, match="No space left"):
        build(root, site)
    assert time.monotonic() - started < 30
    pid = int(pids.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended, and reaped
    assert _tree(site) == before


def test_the_first_bundle_is_linked_before_the_bundles_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first shard's bundle is pagefind/, the others pagefind/shard-N/: linked side by side, another
    # shard's link would make pagefind/ as its parent while the first's was about to make it.
    monkeypatch.setattr(search, "SHARD_PAGES", 60)
    root, _theme = _project(tmp_path)
    real_link = search.link_tree
    found = tmp_path / "found"  # whether the first bundle's folder was there before its own link (in the indexer)

    def slow_first(source: Path, target: Path, skip: tuple[str, ...] = ()) -> None:
        if target.name == search.BUNDLE.strip("/"):
            time.sleep(0.5)  # time enough for any other link running beside it to make the folder
            with found.open("a") as f:
                f.write(f"{target.exists()}\n")
        real_link(source, target, skip)

    monkeypatch.setattr(search, "link_tree", slow_first)
    for cache in (True, False):
        result = build(root, tmp_path / f"site-{cache}", jobs=4, cache=cache)
        assert result.shards >= 5
        listed = json.loads((tmp_path / f"site-{cache}" / "pagefind" / "shards.json").read_text())
        assert all(
            (tmp_path / f"site-{cache}" / "pagefind" / shard / "pagefind-entry.json").is_file() for shard in listed
        )
    assert found.read_text().split() == ["False", "False"]
