"""Read the book's sources the way Quarto would, for the lint tests and the cell runner.

These helpers parse just enough of Quarto markdown for fast checks without a render:
fenced code blocks, `#|` cell options, headings with ids, labels, references,
shortcodes, images and the project/profile YAML (book/quarto/). The rendered site
itself is tested in tests/browser/test_site.py.
"""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh", "en")
# The book's chapters in reading order.
CHAPTERS = ("index", "01-minimal-gpt", "02-modern-parts", "03-llama2", "04-data", "05-evaluation", "06-serving",
            "07-governance", "08-drift", "09-alignment")
APPENDICES = ("appendix-rope-math",)
ALL_PAGES = CHAPTERS + APPENDICES


def load_yaml(path):
    with open(ROOT / path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def project():
    return load_yaml("book/quarto/_quarto.yml")


def profile(lang):
    return load_yaml(f"book/quarto/_quarto-{lang}.yml")


def page_source(lang, page):
    """The file that holds a page's text: the root index.qmd only includes the preface."""
    return ROOT / "book" / lang / f"{page}.qmd"


def first_heading(text):
    """The page's first level-1 heading line (its chapter title with attributes), after the front matter."""
    body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    return next(line for line in body.splitlines() if line.startswith("# "))


def read_page(lang, page):
    return page_source(lang, page).read_text(encoding="utf-8")


def existing_pages(lang):
    return [p for p in ALL_PAGES if page_source(lang, p).exists()]


# ---------------------------------------------------------------- fenced code blocks
_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")


def split_blocks(text):
    """Split markdown into ('prose', text) and ('code', info, body) parts, in order.

    A fence closes only on the same character repeated at least as often, so a
    four-backtick block can show a three-backtick one (as CONTRIBUTING.md does).
    """
    parts, prose, lines, i = [], [], text.split("\n"), 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence, info = m["fence"], m["info"].strip()
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body, i = [], i + 1
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # skip the closing fence (or run off the end of an unclosed block)
        parts.append(("prose", "\n".join(prose)))
        parts.append(("code", info, "\n".join(body)))
        prose = []
    parts.append(("prose", "\n".join(prose)))
    return parts


def code_blocks(text):
    return [(p[1], p[2]) for p in split_blocks(text) if p[0] == "code"]


def prose(text):
    """Markdown with code blocks, YAML front matter and HTML comments removed."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = "\n".join(p[1] for p in split_blocks(text) if p[0] == "prose")
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def block_lang(info):
    """'python' for ```python, ```{python}, ```{.python excerpt=...}; 'pyodide' for ```{pyodide}."""
    m = re.match(r"\{?\s*\.?([\w-]+)", info)
    return m.group(1) if m else ""


def block_attr(info, name):
    m = re.search(rf'\b{name}="([^"]*)"', info)
    return m.group(1) if m else None


# ---------------------------------------------------------------- cells and options
def cell_options(body):
    """(options, code) of a cell: leading `#| key: value` lines are YAML options."""
    lines = body.split("\n")
    n = 0
    while n < len(lines) and lines[n].startswith("#|"):
        n += 1
    opts = yaml.safe_load("\n".join(l[2:] for l in lines[:n])) if n else None
    return (opts or {}), "\n".join(lines[n:])


def pyodide_cells(text):
    return [cell_options(body) for info, body in code_blocks(text) if info == "{pyodide}"]


def mermaid_blocks(text):
    return [body for info, body in code_blocks(text) if block_lang(info) == "mermaid"]


# ---------------------------------------------------------------- labels and references
LABEL_KINDS = ("sec", "fig", "tbl")


def section_ids(text):
    """Ids of headings (`## Title {#sec-x}`), in order."""
    return re.findall(r"^#{1,6} .*\{[^}]*#(sec-[\w-]+)", prose(text), flags=re.M)


def labels(text, lang):
    """Every sec/fig/tbl label a page defines, including those of the tables it includes."""
    found = set(re.findall(r"\{[^}]*#((?:sec|fig|tbl)-[\w-]+)", prose(text)))
    for _, body in code_blocks(text):  # executable/mermaid cells label figures with `#| label:`
        for m in re.finditer(r"^(?:#|%%)\| label: *((?:fig|tbl)-[\w-]+)", body, flags=re.M):
            found.add(m.group(1))
    for inc in includes(text):
        path = resolve(inc, lang)
        if path.exists() and path.suffix in (".md", ".qmd"):
            found |= labels(path.read_text(encoding="utf-8"), lang)
    return found


def references(text):
    """`@sec-x` style references in prose (an e-mail address or inline code is not one)."""
    s = re.sub(r"(`+).*?\1", " ", prose(text), flags=re.S)
    return re.findall(r"(?<![\w.])@((?:sec|fig|tbl)-[\w-]*[\w])", s)


def figure_labels(text):
    return sorted(re.findall(r"!\[[^\]]*\]\([^)]*\)\{[^}]*#(fig-[\w-]+)", prose(text)))


def table_labels(text, lang):
    return sorted(l for l in labels(text, lang) if l.startswith("tbl-"))


# ---------------------------------------------------------------- shortcodes and paths
def includes(text):
    return re.findall(r"\{\{<\s*include\s+(\S+?)\s*>\}\}", prose(text))


def variables_used(text):
    return re.findall(r"\{\{<\s*var\s+(\S+?)\s*>\}\}", prose(text))


def images(text):
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)", prose(text))


def resolve(path, lang):
    """A path in a chapter: `/x` is project-relative (Quarto's rule), else relative to the
    chapter's folder."""
    return ROOT / path[1:] if path.startswith("/") else ROOT / "book" / lang / path


def flatten_variables(tree, prefix=""):
    """`{a: {b: "1"}}` -> `{"a.b": "1"}`: Quarto addresses nested _variables.yml keys with dots."""
    flat = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_variables(value, name + "."))
        else:
            flat[name] = value
    return flat


# ---------------------------------------------------------------- numbers in prose
# A decimal like 1.7712, not part of a dotted version such as 0.27.7 (the negative look-
# arounds), and not a digit-grouped count like 82,594,560 either: both kinds come from code.
DECIMAL = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")
GROUPED = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])")
CHECKED_SPAN = re.compile(r"\[([^\]]+)\]\{\.checked var=\"([\w.]+)\"\}")


def quoted_numbers(text):
    """Decimal and digit-grouped numbers a reader sees in prose, outside code, inline
    code, math, shortcodes, links' targets and `[…]{.checked var="KEY"}` spans."""
    s = prose(text)
    s = CHECKED_SPAN.sub(" ", s)
    s = re.sub(r"\{\{<.*?>\}\}", " ", s)
    s = re.sub(r"(`+).*?\1", " ", s, flags=re.S)
    s = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", s, flags=re.S)
    s = re.sub(r"\]\([^)]*\)", "]", s)  # link and image targets
    s = re.sub(r"\{[^}\n]*\}", " ", s)  # attributes such as {#sec-x width=80%}
    s = re.sub(r"^(?:#|%%)\|.*$", " ", s, flags=re.M)
    return DECIMAL.findall(s) + GROUPED.findall(s)


def checked_spans(text):
    return CHECKED_SPAN.findall(prose(text))


# ---------------------------------------------------------------- the roadmap
ROADMAP_NODES = {
    "en": {"A": "01 GPT", "B": "02 Parts", "C": "03 Efficiency", "D": "04 Data", "E": "05 Evaluation",
           "F": "06 Serving", "G": "07 Governance", "H": "08 Drift", "I": "09 Alignment"},
    "zh": {"A": "01 GPT", "B": "02 零件", "C": "03 效率", "D": "04 資料", "E": "05 評估",
           "F": "06 服務", "G": "07 治理", "H": "08 漂移", "I": "09 對齊"},
}
ROADMAP_EDGE_LABEL = {"en": "post-training", "zh": "後訓練"}
ROADMAP_HERE = {"01-minimal-gpt": "A", "02-modern-parts": "B", "03-llama2": "C", "04-data": "D",
                "05-evaluation": "E", "06-serving": "F", "07-governance": "G", "08-drift": "H", "09-alignment": "I"}
# Nodes whose chapter is not written yet keep the dashed grey `planned` class.
ROADMAP_PLANNED = ",".join(k for k in "ABCDEFGHI" if k not in ROADMAP_HERE.values())
ROADMAP_CLASSDEFS = (
    "classDef here fill:#c0392b,color:#fff,stroke:#7b241c,stroke-width:2px;",
    "classDef planned fill:#f2f2f2,color:#888,stroke:#aaa,stroke-dasharray:4 3;",
)


def roadmap_text(lang, here):
    """The roadmap exactly as CONTRIBUTING.md's template, for one language and chapter."""
    n = ROADMAP_NODES[lang]
    chain = "-->".join(f'{k}["{n[k]}"]' for k in "ABCDEFGH")
    lines = ["flowchart LR", f"  {chain}",
             f'  E -.{ROADMAP_EDGE_LABEL[lang]}.-> I["{n["I"]}"]',
             *(f"  {c}" for c in ROADMAP_CLASSDEFS)]
    if here:
        lines.append(f"  class {here} here")
    if ROADMAP_PLANNED:
        lines.append(f"  class {ROADMAP_PLANNED} planned")
    return "\n".join(lines)


def is_roadmap(body):
    return bool(re.search(r'A\["01 GPT"\]', body))


def run_cells_until(lang, page, marker):
    """Run the page's non-exercise cells in order, in CPython, up to the first one containing marker; return
    their namespace (for tests that hold a cell's result against what the prose says of it)."""
    namespace = {"__name__": "__main__"}
    for opts, code in pyodide_cells(read_page(lang, page)):
        if "exercise" in opts:
            continue
        exec(compile(code, f"book/{lang}/{page}.qmd", "exec"), namespace)
        if marker in code:
            return namespace
    raise AssertionError(f"no cell of book/{lang}/{page}.qmd contains {marker!r}")
