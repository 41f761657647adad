"""Lint the book sources: Quarto cannot run here, so these tests check what a render
relies on (config, chapter lists, paths, labels, parity, excerpts, numbers, roadmap) and
the site script (book/website.py) around it. The rendered site itself is tested in
tests/browser/test_site.py."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import booklib as B

from sitelib import find_quarto, website

PAGES = [(lang, page) for lang in B.LANGS for page in B.ALL_PAGES]


def require_page(lang, page):
    path = B.page_source(lang, page)
    assert path.exists(), f"{path.relative_to(B.ROOT)} is missing: every chapter exists in zh and en"
    return B.read_page(lang, page)


# ---------------------------------------------------------------- project and profiles
@pytest.mark.parametrize("path", ["book/quarto/_quarto.yml", "book/quarto/_quarto-zh.yml",
                                  "book/quarto/_quarto-en.yml",
                                  *sorted(p.relative_to(B.ROOT).as_posix()
                                          for p in (B.ROOT / ".github/workflows").glob("*.yml"))])
def test_yaml_files_parse_to_mappings(path):
    assert isinstance(B.load_yaml(path), dict), f"{path} does not hold a YAML mapping"


def test_project_is_a_book_with_search_dark_theme_annotations_and_the_cell_filter():
    cfg = B.project()
    assert cfg["project"]["type"] == "book"
    assert cfg["book"]["search"] is True
    html = cfg["format"]["html"]
    assert set(html["theme"]) == {"light", "dark"}
    assert html["code-annotations"] in ("hover", "select", "below")
    assert cfg["filters"] == ["pyodide-cells"]
    assert (B.ROOT / "_extensions/pyodide-cells/_extension.yml").exists(), \
        "_quarto.yml filters: [pyodide-cells] needs _extensions/pyodide-cells/_extension.yml"


@pytest.mark.parametrize("lang,quarto_lang", [("zh", "zh-Hant"), ("en", "en")])
def test_profile_sets_language_and_the_chapters_in_roadmap_order(lang, quarto_lang):
    prof = B.profile(lang)
    assert prof["lang"] == quarto_lang
    assert prof["book"]["chapters"] == [f"{c}.qmd" for c in B.CHAPTERS]
    assert prof["book"]["appendices"] == [f"{a}.qmd" for a in B.APPENDICES]


def test_numbered_chapters_are_the_roadmaps_numbers_and_only_the_preface_is_unnumbered():
    for lang in B.LANGS:
        numbered = [c for c in B.CHAPTERS if ".unnumbered" not in B.first_heading(B.read_page(lang, c))]
        assert [c for c in B.CHAPTERS if c not in numbered] == ["index"]
        assert [int(c[:2]) for c in numbered] == list(range(1, len(numbered) + 1)), \
            f"{lang}: Quarto numbers chapters in order, so file NN must be the NN-th numbered chapter"


@pytest.mark.parametrize("lang", B.LANGS)
def test_every_chapter_file_is_listed_and_every_listed_chapter_exists(lang):
    prof = B.profile(lang)
    listed = set(prof["book"]["chapters"] + prof["book"]["appendices"])
    files = {p.name for p in (B.ROOT / "book" / lang).glob("*.qmd")}
    assert files == listed, f"book/{lang}/ and _quarto-{lang}.yml differ: {sorted(files ^ listed)}"


@pytest.mark.parametrize("lang", B.LANGS)
def test_pages_with_cells_use_the_markdown_engine(lang):
    """Without `engine: markdown` a ```{pyodide} block makes Quarto start a Jupyter kernel."""
    for page in B.existing_pages(lang):
        text = B.read_page(lang, page)
        if "```{pyodide}" in text:
            assert re.match(r"---\n(?:#.*\n)*engine: markdown\n---\n", text), f"book/{lang}/{page}.qmd"


def test_every_file_a_page_uses_is_copied_into_the_edition():
    """book/website.py renders a copy of each edition; a path the book names must be in that copy."""
    copied = {src for src, _ in website.SHARED}
    cfg = B.project()
    named = cfg["project"]["resources"] + [f["src"] for f in cfg["pyodide"]["files"]]
    for path in named:
        assert any(path == c or path.startswith(c + "/") for c in copied), path
        assert (B.ROOT / path).exists(), path


@pytest.mark.parametrize("lang", B.LANGS)
def test_profile_files_exist(lang):
    html = B.profile(lang)["format"]["html"]
    for path in [html["include-after-body"], B.project()["format"]["html"]["css"]]:
        assert (B.ROOT / "book" / path).exists(), f"{path} (named in the {lang} config) is missing from book/"


def test_pyodide_options_follow_the_contract_and_their_files_are_site_resources():
    cfg = B.project()
    opts = cfg["pyodide"]
    assert opts["version"] == "0.27.7"
    assert opts["base-url"] == f"https://cdn.jsdelivr.net/pyodide/v{opts['version']}/full/"
    assert "numpy" in opts["packages"]
    assert isinstance(opts["timeout"], int) and opts["timeout"] > 0
    dests = [f["dest"] for f in opts["files"]]
    assert len(dests) == len(set(dests)), f"two files share a destination: {dests}"
    srcs = [f["src"] for f in opts["files"]]
    assert sorted(cfg["project"]["resources"]) == sorted(srcs), "every pyodide file must be a site resource"
    missing = [s for s in srcs if not (B.ROOT / s).exists()]
    assert not missing, f"pyodide files missing (results come from `make reproduce` / `make smoke`): {missing}"


# ---------------------------------------------------------------- paths, variables
@pytest.mark.parametrize("lang,page", PAGES)
def test_every_include_and_image_path_exists(lang, page):
    text = require_page(lang, page)
    missing = [p for p in B.includes(text) + B.images(text) if not B.resolve(p, lang).exists()]
    assert not missing, f"book/{lang}/{page}.qmd points at missing files: {missing}"


@pytest.mark.parametrize("lang,page", PAGES)
def test_every_var_shortcode_names_a_key_of_variables_yml(lang, page):
    used = B.variables_used(require_page(lang, page))
    if not used:
        return
    path = B.ROOT / "_variables.yml"
    assert path.exists(), ("_variables.yml is missing: `llmparts.report` writes it "
                           "(`make reproduce`, or `make smoke` for the tiny version)")
    known = B.flatten_variables(yaml.safe_load(path.read_text(encoding="utf-8")))
    unknown = sorted(set(used) - set(known))
    assert not unknown, f"book/{lang}/{page}.qmd uses keys that _variables.yml lacks: {unknown}"


# ---------------------------------------------------------------- parity between languages
@pytest.mark.parametrize("page", B.ALL_PAGES)
def test_both_languages_have_the_same_sections_cells_figures_and_tables(page):
    zh, en = require_page("zh", page), require_page("en", page)
    assert B.section_ids(zh) == B.section_ids(en), "section ids differ (same ids, same order)"
    assert len(B.pyodide_cells(zh)) == len(B.pyodide_cells(en)), "number of {pyodide} cells differs"
    # A hint is prose in the page's language; every other option must match cell by cell.
    def structural(cells):
        return [{k: v for k, v in options.items() if k != "hint"} for options, _ in cells]
    assert structural(B.pyodide_cells(zh)) == structural(B.pyodide_cells(en)), \
        "cell options differ (exercise ids, roles, autorun... must match cell by cell)"
    assert [("hint" in o) for o, _ in B.pyodide_cells(zh)] == [("hint" in o) for o, _ in B.pyodide_cells(en)], \
        "a hint exists in one language only"
    assert B.figure_labels(zh) == B.figure_labels(en), "figures differ"
    assert B.table_labels(zh, "zh") == B.table_labels(en, "en"), "tables differ"


def test_the_two_editions_have_the_same_chapter_files():
    names = {lang: sorted(p.name for p in (B.ROOT / "book" / lang).glob("*.qmd")) for lang in B.LANGS}
    assert names["zh"] == names["en"]


# ---------------------------------------------------------------- cross-references
@pytest.mark.parametrize("lang", B.LANGS)
def test_every_cross_reference_resolves_in_the_same_language(lang):
    pages = B.existing_pages(lang)
    defined = set().union(*(B.labels(B.read_page(lang, p), lang) for p in pages)) if pages else set()
    dangling = sorted({(p, r) for p in pages for r in B.references(B.read_page(lang, p)) if r not in defined})
    assert not dangling, f"{lang}: references without a label: {dangling}"


def test_reference_parser_finds_refs_in_prose_but_not_in_code_or_email():
    text = "See @sec-a and [@fig-b].\n\n```python\nx = '@sec-c'\n```\nmail me@sec-d.org `@tbl-e`"
    assert B.references(text) == ["sec-a", "fig-b"]


# ---------------------------------------------------------------- code excerpts
def excerpts():
    for lang in B.LANGS:
        for page in B.existing_pages(lang):
            for info, body in B.code_blocks(B.read_page(lang, page)):
                if B.block_attr(info, "excerpt"):
                    yield lang, page, B.block_attr(info, "excerpt"), body


def strip_annotation(line):
    return re.sub(r"\s*# <\d+>\s*$", "", line)


def excerpt_matches(body, source):
    want = [strip_annotation(l) for l in body.strip("\n").split("\n")]
    have = source.split("\n")
    return any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1))


@pytest.mark.parametrize("lang,page,src,body", list(excerpts()) or [pytest.param(None, None, None, None, marks=pytest.mark.skip("no excerpts yet"))])
def test_code_excerpt_is_a_contiguous_run_of_its_source(lang, page, src, body):
    path = B.ROOT / src
    assert path.exists(), f"book/{lang}/{page}.qmd: excerpt source {src} does not exist"
    assert excerpt_matches(body, path.read_text(encoding="utf-8")), \
        f"book/{lang}/{page}.qmd: an excerpt of {src} no longer matches it:\n{body[:300]}"


def test_excerpt_check_ignores_annotation_markers_and_rejects_edited_lines():
    source = "a = 1\nb = 2\nc = 3\n"
    assert excerpt_matches("b = 2  # <1>\nc = 3", source)
    assert not excerpt_matches("b = 2\nc = 4", source)
    assert not excerpt_matches("a = 1\nc = 3", source)  # not contiguous


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("lang,page", PAGES)
def test_prose_quotes_no_computed_number_by_hand(lang, page):
    found = B.quoted_numbers(require_page(lang, page))
    assert not found, (f"book/{lang}/{page}.qmd quotes {found} in prose: use {{{{< var KEY >}}}}, an "
                       "included table, or [VALUE]{.checked var=\"KEY\"} (CONTRIBUTING.md, Numbers)")


@pytest.mark.parametrize("lang,page", PAGES)
def test_checked_numbers_equal_their_variable(lang, page):
    spans = B.checked_spans(require_page(lang, page))
    if not spans:
        return
    known = B.flatten_variables(B.load_yaml("_variables.yml"))
    wrong = [(shown, key, known.get(key)) for shown, key in spans if str(known.get(key)) != shown]
    assert not wrong, f"book/{lang}/{page}.qmd shows values that _variables.yml contradicts: {wrong}"


def test_number_rule_flags_decimals_and_grouped_counts_only_in_prose():
    text = ("Loss fell to 1.7712 with 82,594,560 weights; Pyodide 0.27.7, year 2023, 768 dims.\n"
            "`1.5` {{< var a.b >}} $0.5x$ [2.25]{.checked var=\"k\"} ![x](/images/a.1.png){width=0.5}\n"
            "```python\nlr = 3.0e-4\n```\n")
    assert B.quoted_numbers(text) == ["1.7712", "82,594,560"]


# ---------------------------------------------------------------- roadmap
@pytest.mark.parametrize("lang,page", PAGES)
def test_roadmap_follows_the_template_and_highlights_this_chapter(lang, page):
    text = require_page(lang, page)
    maps = [b for b in B.mermaid_blocks(text) if B.is_roadmap(b)]
    want = B.roadmap_text(lang, B.ROADMAP_HERE.get(page))
    for body in maps:
        diagram = "\n".join(l.rstrip() for l in body.split("\n") if l.strip() and not l.startswith("%%|"))
        assert diagram == want, f"book/{lang}/{page}.qmd: the roadmap differs from the template:\n{diagram}"
    if page in B.ROADMAP_HERE or page == "index":
        assert maps, f"book/{lang}/{page}.qmd has no roadmap"


# ---------------------------------------------------------------- cells
KNOWN_OPTIONS = {"autorun", "edit", "echo", "timeout", "exercise", "hint", "role", "label", "fig-cap"}


@pytest.mark.parametrize("lang,page", PAGES)
def test_cell_options_are_known_and_every_exercise_has_solution_and_check(lang, page):
    cells = B.pyodide_cells(require_page(lang, page))
    for opts, _ in cells:
        assert set(opts) <= KNOWN_OPTIONS, f"unknown cell options {set(opts) - KNOWN_OPTIONS}"
        assert "role" not in opts or opts["role"] in ("solution", "check") and "exercise" in opts, \
            f"role must be solution|check and come with exercise: {opts}"
    roles = {}
    for opts, _ in cells:
        if "exercise" in opts:
            roles.setdefault(str(opts["exercise"]), []).append(opts.get("role", "starter"))
    for ex, got in roles.items():
        assert sorted(got) == ["check", "solution", "starter"], f"exercise {ex} has cells {got}"


# ---------------------------------------------------------------- site script
@pytest.mark.parametrize("lang,rel,href", [
    ("zh", "index.html", "../en/index.html"),
    ("zh", "02-modern-parts.html", "../en/02-modern-parts.html"),
    ("en", "appendix-rope-math.html", "../zh/appendix-rope-math.html"),
    ("en", "site_libs/x/page.html", "../../../zh/site_libs/x/page.html"),
])
def test_language_link_points_at_the_same_page_in_the_other_edition(lang, rel, href):
    assert website.switch_href(rel, lang) == href


def fake_edition(site, lang, pages):
    snippet = (B.ROOT / f"book/styles/lang-switch-{lang}.html").read_text(encoding="utf-8")
    for rel in pages:
        page = site / lang / rel
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<html><body><h2 id='sec-x'>x</h2>{snippet}</body></html>", encoding="utf-8")


def test_language_links_then_checklinks_give_a_site_without_broken_links(tmp_path):
    for lang in B.LANGS:
        fake_edition(tmp_path, lang, ["index.html", "01-minimal-gpt.html"])
    for lang in B.LANGS:
        assert website.set_language_links(tmp_path / lang, lang) == 2
    assert 'href="../en/01-minimal-gpt.html"' in (tmp_path / "zh/01-minimal-gpt.html").read_text(encoding="utf-8")
    assert website.broken_links(tmp_path) == []


def test_checklinks_reports_missing_files_and_missing_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<p id="ok"></p><a href="b.html">b</a><a href="#nope">n</a>'
                                     '<a href="#ok">ok</a><a href="https://x.org/">x</a>', encoding="utf-8")
    assert website.broken_links(tmp_path) == [("a.html", "b.html"), ("a.html", "#nope")]
    out = subprocess.run([sys.executable, str(B.ROOT / "book/website.py"), "checklinks", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "2 broken links" in out.stdout


def test_website_rejects_an_unknown_edition_with_usage_exit_2():
    out = subprocess.run([sys.executable, str(B.ROOT / "book/website.py"), "render", "--lang", "fr"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--lang ('fr') must be zh, en or zh,en" in out.stderr


def test_find_quarto_names_what_to_install_when_no_quarto_can_be_found(monkeypatch):
    monkeypatch.setattr(find_quarto, "candidates", lambda: iter([("PATH", lambda: None),
                                                                 ("build/quarto", lambda: None)]))
    with pytest.raises(find_quarto.QuartoNotFound, match=r"Quarto 1\.8\.27 is needed .*PATH: none; "
                                                         r"build/quarto: none.*pip install -e \"\.\[book\]\""):
        find_quarto.find_quarto()


# ---------------------------------------------------------------- workflows
WORKFLOWS = sorted((B.ROOT / ".github/workflows").glob("*.yml"))


def steps_of(workflow):
    return [s for job in workflow["jobs"].values() for s in job["steps"]]


# `uses: owner/repo[/path]@<full commit SHA> # vX.Y.Z`: a tag can be moved, a commit cannot; the comment says which release it is.
PINNED_USES = re.compile(r"\s*(?:- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_pins_every_action_to_a_commit_with_its_version_and_limits_permissions(path):
    text = path.read_text(encoding="utf-8")
    wf = yaml.safe_load(text)
    assert wf["permissions"] == {"contents": "read"}, "default token may only read the repository"
    uses_lines = [line for line in text.splitlines() if line.strip().startswith(("uses:", "- uses:"))]
    assert len(uses_lines) == sum("uses" in step for step in steps_of(wf))  # every `uses` is on a line of its own
    for line in uses_lines:
        assert PINNED_USES.fullmatch(line), f"not pinned to a commit with its version in a comment: {line.strip()}"
    for step in steps_of(wf):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, "checkout must not leave the token in .git/config"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_renders_both_editions_with_make_site_and_a_pinned_quarto(path):
    wf = yaml.safe_load(path.read_text(encoding="utf-8"))
    steps = steps_of(wf)
    quarto = [s for s in steps if s.get("uses", "").startswith("quarto-dev/quarto-actions/setup@")]
    wanted = re.search(r'^VERSION = "(\d+\.\d+\.\d+)"$', (B.ROOT / "book/find_quarto.py").read_text(encoding="utf-8"),
                       re.MULTILINE)[1]  # the version `make site` takes from PATH
    assert quarto and all(str(s["with"]["version"]) == wanted for s in quarto), f"Quarto is not pinned to {wanted}"
    script = "\n".join(s.get("run", "") for s in steps)
    assert re.search(r"^make site\b", script, re.MULTILINE), f"{path.name} does not render with `make site`"
    assert "quarto render" not in script, f"{path.name} renders by hand: `make site` is the one recipe"


def test_pull_requests_run_make_test_as_root_in_debian_and_main_reproduces():
    pr = yaml.safe_load((B.ROOT / ".github/workflows/pull-request.yml").read_text(encoding="utf-8"))
    pub = yaml.safe_load((B.ROOT / ".github/workflows/publish.yml").read_text(encoding="utf-8"))
    assert "pull_request" in pr[True] and pub[True]["push"]["branches"] == ["main"]  # YAML reads `on:` as True
    # Chromium and the CJK font come from `make test` itself (scripts/system_deps.py, apt-get as root in a
    # Debian container), not from a second recipe in the workflow.
    assert pr["jobs"]["test"]["container"].endswith("-bookworm")
    pr_script = "\n".join(s.get("run", "") for s in steps_of(pr))
    assert re.search(r"^make test\b", pr_script, re.MULTILINE) and "apt-get" not in pr_script
    pub_script = "\n".join(s.get("run", "") for s in steps_of(pub))
    assert re.search(r"^make reproduce\b.*TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu", pub_script, re.MULTILINE)
    assert "apt-get" not in pub_script
    assert pub["jobs"]["deploy"]["permissions"]["pages"] == "write"
