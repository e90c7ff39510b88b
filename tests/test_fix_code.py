"""Every code block an entry ships runs as pasted: the checker, and the shipped entries through it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from generator.build import load_catalog
from generator.codecheck import _walk, blocks, data_problems, problems, python_problems, shell_problems
from tests.conftest import ROOT
from tests.site_checks import soup

CATALOG = load_catalog(ROOT)


@pytest.mark.parametrize("entry_id", sorted(CATALOG.entries))
def test_every_block_of_every_entry_runs_as_pasted(entry_id: str) -> None:
    found = [
        f"{'.'.join(map(str, b.where))} ({b.language}): {p}"
        for b in blocks(CATALOG.entries[entry_id].entry())
        for p in problems(b)
    ]
    assert not found, "\n".join(found)


def test_shipped_entries_have_blocks_of_each_checked_kind() -> None:
    languages = {b.language for e in CATALOG.entries.values() for b in blocks(e.entry())}
    assert {"python", "shell", "json", "yaml"} <= languages


def test_a_name_neither_imported_nor_declared_is_reported() -> None:
    assert python_problems("x = torch.zeros(3)\n", ()) == [
        "uses 'torch' (line 1) without importing or defining it first; "
        "import it, or list it in the block's context if the reader's program supplies it"
    ]
    assert python_problems("import torch\nx = torch.zeros(3)\n", ()) == []


def test_context_declares_what_the_reader_supplies() -> None:
    code = "import torch\nloss = model(batch).loss\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    assert [p.split(" (")[0] for p in python_problems(code, ())] == ["uses 'batch'", "uses 'model'"]
    assert python_problems(code, ("model", "batch")) == []
    assert python_problems("print(args.lr)\n", ("args.lr",)) == []


def test_a_name_used_before_the_block_assigns_it_is_reported() -> None:
    # `sd` is rebound from itself: the reader's own `sd` must be declared.
    code = "sd = {k: v for k, v in sd.items() if not k.startswith('head.')}\n"
    assert python_problems(code, ())[0].startswith("uses 'sd' (line 1)")
    assert python_problems(code, ("sd",)) == []
    # Names bound later may be used inside a function body, and loop variables inside the loop.
    assert python_problems("def f():\n    return g()\n\ndef g():\n    return 1\n", ()) == []
    assert python_problems("for i in range(3):\n    total = i\n", ()) == []


def test_the_checker_walks_every_node_in_the_order_ast_walk_does() -> None:
    # The first line a missing name is reported at is the first use met in that order.
    trees = [ast.parse(b.code) for e in CATALOG.entries.values() for b in blocks(e.entry()) if b.language == "python"]
    trees.append(ast.parse("match p:\n    case {'a': [x, *rest], **kw} if x:\n        pass\n"))
    assert len(trees) > 100
    for tree in trees:
        assert list(_walk(tree)) == list(ast.walk(tree))


def test_every_kind_of_binding_counts_as_defining_a_name() -> None:
    code = (
        "import os.path as p, sys\nfrom json import dumps as d\n"
        "def f(a, *b, c=1, **k):\n    global g\n    return a, b, c, k\n"
        "class C:\n    pass\n"
        "try:\n    pass\nexcept ValueError as e:\n    print(e)\n"
        "match f(1):\n    case [x, *rest]:\n        pass\n"
        "    case {'k': y, **more}:\n        pass\n    case z:\n        pass\n"
        "with open(p.sep) as fh:\n    del fh\n"
        "print(p, sys, d, C, g, x, rest, y, more, z, [w for w in range(2)], (v := 3), v)\n"
    )
    assert python_problems(code, ()) == []
    assert [m.split(" (")[0] for m in python_problems(code.replace("import os.path as p, sys\n", ""), ())] == [
        "uses 'p'",
        "uses 'sys'",
    ]


def test_python_that_does_not_compile_is_reported() -> None:
    assert python_problems("if True:\n    pass\ncontinue\n", ()) == [
        "does not compile: 'continue' not properly in loop (line 3)"
    ]


def test_shell_placeholders_and_syntax() -> None:
    found = shell_problems("ps -o pid --ppid <rank_pid>\n")
    assert found[0] == "placeholder '<rank_pid>': use a variable (\"$PID\") the block sets or the reader exports"
    assert found[1].startswith("bash -n: ") and "syntax error" in found[1]
    assert shell_problems('PID=${PID:?set PID}\nps -o pid --ppid "$PID"   # the <rank_pid> from above\n') == []
    assert shell_problems("echo 'unterminated\n")[0].startswith("bash -n: ")


def test_json_yaml_and_toml_blocks_must_parse() -> None:
    assert data_problems('"zero_optimization": {"stage": 3}', "json")[0].startswith("does not parse as json: ")
    assert data_problems('{"zero_optimization": {"stage": 3}}', "json") == []
    assert data_problems("a: [1, 2\n", "yaml")[0].startswith("does not parse as yaml: ")
    assert data_problems("[tool]\nx = 1\n", "toml") == []
    assert data_problems("x = \n", "toml")[0].startswith("does not parse as toml: ")


def test_entry_page_lists_the_names_a_block_needs(real_site: Path) -> None:
    entry = CATALOG.entries["cuda-misaligned-address"].entry()
    index = next(i for i, c in enumerate(entry.fix.code) if c.context)
    page = soup(real_site, f"failures/{entry.id}/index.html")
    block = page.select(".fix-code")[index]
    assert [c.get_text() for c in block.select(".code-context code")] == list(entry.fix.code[index].context)
    # Blocks that need nothing from the reader say nothing.
    assert all(
        not b.select(".code-context") for i, b in enumerate(page.select(".fix-code")) if not entry.fix.code[i].context
    )
