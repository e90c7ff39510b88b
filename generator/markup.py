"""Markdown, code highlighting and page outlines: one markdown-it parser, Pygments with CSS classes."""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token
from pygments import format as format_tokens
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from generator.lexing import joinable, tokens

# Classes only: a strict Content-Security-Policy forbids inline style attributes.
_FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=256)
def _lexer(language: str) -> Lexer:
    # A lexer keeps no state between texts; finding one by name scans every lexer Pygments has.
    try:
        return get_lexer_by_name(language or "text")
    except ClassNotFound:
        return get_lexer_by_name("text")


Made = dict[tuple[str, str, str], str]  # HTML by what it was made from: (kind, language, text)
_kept: tuple[Made, Made] | None = None  # while a page renders: the markup made for it before, and what it uses


@contextlib.contextmanager
def keeping(before: Made) -> Iterator[Made]:
    """Within the block, take a code block's or a Markdown text's HTML from before if it is there.

    Yields what the block made and took, for the next render of the page: highlighting and Markdown are
    most of an entry page's rendering, and a page rendered again because a row it lists changed holds
    the same texts.
    """
    global _kept
    outer = _kept
    used: Made = {}
    _kept = (before, used)
    try:
        yield used
    finally:
        _kept = outer


def _taken(kind: str, language: str, text: str, make: Callable[[str, str], str]) -> str:
    if _kept is None:
        return make(text, language)
    before, used = _kept
    key = (kind, language, text)
    found = before.get(key)
    if found is None:
        found = make(text, language)
    used[key] = found
    return found


def highlight_code(code: str, language: str) -> str:
    """Return highlighted HTML for a code block, wrapped in <pre><code>."""
    return _taken("code", language, code, _highlight)


def _highlight(code: str, language: str) -> str:
    lexer, text = _lexer(language), code.rstrip("\n") + "\n"
    body = format_tokens(tokens(lexer, text) if joinable(lexer) else lexer.get_tokens(text), _FORMATTER)
    lang = html.escape(language or "text", quote=True)
    return f'<pre class="code" tabindex="0" data-lang="{lang}"><code class="language-{lang}">{body}</code></pre>'


def _fence(content: str, lang: str, _attrs: str) -> str:
    return highlight_code(content, lang.split()[0] if lang else "text")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Raw HTML off: entries come from pull requests, and text must never become markup.
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("code_inline", _code_inline)
    md.add_render_rule("text", _text)
    return md


def _code_inline(self: object, tokens: list[Token], idx: int, options: object, env: object) -> str:
    # Variable and module names are long single tokens; give them break points so a table column
    # or a phone screen never has to split them mid-word.
    return f"<code>{breakable(tokens[idx].content)}</code>"


def _text(self: object, tokens: list[Token], idx: int, options: object, env: object) -> str:
    return breakable(tokens[idx].content)


def render_markdown(text: str) -> str:
    """Render a Markdown block to HTML."""
    return _taken("md", "", text, _markdown)


def _markdown(text: str, _language: str) -> str:
    composed = _compose(text)
    return composed if composed is not None else str(_parser().render(text))


def _compose(text: str) -> str | None:
    """The HTML of text written directly if it is only plain paragraphs, tight `- ` lists and fenced code.

    Most of an entry's prose and its FAQ's answers are of that shape, which costs the parser most of a
    page's rendering; the HTML is the parser's (tests compare the two on every shipped text and on
    random ones). Blocks are a blank line apart; blank lines at the end are no block. Gives None for
    anything else.
    """
    if "\r" in text or "\0" in text:
        return None
    html_blocks = []
    after_list = False
    blocks = text.rstrip("\n").split("\n\n")
    i = 0
    while i < len(blocks):
        block = blocks[i].lstrip("\n")
        i += 1
        if not block:
            continue  # more blank lines between two blocks
        lines = block.split("\n")
        if opening := _FENCE_OPEN.fullmatch(lines[0]):
            # Its code may hold blank lines: it runs to the first closing line, which must end a block.
            while not any(map(_FENCE_CLOSE.fullmatch, lines[1:])) and i < len(blocks):
                block += "\n\n" + blocks[i]
                i += 1
                lines = block.split("\n")
            end = next((k for k in range(1, len(lines)) if _FENCE_CLOSE.fullmatch(lines[k])), None)
            if end != len(lines) - 1:
                return None
            code = "".join(line + "\n" for line in lines[1:end])
            html_blocks.append(_fence(code, opening.group(1), "") + "\n")
            after_list = False
        elif _opens_no_block(lines[0]) and all(map(_continues_paragraph, lines[1:])):
            html_blocks.append(f"<p>{render_inline(block.strip())}</p>\n")
            after_list = False
        # A list right after a list, a blank line apart, is one loose list: leave that to the parser.
        elif after_list or not all(line.startswith("- ") and _opens_no_block(line[2:]) for line in lines):
            return None
        else:
            items = "".join(f"<li>{render_inline(line[2:].strip())}</li>\n" for line in lines)
            html_blocks.append(f"<ul>\n{items}</ul>\n")
            after_list = True
    return "".join(html_blocks)


_FENCE_OPEN = re.compile(r"```([\w+.-]*)")
_FENCE_CLOSE = re.compile(r" {0,3}`{3,}[ \t]*")
# An inline link, whose label holds no brackets: not a link reference definition, which would open a block.
_LINK_START = re.compile(r"\[[^\[\]\\\n]*\]\(")


def _continues_paragraph(line: str) -> bool:
    # Inside a paragraph a line may also start with a bracket, quote or number: none of those opens a
    # block that can interrupt one (a link reference definition cannot; an ordered list only from 1).
    first = line[:1]
    return _opens_no_block(line) or first in "([\"'" or (first.isdigit() and _ORDERED_FROM_ONE.match(line) is None)


_ORDERED_FROM_ONE = re.compile(r"0*1[.)](?:[ \t]|$)")
_ORDERED = re.compile(r"[0-9]{1,9}[.)](?:[ \t]|$)")


def _opens_no_block(line: str) -> bool:
    # A line starting with a letter, a number that is no list item's, inline code (fewer than three
    # backticks), strong emphasis of a word or an inline link is paragraph text: a list, heading,
    # quote, fence, table, indented code, thematic break, link reference definition or a heading's
    # underline starts otherwise.
    first = line[:1]
    return (
        first.isalpha()
        or (first.isdigit() and _ORDERED.match(line) is None)
        or (first == "`" and not line.startswith("```"))
        or (first == "*" and line[1:2] == "*" and line[2:3].isalnum())
        or (first == "[" and _LINK_START.match(line) is not None)
    )


# The characters that open an inline rule of the parser as configured (escape, code, strikethrough,
# emphasis, link, image, autolink, entity, line break) or that it normalises.
_INLINE_SYNTAX = re.compile(r"[\\`~*_\[!<&\n\r\0]")


# The same without the backtick and the underscore, which _code_spans writes itself.
_OTHER_SYNTAX = re.compile(r"[\\~*\[!<&\n\r\0]")
_BACKTICKS = re.compile(r"`+")
_UNDERSCORES = re.compile(r"_+")


def render_inline(text: str) -> str:
    """Render one line of Markdown without wrapping it in a paragraph."""
    if not _INLINE_SYNTAX.search(text):
        return breakable(text)  # one text token, as the parser would make it (tests compare the two)
    if not _OTHER_SYNTAX.search(text) and (written := _code_spans(text)) is not None:
        return written
    return str(_parser().renderInline(text))


def _code_spans(text: str) -> str | None:
    """The HTML of a line whose only syntax is code spans and underscores inside names, or None.

    Prose names variables and functions in backticks, and identifiers joined by underscores, on a
    third of its lines; this writes them as the parser does (tests compare the two).
    """
    out = []
    runs = list(_BACKTICKS.finditer(text))
    start = 0  # where the text since the last code span starts
    i = 0
    while i < len(runs):
        opening = runs[i]
        # A run of backticks opens a span closed by the next run of as many; without one it is text.
        j = next((k for k in range(i + 1, len(runs)) if len(runs[k].group()) == len(opening.group())), None)
        if j is None:
            i += 1
            continue
        if not _names_only(text, start, opening.start()):
            return None
        out.append(breakable(text[start : opening.start()]))
        code = text[opening.end() : runs[j].start()]
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]
        out.append(f"<code>{breakable(code)}</code>")
        start = runs[j].end()
        i = j + 1
    if not _names_only(text, start, len(text)):
        return None
    out.append(breakable(text[start:]))
    return "".join(out)


def _names_only(text: str, start: int, end: int) -> bool:
    # An underscore between two letters or digits (grad_norm, NCCL_DEBUG) can neither open nor close
    # emphasis; any other may, which is the parser's to decide.
    for run in _UNDERSCORES.finditer(text, start, end):
        before, after = text[run.start() - 1 : run.start()], text[run.end() : run.end() + 1]
        if not (before.isalnum() and after.isalnum()):
            return False
    return True


# A link the list below can write itself: a label markdown-it reads as the same inline text on its own,
# a destination without spaces, brackets or angle brackets.
_PLAIN_LABEL = re.compile(r"[^\[\]\\<\n\r]+")
_PLAIN_DESTINATION = re.compile(r"[^\s()<>\\]+")


def render_link_list(intro: str, links: list[tuple[str, str]]) -> str | None:
    """The HTML render_markdown makes of `intro` and a bulleted list of (label, URL) links, or None.

    Parsing a list of links is the costliest Markdown a page has; this writes the same HTML directly
    (tests compare the two), and gives None for a link it cannot write the same: parse those.
    """
    md = _parser()
    for label, url in links:
        if not (_PLAIN_LABEL.fullmatch(label) and _PLAIN_DESTINATION.fullmatch(url) and md.validateLink(url)):
            return None
    items = "".join(
        f'<li><a href="{escapeHtml(md.normalizeLink(url))}">{render_inline(label)}</a></li>\n' for label, url in links
    )
    return f"{render_markdown(intro)}<ul>\n{items}</ul>\n"


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def show_controls(text: str) -> str:
    """Replace control characters (a colour code's ESC) with their visible symbols, which HTML allows."""
    return _CONTROLS.sub(lambda m: "\u2421" if m.group(0) == "\x7f" else chr(0x2400 + ord(m.group(0))), text)


# Inside a long token, a run of these is where a reader expects it to wrap: `torch.distributed.`,
# `csrc/distributed/`, `c10::`, `NCCL_IB_`, and a regex's `(?:a\.cu|b\.cpp)` alternatives. Short
# tokens keep none, so ordinary prose ("e.g.", "3.5") wraps only at spaces.
_TOKEN_JOINT = re.compile(r"(?<=\S)([./_:,=|]+)(?=[^\s./_:,=|])")
_LONG_TOKEN = re.compile(r"\S{16,}")


def breakable(text: str) -> str:
    """Escape text for HTML, with a <wbr> break opportunity after each joint inside a long token."""
    escaped = html.escape(show_controls(text), quote=False)
    return _LONG_TOKEN.sub(lambda m: _TOKEN_JOINT.sub(r"\1<wbr>", m.group(0)), escaped)


def unsplittable(text: str) -> str:
    """Escape an error string for HTML so that it wraps only at its spaces and token joints.

    A browser also breaks before brackets and after `?` or `}`, which splits a regex such as
    `[0-9a-f]{4}` mid-token; each piece between joints is therefore held together.
    """
    out = []
    for token in re.split(r"(\s+)", show_controls(text)):
        if not token or token.isspace():
            out.append(html.escape(token, quote=False))
            continue
        pieces = [p for p in _TOKEN_JOINT.sub("\\1\0", token).split("\0") if p]
        out.append("<wbr>".join(f'<span class="nobr">{html.escape(p, quote=False)}</span>' for p in pieces))
    return "".join(out)


# Markdown's syntax, for markdown_text: fenced code, links (their text stays), code and emphasis marks,
# and the markers that open a heading, quote or list item. Underscores stay: they are part of names.
_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# Each emphasis star is matched before what surrounds it is looked at: a look-behind tried first is
# tried at every character of the text, which doubled the cost of indexing a large site's prose.
_MARKS = re.compile(
    r"`+|\*\*|\*(?<![\w*]\*)(?=\S)|\*(?<=\S\*)(?![\w*])|^ {0,3}(?:#{1,6}|>|[-*+]|\d{1,9}[.)])[ \t]+", re.MULTILINE
)


def markdown_text(text: str) -> str:
    """The words of a Markdown text as a reader sees them, without code blocks, found without rendering it."""
    return _MARKS.sub("", _LINK.sub(r"\1", _FENCED.sub(" ", text)))


_TAG = re.compile(r"<[^>]+>")


def plain_text(html_text: str) -> str:
    """Strip tags from rendered HTML and collapse whitespace, for meta descriptions and JSON-LD."""
    joined = html_text.replace("<wbr>", "")  # a break opportunity inside a word, not a space
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", joined))).strip()


def pygments_css() -> str:
    """Return the highlighting styles for light and dark mode."""
    light = HtmlFormatter(style="default").get_style_defs(".code")
    dark = HtmlFormatter(style="monokai").get_style_defs("[data-theme=dark] .code")
    auto = HtmlFormatter(style="monokai").get_style_defs(":root:not([data-theme=light]) .code")
    return f"{light}\n{dark}\n@media (prefers-color-scheme: dark) {{\n{auto}\n}}\n"


@dataclass
class Heading:
    """A section heading of a rendered page, with the headings under it."""

    id: str
    text: str
    children: list[Heading] = field(default_factory=list)


# Headings are written by the templates and by markdown-it, never inside another heading, so a scan
# of the HTML finds them exactly; an HTML parser over every page cost more than rendering it.
_HEADING = re.compile(r"<h([23])\b([^>]*)>(.*?)</h\1\s*>", re.DOTALL | re.IGNORECASE)
_HEADING_ID = re.compile(r"""\bid\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_ANCHOR_LINK = re.compile(r"""<a\b[^>]*\bclass=["'](?:[^"']*\s)?anchor(?:\s[^"']*)?["'][^>]*>.*?</a\s*>""", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def outline(html_text: str) -> list[Heading]:
    """Return the page's h2 sections, each with its h3 subsections, in document order."""
    tree: list[Heading] = []
    for match in _HEADING.finditer(html_text):
        found = _HEADING_ID.search(match.group(2))
        anchor = html.unescape(next((g for g in found.groups() if g is not None), "")) if found else ""
        if not anchor:
            continue
        level = int(match.group(1))
        text = " ".join(html.unescape(_TAG.sub("", _ANCHOR_LINK.sub("", match.group(3)))).split())
        if level == 2 or not tree:
            tree.append(Heading(anchor, text))
        else:
            tree[-1].children.append(Heading(anchor, text))
    return tree
