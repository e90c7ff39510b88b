"""Checks that an entry's code runs as pasted: Python names, shell syntax, data that parses."""

from __future__ import annotations

import ast
import builtins
import json
import re
import subprocess
import tomllib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from generator.schema import Entry

PYTHON = {"python", "python3", "py"}
SHELL = {"shell", "bash", "sh", "console"}
# `<pid>` in a shell line is a redirection to bash, not a placeholder; `<cuda_runtime.h>` in a heredoc is fine.
SHELL_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w-]*>")
SHELL_COMMENT = re.compile(r"(?:^|\s)#.*$")
KNOWN = set(dir(builtins)) | {"__file__", "__name__"}
# libyaml where it is installed: the pure-Python parser takes milliseconds for a block of a few lines.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Block:
    """One code block of an entry, and where it sits."""

    where: tuple[str | int, ...]
    language: str
    code: str
    context: tuple[str, ...]


def blocks(entry: Entry) -> Iterator[Block]:
    """Every code block of an entry: fix code, confirmation commands and the verification command."""
    for i, code in enumerate(entry.fix.code):
        yield Block(("fix", "code", i, "code"), code.language, code.code, tuple(code.context))
    for i, check in enumerate(entry.confirm):
        if check.command:
            yield Block(("confirm", i, "command"), check.language, check.command, tuple(check.context))
    v = entry.verify
    if v.command:
        yield Block(("verify", "command"), v.language, v.command, tuple(v.context))


def _binds(n: ast.AST) -> list[str]:
    """Names one node binds."""
    kind = type(n)
    if kind is ast.Name:
        return [] if type(n.ctx) is ast.Load else [n.id]  # type: ignore[attr-defined]
    bind = _BINDERS.get(kind)
    return bind(n) if bind is not None else []


def _defined(n: Any) -> list[str]:
    return [n.name]


def _imported(n: Any) -> list[str]:
    return [(a.asname or a.name).split(".")[0] for a in n.names]


def _named(n: Any) -> list[str]:
    return [n.name] if n.name else []


# What each kind of node binds, by its exact type (ast's node classes are never subclassed).
_BINDERS: dict[type, Callable[[Any], list[str]]] = {
    ast.Import: _imported,
    ast.ImportFrom: _imported,
    ast.FunctionDef: _defined,
    ast.AsyncFunctionDef: _defined,
    ast.ClassDef: _defined,
    ast.arg: lambda n: [n.arg],
    ast.ExceptHandler: _named,
    ast.Global: lambda n: list(n.names),
    ast.Nonlocal: lambda n: list(n.names),
    ast.MatchAs: _named,
    ast.MatchStar: _named,
    ast.MatchMapping: lambda n: [n.rest] if n.rest else [],
}


def _children(node: ast.AST) -> Iterator[ast.AST]:
    """A node's child nodes in ast.iter_child_nodes' order, without its generator's checks of every field."""
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            yield from (item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            yield value


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under node, node first, breadth first (ast.walk's order)."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(_children(node))
        yield node


def _bound_by(node: ast.AST) -> set[str]:
    """Names a statement or expression binds anywhere inside it."""
    return {name for n in _walk(node) for name in _binds(n)}


def _loads(node: ast.AST) -> list[ast.Name]:
    return [n for n in _walk(node) if type(n) is ast.Name and type(n.ctx) is ast.Load]


def python_problems(code: str, context: tuple[str, ...]) -> list[str]:
    """Syntax errors, and names the block uses without importing, defining or declaring them first."""
    try:
        tree = ast.parse(code)
        compile(tree, "<fix>", "exec")
    except SyntaxError as e:
        return [f"does not compile: {e.msg} (line {e.lineno})"]
    # One breadth-first walk (ast.walk's order) finds what each top-level statement binds and every use.
    binds: list[set[str]] = [set() for _ in tree.body]
    uses: list[ast.Name] = []
    queue: deque[tuple[ast.AST, int]] = deque((stmt, k) for k, stmt in enumerate(tree.body))
    while queue:
        node, k = queue.popleft()
        if type(node) is ast.Name and type(node.ctx) is ast.Load:
            uses.append(node)
        else:
            binds[k].update(_binds(node))
        queue.extend((child, k) for child in _children(node))
    given = KNOWN | {name.split(".")[0] for name in context}
    everywhere = given.union(*binds)
    missing: dict[str, int] = {}
    # Anything bound somewhere in the block may be used inside a function or loop body; at the top
    # level an assignment's value runs before its targets exist, so `sd = f(sd)` needs an earlier `sd`.
    bound = set(given)
    for stmt, names in zip(tree.body, binds, strict=True):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            inner = _bound_by(stmt.value)
            for n in _loads(stmt.value):
                if n.id not in bound and n.id not in inner:
                    missing.setdefault(n.id, n.lineno)
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id not in bound:
                missing.setdefault(stmt.target.id, stmt.lineno)
        bound |= names
    for n in uses:
        if n.id not in everywhere:
            missing.setdefault(n.id, n.lineno)
    return [
        f"uses {name!r} (line {line}) without importing or defining it first; "
        "import it, or list it in the block's context if the reader's program supplies it"
        for name, line in sorted(missing.items(), key=lambda item: (item[1], item[0]))
    ]


def shell_problems(code: str, *, syntax: bool = True) -> list[str]:
    """`<placeholder>` words that bash reads as redirections, and (with syntax) what `bash -n` rejects."""
    problems = []
    # A comment may name a placeholder; only code is read by bash.
    code_only = "\n".join(SHELL_COMMENT.sub("", line) for line in code.splitlines())
    for m in SHELL_PLACEHOLDER.finditer(code_only):
        problems.append(f'placeholder {m.group()!r}: use a variable ("$PID") the block sets or the reader exports')
    if not syntax:
        return problems
    done = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True, check=False)
    if done.returncode:
        problems.append("bash -n: " + " ".join(done.stderr.split())[:300])
    return problems


def data_problems(code: str, language: str) -> list[str]:
    """JSON, YAML and TOML blocks must parse."""
    try:
        if language == "json":
            json.loads(code)
        elif language == "yaml":
            list(yaml.load_all(code, Loader=YAML_LOADER))
        elif language == "toml":
            tomllib.loads(code)
    except (ValueError, yaml.YAMLError) as e:
        return [f"does not parse as {language}: " + " ".join(str(e).split())[:300]]
    return []


def problems(block: Block, *, shell_syntax: bool = True) -> list[str]:
    """Everything wrong with one block; empty when it runs as pasted."""
    if block.language in PYTHON:
        return python_problems(block.code, block.context)
    if block.language in SHELL:
        # bash -n is a process per block: the test suite runs it, the validator leaves it out.
        return shell_problems(block.code, syntax=shell_syntax)
    return data_problems(block.code, block.language)
