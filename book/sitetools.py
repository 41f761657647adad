"""Site-level steps around `quarto render` (standard library only, so CI needs nothing else).

    python3 book/sitetools.py postrender     # run by Quarto after each profile's render
    python3 book/sitetools.py checklinks _site

`postrender` points each page's language link at the same page in the other language
and writes the language chooser `_site/index.html`. `checklinks` reports every relative
link or `#anchor` in the rendered site that points at nothing.
"""
import html
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

OTHER = {"zh": "en", "en": "zh"}
# The element that book/styles/lang-switch-LANG.html puts on every page.
SWITCH = re.compile(r'(<a id="lang-switch"[^>]*?\bhref=")[^"]*(")')


def other_language_page(rel, lang):
    """The same page in the other edition: chapters live under book/LANG/, the rest
    (index.html, search, 404) has the same path in both."""
    prefix = f"book/{lang}/"
    return f"book/{OTHER[lang]}/{rel[len(prefix):]}" if rel.startswith(prefix) else rel


def switch_href(rel, lang):
    """Relative href from _site/LANG/REL to the same page in _site/OTHER/."""
    depth = rel.count("/") + 1  # up out of the page's folders and out of _site/LANG
    return "../" * depth + f"{OTHER[lang]}/{other_language_page(rel, lang)}"


def set_language_links(out_dir, lang):
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
<html lang="zh-TW">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>從 GPT 到 LLaMA · From GPT to LLaMA</title>
<link rel="alternate" hreflang="zh-TW" href="zh/index.html">
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
<a href="zh/index.html" hreflang="zh-TW">繁體中文</a>
<a href="en/index.html" hreflang="en" lang="en">English</a>
</body>
</html>
"""


def postrender(out_dir, lang):
    if lang not in OTHER:
        raise SystemExit(f"QUARTO_PROFILE ({lang!r}) must be one of {sorted(OTHER)}: "
                         "render with `quarto render --profile zh` or `--profile en`")
    if set_language_links(out_dir, lang) == 0:
        raise SystemExit(f"no page in {out_dir} carries the language link "
                         f"(book/styles/lang-switch-{lang}.html is not included)")
    (Path(out_dir).parent / "index.html").write_text(CHOOSER, encoding="utf-8")


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


def broken_links(site):
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


def main(argv):
    if argv[:1] == ["postrender"] and len(argv) == 1:
        out_dir = os.environ.get("QUARTO_PROJECT_OUTPUT_DIR")
        if not out_dir:
            raise SystemExit("QUARTO_PROJECT_OUTPUT_DIR is not set: Quarto runs this after a render")
        postrender(Path(out_dir), os.environ.get("QUARTO_PROFILE", ""))
    elif argv[:1] == ["checklinks"] and len(argv) == 2:
        broken = broken_links(argv[1])
        for page, link in broken:
            print(f"{page}: broken link {link}")
        print(f"{len(broken)} broken links in {argv[1]}")
        raise SystemExit(1 if broken else 0)
    else:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
