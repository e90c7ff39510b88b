"""Write a Hugo site with one Markdown page per entry of a Trainwreck content tree: the baseline build.

Each page carries the entry's own text, so both generators render the same words: its summary, every
prose section, its symptoms as a table, its fix code as highlighted blocks, and twelve question and
answer pairs. Tags and categories become Hugo taxonomies; the layouts give every page a header, a
side list of its section, its table of contents, and list pages for sections and terms, as ours do.

    python benchmarks/hugo_pages.py CONTENT_ROOT OUT_FOLDER
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

PROSE = ("mechanism", "misread_as", "root_causes", "confirm", "verify", "prevention", "scale", "collateral")
FAQ_PAIRS = 12

BASEOF = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} · Failures</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="{{ .Summary | plainify | truncate 160 }}">
<link rel="stylesheet" href="{{ "style.css" | relURL }}"></head>
<body><header><a href="{{ "/" | relURL }}">Failures</a>
<nav>{{ range .Site.Sections }}<a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ end }}</nav></header>
<div class="doc">{{ block "main" . }}{{ end }}</div>
<footer>Built {{ now.Year }}</footer></body></html>
"""
SINGLE = """{{ define "main" }}
<nav class="sidenav"><ul>{{ range first 120 .CurrentSection.Pages.ByTitle }}
<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul></nav>
<main><h1>{{ .Title }}</h1>
<p>{{ range .Params.tags }}<a href="{{ "tags/" | relURL }}{{ . | urlize }}/">{{ . }}</a> {{ end }}</p>
{{ .Content }}
<h2>Related</h2><ul>{{ range first 6 (.Site.RegularPages.Related .) }}
<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul></main>
<nav class="toc">{{ .TableOfContents }}</nav>
{{ end }}
"""
LIST = """{{ define "main" }}<main><h1>{{ .Title }}</h1><ul>
{{ range .Pages.ByTitle }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ .Summary | plainify | truncate 120 }}</li>
{{ end }}</ul></main>{{ end }}
"""
CONFIG = {
    "baseURL": "https://example.org/",
    "title": "Failures",
    "disableKinds": [],
    "taxonomies": {"tag": "tags", "category": "categories"},
    "related": {"threshold": 1, "includeNewer": True, "toLower": False, "indices": [{"name": "tags", "weight": 1}]},
    "markup": {
        "highlight": {"codeFences": True, "noClasses": False},
        "tableOfContents": {"startLevel": 2, "endLevel": 3},
    },
}


def page(entry: dict) -> str:
    """The Markdown page of one entry."""
    front = {
        "title": entry["title"],
        "tags": entry.get("tags", []),
        "categories": [entry["category"]],
        "date": str(entry.get("updated", "2026-01-01")),
    }
    parts = ["---", json.dumps(front), "---", "", entry["summary"], ""]
    parts += ["## Log signatures", ""]
    for sig in entry.get("signatures", []):
        parts += ["```text", *sig.get("examples", []), "```", ""]
    if entry.get("symptoms"):
        parts += ["## Symptoms", "", "| Symptom | Why |", "|---|---|"]
        parts += [f"| {s['symptom']} | {s['cause']} |".replace("\n", " ") for s in entry["symptoms"]]
        parts.append("")
    for name in PROSE:
        text = _text(entry.get(name))
        if text:
            parts += [f"## {name.replace('_', ' ').capitalize()}", "", text, ""]
    fix = entry.get("fix") or {}
    parts += ["## Fix", "", fix.get("summary", ""), ""]
    for block in fix.get("code", []):
        parts += [
            f"### {block.get('stack', 'Code')}",
            "",
            f"```{block.get('language', 'text')}",
            block["code"].rstrip(),
            "```",
        ]
        parts.append("")
    answers = [_text(entry.get(name)) for name in ("summary", *PROSE)] + [fix.get("summary", "")]
    answers = [a for a in answers if a] or [entry["summary"]]
    parts += ["## Common questions", ""]
    for i in range(FAQ_PAIRS):
        parts += [f"### Question {i + 1} about {entry['title']}", "", answers[i % len(answers)], ""]
    return "\n".join(parts)


def _text(value: object) -> str:
    """A field as Markdown: a string as it is, a list or mapping as bullets of its strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"- {_text(v)}".replace("\n", " ") for v in value if _text(v))
    if isinstance(value, dict):
        return " ".join(_text(v) for v in value.values() if _text(v))
    return ""


def write_site(content: Path, out: Path) -> int:
    """Write the Hugo site for the entries under content into out; return the number of pages."""
    (out / "layouts" / "_default").mkdir(parents=True)
    (out / "layouts" / "_default" / "baseof.html").write_text(BASEOF)
    (out / "layouts" / "_default" / "single.html").write_text(SINGLE)
    (out / "layouts" / "_default" / "list.html").write_text(LIST)
    (out / "layouts" / "index.html").write_text(LIST)
    (out / "static").mkdir()
    (out / "static" / "style.css").write_text("body{font-family:sans-serif}\n")
    (out / "hugo.json").write_text(json.dumps(CONFIG, indent=1))
    count = 0
    for path in sorted((content / "entries").rglob("*.yaml")):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        folder = out / "content" / entry["category"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{entry['id']}.md").write_text(page(entry), encoding="utf-8")
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("content", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    print(f"wrote {write_site(args.content, args.out)} pages into {args.out}")


if __name__ == "__main__":
    main()
