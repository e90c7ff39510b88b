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
# Nested bounded repeats multiply: (?:(?:a{0,100}){0,100}){0,100} is a million-fold repeat that the
# multi-pattern engines refuse to compile and a backtracking engine cannot finish.
MAX_REPEAT_PRODUCT = 1000  # RE2 refuses more, whatever the nesting
# A bounded repeat this long backtracks like an unbounded one when a neighbour can take the same text.
LONG_REPEAT = 16
UNBOUNDED = sre_constants.MAXREPEAT
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)

# Character sets over ASCII, with 128 standing for every non-ASCII character.
_ALL = frozenset(range(129))
_DIGIT = frozenset(range(48, 58))
_WORD = frozenset([*range(48, 58), *range(65, 91), *range(97, 123), 95])
_SPACE = frozenset([9, 10, 11, 12, 13, 32])
_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: _DIGIT,
    sre_constants.CATEGORY_NOT_DIGIT: _ALL - _DIGIT,
    sre_constants.CATEGORY_WORD: _WORD,
    sre_constants.CATEGORY_NOT_WORD: _ALL - _WORD,
    sre_constants.CATEGORY_SPACE: _SPACE,
    sre_constants.CATEGORY_NOT_SPACE: _ALL - _SPACE,
}


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


def _class_chars(items: Any) -> frozenset[int]:
    """The characters a character class matches."""
    chars: set[int] = set()
    negate = False
    for op, arg in items:
        if op == sre_constants.NEGATE:
            negate = True
        elif op == sre_constants.LITERAL:
            chars.add(min(arg, 128))
        elif op == sre_constants.RANGE:
            chars.update(range(min(arg[0], 128), min(arg[1], 128) + 1))
        elif op == sre_constants.CATEGORY:
            chars |= _CATEGORIES.get(arg, _ALL)
    return _ALL - chars if negate else frozenset(chars)


def _first(items: Any) -> tuple[frozenset[int], bool]:
    """The characters a sequence can start with, and whether it can match the empty string."""
    out: set[int] = set()
    for op, arg in items:
        if op == sre_constants.LITERAL:
            return frozenset(out | {min(arg, 128)}), False
        if op == sre_constants.NOT_LITERAL:
            return frozenset(out | (_ALL - {arg})), False
        if op == sre_constants.ANY:
            return frozenset(out | (_ALL - {10})), False
        if op == sre_constants.IN:
            return frozenset(out | _class_chars(arg)), False
        if op in _REPEATS:
            chars, empty = _first(arg[2])
            out |= chars
            if arg[0] > 0 and not empty:
                return frozenset(out), False
        elif op == sre_constants.SUBPATTERN:
            chars, empty = _first(arg[3])
            out |= chars
            if not empty:
                return frozenset(out), False
        elif op == sre_constants.BRANCH:
            firsts = [_first(b) for b in arg[1]]
            out.update(*(c for c, _ in firsts))
            if not any(e for _, e in firsts):
                return frozenset(out), False
        # Anchors (AT) match no character; look at what follows them.
    return frozenset(out), True


def _repeat_chars(op: int, arg: Any) -> frozenset[int] | None:
    """The characters a long repeat of one character class consumes, or None for anything else."""
    if op not in _REPEATS or (arg[1] != UNBOUNDED and arg[1] < LONG_REPEAT) or len(arg[2]) != 1:
        return None
    inner_op, inner_arg = arg[2][0]
    if inner_op == sre_constants.IN:
        return _class_chars(inner_arg)
    if inner_op == sre_constants.ANY:
        return _ALL - {10}
    if inner_op == sre_constants.NOT_LITERAL:
        return _ALL - {inner_arg}
    if inner_op == sre_constants.LITERAL:
        return frozenset({min(inner_arg, 128)})
    return None


def _edge_repeats(items: Any, last: bool) -> frozenset[int]:
    """Characters a long repeat at the start (or end) of these items can take, looking into groups.

    Optional items and anchors in front of it (or after it) do not shield it: `[^,]+(?:x?[^,]+)` lets
    the two repeats share a run as surely as `[^,]+[^,]+` does.
    """
    out: frozenset[int] = frozenset()
    for op, arg in reversed(list(items)) if last else items:
        chars = _repeat_chars(op, arg)
        if chars is not None:
            return out | chars
        if op == sre_constants.SUBPATTERN:
            out |= _edge_repeats(arg[3], last)
        elif op == sre_constants.BRANCH:
            out = out.union(*(_edge_repeats(b, last) for b in arg[1]))
        elif op in _REPEATS:
            out |= _edge_repeats(arg[2], last)  # a repeated group: its own edges
        if not _optional(op, arg):
            return out
    return out


def _sequence_problem(items: Any) -> str | None:
    """Reject long repeats that meet, directly or across a group's edge, over the same characters."""
    pending: frozenset[int] = frozenset()
    for op, arg in items:
        chars = _repeat_chars(op, arg)
        if chars is not None:
            if pending & chars:
                return "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan"
            pending = chars if arg[0] > 0 else pending | chars
        elif op in (sre_constants.SUBPATTERN, sre_constants.BRANCH, *_REPEATS):
            if pending & _edge_repeats([(op, arg)], last=False):
                return "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan"
            tail = _edge_repeats([(op, arg)], last=True)
            pending = (pending | tail) if _optional(op, arg) else tail
        elif op in _REPEATS and arg[0] == 0 or op == sre_constants.AT:
            continue  # an optional item or an anchor separates nothing
        else:
            pending = frozenset()
    return None


def _branch_overlap(items: Any) -> bool:
    """Whether an alternation in these items has two alternatives that can start with the same character."""
    for op, arg in items:
        if op == sre_constants.BRANCH:
            seen: set[int] = set()
            for branch in arg[1]:
                chars, _ = _first(branch)
                if seen & chars:
                    return True
                seen |= chars
        elif op == sre_constants.SUBPATTERN and _branch_overlap(arg[3]):
            return True
    return False


def _item_chars(op: int, arg: Any) -> frozenset[int]:
    """Every character one item can consume, anywhere in its match (for groups, an over-estimate)."""
    if op in _REPEATS:
        return frozenset().union(*(_item_chars(o, a) for o, a in arg[2]))
    if op == sre_constants.SUBPATTERN:
        return frozenset().union(*(_item_chars(o, a) for o, a in arg[3]))
    if op == sre_constants.BRANCH:
        return frozenset().union(*(_item_chars(o, a) for b in arg[1] for o, a in b))
    return _first([(op, arg)])[0]


def _optional(op: int, arg: Any) -> bool:
    """Whether an item can match nothing."""
    return _first([(op, arg)])[1] and op != sre_constants.AT


def _tail_overlap(body: Any) -> bool:
    """Whether a repeated body ends in optional items that can take what the next repetition starts with.

    (aa?)* and (a|aa)* (which Python parses as a(?:|a)) can split one run of a's between repetitions in
    exponentially many ways; (?:[\\w.-]{1,60}, )* cannot, because the mandatory ', ' ends each one.
    """
    while len(body) == 1 and body[0][0] == sre_constants.SUBPATTERN:
        body = body[0][1][3]
    start, _ = _first(body)
    for op, arg in reversed(list(body)[1:]):
        if not _optional(op, arg):
            return False
        if _item_chars(op, arg) & start:
            return True
    return False


def _structural_problem(items: Any, product: int = 1) -> str | None:
    """Reject shapes that backtrack catastrophically or repeat too much."""
    found = _sequence_problem(items)
    if found:
        return found
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            if high != UNBOUNDED and high > MAX_BOUNDED_REPEAT:
                return f"a bounded repeat above {MAX_BOUNDED_REPEAT} is not allowed"
            if (high == UNBOUNDED or high > 1) and _unbounded_inside(body):
                return "nested unbounded quantifiers (like (a+)+) can hang a scan"
            if (high == UNBOUNDED or high > 1) and _branch_overlap(body):
                return (
                    "alternatives that can start with the same character inside a repeat (like (a\\w|\\wa)*) "
                    "can hang a scan"
                )
            if (high == UNBOUNDED or high > 1) and _tail_overlap(body):
                return (
                    "a repeated group whose optional end can take what its next repetition starts with "
                    "(like (a|aa)* or (aa?)*) can hang a scan"
                )
            inner = product * (high if high != UNBOUNDED else 1)
            if inner > MAX_REPEAT_PRODUCT:
                return f"nested bounded repeats multiply to more than {MAX_REPEAT_PRODUCT} repetitions"
            found = _structural_problem(body, inner)
        elif op == sre_constants.SUBPATTERN:
            found = _structural_problem(arg[3], product)
        elif op == sre_constants.BRANCH:
            found = next((p for b in arg[1] if (p := _structural_problem(b, product))), None)
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
    return _re2_problem(source)


def _re2_problem(source: str) -> str | None:
    """Compile with RE2 where it is installed: the linear-time engine must accept every signature."""
    try:
        import re2  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    options = re2.Options()
    options.log_errors = False  # the problem is reported here, not on stderr
    try:
        re2.compile(source, options)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"RE2 cannot compile it: {detail}"
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
