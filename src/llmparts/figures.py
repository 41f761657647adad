"""The book's figures: matplotlib set up the same way for every figure, with a CJK font for the zh edition."""

from __future__ import annotations

from pathlib import Path

from .atomic import atomic_write
from .strings import STRINGS

# The colour of each verdict on a part, in every figure that shows verdicts.
VERDICT_COLORS = {"accuracy": "#1f77b4", "economy": "#2ca02c", "cheaper_but_worse": "#ff7f0e", "noise": "#7f7f7f",
                  "worse": "#d62728", "reference": "#404040"}


def zh_characters(value=None) -> set[str]:
    """Every non-ASCII character of the zh strings: what the zh figures' font must draw."""
    value = STRINGS["zh"] if value is None else value
    if isinstance(value, dict):
        return set().union(*(zh_characters(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(zh_characters(v) for v in value))
    return {ch for ch in value if ord(ch) > 127}


def cjk_font_path() -> str:
    """A font file that draws the zh figures' labels, Noto Sans CJK first, from matplotlib's own font search
    (no fontconfig needed); fail with one line naming the package rather than draw boxes. Checked before
    `make reproduce` trains anything (scripts/system_deps.py cjk-font)."""
    from matplotlib import font_manager, ft2font
    needed = {ord(ch) for ch in zh_characters()}
    files = sorted(font_manager.findSystemFonts(),
                   key=lambda f: (Path(f).name != "NotoSansCJK-Regular.ttc", "CJK" not in Path(f).name, f))
    for path in files:
        try:
            if needed.issubset(ft2font.FT2Font(path).get_charmap()):
                return path
        except (OSError, RuntimeError, ValueError):
            continue  # a file matplotlib cannot read draws nothing
    raise RuntimeError(f"no font among the {len(files)} that matplotlib finds draws the zh figures' characters "
                       "(they would come out as boxes); install one: sudo apt-get install -y fonts-noto-cjk")


def pyplot(lang: str):
    """matplotlib.pyplot from the same starting point for every figure, with the zh font for lang "zh"."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import font_manager
    import matplotlib.pyplot as plt
    plt.style.use("default")  # whatever ran before
    if lang == "zh":
        path = cjk_font_path()
        font_manager.fontManager.addfont(path)
        plt.rcParams["font.family"] = font_manager.FontProperties(fname=path).get_name()
    return plt


def save(fig, path: Path):
    """Write fig as a PNG without a timestamp or version in its metadata: the same figure, the same bytes."""
    import matplotlib.pyplot as plt
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
