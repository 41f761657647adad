"""Render the book's two editions with Quarto into _site/zh and _site/en, and check them.

    python3 book/website.py render [--lang zh,en] [--out _site] [--pyodide-base-url URL]
    python3 book/website.py preview --lang zh [--port 4848]     # render, then serve on 127.0.0.1
    python3 book/website.py checklinks _site

Each edition is its own Quarto book. `render` copies one edition's pages (book/LANG/*.qmd) and what they
use (book/quarto/*.yml, the extension, _variables.yml, images/, results/, the NumPy model's sources) into
build/site-src/LANG/, renders that copy, and writes it to OUT/LANG: every chapter at OUT/LANG/NAME.html,
the same NAME in both editions. A chapter with cells is also rendered as a Jupyter notebook, OUT/LANG/NAME.ipynb
(Quarto's ipynb format; books cannot have it, so the same copy is rendered a second time as plain documents
with the `notebook` profile), and its page links to it. `render` then points each page's language link at
the same page in the other edition, writes the language chooser OUT/index.html and fails on a broken link
or a Quarto warning. Standard library only: the GitHub render job needs no Python packages.
"""
from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from find_quarto import QuartoNotFound, find_quarto, quarto_resource  # noqa: E402

LANGS = ("zh", "en")
OTHER = {"zh": "en", "en": "zh"}
STAGE = ROOT / "build" / "site-src"
# What an edition's pages use besides their own .qmd files: (source in the repository, place in the copy).
SHARED = [("book/quarto", "."), ("book/styles", "styles"), ("book/filters", "filters"), ("_extensions", "_extensions"),
          ("_variables.yml", "_variables.yml"), ("images", "images"), ("results/tables", "results/tables"),
          ("results/weights", "results/weights"), ("results/data.json", "results/data.json"),
          ("results/drift.json", "results/drift.json"),
          ("results/governance", "results/governance"),
          ("src/llmparts", "src/llmparts")]
NOTEBOOK_LINK = {"en": "This chapter as a Jupyter notebook", "zh": "本章的 Jupyter 筆記本"}
CELL_FENCE = "```{pyodide}"
# The element that book/styles/lang-switch-LANG.html puts on every page.
SWITCH = re.compile(r'(<a id="lang-switch"[^>]*?\bhref=")[^"]*(")')


class SiteError(Exception):
    """A render that cannot go on; the message is one line for the user."""


# ---------------------------------------------------------------- staging and rendering
def stage(lang: str, quarto: str, pyodide_base_url: str | None = None) -> Path:
    """Copy one edition into build/site-src/LANG and return that folder."""
    project = STAGE / lang
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    for src, dest in SHARED:
        source, target = ROOT / src, project / dest
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target)
    for page in sorted((ROOT / "book" / lang).glob("*.qmd")):
        text = page.read_text(encoding="utf-8")
        if CELL_FENCE in text:  # its notebook is listed with the page's table of contents
            text = text.replace("\nengine: markdown\n", "\nengine: markdown\nother-links:\n"
                                f"  - text: \"{NOTEBOOK_LINK[lang]}\"\n    href: {page.stem}.ipynb\n"
                                "    icon: journal-code\n", 1)
        (project / page.name).write_text(text, encoding="utf-8")
    # Settings known only at render time go in one more profile, merged over the edition's.
    extra = {"notebook-crossrefs": crossref_targets(lang)}
    if lang == "zh":
        # Quarto's Traditional Chinese interface strings (see book/quarto/_quarto-zh.yml).
        shutil.copy2(quarto_resource(quarto, "language/_language-zh-TW.yml"), project / "_language-zh-TW.yml")
        extra["language"] = "_language-zh-TW.yml"
    if pyodide_base_url:
        extra["pyodide"] = {"base-url": pyodide_base_url}
    (project / "_quarto-build.yml").write_text(json.dumps(extra, ensure_ascii=False, indent=2) + "\n",
                                               encoding="utf-8")
    return project


def run_quarto(quarto: str, project: Path, args: list[str], what: str) -> float:
    """Run Quarto in the staged project; return its seconds. A failure or any WARN stops the render."""
    env = {**os.environ, "QUARTO_PROFILE": ""}
    # Quarto draws the mermaid roadmap into a PNG for notebooks with a headless Chromium.
    if "QUARTO_CHROMIUM" not in env and shutil.which("chromium"):
        env["QUARTO_CHROMIUM"] = shutil.which("chromium")
    started = time.monotonic()
    run = subprocess.run([quarto, "render", *args], cwd=project, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    log_file = STAGE / f"render-{what}.log"
    log = run.stdout + run.stderr
    log_file.write_text(log, encoding="utf-8")
    if run.returncode != 0:
        raise SiteError(f"quarto render of {what} failed (exit {run.returncode}); log: {log_file}\n{log[-3000:]}")
    warnings = [line for line in log.splitlines() if re.search(r"\bWARN", line)]
    if warnings:
        raise SiteError(f"quarto render of {what} warned ({len(warnings)}x); first: {warnings[0].strip()}")
    return seconds


def render_edition(lang: str, out: Path, quarto: str, pyodide_base_url: str | None = None) -> float:
    """Render one edition, pages and notebooks, into out/LANG; return the seconds Quarto took."""
    project = stage(lang, quarto, pyodide_base_url)
    seconds = run_quarto(quarto, project, ["--profile", f"{lang},build"], lang)
    target = out / lang
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(project / "_site"), str(target))

    targets = crossref_targets(lang)
    for page in project.glob("*.qmd"):  # the second render, as notebooks, takes the chapters with cells
        text = page.read_text(encoding="utf-8")
        if CELL_FENCE not in text:
            page.unlink()
        else:
            page.write_text(text.replace("\nengine: markdown\n",
                                         "\nengine: markdown\n" + notebook_front_matter(targets, page.name), 1),
                            encoding="utf-8")
    seconds += run_quarto(quarto, project, ["--to", "ipynb", "--profile", f"{lang},build,notebook"],
                          f"{lang}-notebooks")
    for notebook in sorted((project / "_site").glob("*.ipynb")):
        write_notebook(notebook, target / notebook.name)
    return seconds


ATTACHED_IMAGE = re.compile(r'<img\s+src="(attachment:[^"]+)"(?:\s+alt="([^"]*)")?\s*/?>', re.S)


def write_notebook(rendered: Path, target: Path):
    """Copy a notebook Quarto wrote, with each attached picture in Markdown's image syntax: pandoc writes
    figures as <img src="attachment:…">, which nbconvert (and so GitHub's viewer) does not resolve."""
    notebook = json.loads(rendered.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and cell.get("attachments"):
            source = "".join(cell["source"])
            source = ATTACHED_IMAGE.sub(lambda m: f"![{' '.join((m.group(2) or '').split())}]({m.group(1)})", source)
            cell["source"] = source.splitlines(keepends=True)
    target.write_text(json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def render(langs, out: Path, pyodide_base_url: str | None = None) -> dict:
    """Render the editions, link them to each other and check every link; return seconds per edition."""
    quarto = find_quarto()
    seconds = {lang: render_edition(lang, out, quarto, pyodide_base_url) for lang in langs}
    for lang in langs:
        if set_language_links(out / lang, lang) == 0:
            raise SiteError(f"no page in {out / lang} carries the language link "
                            f"(book/styles/lang-switch-{lang}.html is not included)")
    (out / "index.html").write_text(CHOOSER, encoding="utf-8")
    if set(langs) == set(LANGS):
        broken = broken_links(out)
        if broken:
            raise SiteError(f"{len(broken)} broken links, first: {broken[0][0]} -> {broken[0][1]}")
    return seconds


# ---------------------------------------------------------------- cross-references in notebooks
HEADING = re.compile(r"^(#{1,3}) .*?\{#(sec-[\w-]+)([^}]*)\}\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INCLUDE = re.compile(r"^\{\{< include /(\S+) >\}\}\s*$")
FLOAT_IN_TEXT = re.compile(r"\{#((?:fig|tbl)-[\w-]+)")               # ![…](…){#fig-x}, : caption {#tbl-x}
FLOAT_IN_CELL = re.compile(r"^(?:%%|#)\| label: ((?:fig|tbl)-[\w-]+)")  # a mermaid or code cell's label


def book_pages(lang: str) -> tuple[list[str], list[str]]:
    """The chapter and appendix file names of book/quarto/_quarto-LANG.yml, in order (a plain list each)."""
    pages = {"chapters": [], "appendices": []}
    section = None
    for line in (ROOT / "book" / "quarto" / f"_quarto-{lang}.yml").read_text(encoding="utf-8").splitlines():
        key = re.match(r"^  (chapters|appendices):\s*$", line)
        if key:
            section = key.group(1)
        elif section and re.match(r"^    - \S+\.qmd\s*$", line):
            pages[section].append(line.split("- ", 1)[1].strip())
        elif not line.startswith("    "):
            section = None
    return pages["chapters"], pages["appendices"]


def page_lines(lang: str, name: str) -> list[str]:
    """A page's lines with each `{{< include /PATH >}}` replaced by that file's lines (a missing one is left
    for Quarto to report)."""
    lines = []
    for line in (ROOT / "book" / lang / name).read_text(encoding="utf-8").splitlines():
        include = INCLUDE.match(line)
        if include and (ROOT / include.group(1)).is_file():
            lines += (ROOT / include.group(1)).read_text(encoding="utf-8").splitlines()
        else:
            lines.append(line)
    return lines


def crossref_targets(lang: str) -> dict:
    """Every section, figure and table id of the edition -> {kind, number, page, href} as the book numbers it.

    A notebook holds one chapter, so Quarto cannot resolve a reference to another chapter; the pyodide-cells
    filter turns those into links to the other chapter's page, numbered with this map."""
    chapters, appendices = book_pages(lang)
    targets, chapter_number = {}, 0
    for index, name in enumerate(chapters + appendices):
        in_appendix = index >= len(chapters)
        page = name.replace(".qmd", ".html")
        sections, floats, in_code, number = [0, 0], {"fig": 0, "tbl": 0}, None, None

        def add(ident, kind, label):
            targets[ident] = {"kind": kind, "number": label, "page": page,
                              "href": page if kind in ("chapter", "appendix") else f"{page}#{ident}"}

        for line in page_lines(lang, name):
            fence = FENCE.match(line)
            if fence:
                in_code = None if in_code and fence.group(1).startswith(in_code) else in_code or fence.group(1)
                continue
            found = FLOAT_IN_CELL.match(line) if in_code else None
            found = found or (FLOAT_IN_TEXT.search(line) if not in_code else None)
            if found and number:
                kind = found.group(1)[:3]
                floats[kind] += 1
                add(found.group(1), {"fig": "figure", "tbl": "table"}[kind], f"{number}.{floats[kind]}")
                continue
            heading = HEADING.match(line) if not in_code else None
            if not heading:
                continue
            level, ident, attributes = len(heading.group(1)), heading.group(2), heading.group(3)
            if level == 1:
                if ".unnumbered" in attributes:
                    number = None
                    continue
                if in_appendix:
                    number = chr(ord("A") + index - len(chapters))
                else:
                    chapter_number += 1
                    number = str(chapter_number)
                add(ident, "appendix" if in_appendix else "chapter", number)
            elif number and ".unnumbered" not in attributes:
                sections[level - 2] += 1
                if level == 2:
                    sections[1] = 0
                add(ident, "section", ".".join([number, *map(str, sections[:level - 1])]))
    return targets


def notebook_front_matter(targets: dict, page: str) -> str:
    """What a chapter needs, as a notebook, to number its sections, figures and tables as the book does."""
    target = next((t for t in targets.values()
                   if t["page"] == page.replace(".qmd", ".html") and t["kind"] in ("chapter", "appendix")), None)
    if not target or target["kind"] == "appendix":
        return ""
    return f"number-offset: [{target['number']}]\ncrossref:\n  chapters: true\n"


# ---------------------------------------------------------------- the two editions, linked
def switch_href(rel: str, lang: str) -> str:
    """Relative href from OUT/LANG/REL to the same page in OUT/OTHER/ (both editions use the same names)."""
    depth = rel.count("/") + 1  # up out of the page's folders and out of OUT/LANG
    return "../" * depth + f"{OTHER[lang]}/{rel}"


def set_language_links(out_dir: Path, lang: str) -> int:
    """Rewrite the language link of every page in out_dir; return how many pages had one."""
    count = 0
    for page in sorted(Path(out_dir).rglob("*.html")):
        rel = page.relative_to(out_dir).as_posix()
        text = page.read_text(encoding="utf-8")
        new, n = SWITCH.subn(lambda m: m.group(1) + switch_href(rel, lang) + m.group(2), text)
        if n:
            page.write_text(new, encoding="utf-8")
            count += 1
    return count


CHOOSER = """<!DOCTYPE html>
<html lang="zh-Hant">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>從 GPT 到 LLaMA · From GPT to LLaMA</title>
<link rel="alternate" hreflang="zh-Hant" href="zh/index.html">
<link rel="alternate" hreflang="en" href="en/index.html">
<style>
  body { font-family: system-ui, "Noto Sans CJK TC", sans-serif; max-width: 36rem;
         margin: 15vh auto; padding: 0 1rem; text-align: center; }
  @media (prefers-color-scheme: dark) { body { background: #222; color: #eee; } a { color: #8cf; } }
  a { display: block; font-size: 1.4rem; margin: 1.2rem 0; }
</style>
</head>
<body>
<h1>從 GPT 到 LLaMA<br><span lang="en">From GPT to LLaMA</span></h1>
<a href="zh/index.html" hreflang="zh-Hant">繁體中文</a>
<a href="en/index.html" hreflang="en" lang="en">English</a>
</body>
</html>
"""


# ---------------------------------------------------------------- link check
class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value and ((name == "href" and tag in ("a", "link", "area"))
                          or (name == "src" and tag in ("img", "script", "iframe", "source"))):
                self.links.append(html.unescape(value))


def broken_links(site) -> list[tuple[str, str]]:
    """Every (page, link) in site whose relative target file or #anchor does not exist."""
    site = Path(site).resolve()
    parsed = {}

    def parse(page):
        if page not in parsed:
            p = _Links()
            p.feed(page.read_text(encoding="utf-8", errors="replace"))
            parsed[page] = p
        return parsed[page]

    broken = []
    for page in sorted(site.rglob("*.html")):
        for link in parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = page if not parts.path else (
                site / unquote(parts.path).lstrip("/") if parts.path.startswith("/")
                else page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if site not in target.parents and target != site or not target.exists():
                broken.append((page.relative_to(site).as_posix(), link))
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in parse(target).ids:
                broken.append((page.relative_to(site).as_posix(), link))
    return broken


# ---------------------------------------------------------------- serving
class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the types Pyodide needs: a .wasm not served as application/wasm makes
    loadPyodide hang with only a console warning."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
                      ".whl": "application/zip", ".npz": "application/octet-stream"}

    def log_message(self, *args):
        pass


def serve(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(SiteHandler, directory=str(directory))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


# ---------------------------------------------------------------- command line
def languages(value: str) -> tuple[str, ...]:
    langs = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    bad = [lang for lang in langs if lang not in LANGS]
    if bad or not langs:
        raise argparse.ArgumentTypeError(f"--lang ({value!r}) must be zh, en or zh,en")
    return langs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="book/website.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser("render", help="render the editions into OUT/zh and OUT/en")
    r.add_argument("--lang", type=languages, default=LANGS)
    r.add_argument("--out", type=Path, default=ROOT / "_site")
    r.add_argument("--pyodide-base-url", help="load Pyodide from here instead of the CDN (tests)")
    p = commands.add_parser("preview", help="render one edition and serve it on 127.0.0.1")
    p.add_argument("--lang", type=languages, required=True)
    p.add_argument("--port", type=int, default=4848)
    c = commands.add_parser("checklinks", help="report links in a rendered site that point at nothing")
    c.add_argument("site", type=Path)
    args = parser.parse_args(argv)

    try:
        if args.command == "render":
            seconds = render(args.lang, args.out.resolve(), args.pyodide_base_url)
            for lang, s in seconds.items():
                print(f"{lang}: rendered in {s:.1f} s -> {args.out / lang}")
        elif args.command == "preview":
            out = ROOT / "_site"
            render(args.lang, out)
            server = serve(out, args.port)
            print(f"serving {out} at http://127.0.0.1:{server.server_port}/{args.lang[0]}/index.html (Ctrl+C stops)")
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                pass
        else:
            broken = broken_links(args.site)
            for page, link in broken:
                print(f"{page}: broken link {link}")
            print(f"{len(broken)} broken links in {args.site}")
            return 1 if broken else 0
    except (SiteError, QuartoNotFound) as err:
        print(f"book/website.py: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
