"""figures.py: the zh figures get a font that draws every zh character, or fail with the install command."""

from pathlib import Path

import matplotlib
import pytest
from matplotlib import font_manager

from llmparts import figures

LATIN_ONLY = str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")  # ships with matplotlib


def test_missing_cjk_font_fails_with_the_install_command(monkeypatch):
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: [LATIN_ONLY])
    with pytest.raises(RuntimeError, match=r"no font among the 1 .* install one: sudo apt-get install -y fonts-noto-cjk"):
        figures.cjk_font_path()


def test_cjk_font_is_chosen_because_it_draws_the_zh_strings(monkeypatch):
    found = figures.cjk_font_path()  # `make test` installs fonts-noto-cjk first where it can
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: [LATIN_ONLY, found])
    assert figures.cjk_font_path() == found


def test_the_font_must_draw_every_zh_string_not_only_some():
    assert {"基", "準", "÷"} <= figures.zh_characters() and "a" not in figures.zh_characters()
