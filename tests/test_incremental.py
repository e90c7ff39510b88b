"""A build that reuses the page cache writes exactly the site a clean build writes, whatever was edited."""

from __future__ import annotations

import gc
import os
import pickle
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import pytest
import yaml

from generator import build as build_module
from generator import cache, index, load, markup, render, search, write
from generator.build import THEME, _Beside, build, cache_folder, fewer_collections
from generator.errors import ContentError
from generator.load import Memo
from generator.write import fs_clock, write_files

ROOT = Path(__file__).resolve().parent.parent


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the shipped content and of the theme, both free to edit."""
    root, theme = tmp_path / "project", tmp_path / "theme"
    root.mkdir()
    for name in ("site.yaml", "tags.yaml", "entries", "hubs"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    for example in yaml.safe_load((ROOT / "site.yaml").read_text(encoding="utf-8")).get("examples", []):
        shutil.copytree(ROOT / example["case"], root / example["case"])
    for name in ("templates", "static"):
        shutil.copytree(THEME / name, theme / name)
    return root, theme


def _edit_yaml(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


ENTRY_EDITS = ("title", "summary", "tag", "severity", "mechanism", "related")
EDITS = (*ENTRY_EDITS, "template", "tag title", "hub", "site")


def _random_edit(rng: random.Random, root: Path, theme: Path, kinds: tuple[str, ...] = EDITS) -> str:
    """Make one edit of the kinds contributors make; return what it was."""
    entries = sorted((root / "entries").rglob("*.yaml"))
    entry = rng.choice(entries)
    tags = sorted(yaml.safe_load((root / "tags.yaml").read_text(encoding="utf-8"))["tags"])
    kind = rng.choice(kinds)
    word = f"w{rng.randrange(10**6)}"
    if kind == "title":  # read by sibling navigation, related lists, tag and category pages, hubs
        _edit_yaml(entry, lambda d: d.update(title=f"{d['title']} {word}"))
    elif kind == "summary":
        _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} {word}."))
    elif kind == "tag":  # moves the entry between tag pages and changes related rankings

        def retag(d: dict) -> None:
            unused = [t for t in tags if t not in d["tags"]]
            if len(d["tags"]) > 1 and rng.random() < 0.5:
                d["tags"].remove(rng.choice(d["tags"]))
            elif unused:
                d["tags"].append(rng.choice(unused))

        _edit_yaml(entry, retag)
    elif kind == "severity":  # reorders listing pages
        _edit_yaml(entry, lambda d: d.update(severity=rng.choice(["low", "medium", "high", "critical"])))
    elif kind == "mechanism":
        _edit_yaml(entry, lambda d: d.update(mechanism=f"{d['mechanism']}\n\nAlso {word}."))
    elif kind == "related":  # changes the backlinks of the entry named, and the related rankings

        def relate(d: dict) -> None:
            listed = d.setdefault("related", [])
            others = [p.stem for p in entries if p.stem != d["id"] and p.stem not in listed]
            if listed and rng.random() < 0.5:
                listed.remove(rng.choice(listed))
            else:
                listed.append(rng.choice(others))

        _edit_yaml(entry, relate)
    elif kind == "template":  # every page reads the base template
        base = theme / "templates" / "base.html"
        base.write_text(base.read_text(encoding="utf-8").replace("</footer>", f"<!-- {word} --></footer>", 1))
    elif kind == "tag title":
        tag = rng.choice(tags)
        _edit_yaml(root / "tags.yaml", lambda d: d["tags"][tag].update(title=f"{d['tags'][tag]['title']} {word}"))
    elif kind == "hub":
        hub = rng.choice(sorted((root / "hubs").glob("*.yaml")))
        _edit_yaml(hub, lambda d: d.update(title=f"{d['title']} {word}"))
    else:  # the configuration every page reads
        _edit_yaml(root / "site.yaml", lambda d: d.update(tagline=f"{d['tagline']} {word}"))
    return f"{kind} in {entry.name}" if kind in ENTRY_EDITS else kind


@pytest.mark.parametrize("seed", [1, 2])
def test_a_warm_build_after_random_edits_equals_a_clean_build(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root, theme = _project(tmp_path)
    warm, served, kept, clean = (tmp_path / name for name in ("warm", "served", "kept", "clean"))
    memo = Memo()  # as `serve` keeps it, so the kept parse and checks are under test too
    first = build(root, warm, search=False, theme=theme, memo=memo)
    assert len(first.rendered) == first.pages
    build(root, served, search=False, theme=theme, memo=memo)
    build(root, kept, search=False, theme=theme)  # as the CLI builds: the memo in a file beside the output
    for _round in range(3):
        edits = [_random_edit(rng, root, theme) for _ in range(rng.randint(1, 3))]
        again = build(root, warm, search=False, theme=theme, memo=memo)
        # As `serve` does: the folder updated in place, only the changed pages written.
        build(root, served, search=False, theme=theme, memo=memo, update=True)
        build(root, kept, search=False, theme=theme)
        build(root, clean, search=False, theme=theme, cache=False)
        assert _tree(warm) == _tree(clean), f"the cached build differs after: {edits}"
        assert _tree(served) == _tree(clean), f"the folder updated in place differs after: {edits}"
        assert _tree(kept) == _tree(clean), f"the build with the memo file differs after: {edits}"
        if not any(e in ("template", "site") for e in edits):
            assert len(again.rendered) < again.pages, "the cache was not used"
    assert not cache_folder(clean).exists(), "--no-cache must write no cache"


@pytest.mark.parametrize("seed", [3, 4])
def test_the_keys_a_build_takes_from_the_last_one_are_the_keys_its_pages_recipes_give(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    root, theme = _project(tmp_path)
    out = tmp_path / "site"
    build(root, out, theme=theme)
    folder = cache_folder(out)
    taken = 0
    for _round in range(4):
        edits = [_random_edit(rng, root, theme, ENTRY_EDITS) for _ in range(rng.randint(1, 2))]
        before = _kept_values(folder / cache.NOTES)
        result = build(root, out, theme=theme)
        catalog = result.catalog
        kept = render.unchanged_entries(catalog, before)
        taken += len(kept)
        # Every key made again from the pages' recipes, as a build with no notes makes them.
        renderer = render.Renderer(catalog, theme / "templates")
        salt = cache.code_digest(theme / "templates", [catalog.site])
        store = cache.PageCache(folder / "pages", salt)
        pages = {view.path: store.key(view) for view in render.page_views(renderer)}
        documents = search.search_plan(renderer, catalog.site.language).keys
        for entry_id, (page_key, document_key) in kept.items():
            page = render.Renderer.entry_page(entry_id)
            assert (page_key, document_key) == (pages[page], documents[page]), f"{entry_id} after {edits}"
        after = _kept_values(folder / cache.NOTES)
        assert {i: note[6:] for i, note in after.items()} == {
            i: (pages[render.Renderer.entry_page(i)], documents[render.Renderer.entry_page(i)]) for i in catalog.entries
        }
        assert len(kept) < len(catalog.entries), f"an edited entry's keys were taken as they were: {edits}"
    assert taken > 0, "no page's keys were taken from the last build"


def _kept_values(file: Path) -> dict:
    """The dict a file of the cache holds: written whole under its salt, then with changes and removals appended."""
    with file.open("rb") as f:
        _salt, values = pickle.load(f)
        while f.peek(1):
            changed, removed = pickle.load(f)
            values.update(changed)
            for key in removed:
                del values[key]
    return values


def test_an_unchanged_rebuild_renders_nothing_and_the_cache_holds_one_site(tmp_path: Path) -> None:
    root, theme = _project(tmp_path)
    out = tmp_path / "site"
    first = build(root, out, search=False, theme=theme)
    again = build(root, out, search=False, theme=theme)
    assert again.rendered == []
    entry = sorted((root / "entries").rglob("*.yaml"))[0]
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Edited."))
    third = build(root, out, search=False, theme=theme)
    entry_id = yaml.safe_load(entry.read_text(encoding="utf-8"))["id"]
    assert f"failures/{entry_id}/index.html" in third.rendered
    assert len(third.rendered) < first.pages // 4
    assert len(list((cache_folder(out) / "pages").glob("*.html"))) == first.pages


def test_pages_are_the_cache_files_linked_and_every_reader_may_read_them(tmp_path: Path) -> None:
    root, theme = _project(tmp_path)
    out = tmp_path / "site"
    build(root, out, search=False, theme=theme)
    again = build(root, out, search=False, theme=theme)
    kept = {p.stat().st_ino for p in (cache_folder(out) / "pages").glob("*.html")}
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == again.pages and {p.stat().st_ino for p in pages} == kept
    umask = os.umask(0o022)
    os.umask(umask)
    assert {oct(p.stat().st_mode & 0o777) for p in pages} == {oct(0o666 & ~umask)}, "as any file written here"


def test_an_entry_page_rendered_again_takes_its_code_and_markdown_as_made_before(tmp_path: Path, monkeypatch) -> None:
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    made: list[str] = []
    real_code, real_md = markup._highlight, markup._markdown
    monkeypatch.setattr(markup, "_highlight", lambda code, lang: made.append(code) or real_code(code, lang))
    monkeypatch.setattr(markup, "_markdown", lambda text, lang: made.append(text) or real_md(text, lang))
    # A summary shows in the rows of the entries that list this one: their pages render again, from the
    # same code and Markdown; the edited entry's own page makes only its summary's Markdown again.
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Keptword."))
    again = build(root, out, search=False, theme=theme)
    assert sum(page.startswith("failures/") and page != "failures/index.html" for page in again.rendered) > 3
    assert all("Keptword" in text for text in made), "markup made again from a text that did not change"
    # A damaged file of kept markup is made again.
    for kept in (cache_folder(out) / "markup").iterdir():
        kept.write_bytes(kept.read_bytes()[:20])
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Againword."))
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    assert len(made) > 20


def test_the_signature_index_is_written_at_a_lower_priority_than_the_pages(tmp_path: Path, monkeypatch) -> None:
    root, theme = _project(tmp_path)
    seen = tmp_path / "niceness.txt"  # written by the process that writes the index
    real = build_module.write_signature_index

    def noted(*args, **kwargs):
        seen.write_text(str(os.nice(0)))
        return real(*args, **kwargs)

    monkeypatch.setattr(build_module, "write_signature_index", noted)
    build(root, tmp_path / "site", search=False, theme=theme)
    assert int(seen.read_text()) == min(19, os.nice(0) + 10)


def test_a_damaged_cache_file_is_never_served(tmp_path: Path) -> None:
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    for page in (cache_folder(out) / "pages").glob("*.html"):
        page.write_bytes(page.read_bytes()[:100])  # as a crash mid-write on a disk without ordering would
    for kept in ("index/index.pickle", "rows.pickle"):
        (cache_folder(out) / kept).write_bytes((cache_folder(out) / kept).read_bytes()[:100])
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)


def test_a_retitled_entry_re_renders_only_the_entry_pages_that_show_its_title(tmp_path: Path, monkeypatch) -> None:
    # An entry page's side navigation shows a window on its category's entries by title: a title changed
    # elsewhere in the category, or an entry added there, leaves the pages whose windows do not hold it.
    monkeypatch.setattr(render, "SIDENAV_LIMIT", 5)
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    first = build(root, out, search=False, theme=theme)
    catalog = first.catalog
    assert catalog is not None
    category = max(catalog.by_category, key=lambda c: len(catalog.by_category[c]))
    members = catalog.by_category[category]
    assert len(members) > 3 * render.SIDENAV_LIMIT
    windows = render.Renderer(catalog, theme / "templates")
    shown = {i: {j for j, _ in windows._siblings(catalog.entries[i])} for i in members}
    # The title in the middle of the shelf, given a word after it: it keeps its place on the shelf.
    shelf = sorted(members, key=lambda i: catalog.entries[i].title.lower())
    edited = shelf[len(shelf) // 2]
    _edit_yaml(root / catalog.entry_paths[edited], lambda d: d.update(title=d["title"] + " (edited)"))

    again = build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    lists = {i for i in catalog.entries if edited in (*catalog.related.get(i, []), *catalog.backlinks.get(i, []))}
    readers = {i for i in members if edited in shown[i]} | lists | {edited}
    rendered = {page.split("/")[1] for page in again.rendered if page.startswith("failures/") and page.count("/") == 2}
    assert edited in rendered
    assert rendered <= readers, f"pages that do not show the title were rendered: {sorted(rendered - readers)}"
    assert len(rendered & set(members)) < len(members) // 2, "most of the category's pages are left as they were"


def test_listing_rows_are_taken_from_the_last_build_only_under_the_same_templates(tmp_path: Path) -> None:
    # A row's HTML is kept by the row's digest: what a listing page shows of an entry whose row is as it
    # was comes from the last build, and nothing the last build kept is used under other templates.
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    rows = cache_folder(out) / "rows.pickle"
    salt, fragments = pickle.loads(rows.read_bytes())
    marked = {digest: html.replace("<td>", "<td>kept-row ", 1) for digest, html in fragments.items()}
    rows.write_bytes(pickle.dumps((salt, marked)))
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Rowword."))
    build(root, out, search=False, theme=theme)
    listing = (out / "failures/index.html").read_text(encoding="utf-8")
    assert "Rowword." in listing
    assert listing.count("kept-row ") == len(fragments) - 1  # every row but the edited entry's
    template = theme / "templates/_entry_row.html"
    template.write_text(template.read_text(encoding="utf-8").replace("<tr>", '<tr class="row">'), encoding="utf-8")
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert "kept-row" not in (out / "failures/index.html").read_text(encoding="utf-8")
    assert _tree(out) == _tree(clean)


def _write_in_place(page: Path, text: bytes) -> None:
    """Write over the start of a page through its own file, as a tool that opens it for writing would."""
    before = page.stat().st_mtime_ns
    while True:
        time.sleep(0.01)  # a tick of the file system's clock, so the write is seen as later
        with page.open("r+b") as f:
            f.write(text)
        if page.stat().st_mtime_ns > before:
            return


def test_a_page_written_over_in_place_is_never_served_again(tmp_path: Path) -> None:
    # A site's pages are links to the cache's files: a page written over in place (not replaced) writes
    # into the cache's file, and into the kept previous site's page where that links the same file.
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    build(root, out, search=False, theme=theme)
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Inplaceword."))
    build(root, out, search=False, theme=theme)  # the first site is now the spare
    unchanged, edited = out / "404.html", out / "failures/cuda-oom/index.html"
    assert unchanged.stat().st_nlink == 3 and edited.stat().st_nlink == 2  # the cache's, this site's, the spare's
    _write_in_place(unchanged, b"<!-- by hand -->")
    _write_in_place(edited, b"<!-- by hand -->")
    # Into the spare, which links the unchanged page's file and an older version of the edited one.
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    build(root, out, search=False, theme=theme)  # into the site written over
    assert _tree(out) == _tree(clean)


def test_a_kept_build_still_finds_a_signature_another_entry_claims(tmp_path: Path) -> None:
    root, theme = _project(tmp_path)
    memo = Memo()
    build(root, tmp_path / "site", search=False, theme=theme, memo=memo)
    first, second = sorted((root / "entries").rglob("*.yaml"))[:2]
    claimed = yaml.safe_load(first.read_text(encoding="utf-8"))["signatures"][0]
    _edit_yaml(second, lambda d: d["signatures"].append(dict(claimed, refines=[])))
    with pytest.raises(ContentError) as caught:
        build(root, tmp_path / "site", search=False, theme=theme, memo=memo)
    assert any("is already claimed by entry" in p.message for p in caught.value.problems)


def test_a_page_written_ahead_of_an_update_is_left_to_the_next_one(tmp_path: Path) -> None:
    # serve writes a saved entry's page on its own; a rebuild that began before must not overwrite it,
    # and must not record it as its own, so the rebuild after it writes the page as a clean build would.
    root, theme = _project(tmp_path)
    served, clean = tmp_path / "served", tmp_path / "clean"
    memo = Memo()
    build(root, served, search=False, theme=theme, memo=memo)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary="Aheadword " + d["summary"]))
    page = served / "failures/cuda-oom/index.html"
    page.write_bytes(b"written ahead")
    held = build(
        root, served, search=False, theme=theme, memo=memo, update=True, keep=lambda p: p.endswith("oom/index.html")
    )
    assert "failures/cuda-oom/index.html" in held.rendered
    assert page.read_bytes() == b"written ahead"
    build(root, served, search=False, theme=theme, memo=memo, update=True)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(served) == _tree(clean)


def test_a_later_build_skips_signature_checks_only_for_the_signatures_they_passed(tmp_path: Path) -> None:
    root, theme = _project(tmp_path)
    out = tmp_path / "site"
    build(root, out, search=False, theme=theme)  # the memo kept beside the output, as the CLI's
    assert (cache_folder(out) / "sources.pickle").is_file()
    first, second = sorted((root / "entries").rglob("*.yaml"))[:2]
    claimed = yaml.safe_load(first.read_text(encoding="utf-8"))["signatures"][0]
    _edit_yaml(second, lambda d: d["signatures"].append(dict(claimed, refines=[])))
    with pytest.raises(ContentError) as caught:
        build(root, out, search=False, theme=theme)
    assert any("is already claimed by entry" in p.message for p in caught.value.problems)


def test_an_entry_whose_status_is_as_recorded_is_not_read_again(tmp_path: Path, monkeypatch) -> None:
    root, theme = _project(tmp_path)
    monkeypatch.setattr(load, "RECENT_NS", 0)  # the files were just written: trust their status at once
    build(root, tmp_path / "site", search=False, theme=theme)
    read: list[str] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real(self))
    entries = sorted((root / "entries").rglob("*.yaml"))
    entry = entries[3]
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Edited."))
    build(root, tmp_path / "site", search=False, theme=theme)
    # Read twice: for the digest that finds it changed, then to check it.
    assert [name for name in read if name in {e.name for e in entries}] == [entry.name, entry.name]


def test_an_entry_edited_back_to_its_size_and_time_is_read_again(tmp_path: Path, monkeypatch) -> None:
    # Tools that restore a file's modification time cannot restore its change time, which the status holds.
    root, theme = _project(tmp_path)
    monkeypatch.setattr(load, "RECENT_NS", 0)
    out = tmp_path / "site"
    build(root, out, search=False, theme=theme)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    before = entry.stat()
    text = entry.read_text(encoding="utf-8")
    summary = yaml.safe_load(text)["summary"]
    word = summary.split()[0]
    entry.write_text(text.replace(word, "X" * len(word), 1), encoding="utf-8")
    os.utime(entry, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert entry.stat().st_size == before.st_size and entry.stat().st_mtime_ns == before.st_mtime_ns
    build(root, out, search=False, theme=theme)
    assert "X" * len(word) in (out / "failures/cuda-oom/index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("damaged", ["sources.pickle", "sources.models"])
def test_a_damaged_memo_file_is_an_empty_memo(tmp_path: Path, damaged: str) -> None:
    # The cards, and the entries' models kept apart from them: either torn leaves the other unread.
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    memo = cache_folder(out) / damaged
    memo.write_bytes(memo.read_bytes()[:5000])
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    assert memo.stat().st_size > 5000, "the memo was written whole again"


@pytest.mark.parametrize("kept", ["sources.pickle", cache.ROWS, cache.NOTES])
def test_a_warm_build_appends_its_changes_to_the_memo_and_a_torn_tail_costs_only_time(tmp_path: Path, kept) -> None:
    # The parsed entries, the listings' rows, and the notes of what each entry page was made from.
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    memo = cache_folder(out) / kept
    whole = memo.stat()
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Appended."))
    build(root, out, search=False, theme=theme)
    grown = memo.stat()
    assert grown.st_ino == whole.st_ino, "the memo was written whole for one changed entry"
    assert whole.st_size < grown.st_size < whole.st_size * 1.1
    memo.write_bytes(memo.read_bytes()[: grown.st_size - 7])  # as a crash in the middle of appending
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Again."))
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    assert memo.stat().st_ino != grown.st_ino, "a memo with a torn tail is written whole at the next save"


def test_a_warm_build_copies_the_index_records_of_unchanged_entries_from_the_files_the_last_build_wrote(
    tmp_path: Path, monkeypatch
) -> None:
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    made = tmp_path / "made.txt"  # appended to by the process that writes the index
    real = index._records

    def noted(entry, catalog):
        with made.open("a", encoding="utf-8") as f:
            f.write(entry.id + "\n")
        return real(entry, catalog)

    monkeypatch.setattr(index, "_records", noted)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Copied."))
    build(root, out, search=False, theme=theme)
    assert made.read_text(encoding="utf-8").split() == ["cuda-oom"]
    # The kept files are the site's (hard links): one written over in place is not copied from again.
    kept = cache_folder(out) / "index" / "signatures.jsonl"
    assert kept.stat().st_ino == (out / "api" / "v1" / "signatures.jsonl").stat().st_ino
    with kept.open("r+b") as f:
        f.seek(100)
        f.write(b"#")
    made.unlink()
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Again."))
    build(root, out, search=False, theme=theme)
    assert len(made.read_text(encoding="utf-8").split()) == len(list((root / "entries").rglob("*.yaml")))
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)


def test_an_index_file_written_over_in_the_tick_its_status_was_taken_in_is_not_copied_from(
    tmp_path: Path, monkeypatch
) -> None:
    # A write in place within the file system clock's tick leaves a file's times and size as they were:
    # the kept index is noted only once the clock has passed the status noted, and not if it changed.
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    note = cache_folder(out) / "index" / index.KEPT_NOTE
    assert note.is_file()
    waited = tmp_path / "waited.txt"  # written by the process that writes the index
    real = index.clock_passed

    def written_over_while_waiting(folder: Path, ns: int, limit: float = 0.2) -> bool:
        passed = real(folder, ns, limit)
        waited.write_text(str(fs_clock(folder) > ns))
        with (folder / "signatures.jsonl").open("r+b") as f:
            f.seek(100)
            f.write(b"#")
        return passed

    monkeypatch.setattr(index, "clock_passed", written_over_while_waiting)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " Racy."))
    build(root, out, search=False, theme=theme)
    assert waited.read_text() == "True" and not note.exists()
    monkeypatch.undo()
    _edit_yaml(entry, lambda d: d.update(summary=d["summary"] + " After."))
    build(root, out, search=False, theme=theme)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    assert note.is_file()


def test_the_file_systems_clock_is_waited_for_within_a_limit(tmp_path: Path) -> None:
    now = fs_clock(tmp_path)
    assert write.clock_passed(tmp_path, now) and fs_clock(tmp_path) > now
    started = time.monotonic()
    assert not write.clock_passed(tmp_path, now + 60 * 10**9, limit=0.05)
    assert time.monotonic() - started >= 0.05


@pytest.mark.parametrize("in_kernel", [True, False], ids=["copy_file_range", "read-and-write"])
def test_a_range_of_a_kept_index_file_is_copied_whole_or_found_changed(tmp_path: Path, monkeypatch, in_kernel) -> None:
    if not in_kernel:  # as on a system without the call (not Linux)
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    source, target = tmp_path / "source", tmp_path / "target"
    source.write_bytes(bytes(range(256)) * 20_000)  # five reads' worth, where the range is read and written
    with source.open("rb") as s, target.open("wb") as t:
        t.write(b"head")
        t.flush()
        index._copy_range(s.fileno(), t.fileno(), 1000, 3_000_000)
    assert target.read_bytes() == b"head" + source.read_bytes()[1000:3_001_000]
    # A range past the end of the kept file: the file changed under the build, and is not copied from.
    with source.open("rb") as s, target.open("wb") as t, pytest.raises(index._SourceChanged):
        index._copy_range(s.fileno(), t.fileno(), 5_000_000, 200_000)


def _folders(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_dir()}


def _unreferenced_entry(root: Path) -> Path:
    """An entry no other file names, so that deleting it leaves the content valid."""
    texts = {p: p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.yaml"))}
    for path in sorted((root / "entries").rglob("*.yaml")):
        entry_id = yaml.safe_load(texts[path])["id"]
        if not any(entry_id in text for other, text in texts.items() if other != path):
            return path
    raise AssertionError("every entry is named by another file")


@pytest.mark.parametrize("settled", [False, True], ids=["folders-just-written", "folders-stamped"])
def test_a_build_into_the_kept_previous_site_equals_a_clean_build(tmp_path: Path, monkeypatch, settled: bool) -> None:
    # Folders count as settled once the file system's clock has moved on (seconds, in real use), so the
    # spare's unchanged folders are taken as recorded rather than read. Unsettled, every folder is too
    # recent to be taken as recorded, however long a build on a busy machine takes to reach its stamps.
    monkeypatch.setattr(write, "RACY_NS", 0 if settled else 3600 * 10**9)
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    spare = cache_folder(out) / "spare"
    first = build(root, out, theme=theme)  # Pagefind too: the spare's search bundle is replaced whole
    assert first.indexed >= 1
    folder = (out / "failures").stat().st_ino
    deleted = _unreferenced_entry(root)
    entry = next(p for p in sorted((root / "entries").rglob("*.yaml")) if p != deleted)
    other = next(p for p in sorted((root / "entries").rglob("*.yaml")) if p not in (deleted, entry))
    other_page = f"failures/{yaml.safe_load(other.read_text(encoding='utf-8'))['id']}/"
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Spareword."))
    build(root, out, theme=theme)
    assert spare.is_dir(), "the site replaced is kept for the next build"
    salt = cache.code_digest(theme / "templates", [first.catalog.site])
    record = cache.read_record(cache_folder(out), cache.SITE, salt)
    assert record is not None
    stamped = [s for s in record.folders.values() if s]
    assert bool(stamped) == settled, "folders just written are never taken as recorded"
    time.sleep(0.05)  # past a tick of the file system's clock
    (out / "written-by-hand.txt").write_text("no build wrote this")
    # Pages no edit changes, replaced by hand (a new file, not the cache's), and one removed from the spare;
    # files and a folder written by hand deep in the site.
    write_files(out, {"search/index.html": "<html>replaced by hand</html>\n"}, atomic=True)
    write_files(out, {f"{other_page}index.html": "<html>replaced by hand</html>\n"}, atomic=True)
    (out / other_page / "notes.txt").write_text("no build wrote this")
    write_files(out, {"failures/by-hand/index.html": "<html>no build wrote this</html>\n"})
    (spare / "404.html").unlink()
    deleted.unlink()  # its page and folder must go from the spare too
    build(root, out, theme=theme)
    assert (out / "failures").stat().st_ino == folder, "the first site, brought up to date, is the third"
    _edit_yaml(entry, lambda d: d.update(title=f"{d['title']} Spareword"))
    build(root, out, theme=theme)  # into the second site, which holds the file written by hand
    build(root, clean, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    assert _folders(out) == _folders(clean)
    # A folder found as recorded and left as it was keeps its recorded stamp through the next record:
    # what is written by hand into it while its site is served is still found when the site is next reused.
    third = next(p for p in sorted((root / "entries").rglob("*.yaml")) if p not in (deleted, entry, other))
    third_page = f"failures/{yaml.safe_load(third.read_text(encoding='utf-8'))['id']}/"
    time.sleep(0.05)
    (out / third_page / "later.txt").write_text("no build wrote this")
    for word in ("Laterword", "Lastword"):
        _edit_yaml(entry, lambda d, word=word: d.update(title=f"{d['title']} {word}"))
        build(root, out, theme=theme)
    build(root, clean, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
    # A spare removed by hand, or one its record no longer describes, is not used.
    shutil.rmtree(spare)
    build(root, out, theme=theme)
    (cache_folder(out) / cache.SPARE).unlink()
    (spare / "index.html").write_text("a spare no record describes")
    build(root, out, theme=theme)
    assert _tree(out) == _tree(clean)


def _collection_state() -> tuple[bool, int]:
    return gc.isenabled(), gc.get_freeze_count()


_PLAIN = """
import datetime, sys
from markupsafe import Markup
from generator.render import EntryRow, Facets
from generator.validate import plain_digest
word = "".join(["gpu", "-oom"])
# As parsed now, a repeated string is two objects; read back from a cache, it may be one.
again = word if sys.argv[1] == "one" else "".join(["gpu-", "oom"])
summary = Markup("<em>OOM</em>")
row = EntryRow("cuda-oom", "CUDA out of memory", summary, "memory", "Memory", "high", [word], again)
facets = Facets("Memory", (("cuda", "CUDA", None),), (("oom", again),))
print(plain_digest((row.id, row, facets, datetime.date(2026, 12, 3), [word, again], {"k": 1.5})))
"""


def _plain_digest_in_a_process(seed: str, strings: str, program: str = _PLAIN) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    run = subprocess.run([sys.executable, "-c", program, strings], env=env, capture_output=True, text=True, cwd=THEME)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_a_digest_of_plain_data_is_the_same_in_any_process_and_for_equal_strings_that_are_not_one_object() -> None:
    # Page, document and row keys are such digests: a page is found in the cache only if a later process,
    # under another hash seed and with strings read back from the cache rather than parsed, takes the same.
    runs = (("1", "one"), ("2", "two"), ("3", "one"))
    digests = {_plain_digest_in_a_process(seed, strings) for seed, strings in runs}
    assert len(digests) == 1 and len(next(iter(digests))) == 64, digests
    edited = _plain_digest_in_a_process("1", "one", _PLAIN.replace('"high"', '"medium"'))
    assert edited not in digests, "a field's value is part of the digest"


def test_a_build_runs_no_collection_but_the_processes_it_forks_collect_what_they_make() -> None:
    gc.unfreeze()  # what earlier tests froze here: the count below is the forked process's own doing
    assert gc.isenabled()
    with fewer_collections():
        assert not gc.isenabled()
        beside = _Beside(_collection_state)
        beside.join()
        enabled, frozen = beside.result()
    assert gc.isenabled(), "collection is back on once the build is done"
    # Off in a process that keeps running and making documents, it would never free a cycle; on without the
    # freeze, its first collection would walk (and copy) every object it shares with the build.
    assert enabled, "a forked process collects again"
    assert frozen > 0, "what it inherited from the build is frozen first"


def test_templates_are_compiled_once_and_again_only_when_edited(tmp_path: Path, monkeypatch) -> None:
    root, theme = _project(tmp_path)
    out, clean = tmp_path / "site", tmp_path / "clean"
    build(root, out, search=False, theme=theme)
    compiled = cache_folder(out) / "templates"
    assert len(list(compiled.iterdir())) == len(list((theme / "templates").glob("*.html")))
    compiles: list[str] = []
    compile_template = jinja2.Environment.compile

    def counted(env: jinja2.Environment, source: str, name: str | None = None, *args: object, **kw: object) -> object:
        compiles.append(str(name))
        return compile_template(env, source, name, *args, **kw)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    entry = next((root / "entries").rglob("cuda-oom.yaml"))
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Onceword."))
    result = build(root, out, search=False, theme=theme, jobs=1)
    assert "failures/cuda-oom/index.html" in result.rendered
    assert compiles == []  # every template the rendered pages use, read back compiled
    template = theme / "templates/entry.html"
    template.write_text(template.read_text(encoding="utf-8") + "{# edited #}\n", encoding="utf-8")
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Againword."))
    build(root, out, search=False, theme=theme, jobs=1)
    assert compiles == ["entry.html"]
    # A damaged compiled template is compiled again, never a failed build.
    for kept in compiled.iterdir():
        kept.write_bytes(kept.read_bytes()[:40] + b"\x00garbage")
    _edit_yaml(entry, lambda d: d.update(summary=f"{d['summary']} Lastword."))
    build(root, out, search=False, theme=theme, jobs=1)
    build(root, clean, search=False, theme=theme, cache=False)
    assert _tree(out) == _tree(clean)
