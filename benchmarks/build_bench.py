"""Time each stage of `trainwreck build` on the shipped content and on a synthetic large corpus.

Figures are printed as seconds and as a ratio to the named baseline, Pagefind indexing the same
output in the same run (the one stage whose cost the project does not control).

    python benchmarks/build_bench.py [--copies 60]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.crawl import build_crawl_files  # noqa: E402
from generator.index import build_signature_index  # noqa: E402
from generator.link import link_catalog  # noqa: E402
from generator.load import load_sources  # noqa: E402
from generator.markup import pygments_css  # noqa: E402
from generator.render import Renderer, page_views  # noqa: E402
from generator.search import index_search, search_plan  # noqa: E402
from generator.validate import validate_sources  # noqa: E402
from generator.write import copy_static, write_files  # noqa: E402


def synthetic_corpus(target: Path, copies: int) -> None:
    """Copy the shipped content, adding `copies` renamed copies of every entry with unique signatures."""
    target.mkdir(parents=True)
    for name in ("site.yaml", "tags.yaml", "hubs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, target / name)
    # The home page's "try a real log" examples point into the corpus.
    for example in yaml.safe_load((ROOT / "site.yaml").read_text(encoding="utf-8")).get("examples", []):
        shutil.copytree(ROOT / example["case"], target / example["case"])
    entries = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "entries").rglob("*.yaml"))]
    ids = {e["id"] for e in entries}
    out = target / "entries" / "synthetic"
    out.mkdir(parents=True)
    for k in range(copies + 1):
        for entry in entries:
            copy = dict(entry)
            if k:
                copy["id"] = f"{entry['id']}-copy{k}"
                copy["title"] = f"{entry['title']} (copy {k})"
                # Text of its own, so no copy renders faster for having been seen before.
                copy["summary"] = f"{entry['summary']} (Copy {k}.)"
                copy["related"] = [f"{r}-copy{k}" for r in entry.get("related", []) if r in ids]
                copy["signatures"] = [_unique(sig, k, entry["id"]) for sig in entry.get("signatures", [])]
            (out / f"{copy['id']}.yaml").write_text(
                yaml.safe_dump(copy, sort_keys=False, allow_unicode=True), encoding="utf-8"
            )


def _unique(sig: dict, k: int, original: str) -> dict:
    """Return the k-th copy of a signature: a literal of the original's matched text behind a unique tag."""
    sig = dict(sig)
    example = sig["examples"][0]
    if "literal" in sig:
        text = sig["literal"]
    else:
        match = re.search(sig["regex"], example, re.ASCII)
        assert match is not None
        text = match.group(0)
        del sig["regex"]
    text = text[:280]  # room for the tag within the 300-character limit
    # The copy's line still holds the original's text, so that overlap is declared, as on purpose.
    refines = [original, *sig.get("refines", [])]
    sig["refines"] = [*refines, *(f"{r}-copy{k}" for r in refines[1:])]
    sig["literal"] = f"[copy{k}] {text}"
    sig["examples"] = [sig["literal"]]
    return sig


def timed_build(root: Path, out: Path) -> dict[str, float]:
    """Run the pipeline stage by stage and return seconds per stage."""
    times: dict[str, float] = {}
    t = time.perf_counter()
    sources = load_sources(root)
    times["load"] = time.perf_counter() - t
    t = time.perf_counter()
    validated = validate_sources(sources)
    times["validate"] = time.perf_counter() - t
    t = time.perf_counter()
    catalog = link_catalog(validated)
    times["link"] = time.perf_counter() - t
    t = time.perf_counter()
    renderer = Renderer(catalog, ROOT / "templates")
    views = page_views(renderer)
    pages = {view.path: renderer.render(view) for view in views}
    times["render"] = time.perf_counter() - t
    t = time.perf_counter()
    files = {**pages, **build_signature_index(catalog), **build_crawl_files(catalog, list(pages))}
    times["index"] = time.perf_counter() - t
    t = time.perf_counter()
    out.mkdir(parents=True)
    copy_static(ROOT / "static", out)
    write_files(out, {**files, "static/pygments.css": pygments_css()})
    times["write"] = time.perf_counter() - t
    t = time.perf_counter()
    index_search(out, search_plan(renderer, catalog.site.language, keyed=False))
    times["pagefind (baseline)"] = time.perf_counter() - t
    times["pages"] = len(pages)
    times["entries"] = len(catalog.entries)
    return times


def report(label: str, times: dict[str, float], out: Path) -> None:
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    files = sum(1 for p in out.rglob("*") if p.is_file())
    baseline = times["pagefind (baseline)"]
    ours = sum(v for k, v in times.items() if k not in ("pagefind (baseline)", "pages", "entries"))
    print(
        f"\n{label}: {int(times['entries'])} entries, {int(times['pages'])} pages, {files} files, {size / 1e6:.2f} MB"
    )
    for stage in ("load", "validate", "link", "render", "index", "write", "pagefind (baseline)"):
        print(f"  {stage:<20} {times[stage]:7.3f} s   {times[stage] / baseline:5.2f} x pagefind")
    print(f"  {'generator total':<20} {ours:7.3f} s   {ours / baseline:5.2f} x pagefind")
    print(f"  {'build total':<20} {ours + baseline:7.3f} s   {(ours + baseline) / baseline:5.2f} x pagefind")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=60, help="renamed copies of every entry in the synthetic corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        report("shipped content", timed_build(ROOT, work / "real"), work / "real")
        synthetic_corpus(work / "corpus", args.copies)
        report(
            f"synthetic corpus ({args.copies} copies of each entry)",
            timed_build(work / "corpus", work / "big"),
            work / "big",
        )


if __name__ == "__main__":
    main()
