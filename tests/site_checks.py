"""Checks shared by the corpus and real-site tests: links, scripts, JSON-LD."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from bs4 import BeautifulSoup


def soup(site: Path, page: str) -> BeautifulSoup:
    return BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser")


def html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "pagefind" not in p.parts)


def broken_links(site: Path, prefix: str) -> list[str]:
    """Return every internal link or asset reference that points at no file or no anchor."""
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in html_pages(site):
        doc = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for tag in doc.find_all(["a", "link", "script", "img", "form"]):
            ref = tag.get("href") or tag.get("src") or tag.get("action")
            if not ref or ref.startswith(("mailto:", "https://", "http://")):
                continue
            parts = urlsplit(ref)
            if not parts.path:
                target = page
            elif parts.path.startswith(prefix):
                target = site / parts.path[len(prefix) :]
                if parts.path.endswith("/"):
                    target = target / "index.html"
            else:
                broken.append(f"{page.relative_to(site)}: {ref} is outside the site prefix {prefix}")
                continue
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {ref}")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in ids:
                    other = BeautifulSoup(target.read_text(encoding="utf-8"), "html.parser")
                    ids[target] = {t["id"] for t in other.find_all(id=True)}
                if parts.fragment not in ids[target]:
                    broken.append(f"{page.relative_to(site)}: {ref} (no such anchor)")
    return broken


def policy_violations(site: Path) -> list[str]:
    """Return inline scripts, inline styles, third-party assets and missing CSP on any page."""
    found = []
    for page in html_pages(site):
        name = page.relative_to(site).as_posix()
        doc = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        csp = doc.find("meta", attrs={"http-equiv": "Content-Security-Policy"})
        if csp is None or "script-src 'self'" not in csp["content"] or "unsafe-inline" in csp["content"]:
            found.append(f"{name}: missing or weak Content-Security-Policy")
        for script in doc.find_all("script"):
            if not script.get("src") and script.get("type") != "application/ld+json":
                found.append(f"{name}: inline script")
        if doc.find(attrs={"style": True}) or doc.find("style"):
            found.append(f"{name}: inline style")
        for tag in doc.find_all(["script", "link", "img", "iframe"]):
            ref = tag.get("src") or (
                tag.get("href") if tag.name == "link" and tag.get("rel") != ["canonical"] else None
            )
            if ref and ref.startswith(("http://", "https://", "//")):
                found.append(f"{name}: third-party asset {ref}")
    return found


def jsonld(doc: BeautifulSoup) -> list[dict]:
    return [json.loads(s.string) for s in doc.find_all("script", type="application/ld+json")]
