"""The zh edition uses one word per concept, in Taiwan usage: book/glossary.yml lists the chosen
word and the rejected variants, and these tests flag any rejected variant a zh reader would see."""

import re

import pytest
import yaml

from booklib import ROOT, prose
from llmparts.strings import STRINGS

GLOSSARY = ROOT / "book" / "glossary.yml"


def terms():
    return yaml.safe_load(GLOSSARY.read_text(encoding="utf-8"))["terms"]


def reader_text(markdown: str) -> str:
    """What a reader sees as running text: no code blocks, inline code, math, shortcodes,
    link targets or attributes."""
    s = prose(markdown)
    s = re.sub(r"\{\{<.*?>\}\}", " ", s)
    s = re.sub(r"(`+).*?\1", " ", s, flags=re.S)
    s = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", s, flags=re.S)
    s = re.sub(r"\]\([^)]*\)", "]", s)
    s = re.sub(r"\{[^}\n]*\}", " ", s)
    return s


def rejected_variants(text: str) -> list[str]:
    """Every rejected variant in text, with a little context, as 'variant → chosen: …context…'."""
    found = []
    for term in terms():
        checked = text
        for phrase in term.get("allow", []):
            checked = checked.replace(phrase, " ")
        for pattern in term["reject"]:
            for m in re.finditer(pattern, checked):
                context = checked[max(0, m.start() - 12):m.end() + 12].replace("\n", " ")
                found.append(f"{m.group(0)} → {term['zh']}: …{context}…")
    return found


def zh_pages():
    return sorted((ROOT / "book" / "zh").glob("*.qmd"))


def test_glossary_entries_have_a_chosen_word_and_valid_patterns():
    for term in terms():
        assert term["zh"] and term["en"] and term["reject"], term
        for pattern in term["reject"]:
            re.compile(pattern)
            assert not re.search(pattern, term["zh"]), f"{term['zh']} is rejected by its own pattern {pattern}"


@pytest.mark.parametrize("path", zh_pages(), ids=lambda p: p.name)
def test_zh_prose_uses_only_the_glossarys_words(path):
    found = rejected_variants(reader_text(path.read_text(encoding="utf-8")))
    assert not found, f"{path.name} uses rejected variants (see book/glossary.yml): {found}"


def test_generated_zh_tables_use_only_the_glossarys_words():
    found = []
    for path in sorted((ROOT / "results" / "tables").glob("*.zh.md")):
        found += [f"{path.name}: {f}" for f in rejected_variants(path.read_text(encoding="utf-8"))]
    assert not found, f"generated zh tables use rejected variants (fix llmparts/strings.py): {found}"


def zh_strings(value=None) -> list[str]:
    """Every string of the zh table in llmparts/strings.py: labels, verdicts, captions, headers, figure text."""
    value = STRINGS["zh"] if value is None else value
    if isinstance(value, dict):
        return [s for v in value.values() for s in zh_strings(v)]
    return list(value) if isinstance(value, list) else [value]


def test_zh_strings_of_tables_figures_and_variables_use_only_the_glossarys_words():
    found = rejected_variants("\n".join(zh_strings()))
    assert not found, f"zh strings in llmparts/strings.py use rejected variants: {found}"


def test_checker_flags_variants_in_prose_but_not_in_code_or_allowed_names():
    page = ("驗證 loss 變低，上下文窗口是 64，參數佔多數。\n\n"
            "分組查詢注意力讓 query 共用 key。\n\n"
            "```python\nloss = model(x)  # 窗口\n```\n\n`val_loss` 與 $loss$ 不算。\n")
    found = rejected_variants(reader_text(page))
    assert [f.split(" ")[0] for f in found] == ["窗口", "佔", "loss"]
