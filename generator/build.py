"""The pipeline: load, validate, link, render, write, index."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.crawl import build_crawl_files
from generator.diagnose.rules import browser_rules
from generator.errors import Problem, StrictModeError
from generator.index import build_signature_index
from generator.link import Catalog, link_catalog
from generator.load import load_sources
from generator.markup import pygments_css
from generator.render import example_files, render_pages
from generator.search import index_site
from generator.validate import validate_sources
from generator.write import copy_static, staging, write_files

# Templates and static assets ship beside the package; content may live anywhere.
THEME = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    out_dir: Path
    base_path: str
    pages: int
    entries: int
    signatures: int
    warnings: list[Problem]


def load_catalog(root: Path) -> Catalog:
    """Load, validate and link the content under root; raise ContentError listing every problem."""
    return link_catalog(validate_sources(load_sources(root)))


def build(root: Path, out_dir: Path, *, strict: bool = False, search: bool = True, theme: Path = THEME) -> BuildResult:
    """Build the site from the content under root into out_dir, replacing it only on success."""
    # Everything is gathered and checked before the first byte is written.
    catalog = load_catalog(root)
    if strict and catalog.warnings:
        raise StrictModeError(catalog.warnings)

    # Render in memory: pages, the public signature index, crawler files.
    pages = render_pages(catalog, theme / "templates")
    files: dict[str, str | bytes] = {
        **pages,
        **build_signature_index(catalog),
        **build_crawl_files(catalog, list(pages)),
        **example_files(catalog),
    }

    # Write into a staging folder; Pagefind indexes the finished pages last.
    with staging(out_dir) as stage:
        copy_static(theme / "static", stage)
        write_files(
            stage, {**files, "static/pygments.css": pygments_css(), "static/diagnose-rules.js": browser_rules()}
        )
        if search:
            index_site(stage, pages)

    signatures = sum(len(e.signatures) for e in catalog.entries.values())
    return BuildResult(out_dir, catalog.site.path(), len(pages), len(catalog.entries), signatures, catalog.warnings)
