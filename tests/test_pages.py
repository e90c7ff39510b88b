"""Rendered pages of the small corpus, checked through an HTML parser."""

from __future__ import annotations

import shutil
from pathlib import Path

from bs4 import BeautifulSoup
from pytest import MonkeyPatch

from generator import render
from generator.build import THEME, build, load_catalog
from generator.render import Renderer
from tests.conftest import ROOT
from tests.site_checks import broken_links, jsonld, policy_violations, soup

ENTRY_SECTIONS = [
    "signatures",
    "observations",
    "symptoms",
    "mechanism",
    "mistaken-for",
    "root-causes",
    "confirm",
    "fix",
    "verify",
    "prevention",
    "scale",
    "collateral",
    "faq",
    "related",
    "references",
]


def test_entry_page_has_every_section(corpus_site: Path) -> None:
    doc = soup(corpus_site, "failures/demo-hang/index.html")
    for section in ENTRY_SECTIONS:
        heading = doc.find(id=section)
        assert heading is not None and heading.name == "h2", section
    assert doc.select_one("h1").get_text(strip=True) == "Demo collective hangs after a rank exits"
    glance = [dt.get_text() for dt in doc.select("dl.glance dt")]
    assert glance == ["Fix", "Confirm first", "Proof it worked", "Caution"]
    sigs = [pre.get_text() for pre in doc.select("pre.sig")]
    assert sigs == ["Watchdog caught collective operation timeout: ", r"demo rank \d+ left after [\d.]+ s"]
    assert "Search key" in doc.select(".signature")[1].select_one(".sig-kind").get_text()
    assert doc.select_one("#fix-code-1").get_text(strip=True) == "Shell"


def test_silent_entry_shows_fingerprint_and_no_signature_section(corpus_site: Path) -> None:
    doc = soup(corpus_site, "failures/demo-nan/index.html")
    assert doc.find(id="signatures") is None
    assert doc.select_one("dl.fingerprint dt code").get_text() == "loss"
    for absent in ("symptoms", "mistaken-for", "prevention", "scale", "collateral", "references"):
        assert doc.find(id=absent) is None, absent


def test_faq_leaves_out_questions_without_fields(corpus_site: Path) -> None:
    full = [h.get_text() for h in soup(corpus_site, "failures/demo-hang/index.html").select(".faq h3")]
    sparse = [h.get_text() for h in soup(corpus_site, "failures/demo-nan/index.html").select(".faq h3")]
    assert len(full) == 11  # every question but the fingerprint one
    assert "How long does it take to fix?" not in sparse
    assert "Where is it documented?" not in sparse
    assert "Which metric fingerprints it?" in sparse


def test_faq_jsonld_mirrors_visible_questions(corpus_site: Path) -> None:
    doc = soup(corpus_site, "failures/demo-hang/index.html")
    graph = {item["@type"]: item for item in jsonld(doc)}
    assert set(graph) == {"TechArticle", "FAQPage", "BreadcrumbList"}
    visible = [h.get_text() for h in doc.select(".faq h3")]
    assert [q["name"] for q in graph["FAQPage"]["mainEntity"]] == visible
    answer = graph["FAQPage"]["mainEntity"][1]["acceptedAnswer"]["text"]
    assert answer.startswith("It is a software problem") and "a communication failure" in answer
    article = graph["TechArticle"]
    assert article["headline"] == "Demo collective hangs after a rank exits"
    assert article["dateModified"] == "2026-11-02"
    crumbs = graph["BreadcrumbList"]["itemListElement"]
    assert [c["position"] for c in crumbs] == [1, 2, 3, 4]
    assert crumbs[1]["item"] == "https://example.org/docs/failures/"
    assert "item" not in crumbs[-1]


def test_head_metadata(corpus_site: Path) -> None:
    doc = soup(corpus_site, "failures/demo-hang/index.html")
    assert doc.find("link", rel="canonical")["href"] == "https://example.org/docs/failures/demo-hang/"
    assert doc.find("meta", property="og:url")["content"] == "https://example.org/docs/failures/demo-hang/"
    assert doc.find("meta", property="og:type")["content"] == "article"
    edit = doc.find("a", string="Edit this page")["href"]
    assert edit == "https://github.com/example/trainwreck/edit/main/entries/demo/demo-hang.yaml"
    assert soup(corpus_site, "404.html").find("meta", attrs={"name": "robots"})["content"] == "noindex"


def test_hub_groups_rows_and_lists_tools(corpus_site: Path) -> None:
    doc = soup(corpus_site, "hubs/demo/index.html")
    assert doc.select_one("#group-runtime").get_text() == "At run time"
    rows = doc.select("table.compare tbody tr")
    assert len(rows) == 1
    cells = [td.get_text(" ", strip=True) for td in rows[0].find_all("td")]
    assert cells[0] == "Watchdog caught collective operation timeout:"
    assert cells[1] == "A peer left; the reporting rank is a bystander."
    assert doc.select_one("dl.tools dt code").get_text() == "DEMO_DEBUG=1"


def test_every_kind_of_page_exists(corpus_site: Path) -> None:
    for page in [
        "index.html",
        "failures/index.html",
        "search/index.html",
        "404.html",
        "hubs/index.html",
        "tags/index.html",
        "tags/hang/index.html",
        "tags/nan/index.html",
        "categories/index.html",
        "categories/numerics/index.html",
        "systems/index.html",
        "systems/optimizer/index.html",
        "hubs/demo/index.html",
        "failures/demo-nan/index.html",
    ]:
        assert (corpus_site / page).is_file(), page


def test_no_broken_internal_links(corpus_site: Path) -> None:
    assert broken_links(corpus_site, "/docs/") == []


def test_strict_policy_holds_on_every_page(corpus_site: Path) -> None:
    assert policy_violations(corpus_site) == []


def test_markdown_and_text_never_become_markup(corpus: Path, tmp_path: Path) -> None:
    path = corpus / "entries" / "demo" / "demo-nan.yaml"
    text = (
        path.read_text(encoding="utf-8")
        .replace(
            "mechanism: An overflow propagates through the update.",
            "mechanism: '<script>alert(1)</script> [x](javascript:alert(2)) **bold**'",
        )
        .replace("title: Demo loss turns NaN", "title: Demo loss turns NaN <img src=x onerror=alert(3)>")
    )
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    build(corpus, out, search=False)
    page = (out / "failures/demo-nan/index.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page
    # Long tokens carry <wbr> break opportunities, which are not text.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.replace("<wbr>", "")
    assert 'href="javascript:' not in page
    assert "<img src=x" not in page
    assert "<strong>bold</strong>" in page


def test_failed_build_never_replaces_a_foreign_folder(corpus: Path, tmp_path: Path) -> None:
    from generator.errors import BuildError

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    try:
        build(corpus, foreign, search=False)
    except BuildError as exc:
        assert "refusing to replace" in str(exc)
    else:
        raise AssertionError("build replaced a folder it did not create")
    assert (foreign / "notes.txt").read_text() == "keep me"
    shutil.rmtree(foreign)


def test_control_characters_in_log_lines_are_shown_not_emitted(corpus: Path, tmp_path: Path) -> None:
    path = corpus / "entries" / "demo" / "demo-hang.yaml"
    text = path.read_text(encoding="utf-8").replace(
        '["[rank0]: demo rank 3 left after 12.5 s"]', '["\\x1b[1m[rank0]:\\x1b[0m demo rank 3 left after 12.5 s"]'
    )
    assert "\\x1b" in text
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    build(corpus, out, search=False)
    page = (out / "failures/demo-hang/index.html").read_text(encoding="utf-8")
    assert "\x1b" not in page
    assert "\u241b[1m[rank0]:\u241b[0m demo rank 3" in page


def test_summary_markdown_renders_on_the_page_and_is_plain_in_metadata(corpus: Path, tmp_path: Path) -> None:
    path = corpus / "entries" / "demo" / "demo-nan.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "summary: The loss becomes NaN and stays there.", "summary: The `loss` becomes NaN and stays there."
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    build(corpus, out, search=False)
    doc = soup(out, "failures/demo-nan/index.html")
    assert doc.select_one("p.summary code").get_text() == "loss"
    assert doc.find("meta", attrs={"name": "description"})["content"] == "The loss becomes NaN and stays there."
    assert "The loss becomes NaN" in (out / "feed.xml").read_text(encoding="utf-8")


def test_a_fingerprint_metric_phrase_renders_its_markdown(corpus: Path, tmp_path: Path) -> None:
    path = corpus / "entries" / "demo" / "demo-nan.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  - metric: loss\n" in text
    path.write_text(
        text.replace("  - metric: loss\n", '  - metric: "the `loss` field of the step line"\n'), encoding="utf-8"
    )
    out = tmp_path / "out"
    build(corpus, out, search=False)
    dt = soup(out, "failures/demo-nan/index.html").select_one("dl.fingerprint dt")
    assert dt.get_text() == "the loss field of the step line"
    assert dt.select_one("code").get_text() == "loss"


def test_the_outline_lists_sections_with_their_subsections_and_no_anchor_marks() -> None:
    from generator.markup import outline

    html = (
        '<h2 id="fix">Fix <a class="anchor" href="#fix">¶</a></h2><h3 id="fix-code-1">PyTorch</h3>'
        '<h3>No id</h3><h2 id="verify">Verify &amp; <code>check</code></h2><h4 id="deep">Too deep</h4>'
    )
    assert [(s.id, s.text, [(c.id, c.text) for c in s.children]) for s in outline(html)] == [
        ("fix", "Fix", [("fix-code-1", "PyTorch")]),
        ("verify", "Verify & check", []),
    ]


def test_long_tokens_get_break_points_at_their_joints_and_short_ones_none() -> None:
    from generator.markup import breakable, plain_text, unsplittable

    assert breakable("see torch.distributed.init_process_group, e.g. 3.5") == (
        "see torch.<wbr>distributed.<wbr>init_<wbr>process_<wbr>group, e.g. 3.5"
    )
    assert breakable("a<b>&c") == "a&lt;b&gt;&amp;c"
    assert plain_text("<p>torch.<wbr>distributed</p>") == "torch.distributed"
    assert unsplittable(r"GPU [0-9a-f]{4}:[0-9a-f]{2}") == (
        '<span class="nobr">GPU</span> <span class="nobr">[0-9a-f]{4}:</span><wbr><span class="nobr">[0-9a-f]{2}</span>'
    )


def test_the_side_navigation_shows_the_window_around_the_entry_and_marks_it(monkeypatch: MonkeyPatch) -> None:
    monkeypatch.setattr(render, "SIDENAV_LIMIT", 5)
    catalog = load_catalog(ROOT)
    renderer = Renderer(catalog, THEME / "templates")
    largest = max(catalog.by_category.values(), key=len)
    ordered = sorted(largest, key=lambda i: catalog.entries[i].title.lower())
    base = catalog.site.path("failures/")
    # The template loop that the side navigation's lines replace, as the reference they must equal.
    loop = renderer.env.from_string(
        "{% for id, title in items %}\n"
        "    <li><a href=\"{{ path('failures/' ~ id ~ '/') }}\" title=\"{{ title }}\""
        '{% if id == current %} aria-current="page"{% endif %}>{{ title }}</a></li>\n'
        "{% endfor %}\n"
    )
    for k in (0, 1, len(ordered) // 2, len(ordered) - 1):  # the window at both ends and in the middle
        entry_id = ordered[k]
        page = BeautifulSoup(renderer.render(renderer.render_entry(catalog.entries[entry_id])), "html.parser")
        nav = page.select_one("nav.sidenav ul")
        assert nav is not None
        links = nav.select("a")
        start = min(max(0, k - 2), len(ordered) - 5)
        assert [a["href"] for a in links] == [f"{base}{i}/" for i in ordered[start : start + 5]]
        assert [a.get_text() for a in links] == [a["title"] for a in links]
        assert [a["href"] for a in nav.select("a[aria-current=page]")] == [f"{base}{entry_id}/"]
        window = renderer._siblings(catalog.entries[entry_id])
        assert render.nav_items(window, base, entry_id) == loop.render(items=list(window), current=entry_id)
