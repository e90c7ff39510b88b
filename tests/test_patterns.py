"""Signature regexes stay portable between Python and JavaScript and cannot hang a scan."""

from __future__ import annotations

import pytest

from generator.patterns import compile_signature, regex_problem

SAFE = [
    r"NVRM: Xid \(PCI:[0-9a-f:.]+\): 13,",
    r"ran for \d+ milliseconds before timing out",
    r"Tried to allocate [\d.]+ [GM]iB",
    r"(?:SHARP|CollNet) allreduce failed",
    # Shapes the backtracking checks must not reject: a separator ends each repetition, the
    # alternatives start differently, or the neighbouring repeats take different characters.
    r"(?:[\w.-]{1,40}, ){0,20}flash_attn\b",
    r"(?:x|xy)+z",
    r"a\s*b\s*c",
    r"\d+ \d+",
    r"rank \d+\s*:",
    r"(?:\[[^\]]{1,80}\] )?User-specified",
    r"x[^,]+(?:,|y)z",
    r"(?:ab)?c",
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
