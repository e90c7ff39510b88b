"""The schema.org JSON-LD of every page kind, and its serialisation into a <script> element."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from generator.markup import plain_text
from generator.schema import Hub, SiteConfig
from generator.taxonomy import SYSTEMS
from generator.validate import EntryCard

CONTEXT = "https://schema.org"


def _organisation(name: str, site: SiteConfig) -> dict[str, Any]:
    return {"@type": "Organization", "name": name, "url": site.base_url}


def entry_article(entry: EntryCard, site: SiteConfig, path: str, tag_titles: list[str]) -> dict[str, Any]:
    """An entry page as a TechArticle."""
    return {
        "@context": CONTEXT,
        "@type": "TechArticle",
        "headline": entry.title,
        "description": entry.description,
        "url": site.url(path),
        "datePublished": entry.added.isoformat(),
        "dateModified": entry.updated.isoformat(),
        "author": _organisation(site.author, site),
        "publisher": _organisation(site.title, site),
        "keywords": tag_titles,
        "about": [SYSTEMS[s.id].name for s in entry.systems],
        "inLanguage": site.language,
    }


def faq_page(faq: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """An entry's questions as an FAQPage; each answer is given as its HTML, quoted as plain text."""
    return {
        "@context": CONTEXT,
        "@type": "FAQPage",
        "mainEntity": [
            {"@type": "Question", "name": question, "acceptedAnswer": {"@type": "Answer", "text": plain_text(answer)}}
            for question, answer in faq
        ],
    }


def hub_article(hub: Hub, site: SiteConfig, path: str) -> dict[str, Any]:
    """A hub page as a TechArticle."""
    return {
        "@context": CONTEXT,
        "@type": "TechArticle",
        "headline": hub.title,
        "description": hub.summary,
        "url": site.url(path),
        "dateModified": hub.updated.isoformat(),
        "author": _organisation(site.author, site),
    }


def website(site: SiteConfig) -> dict[str, Any]:
    """The home page as the WebSite."""
    return {
        "@context": CONTEXT,
        "@type": "WebSite",
        "name": site.title,
        "url": site.base_url,
        "description": site.tagline,
    }


def breadcrumbs(site: SiteConfig, trail: list[tuple[str, str]]) -> dict[str, Any]:
    """A page's trail of (name, path) as a BreadcrumbList; the last step, the page itself, has no link."""
    items = []
    for position, (name, path) in enumerate(trail, start=1):
        item: dict[str, Any] = {"@type": "ListItem", "position": position, "name": name}
        if position < len(trail):
            item["item"] = site.url(path)
        items.append(item)
    return {"@context": CONTEXT, "@type": "BreadcrumbList", "itemListElement": items}


def script_text(data: list[dict[str, Any]]) -> list[Markup]:
    """Serialise JSON-LD so that no '</script>' inside the data can close the element."""
    out = []
    for item in data:
        # Compact: an indent sends json to its pure-Python encoder, which cost a large build seconds.
        text = json.dumps(item, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        out.append(Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")))
    return out
