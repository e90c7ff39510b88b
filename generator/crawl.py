"""Files for crawlers and feed readers: sitemap.xml, robots.txt and an Atom feed."""

from __future__ import annotations

from html import escape as _escape

from generator.contract import entry_path
from generator.link import Catalog

FEED_ENTRIES = 50


def escape(text: str) -> str:
    """Text with &, < and > escaped: XML's character data, and double-quoted attribute values without quotes (URLs)."""
    return _escape(text, quote=False)


def build_crawl_files(catalog: Catalog, pages: list[str]) -> dict[str, str]:
    """Return sitemap.xml, robots.txt and feed.xml for the rendered page paths."""
    return {
        "sitemap.xml": _sitemap(catalog, pages),
        "robots.txt": f"User-agent: *\nAllow: /\n\nSitemap: {catalog.site.url('sitemap.xml')}\n",
        "feed.xml": _feed(catalog),
    }


def _sitemap(catalog: Catalog, pages: list[str]) -> str:
    lastmod = {entry_path(e.id) + "index.html": e.updated.isoformat() for e in catalog.entries.values()}
    lastmod |= {f"hubs/{h.id}/index.html": h.updated.isoformat() for h in catalog.hubs.values()}
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for page in pages:
        if page == "404.html":
            continue
        loc = catalog.site.url(page.removesuffix("index.html"))
        mod = f"<lastmod>{lastmod[page]}</lastmod>" if page in lastmod else ""
        lines.append(f"  <url><loc>{escape(loc)}</loc>{mod}</url>")
    lines.append("</urlset>")
    return "\n".join(lines) + "\n"


def _feed(catalog: Catalog) -> str:
    site = catalog.site
    entries = sorted(catalog.entries.values(), key=lambda e: (e.updated, e.id), reverse=True)[:FEED_ENTRIES]
    # The feed's date comes from the content, never from the clock, so builds stay reproducible.
    newest = entries[0].updated.isoformat() if entries else "1970-01-01"
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f"  <title>{escape(site.title)}: new and updated failures</title>",
        f"  <subtitle>{escape(site.tagline)}</subtitle>",
        f'  <link href="{escape(site.url("feed.xml"))}" rel="self"/>',
        f'  <link href="{escape(site.base_url)}"/>',
        f"  <id>{escape(site.base_url)}</id>",
        f"  <updated>{newest}T00:00:00Z</updated>",
        f"  <author><name>{escape(site.author)}</name></author>",
    ]
    for e in entries:
        url = site.url(entry_path(e.id))
        lines += [
            "  <entry>",
            f"    <title>{escape(e.title)}</title>",
            f'    <link href="{escape(url)}"/>',
            f"    <id>{escape(url)}</id>",
            f"    <published>{e.added.isoformat()}T00:00:00Z</published>",
            f"    <updated>{e.updated.isoformat()}T00:00:00Z</updated>",
            f"    <summary>{escape(e.description)}</summary>",
            *[f'    <category term="{escape(t)}"/>' for t in [e.category, *e.tags]],
            "  </entry>",
        ]
    lines.append("</feed>")
    return "\n".join(lines) + "\n"
