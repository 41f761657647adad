"""The pyodide-cells Lua filter, run by pandoc (pypandoc_binary) on .qmd text as Quarto would run it."""

import base64
import hashlib
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pypandoc
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTENSION = ROOT / "_extensions" / "pyodide-cells"
FENCE = re.compile(r"^(\s*)```\{(pyodide)\}", re.MULTILINE)

SAMPLE = """---
title: Sample
pyodide:
  base-url: https://example.org/pyodide/
  packages: [numpy]
  timeout: 12
  files:
    - {src: src/llmparts/__init__.py, dest: llmparts/__init__.py}
---

Some text.

```{pyodide}
#| autorun: true
#| edit: false
import numpy as np
print(np.arange(3) < 2)
```

```{pyodide}
#| exercise: double
#| hint: "Multiply by 2 & compare with <x>"
#| timeout: 5
def double(x):
    return x
```

```{pyodide}
#| exercise: double
#| role: solution
def double(x):
    return 2 * x
```

```{pyodide}
#| exercise: double
#| role: check
assert double(3) == 6, "double(3) should be 6"
```

```python
print("an ordinary code block stays as it is")
```
"""

EXPECTED_CELLS = """\
<div class="pyodide-cell" id="pyodide-cell-1" data-autorun="true" data-edit="false">
<pre class="pyodide-code"><code class="language-python">import numpy as np
print(np.arange(3) &lt; 2)</code></pre>
</div>
<div class="pyodide-cell" id="pyodide-cell-2" data-timeout="5" data-exercise="double" data-hint="Multiply by 2 &amp; compare with &lt;x&gt;">
<pre class="pyodide-code"><code class="language-python">def double(x):
    return x</code></pre>
</div>
<pre class="pyodide-solution" data-exercise="double" hidden>def double(x):
    return 2 * x</pre>
<pre class="pyodide-check" data-exercise="double" hidden>assert double(3) == 6, &quot;double(3) should be 6&quot;</pre>"""


def render(qmd: str) -> str:
    # pandoc 3 reads ```{pyodide} as inline code; Quarto's reader rewrites it to ```{.pyodide} first.
    return pypandoc.convert_text(FENCE.sub(r"\1```{.\2}", qmd), "html", format="markdown",
                                 extra_args=[f"--lua-filter={EXTENSION / 'pyodide-cells.lua'}"])


def render_error(qmd: str) -> str:
    with pytest.raises(RuntimeError) as info:
        render(qmd)
    return str(info.value)


def config_of(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="pyodide-cells-config">(.*?)</script>',
                                html, re.S).group(1))


def test_sample_page_becomes_cells_solution_and_check_with_runtime_added_once():
    html = render(SAMPLE)
    assert EXPECTED_CELLS in html
    assert html.count('<script src="pyodide-cells/pyodide-cells.js" defer></script>') == 1
    assert html.count('<script src="pyodide-cells/editor.min.js" defer></script>') == 1
    assert html.count('<link rel="stylesheet" href="pyodide-cells/pyodide-cells.css">') == 1
    assert '<code class="sourceCode python">' in html  # the plain python block is untouched


def test_page_options_reach_the_runtime_as_json_with_file_names_intact():
    assert config_of(render(SAMPLE)) == {
        "base-url": "https://example.org/pyodide/", "packages": ["numpy"], "timeout": "12",
        "files": [{"src": "src/llmparts/__init__.py", "dest": "llmparts/__init__.py"}],  # not "init.py"
    }


def test_page_without_cells_gets_no_runtime():
    html = render("---\npyodide:\n  timeout: 3\n---\n\n```python\n1 + 1\n```\n")
    assert "pyodide-cells" not in html


def test_cell_code_that_closes_a_script_tag_cannot_break_out_of_the_page():
    html = render('```{pyodide}\nprint("</script><script>alert(1)</script>")\n```\n')
    assert "<script>alert(1)" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize("cell, message", [
    ("#| autorn: true\n1", 
     "pyodide cell 1: unknown option 'autorn'; known options are autorun, echo, edit, exercise, hint, role, timeout"),
    ("#| edit: no\n1", "pyodide cell 1: option edit (no) must be true or false"),
    ("#| timeout: -1\n1", "pyodide cell 1: option timeout (-1) must be a positive number of seconds"),
    ("#| exercise: e\n#| role: answer\n1", "pyodide cell 1: role (answer) must be 'solution' or 'check'"),
    ("#| role: check\n1", "pyodide cell 1: role: check needs an exercise: ID to belong to"),
])
def test_bad_cell_option_stops_the_render_with_a_message_naming_it(cell, message):
    assert message in render_error(f"```{{pyodide}}\n{cell}\n```\n")


def test_options_below_the_first_code_line_are_code_not_options():
    html = render("```{pyodide}\nx = 1\n#| autorun: true\n```\n")
    assert 'data-autorun' not in html
    assert "x = 1\n#| autorun: true</code>" in html


def test_sri_hashes_in_the_runtime_match_npm_pyodide_0_27_7():
    """The page checks Pyodide's core files against these hashes; they must be those of the official release."""
    tarball = ROOT / "build" / "pyodide-cache" / "pyodide-0.27.7.tgz"
    if not tarball.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pyodide_assets.py"), "--sri"], check=True,
                       stdout=subprocess.DEVNULL)
    js = (EXTENSION / "pyodide-cells.js").read_text(encoding="utf-8")
    block = re.search(r'"0\.27\.7": \{(.*?)\}', js, re.S).group(1)
    in_js = dict(re.findall(r'"([\w.-]+)": "(sha384-[\w+/=]+)"', block))
    with tarfile.open(tarball) as tar:
        expected = {name: "sha384-" + base64.b64encode(
            hashlib.sha384(tar.extractfile(f"package/{name}").read()).digest()).decode() for name in in_js}
    assert set(in_js) == {"pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"}
    assert in_js == expected
