"""Markdown and code highlighting: one configured markdown-it parser, Pygments with CSS classes."""

from __future__ import annotations

import html
import re
from functools import lru_cache

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# Classes only: a strict Content-Security-Policy forbids inline style attributes.
_FORMATTER = HtmlFormatter(nowrap=True)


def highlight_code(code: str, language: str) -> str:
    """Return highlighted HTML for a code block, wrapped in <pre><code>."""
    try:
        lexer = get_lexer_by_name(language or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    body = highlight(code.rstrip("\n") + "\n", lexer, _FORMATTER)
    lang = html.escape(language or "text", quote=True)
    return f'<pre class="code" tabindex="0" data-lang="{lang}"><code class="language-{lang}">{body}</code></pre>'


def _fence(content: str, lang: str, _attrs: str) -> str:
    return highlight_code(content, lang.split()[0] if lang else "text")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Raw HTML off: entries come from pull requests, and text must never become markup.
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence, "typographer": False})
    md.enable(["table", "strikethrough"])
    return md


def render_markdown(text: str) -> str:
    """Render a Markdown block to HTML."""
    return str(_parser().render(text))


def render_inline(text: str) -> str:
    """Render one line of Markdown without wrapping it in a paragraph."""
    return str(_parser().renderInline(text))


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def show_controls(text: str) -> str:
    """Replace control characters (a colour code's ESC) with their visible symbols, which HTML allows."""
    return _CONTROLS.sub(lambda m: "\u2421" if m.group(0) == "\x7f" else chr(0x2400 + ord(m.group(0))), text)


_TAG = re.compile(r"<[^>]+>")


def plain_text(html_text: str) -> str:
    """Strip tags from rendered HTML and collapse whitespace, for meta descriptions and JSON-LD."""
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", html_text))).strip()


def plain_markdown(text: str) -> str:
    """Return one line of inline Markdown as plain text, for meta descriptions, JSON-LD and feeds."""
    return plain_text(render_inline(text))


def pygments_css() -> str:
    """Return the highlighting styles for light and dark mode."""
    light = HtmlFormatter(style="default").get_style_defs(".code")
    dark = HtmlFormatter(style="monokai").get_style_defs("[data-theme=dark] .code")
    auto = HtmlFormatter(style="monokai").get_style_defs(":root:not([data-theme=light]) .code")
    return f"{light}\n{dark}\n@media (prefers-color-scheme: dark) {{\n{auto}\n}}\n"
