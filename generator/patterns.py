"""Keep signature regexes in a subset that means the same in Python and JavaScript and cannot hang a scan."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, TypeVar

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
    # JavaScript's \s also takes non-ASCII spaces (U+00A0, U+FEFF, ...), so it may take the non-ASCII stand-in.
    sre_constants.CATEGORY_SPACE: _SPACE | {128},
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
    # 128 stands for many characters: a negated class that names one non-ASCII character still takes others.
    return (_ALL - chars) | (chars & {128}) if negate else frozenset(chars)


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


# Ambiguity: the test for backtracking blow-up. A backtracking engine tries every path of the pattern's
# automaton before it gives up on a line, so it is slow exactly where the automaton is ambiguous around a
# loop (Weber & Seidl's criteria, as Weideman et al. and Rexploiter apply them): a state with two different
# loops on one word (EDA) costs exponential time, two loops joined by a path that reads those loops' word
# too (IDA) polynomial time. The criteria are decided exactly, on an automaton that may take more paths
# than the engines (bounds read as unbounded, non-ASCII characters as one), so a doubt is a rejection.
_S = TypeVar("_S")  # a state of one of the product automata
_HAT, _DOLLAR, _BOUND, _NOT_BOUND = 1, 2, 4, 8  # the zero-width assertions a step passes on its way
_MASK_ALL = (1 << 129) - 1
_MASK_WORD = sum(1 << c for c in _WORD)
# Pairs and triples of states the product automata may visit before a pattern counts as too large.
MAX_ANALYSIS_STATES = 100_000
_QUANTIFIER = re.compile(r"\{(\d+)(,(\d*))?\}")
_PLAIN = re.compile(r"[^\\\[\](){}|*+?.^$]+")  # characters that stand for themselves
_EXPONENTIAL = (
    "`{0}` can match the same text in more than one way inside a repeat, so a backtracking engine "
    "(Python re, the browser) takes exponential time on a near-miss line; make the repeated part "
    "fixed-width or its alternatives disjoint"
)
_POLYNOMIAL = (
    "`{0}` and `{1}` can share out one run of text in many ways, so a backtracking engine (Python re, "
    "the browser) tries polynomially many splits on a near-miss line; make them match different "
    "characters or put a character between them that the first cannot match"
)
_RESTART = (
    "a search retries `{0}` from every character of a run it matches, so a backtracking engine (Python "
    "re, the browser) takes quadratic time on a long near-miss line; bound it (like {{1,200}}), or start "
    "the pattern with text `{0}` cannot match (or with \\b if it matches only word characters)"
)
_TOO_LARGE = (
    f"is too large to check for backtracking (more than {MAX_ANALYSIS_STATES} states to explore); "
    "split it into simpler signatures"
)
_UNMODELLED = "uses a construct the backtracking check cannot model"


class _Unmodelled(Exception):
    """The source uses something the analysis has no model for."""


class _TooLarge(Exception):
    """The product automata grow past MAX_ANALYSIS_STATES."""


@dataclass(frozen=True)
class _Chars:
    mask: int  # bit c for character c, bit 128 for the non-ASCII ones


@dataclass(frozen=True)
class _Text:
    masks: tuple[int, ...]  # a run of plain literal characters, one position each


@dataclass(frozen=True)
class _Assert:
    bit: int


@dataclass(frozen=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    branches: tuple[_Node, ...]


@dataclass(frozen=True)
class _Repeat:
    body: _Node
    low: int
    high: int | None  # None when unbounded
    rid: int  # index of its text in _Parser.spans


_Node = _Chars | _Text | _Assert | _Seq | _Alt | _Repeat


@lru_cache(maxsize=1024)
def _mask(text: str) -> int:
    """The characters one atom (a literal, an escape, '.' or a class) matches, as a bit mask."""
    chars, _ = _first(sre_parse.parse(text, re.ASCII))
    return sum(1 << c for c in chars)


class _Parser:
    """Read the portable subset as written.

    sre_parse folds (?:a|[ab]) into [ab] and (?:\\d|1) into [\\d1], which hides an ambiguity that the
    browser's engine still backtracks over, so the structure comes from the source; each atom's
    characters still come from sre_parse.
    """

    def __init__(self, source: str) -> None:
        self.source, self.i, self.groups = source, 0, 0
        self.spans: list[tuple[str, bool]] = []  # each repeat's text, and whether it is unbounded

    def parse(self) -> _Node:
        node = self._alternation()
        if self.i != len(self.source):
            raise _Unmodelled
        return node

    def _alternation(self) -> _Node:
        branches = [self._sequence()]
        while self.source[self.i : self.i + 1] == "|":
            self.i += 1
            branches.append(self._sequence())
        return branches[0] if len(branches) == 1 else _Alt(tuple(branches))

    def _sequence(self) -> _Node:
        items: list[_Node] = []
        s = self.source
        while self.i < len(s) and s[self.i] not in "|)":
            if run := _PLAIN.match(s, self.i):
                end = run.end()
                if s[end : end + 1] in ("*", "+", "?") or _QUANTIFIER.match(s, end):
                    end -= 1  # the last character is the one the quantifier repeats
                if end > self.i:
                    items.append(_Text(tuple(1 << min(ord(c), 128) for c in s[self.i : end])))
                    self.i = end
                    continue
            start = self.i
            items.append(self._quantified(self._atom(), start))
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def _atom(self) -> _Node:
        s, i = self.source, self.i
        ch = s[i]
        if ch == "(":
            if s.startswith("(?:", i):
                self.i += 3
            elif s.startswith("(?", i):
                raise _Unmodelled
            else:
                self.i += 1
                self.groups += 1
            inner = self._alternation()
            if s[self.i : self.i + 1] != ")":
                raise _Unmodelled
            self.i += 1
            return inner
        if ch == "[":
            j = i + 1 + (s[i + 1 : i + 2] == "^")  # the lexical rules keep a bare ']' out of the first place
            while j < len(s) and s[j] != "]":
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                raise _Unmodelled
            self.i = j + 1
            return _Chars(_mask(s[i : j + 1]))
        if ch == "\\":
            self.i = i + 2
            if s[i + 1 : i + 2] in ("b", "B"):
                return _Assert(_BOUND if s[i + 1] == "b" else _NOT_BOUND)
            return _Chars(_mask(s[i : i + 2]))
        self.i = i + 1
        if ch == "^":
            return _Assert(_HAT)
        if ch == "$":
            return _Assert(_DOLLAR)
        if ch in "*+?" or (ch == "{" and _QUANTIFIER.match(s, i)):
            raise _Unmodelled  # nothing to repeat: the compiler refuses these first
        return _Chars(_mask(ch if ch == "." else re.escape(ch)))

    def _quantified(self, node: _Node, start: int) -> _Node:
        s = self.source
        ch = s[self.i : self.i + 1]
        low: int
        high: int | None
        if ch and ch in "*+?":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
            self.i += 1
        elif ch == "{" and (m := _QUANTIFIER.match(s, self.i)):
            low = int(m[1])
            high = low if m[2] is None else (int(m[3]) if m[3] else None)
            self.i = m.end()
        else:
            return node
        if s[self.i : self.i + 1] == "?":
            self.i += 1  # lazy: the same paths, tried in another order
        if isinstance(node, _Assert):
            raise _Unmodelled
        self.spans.append((s[start : self.i], high is None))
        return _Repeat(node, low, high, len(self.spans) - 1)


_Ends = dict[tuple[int, int], int]  # (position, assertions passed) -> ways, counted up to 2
_Empty = dict[int, int]  # assertions passed -> ways to match nothing, counted up to 2
_Out = dict[int, dict[int, int]]  # a position's transitions: next position -> assertions passed -> ways


def _count(table: dict[Any, int], key: Any, ways: int) -> None:
    table[key] = min(2, table.get(key, 0) + ways)


def _join(a: int, b: int) -> int:
    """The assertions of two steps taken at one place, or -1 when they contradict each other."""
    both = a | b
    return -1 if both & _BOUND and both & _NOT_BOUND else both


def _then_first(empty: _Empty, first: _Ends) -> _Ends:
    """First positions reached after an empty match ($ before a character can never hold)."""
    out: _Ends = {}
    for m1, n1 in empty.items():
        if m1 & _DOLLAR:
            continue
        for (q, m2), n2 in first.items():
            if (m := _join(m1, m2)) >= 0:
                _count(out, (q, m), n1 * n2)
    return out


def _last_then(last: _Ends, empty: _Empty) -> _Ends:
    """Last positions followed by an empty match (^ after a character can never hold)."""
    out: _Ends = {}
    for (p, m1), n1 in last.items():
        for m2, n2 in empty.items():
            if not m2 & _HAT and (m := _join(m1, m2)) >= 0:
                _count(out, (p, m), n1 * n2)
    return out


def _both(a: _Empty, b: _Empty) -> _Empty:
    """Empty matches of two nodes in a row."""
    out: _Empty = {}
    for m1, n1 in a.items():
        for m2, n2 in b.items():
            if (m := _join(m1, m2)) >= 0:
                _count(out, m, n1 * n2)
    return out


def _merge(into: dict[Any, int], table: dict[Any, int]) -> None:
    for key, ways in table.items():
        _count(into, key, ways)


class _Automaton:
    """The position (Glushkov) automaton, counting the ways each transition can be taken.

    A backtracking engine tries every way, so (a|a) gives two parallel transitions and (a*)* two on a's
    loop, where a plain position automaton would merge them and hide the ambiguity. A repeat whose bound
    is above one is read as unbounded: (?:a{0,30}){0,30} splits a run in up to 30^30 ways without any
    loop, and x{1,40}x{1,40} shares a run as x+x+ does, up to the bound, on every retry of a search.
    """

    def __init__(self) -> None:
        self.chars: list[int] = []
        self.edges: list[_Out] = []
        self.loops: dict[tuple[int, int], set[int]] = {}  # transitions that go round a repeat
        self.bodies: list[tuple[int, int]] = []  # the positions of each looping repeat: every cycle is in one

    def build(self, node: _Node) -> tuple[_Ends, _Ends, _Empty]:
        """A node's first and last positions and its empty matches, adding its transitions."""
        if isinstance(node, _Chars):
            self.chars.append(node.mask)
            self.edges.append({})
            return {(len(self.chars) - 1, 0): 1}, {(len(self.chars) - 1, 0): 1}, {}
        if isinstance(node, _Text):
            start = len(self.chars)
            self.chars.extend(node.masks)
            self.edges.extend({p + 1: {0: 1}} for p in range(start, len(self.chars) - 1))
            self.edges.append({})
            return {(start, 0): 1}, {(len(self.chars) - 1, 0): 1}, {}
        if isinstance(node, _Assert):
            return {}, {}, {node.bit: 1}
        if isinstance(node, _Alt):
            first: _Ends = {}
            last: _Ends = {}
            empty: _Empty = {}
            for branch in node.branches:
                f, ends, e = self.build(branch)
                _merge(first, f)
                _merge(last, ends)
                _merge(empty, e)
            return first, last, empty
        if isinstance(node, _Seq):
            first, last, empty = {}, {}, {0: 1}
            for item in node.items:
                f, ends, e = self.build(item)
                self._link(last, f)
                _merge(first, _then_first(empty, f))
                last = _last_then(last, e)
                _merge(last, ends)
                empty = _both(empty, e)
            return first, last, empty
        if node.high == 0:
            return {}, {}, {0: 1}
        start = len(self.chars)
        first, last, empty = self.build(node.body)
        if node.high == 1:
            if node.low == 0:
                empty = dict(empty)
                _count(empty, 0, 1)
            return first, last, empty
        self.bodies.append((start, len(self.chars)))
        self._link(last, first, node.rid)
        if node.low == 0:
            return first, last, {0: 1}  # an iteration that matches nothing ends the repeat in both engines
        _merge(first, _then_first(empty, first))  # the first iteration may match nothing, the next not
        return first, last, empty

    def _link(self, last: _Ends, first: _Ends, rid: int | None = None) -> None:
        for (p, m1), n1 in last.items():
            for (q, m2), n2 in first.items():
                m = _join(m1, m2)
                if m < 0 or m & (_HAT | _DOLLAR):
                    continue  # ^ or $ between two characters
                _count(self.edges[p].setdefault(q, {}), m, n1 * n2)
                if rid is not None:
                    self.loops.setdefault((p, q), set()).add(rid)


class _Analysis:
    r"""The automaton as a search runs it, and the EDA and IDA checks on it.

    Node 0 is the start. The search's retries are modelled as a prefix loop P that reads any character
    before the match begins (the implicit unanchored `.*?`). It matters only in one way: a loop the
    pattern can enter after reading a run of the loop's own characters (`\d+x`, `foo.*bar` on
    "foofoo…") makes every start in the run scan to the run's end, quadratic time though each attempt
    is linear, so P joins the IDA check, against repeats without a bound; a bounded one costs at most
    its bound per start, and P adds no EDA. When the pattern uses \b or \B each state is split by
    whether its character is a word character, so `\b\d+x`, which a retry inside a run of digits
    cannot start, is seen to be linear.

    States from which the match can end with nothing else to check are dropped: an engine that reaches
    one succeeds there, so ambiguity that only trailing `\w*` or `.*` adds (`\w+.*`) cannot hang it.
    """

    def __init__(self, automaton: _Automaton, first: _Ends, last: _Ends, spans: list[tuple[str, bool]]) -> None:
        self.spans = spans
        self.budget = MAX_ANALYSIS_STATES
        # Edges only go forward except round a repeat, so positions past the last loop cannot lead to one.
        end = max((stop for _, stop in automaton.bodies), default=0)
        chars, edges = automaton.chars[:end], automaton.edges[:end]
        split = any(m & (_BOUND | _NOT_BOUND) for out in edges for ways in out.values() for m in ways) or any(
            m & (_BOUND | _NOT_BOUND) for (q, m) in first if q < end
        )
        self.tags: dict[tuple[int, int], set[int]] = {}
        if split:
            self._split(chars, edges, first, automaton.loops)
        else:
            # Node 0 is the start, 1 the prefix, 2 + p position p; ^ and $ between characters are gone.
            self.label = [0, _MASK_ALL, *chars]
            self.word = [0] * len(self.label)
            self.prefix = [1]
            self.succ = [{1: 1}, {1: 1}]
            self.succ.extend({q + 2: min(2, sum(w.values())) for q, w in out.items() if q < end} for out in edges)
            self.states = [[(p + 2, 0)] if c else [] for p, c in enumerate(chars)]
            for (q, m), ways in first.items():
                if q < end and chars[q] and not m & _DOLLAR:
                    self._edge(0, q + 2, ways)
                    if not m & _HAT:
                        self._edge(1, q + 2, ways)
            for (p, q), rids in automaton.loops.items():
                if p < end and q < end:
                    self.tags[(p + 2, q + 2)] = rids
            for out in self.succ:
                for v in [v for v in out if not self.label[v]]:
                    del out[v]  # a class that matches nothing
        self.cyclic = set(self.prefix)
        for start, stop in automaton.bodies:
            self.cyclic.update(u for p in range(start, stop) for u, _ in self.states[p])
        dropped = {u for (p, m) in last if m == 0 and p < end for u, _ in self.states[p]}
        self.live: set[int] = {0}
        stack = [0]
        while stack:
            u = stack.pop()
            for v in self.succ[u]:
                if v not in self.live and v not in dropped:
                    self.live.add(v)
                    stack.append(v)

    def _split(
        self,
        chars: list[int],
        edges: list[_Out],
        first: _Ends,
        loops: dict[tuple[int, int], set[int]],
    ) -> None:
        """Build the nodes with each position split by whether its character is a word character."""
        self.label, self.word, self.succ = [0], [0], [{}]  # no character before the start: \b reads non-word

        def ok(m: int, before: int, after: int, at_start: bool) -> bool:
            if m & _DOLLAR or (m & _HAT and not at_start):
                return False
            return not (m & _BOUND and before == after) and not (m & _NOT_BOUND and before != after)

        parts = ((0, ~_MASK_WORD), (1, _MASK_WORD))
        self.prefix = [self._node(_MASK_ALL & mask, w) for w, mask in parts]
        self.states = [[(self._node(c & mask, w), w) for w, mask in parts if c & mask] for c in chars]
        for u in self.prefix:
            self._edge(0, u, 1)
            for v in self.prefix:
                self._edge(u, v, 1)
        for (q, m), ways in first.items():
            for v, w in self.states[q] if q < len(chars) else ():
                if ok(m, 0, w, at_start=True):
                    self._edge(0, v, ways)
                for u in self.prefix:
                    if ok(m, self.word[u], w, at_start=False):
                        self._edge(u, v, ways)
        for p, out in enumerate(edges):
            for q, masks in out.items():
                if q >= len(chars):
                    continue
                rids = loops.get((p, q))
                for u, wu in self.states[p]:
                    for v, wv in self.states[q]:
                        ways = sum(n for m, n in masks.items() if ok(m, wu, wv, at_start=False))
                        if ways:
                            self._edge(u, v, ways)
                            if rids:
                                self.tags.setdefault((u, v), set()).update(rids)

    def _node(self, label: int, word: int) -> int:
        self.label.append(label)
        self.word.append(word)
        self.succ.append({})
        return len(self.label) - 1

    def _edge(self, u: int, v: int, ways: int) -> None:
        self.succ[u][v] = min(2, self.succ[u].get(v, 0) + ways)

    def _spend(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise _TooLarge

    def problem(self) -> str | None:
        """Describe the first ambiguity found: exponential, then polynomial, then the search's retries."""
        comps = [c for c in _components(self.cyclic & self.live, self.succ) if len(c) > 1 or c[0] in self.succ[c[0]]]
        sets = [set(c) for c in comps]
        order = sorted(range(len(comps)), key=lambda k: min(comps[k]))
        prefix = next((k for k in order if sets[k] & set(self.prefix)), None)
        reach = [self._reachable(c) for c in sets]
        for k in order:
            if k != prefix and self._exponential(sets[k]):
                return _EXPONENTIAL.format(self._repeat(sets[k]))
        for k1 in order:
            for k2 in order:
                if k1 in (k2, prefix) or k2 == prefix or not reach[k1] & sets[k2]:
                    continue
                if self._polynomial(sets[k1], sets[k2]):
                    return _POLYNOMIAL.format(self._repeat(sets[k1]), self._repeat(sets[k2]))
        for k in order:
            if prefix is None or k == prefix or not self._unbounded(sets[k]):
                continue
            if self._polynomial(sets[prefix], sets[k]):
                return _RESTART.format(self._repeat(sets[k]))
        return None

    def _inside(self, comp: set[int]) -> list[tuple[int, int]]:
        return [(u, v) for u in comp for v in self.succ[u] if v in comp]

    def _repeat(self, comp: set[int]) -> str:
        """The text of the outermost repeat whose loop the component goes round."""
        rids = {r for edge in self._inside(comp) for r in self.tags.get(edge, ())}
        return max((self.spans[r][0] for r in sorted(rids)), key=len, default="?")

    def _unbounded(self, comp: set[int]) -> bool:
        return any(self.spans[r][1] for edge in self._inside(comp) for r in self.tags.get(edge, ()))

    def _reachable(self, comp: set[int]) -> set[int]:
        seen = set(comp)
        stack = list(comp)
        while stack:
            for v in self.succ[stack.pop()]:
                if v in self.live and v not in seen:
                    seen.add(v)
                    stack.append(v)
        return seen - comp

    def _exponential(self, comp: set[int]) -> bool:
        """EDA: two different paths from a state back to itself on one word, in the pair automaton."""
        inner: dict[int, list[int]] = {u: [] for u in comp}
        for u, v in self._inside(comp):
            if self.succ[u][v] > 1:
                return True  # two ways to take one transition that lies on a loop
            inner[u].append(v)
        if len(comp) == 1:
            return False
        label = self.label
        diagonal = {(q, q) for q in comp}
        seen = set(diagonal)
        back: dict[tuple[int, int], list[tuple[int, int]]] = {}
        queue = deque(diagonal)
        while queue:
            a, b = pair = queue.popleft()
            for a2 in inner[a]:
                for b2 in inner[b]:
                    if label[a2] & label[b2]:
                        nxt = (a2, b2) if a2 <= b2 else (b2, a2)
                        back.setdefault(nxt, []).append(pair)
                        if nxt not in seen:
                            self._spend()
                            seen.add(nxt)
                            queue.append(nxt)
        # A pair of different states reachable from the diagonal that leads back to it is two ways round.
        good = set(diagonal)
        queue = deque(diagonal)
        while queue:
            for prev in back.get(queue.popleft(), ()):
                if prev[0] != prev[1]:
                    return True
                if prev not in good:
                    good.add(prev)
                    queue.append(prev)
        return False

    def _polynomial(self, c1: set[int], c2: set[int]) -> bool:
        """IDA: p -v-> p, p -v-> q and q -v-> q for some p in c1, q in c2, in the triple automaton."""
        label, succ, live = self.label, self.succ, self.live
        if len(c1) == 1 and len(c2) == 1:
            (p,), (q,) = c1, c2
            key = label[p] & label[q]  # both stay on their own loop, so each character is in both
            return bool(key) and self._reaches(p, q, lambda u: (b for b in succ[u] if b in live and label[b] & key))
        inner1 = {u: [v for v in succ[u] if v in c1] for u in c1}
        inner2 = {u: [v for v in succ[u] if v in c2] for u in c2}

        def moves(state: tuple[int, int, int]) -> Iterator[tuple[int, int, int]]:
            a, b, c = state
            for a2 in inner1[a]:
                for c2_ in inner2[c]:
                    both = label[a2] & label[c2_]
                    if both:
                        yield from ((a2, b2, c2_) for b2 in succ[b] if b2 in live and label[b2] & both)

        return any(self._reaches((p, p, q), (p, q, q), moves) for p in sorted(c1) for q in sorted(c2))

    def _reaches(self, start: _S, goal: _S, moves: Callable[[_S], Iterable[_S]]) -> bool:
        """Depth-first search from start for goal, each new state spending the analysis budget."""
        seen, stack = {start}, [start]
        while stack:
            for state in moves(stack.pop()):
                if state == goal:
                    return True
                if state not in seen:
                    self._spend()
                    seen.add(state)
                    stack.append(state)
        return False


def _components(nodes: set[int], succ: list[dict[int, int]]) -> list[list[int]]:
    """Strongly connected components of the graph restricted to nodes (Tarjan, without recursion)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    out: list[list[int]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(succ[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in nodes:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp: list[int] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


def _ambiguity_problem(source: str, groups: int) -> str | None:
    """Why the pattern can backtrack badly in some engine, from its automaton, or None."""
    parser = _Parser(source)
    try:
        tree = parser.parse()
        if parser.groups != groups:
            raise _Unmodelled
        automaton = _Automaton()
        first, last, _ = automaton.build(tree)
        return _Analysis(automaton, first, last, parser.spans).problem()
    except _Unmodelled:
        return _UNMODELLED
    except _TooLarge:
        return _TOO_LARGE


@lru_cache(maxsize=4096)
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
    return _ambiguity_problem(source, compiled.groups) or _re2_problem(source)


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


@lru_cache(maxsize=1 << 16)
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
