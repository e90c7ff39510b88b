"""The report as one self-contained HTML file (`diagnose --html`): inline CSS, no script, written atomically."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from generator.contract import Diagnosis, Evidence, Finding, Unknown
from generator.diagnose.errors import OutputError
from generator.diagnose.text import LABELS, VIA, _span, headline, scanned, visible, where
from generator.diagnose.timeline import timeline_svg

# Noncharacters are forbidden in HTML: a log that holds one shows U+FFFD there.
_NONCHARACTER = re.compile(
    "[\ufdd0-\ufdef" + "".join(f"{chr(p + 0xFFFE)}{chr(p + 0xFFFF)}" for p in range(0, 0x110000, 0x10000)) + "]"
)

# The site's palette (static/style.css), light and dark, and the timeline's rules.
CSS = """\
:root { --bg: #ffffff; --fg: #1b1b1f; --muted: #4a4a52; --line: #d9d9de; --soft: #f4f4f6; --link: #0b57d0;
  --code-bg: #f6f8fa; --crit: #8c1d18; --high: #a8420a; color-scheme: light dark; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16161a; --fg: #e6e6ea; --muted: #b4b4bd; --line: #3a3a42; --soft: #202026; --link: #8ab4f8;
    --code-bg: #1e1e24; --crit: #ffb4ab; --high: #ffb77c; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 78ch; margin: 0 auto; padding: 1rem; }
a { color: var(--link); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 0.9em; }
:not(pre) > code { background: var(--soft); padding: 0.1em 0.3em; border-radius: 4px; overflow-wrap: anywhere; }
pre { background: var(--code-bg); border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem 1rem;
  white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.45; }
.headline { font-size: 1.25rem; font-weight: 600; }
p, li, h3 { overflow-wrap: anywhere; }
.meta { color: var(--muted); }
.findings { padding-left: 1.25rem; }
.finding .role { font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.03em;
  border: 1px solid currentColor; border-radius: 4px; padding: 0 0.35em; }
.role-initiating .role { color: var(--crit); }
.role-collateral .role, .role-note .role { color: var(--muted); }
.timeline-figure { margin: 1rem 0; max-width: 30rem; }
.timeline { display: block; width: 100%; height: auto; color: var(--fg); }
.timeline .tl-initiating { color: var(--crit); }
.timeline .tl-failure { color: var(--high); }
.timeline .tl-collateral, .timeline .tl-missing, .timeline .tl-silent text, .timeline .tl-more text,
.timeline .tl-caption { color: var(--muted); }
"""


def _text(value: str) -> str:
    return html.escape(_NONCHARACTER.sub("\ufffd", visible(value)), quote=True)


def _code_spans(value: str) -> str:
    """Fix and verify lines carry `code` spans: those become <code>, the rest stays text."""
    return "".join(f"<code>{_text(part)}</code>" if i % 2 else _text(part) for i, part in enumerate(value.split("`")))


def _link(f: Finding) -> str:
    # Only a web address becomes a link: an index from elsewhere must not put a script in the report.
    if re.match(r"https?://", f.url):
        return f'<a href="{_text(f.url)}">{_text(f.title)}</a>'
    return _text(f.title)


def _lines(evidence: list[Evidence]) -> str:
    return "\n".join(f"{where(e)}: {e.text}" for e in evidence)


def _finding(f: Finding, number: int) -> list[str]:
    ranks = f"ranks {_span(f.ranks)}" if len(f.ranks) > 1 else (f"rank {f.ranks[0]}" if f.ranks else "rank unknown")
    plural = "s" if f.count != 1 else ""
    meta = (
        f"{f.severity} severity, {f.confidence} confidence · {f.count} line{plural}{VIA[f.first.via]} · {ranks} · "
        f"first at {where(f.first)}"
    )
    out = [
        f'<li class="finding role-{f.role}" id="finding-{number}">',
        f'<h3><span class="role">{LABELS[f.role]}</span> {_link(f)}</h3>',
        f'<p class="meta">{_text(meta)}</p>',
        f'<pre class="log"><code>{_text(_lines(f.evidence))}</code></pre>',
    ]
    if f.role in ("initiating", "independent"):
        out.append(f'<p class="fix"><strong>Fix:</strong> {_code_spans(f.fix)}</p>')
        out.append(f'<p class="verify"><strong>Verify:</strong> {_code_spans(f.verify)}</p>')
    out.append("</li>")
    return out


def _unknown(u: Unknown) -> list[str]:
    package = f" raised in {u.package}" if u.package else ""
    lines = [f"{u.exception}: {u.message}" if u.message else u.exception, *(f"  in {frame}" for frame in u.frames)]
    return [
        '<li class="unknown">',
        f"<p>{_text(f'{u.exception}{package}, at {where(u.evidence)}')}</p>",
        f'<pre class="log"><code>{_text(chr(10).join(lines))}</code></pre>',
        f"<p>No entry covers it yet. Scaffold one: <code>{_text(u.command)}</code></p>",
        "</li>",
    ]


def render_html(report: Diagnosis) -> str:
    """The report as a self-contained HTML document."""
    answer = headline(report)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>Trainwreck diagnosis: {_text(answer)}</title>",
        f"<style>\n{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<h1>Trainwreck diagnosis</h1>",
        f'<p class="headline">{_text(answer)}</p>',
        f'<p class="meta">{_text(scanned(report))}</p>',
    ]
    svg = timeline_svg(report)
    if svg is not None:
        out += ['<figure class="timeline-figure">', svg, "</figure>"]
    if report.findings:
        out += ['<section aria-labelledby="findings-heading">', '<h2 id="findings-heading">Findings</h2>']
        out.append('<ol class="findings">')
        for number, finding in enumerate(report.findings, start=1):
            out += _finding(finding, number)
        out += ["</ol>", "</section>"]
    if report.unknown:
        out += ['<section aria-labelledby="unknown-heading">']
        out += ['<h2 id="unknown-heading">Exceptions no entry covers yet</h2>', '<ul class="unknowns">']
        for u in report.unknown:
            out += _unknown(u)
        out += ["</ul>", "</section>"]
    if report.suspects:
        noun = "Suspect ranks" if len(report.suspects) > 1 else "Suspect rank"
        out.append(f'<p class="suspects">{noun}: {", ".join(map(str, report.suspects))}</p>')
    if report.missing:
        out += ['<section aria-labelledby="missing-heading">', '<h2 id="missing-heading">What would settle it</h2>']
        out += ['<ul class="missing">', *(f"<li>{_text(fact)}</li>" for fact in report.missing), "</ul>", "</section>"]
    out += ['<section aria-labelledby="inputs-heading">', '<h2 id="inputs-heading">Logs scanned</h2>']
    out += ['<ul class="inputs">', *(f"<li><code>{_text(name)}</code></li>" for name in report.inputs), "</ul>"]
    out += ["</section>", "</main>", "</body>", "</html>", ""]
    return "\n".join(out)


def write_html(report: Diagnosis, out: Path) -> None:
    """Write the HTML report to out through a temporary file beside it, so a reader never sees half of it."""
    text = render_html(report)
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, out)
    except OSError as exc:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass  # the folder refuses that too; the message below says why
        raise OutputError(f"cannot write the report to {out}: {exc.strerror or exc}") from exc
