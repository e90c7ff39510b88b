"""Signature regexes stay portable between Python and JavaScript and cannot hang a scan."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml

from generator.patterns import compile_signature, regex_problem

ENTRIES = Path(__file__).parent.parent / "entries"


def exponential(part: str) -> str:
    return (
        f"`{part}` can match the same text in more than one way inside a repeat, so a backtracking engine "
        "(Python re, the browser) takes exponential time on a near-miss line; make the repeated part "
        "fixed-width or its alternatives disjoint"
    )


def polynomial(one: str, other: str) -> str:
    return (
        f"`{one}` and `{other}` can share out one run of text in many ways, so a backtracking engine (Python re, "
        "the browser) tries polynomially many splits on a near-miss line; make them match different "
        "characters or put a character between them that the first cannot match"
    )


def restart(part: str) -> str:
    return (
        f"a search retries `{part}` from every character of a run it matches, so a backtracking engine (Python "
        "re, the browser) takes quadratic time on a long near-miss line; bound it (like {1,200}), or start "
        f"the pattern with text `{part}` cannot match (or with \\b if it matches only word characters)"
    )


SAFE = [
    r"NVRM: Xid \(PCI:[0-9a-f:.]+\): 13,",
    r"ran for \d+ milliseconds before timing out",
    r"Tried to allocate [\d.]+ [GM]iB",
    r"(?:SHARP|CollNet) allreduce failed",
    # Shapes the backtracking checks must not reject: a separator ends each repetition, the
    # alternatives start differently, or the neighbouring repeats take different characters.
    r"(?:[\w.-]{1,40}, ){0,20}flash_attn\b",
    r"rank (?:x|xy)+z",
    r"a\s*b\s*c",
    r"\b\d+ \d+",
    r"rank \d+\s*:",
    r"(?:\[[^\]]{1,80}\] )?User-specified",
    r",[^,]+(?:,|y)z",
    r"(?:ab)?c",
    # Unambiguous loops: each run of text splits one way only.
    r"x(?:a|ab)*c",
    r"x(?:ab|ac)*y",
    r"key=[a-z]+[0-9]+",
    r"x\d{1,3}\.\d{1,3}y",
    r"(?:^|: )torch\.\S",
    # A search cannot restart inside the run: ^, \b before word characters, or text the repeat cannot take.
    r"\b\w+:\s+\d+",
    r"^[a-z]+[0-9]+",
    r"\b\d+x",
    r"^\d+x",
    r"\bfoo\w+:",
    # A bounded repeat costs at most its bound per retry; a trailing repeat ends in a match.
    r"foo[^,]{1,200}bar",
    r"Graph break: [^\n]{1,300} from user code at:",
    r"foo\w+",
    r"foo.*",
]
UNSAFE = {
    r"(a+)+b": "nested unbounded quantifiers (like (a+)+) can hang a scan",
    r"(?:\w+\s?)*x": "nested unbounded quantifiers (like (a+)+) can hang a scan",
    r"foo(?=bar)": "only plain groups '(…)' and '(?:…)' are allowed (no look-around, named groups or inline flags)",
    r"(?<!x)foo": "only plain groups '(…)' and '(?:…)' are allowed (no look-around, named groups or inline flags)",
    r"(?P<n>x)": "only plain groups '(…)' and '(?:…)' are allowed (no look-around, named groups or inline flags)",
    r"(?i)error": "only plain groups '(…)' and '(?:…)' are allowed (no look-around, named groups or inline flags)",
    r"(ab)\1": "backreference or octal escape \\1 is not allowed",
    r"\Aerror": "escape \\A is not in the portable subset (use \\d \\w \\s \\b or a character class)",
    r"x{,3}y": "'{,n}' means different things in Python and JavaScript; write '{0,n}'",
    r"a++b": "possessive quantifiers are not allowed",
    r"[]x]": "a ']' at the start of a character class is not portable; write \\]",
    r"x*": "matches an empty line, so it would match every line of a log",
    r"x{2000}": "a bounded repeat above 1000 is not allowed",
    r"(unclosed": "does not compile: missing ), unterminated subpattern",
    r"(a|aa)*c": "a repeated group whose optional end can take what its next repetition starts with "
    "(like (a|aa)* or (aa?)*) can hang a scan",
    r"(aa?)*c": "a repeated group whose optional end can take what its next repetition starts with "
    "(like (a|aa)* or (aa?)*) can hang a scan",
    r"(?:a\w|\wb)*c": "alternatives that can start with the same character inside a repeat (like (a\\w|\\wa)*) "
    "can hang a scan",
    r"\s*\s*\s*\s*:x": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"key\s*:?\s*value": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"\d+\w*x": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"(?:(?:a{0,1000}){0,1000}){0,1000}b": "nested bounded repeats multiply to more than 1000 repetitions",
    # Found by tests/test_fuzz.py: repeats that meet across the edge of a group backtrack as badly.
    r" {0,3}(?:[ab]\w?|[^,]+(?:[ab]\w?|[^,]+(?:a+|a)))": "adjacent repeats that can match the same characters "
    "(like \\s*\\s*) can hang a scan",
    r"x[^,]+(?:[^,]+y){1,3}z": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"x[^,]+(?:[^,]+y)?z": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"\d+\d+x": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"a*a*x": "adjacent repeats that can match the same characters (like \\s*\\s*) can hang a scan",
    r"(a*)*c": "nested unbounded quantifiers (like (a+)+) can hang a scan",
    # Exponential (EDA): one state, two different loops on the same text. Found by tests/test_fuzz.py, or
    # hidden from sre_parse, which folds (?:a|[ab]) into [ab] though the browser's engine does not.
    r"(?:.{0,3})*\d{2}": exponential("(?:.{0,3})*"),
    r"(a|a)*c": exponential("(a|a)*"),
    r"(?:a|[ab])*c": exponential("(?:a|[ab])*"),
    r"(?:\d|1)*x": exponential(r"(?:\d|1)*"),
    r"x(?:\s| )*y": exponential(r"(?:\s| )*"),
    "x(?:\\s|\u00a0)*y": exponential("(?:\\s|\u00a0)*"),  # JavaScript's \s takes the no-break space
    # Bounded but as bad: (?:a{0,30}){0,30} splits 900 a's in more ways than there are atoms.
    r"(?:a{0,30}){0,30}b": exponential("(?:a{0,30}){0,30}"),
    r"(?:.{0,3}){0,300}x": exponential("(?:.{0,3}){0,300}"),
    r"(?:a|a){30}b": exponential("(?:a|a){30}"),
    # Polynomial (IDA): two loops, and a path between them, on the same text; joined through a middle
    # character, which the adjacency rule does not see.
    r".*.[^,]*x": polynomial(".*", "[^,]*"),
    r".*,.*,.*x": polynomial(".*", ".*"),
    r"x\w+[a-z]\w+:": polynomial(r"\w+", r"\w+"),
    r"x\d{1,40}.\d{1,40}y": polynomial(r"\d{1,40}", r"\d{1,40}"),
    # Quadratic through the search: every start in a run of the loop's characters scans the whole run.
    r"\w+:\s+\d+": restart(r"\w+"),
    r"[a-z]+[0-9]+": restart("[a-z]+"),
    r"\d+ \d+": restart(r"\d+"),
    r"(?:x|xy)+z": restart("(?:x|xy)+"),
    r"(?:a|ab)*c": restart("(?:a|ab)*"),
    r"x[^,]+(?:,|y)z": restart("[^,]+"),
    r"foo.*bar": restart(".*"),
    r"foo\w+:": restart(r"\w+"),
    r"(?:\b)*x": "uses a construct the backtracking check cannot model",
}


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_patterns_pass(pattern: str) -> None:
    assert regex_problem(pattern) is None


@pytest.mark.parametrize("pattern,reason", UNSAFE.items())
def test_unsafe_patterns_are_named(pattern: str, reason: str) -> None:
    assert regex_problem(pattern) == reason


def test_classes_are_ascii_like_javascript() -> None:
    assert compile_signature("regex", r"rank \d+").search("rank ３") is None
    assert compile_signature("literal", "a.b (c)").search("x a.b (c) y")
    assert compile_signature("literal", "a.b").search("axb") is None


def test_a_pattern_too_large_to_analyse_is_refused() -> None:
    # 62 alternatives that agree for 40 characters: the pair automaton has about 62 * 61 / 2 * 40 states.
    pattern = "x(?:" + "|".join("." * 40 + end for end in string.ascii_letters + string.digits) + ")*y"
    assert regex_problem(pattern) == (
        "is too large to check for backtracking (more than 100000 states to explore); split it into simpler signatures"
    )


def _shipped_regexes() -> list[tuple[str, str]]:
    found = []
    for path in sorted(ENTRIES.rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for sig in doc.get("signatures") or []:
            if isinstance(sig, dict) and isinstance(sig.get("regex"), str):
                found.append((str(path.relative_to(ENTRIES.parent)), sig["regex"]))
    return found


def test_every_shipped_regex_passes() -> None:
    shipped = _shipped_regexes()
    assert len(shipped) > 300
    assert [(path, rx, why) for path, rx in shipped if (why := regex_problem(rx))] == []
