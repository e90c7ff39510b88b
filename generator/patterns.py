"""Keep signature regexes in a subset that means the same in Python and JavaScript and cannot hang a scan."""

from __future__ import annotations

import re
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

# Escapes whose meaning Python (with re.ASCII) and JavaScript (without the u flag) share.
_CLASS_ESCAPES = set("dDwWsSbB")
_CONTROL_ESCAPES = set("ntrfv")
MAX_BOUNDED_REPEAT = 1000
UNBOUNDED = sre_constants.MAXREPEAT
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)


def _lexical_problem(source: str) -> str | None:
    """Reject syntax that one of the two engines lacks or reads differently."""
    i, in_class = 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            nxt = source[i + 1] if i + 1 < len(source) else ""
            if nxt == "":
                return "ends with a lone backslash"
            if nxt.isdigit():
                return f"backreference or octal escape \\{nxt} is not allowed"
            if nxt.isalpha() and nxt not in _CLASS_ESCAPES and nxt not in _CONTROL_ESCAPES:
                return f"escape \\{nxt} is not in the portable subset (use \\d \\w \\s \\b or a character class)"
            if in_class and nxt in "bB":
                return "\\b inside a character class means different things in Python and JavaScript"
            i += 2
            continue
        if in_class:
            if ch == "[":
                return "an unescaped '[' inside a character class is not portable; write \\["
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            # A ']' right after '[' or '[^' is literal in Python but closes the class in JavaScript.
            j = i + 1 + (source[i + 1 : i + 2] == "^")
            if source[j : j + 1] == "]":
                return "a ']' at the start of a character class is not portable; write \\]"
            i = j
            continue
        elif ch == "(" and source[i + 1 : i + 2] == "?":
            if source[i + 2 : i + 3] != ":":
                return "only plain groups '(…)' and '(?:…)' are allowed (no look-around, named groups or inline flags)"
        elif ch == "{" and source[i + 1 : i + 2] == ",":
            return "'{,n}' means different things in Python and JavaScript; write '{0,n}'"
        elif ch in "*+?}" and source[i + 1 : i + 2] == "+" and (ch != "}" or _closes_quantifier(source, i)):
            return "possessive quantifiers are not allowed"
        i += 1
    if in_class:
        return "unterminated character class"
    return None


def _closes_quantifier(source: str, index: int) -> bool:
    return re.search(r"\{\d+(,\d*)?$", source[:index]) is not None


def _unbounded_inside(items: Any) -> bool:
    """Return True if the parsed items contain an unbounded repeat at any depth."""
    for op, arg in items:
        if op in _REPEATS:
            if arg[1] == UNBOUNDED or _unbounded_inside(arg[2]):
                return True
        elif op == sre_constants.SUBPATTERN:
            if _unbounded_inside(arg[3]):
                return True
        elif op == sre_constants.BRANCH:
            if any(_unbounded_inside(branch) for branch in arg[1]):
                return True
    return False


def _structural_problem(items: Any) -> str | None:
    """Reject shapes that backtrack catastrophically or repeat too much."""
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            if high != UNBOUNDED and high > MAX_BOUNDED_REPEAT:
                return f"a bounded repeat above {MAX_BOUNDED_REPEAT} is not allowed"
            if (high == UNBOUNDED or high > 1) and _unbounded_inside(body):
                return "nested unbounded quantifiers (like (a+)+) can hang a scan"
            found = _structural_problem(body)
        elif op == sre_constants.SUBPATTERN:
            found = _structural_problem(arg[3])
        elif op == sre_constants.BRANCH:
            found = next((p for b in arg[1] if (p := _structural_problem(b))), None)
        elif op in (sre_constants.GROUPREF, sre_constants.GROUPREF_EXISTS):
            found = "backreferences are not allowed"
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found = "look-around is not allowed"
        else:
            found = None
        if found:
            return found
    return None


def regex_problem(source: str) -> str | None:
    """Return why a signature regex is unsafe or unportable, or None when it is fine."""
    problem = _lexical_problem(source)
    if problem:
        return problem
    try:
        compiled = re.compile(source, re.ASCII)
    except re.error as exc:
        return f"does not compile: {exc.msg}"
    problem = _structural_problem(sre_parse.parse(source, re.ASCII))
    if problem:
        return problem
    if compiled.search("") is not None:
        return "matches an empty line, so it would match every line of a log"
    return None


def compile_signature(kind: str, pattern: str) -> re.Pattern[str]:
    """Compile a signature the way every consumer of the index must: ASCII classes, case-sensitive."""
    return re.compile(re.escape(pattern) if kind == "literal" else pattern, re.ASCII)


def required_literal(kind: str, pattern: str) -> str:
    """Return the longest text every match must contain, so scanners can skip lines that lack it."""
    if kind == "literal":
        return pattern
    best, run = "", ""
    for op, arg in sre_parse.parse(pattern, re.ASCII):
        if op == sre_constants.LITERAL:
            run += chr(arg)
            continue
        if len(run) > len(best):
            best = run
        run = ""
        # A group that must match once contributes its own required text only when it is a plain sequence.
        if op == sre_constants.SUBPATTERN:
            inner = "".join(chr(a) for o, a in arg[3] if o == sre_constants.LITERAL)
            if len(inner) == len(arg[3]) and len(inner) > len(best):
                best = inner
    return run if len(run) > len(best) else best
