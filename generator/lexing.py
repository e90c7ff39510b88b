"""Pygments' regex lexers run with one pattern per state: the same tokens, a fraction of the matching.

A RegexLexer tries a state's rules one after another at each position, one `match` call per rule, so
a Python block costs dozens of failed matches per token. Written as one alternation, the rules are
tried in the same order by the regex engine itself, and the first that matches wins as before; its
group tells which rule it was. Tests compare the tokens with Pygments' own on every shipped block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType

Rule = tuple[Callable[..., Any], Any, Any]  # (a compiled pattern's match, action, new state), as Pygments keeps it
# A match and the rule of each group that wraps one, or a rule's own match with {0: the rule} when it is tried alone
Run = tuple[Callable[[str, int], "re.Match[str] | None"], dict[int, Rule]]
# A backreference or a conditional counts groups, which an alternation renumbers: such a rule is tried alone.
_COUNTS_GROUPS = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")
_LEADING_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")  # a pattern's global inline flags, kept in its compiled flags
_SCOPED = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


def _scoped(pattern: re.Pattern[str]) -> str | None:
    """The pattern as a group that carries its own flags, to sit in an alternation; None if it cannot."""
    if pattern.flags & (re.ASCII | re.LOCALE) or _COUNTS_GROUPS.search(pattern.pattern):
        return None
    source = pattern.pattern
    while m := _LEADING_FLAGS.match(source):
        source = source[m.end() :]
    on = "".join(letter for flag, letter in _SCOPED if pattern.flags & flag)
    off = "".join(letter for flag, letter in _SCOPED if not pattern.flags & flag)
    end = "\n)" if pattern.flags & re.VERBOSE else ")"  # a verbose pattern may end in a comment
    return f"((?{on}{'-' if off else ''}{off}:{source}{end})"


# Lookups in a state before its rules are joined. Joining Python's states costs 0.3 s of compiling a
# process, and a lookup saves about 7 µs: a build that highlights a few pages never repays it.
JOIN_AFTER = 5000


class _State:
    """One state's rules, run by run: each run of rules that can be joined as one alternation, the rest alone."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.lookups = 0
        self.runs: list[Run] = [(rule[0], {0: rule}) for rule in rules]

    def join(self) -> None:
        """Join each run of rules that an alternation can hold."""
        runs: list[Run] = []
        run: list[tuple[Rule, str, int]] = []
        for rule in self.rules:
            pattern: re.Pattern[str] = getattr(rule[0], "__self__")  # noqa: B009 - a bound method's pattern
            scoped = _scoped(pattern)
            if scoped is None:
                runs += _joined(run)
                run = []
                runs.append((rule[0], {0: rule}))
            else:
                run.append((rule, scoped, pattern.groups))
        # Swapped in whole: serve highlights a saved page in a thread of its own.
        self.runs = runs + _joined(run)


def _joined(run: list[tuple[Rule, str, int]]) -> list[Run]:
    """A run of rules as one alternation, with the rule each wrapping group stands for."""
    if not run:
        return []
    rule_of, group = {}, 1
    for rule, _, groups in run:
        rule_of[group] = rule
        group += 1 + groups
    try:
        return [(re.compile("|".join(scoped for _, scoped, _ in run)).match, rule_of)]
    except re.error:  # two rules naming a group alike, say: each tried alone
        return [(rule[0], {0: rule}) for rule, _, _ in run]


_STATES: dict[tuple[type[Lexer], str], _State] = {}


def _state(lexer: RegexLexer, name: str) -> _State:
    key = (type(lexer), name)
    state = _STATES.get(key)
    if state is None:
        state = _STATES[key] = _State(lexer._tokens[name])
    return state


def joinable(lexer: Lexer) -> bool:
    """Whether tokens() can lex with this lexer: a RegexLexer that keeps Pygments' own loop."""
    return isinstance(lexer, RegexLexer) and type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed


def tokens(lexer: RegexLexer, text: str) -> Iterator[tuple[Any, str]]:
    """The (token type, text) pairs lexer.get_tokens(text) gives, for a lexer that joinable() accepts."""
    if lexer.filters:
        yield from lexer.get_tokens(text)
        return
    for _, kind, value in _unprocessed(lexer, lexer._preprocess_lexer_input(text)):
        yield kind, value


def _unprocessed(lexer: RegexLexer, text: str) -> Iterator[tuple[int, Any, str]]:
    pos, stack = 0, ["root"]
    state = _state(lexer, "root")
    while True:
        rule, m = _first_match(state, text, pos)
        if rule is None or m is None:
            if pos >= len(text):
                return
            if text[pos] == "\n":  # no rule matched at a line's end: back to the root, as Pygments does
                stack = ["root"]
                state = _state(lexer, "root")
                yield pos, Whitespace, "\n"
            else:
                yield pos, Error, text[pos]
            pos += 1
            continue
        _, action, new_state = rule
        if action is not None:
            if type(action) is _TokenType:
                yield pos, action, m.group()
            else:
                yield from action(lexer, m)
        pos = m.end()
        if new_state is not None:
            _move(stack, new_state)
            state = _state(lexer, stack[-1])


def _first_match(state: _State, text: str, pos: int) -> tuple[Rule | None, re.Match[str] | None]:
    """The first of the state's rules that matches at pos, and a match whose whole text and end are the rule's."""
    state.lookups += 1
    if state.lookups == JOIN_AFTER:
        state.join()
    for match, rule_of in state.runs:
        if m := match(text, pos):
            if 0 in rule_of:  # a rule tried alone
                return rule_of[0], m
            rule = rule_of[m.lastindex or 0]
            if type(rule[1]) is _TokenType or rule[1] is None:
                return rule, m
            return rule, rule[0](text, pos)  # a callback reads the rule's own groups
    return None, None


def _move(stack: list[str], new_state: Any) -> None:
    """Apply a rule's state change to the stack, as Pygments does."""
    if isinstance(new_state, tuple):
        for name in new_state:
            if name == "#pop":
                if len(stack) > 1:
                    stack.pop()
            elif name == "#push":
                stack.append(stack[-1])
            else:
                stack.append(name)
    elif isinstance(new_state, int):
        if abs(new_state) >= len(stack):
            del stack[1:]
        else:
            del stack[new_state:]
    elif new_state == "#push":
        stack.append(stack[-1])
