-- pyodide-cells: turn ```{pyodide} blocks into cells that run Python in the reader's browser.
--
-- A cell becomes <div class="pyodide-cell" data-…><pre class="pyodide-code">code</pre></div>; an exercise's
-- solution and check become hidden <pre class="pyodide-solution|pyodide-check" data-exercise="ID">.
-- The page gets the runtime (JS, CSS, worker) once and its options as JSON from the `pyodide:` metadata key.
--
-- For the ipynb format (the chapter as a Jupyter notebook) a cell becomes a notebook code cell instead: a
-- solution is collapsed, a check is tagged, and a first cell puts the book's files beside the notebook.

local OPTIONS = { autorun = "boolean", edit = "boolean", echo = "boolean", timeout = "number",
                  exercise = "string", hint = "string", role = "string" }
local ROLES = { solution = true, check = true }
local VERSION = "0.1.0"

local function escape_html(s)
  return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub('"', "&quot;"))
end

local function unquote(value)
  local inner = value:match('^"(.*)"$') or value:match("^'(.*)'$")
  if inner then
    return (inner:gsub('\\"', '"'))
  end
  return value
end

local function fail(cell_number, message)
  error(string.format("pyodide cell %d: %s", cell_number, message), 0)
end

-- "#| key: value" lines at the top of the block; the rest is the code.
local function parse_cell(text, cell_number)
  local options, code_lines, in_header = {}, {}, true
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    local key, value = line:match("^#|%s*([%w_-]+)%s*:%s*(.-)%s*$")
    if in_header and key then
      local kind = OPTIONS[key]
      if not kind then
        local known = {}
        for name in pairs(OPTIONS) do known[#known + 1] = name end
        table.sort(known)
        fail(cell_number, string.format("unknown option '%s'; known options are %s", key, table.concat(known, ", ")))
      end
      value = unquote(value)
      if kind == "boolean" and value ~= "true" and value ~= "false" then
        fail(cell_number, string.format("option %s (%s) must be true or false", key, value))
      elseif kind == "number" and not (tonumber(value) and tonumber(value) > 0) then
        fail(cell_number, string.format("option %s (%s) must be a positive number of seconds", key, value))
      end
      options[key] = value
    else
      in_header = false
      code_lines[#code_lines + 1] = line
    end
  end
  if options.role and not ROLES[options.role] then
    fail(cell_number, string.format("role (%s) must be 'solution' or 'check'", options.role))
  end
  if options.role and not options.exercise then
    fail(cell_number, string.format("role: %s needs an exercise: ID to belong to", options.role))
  end
  while #code_lines > 0 and code_lines[#code_lines]:match("^%s*$") do
    table.remove(code_lines)
  end
  return options, table.concat(code_lines, "\n")
end

local function cell_html(options, code, cell_number)
  local code_html = escape_html(code)
  if options.role then
    return string.format('<pre class="pyodide-%s" data-exercise="%s" hidden>%s</pre>',
      options.role, escape_html(options.exercise), code_html)
  end
  local attrs = { string.format('id="pyodide-cell-%d"', cell_number) }
  for _, key in ipairs({ "autorun", "edit", "echo", "timeout", "exercise", "hint" }) do
    if options[key] then
      attrs[#attrs + 1] = string.format('data-%s="%s"', key, escape_html(options[key]))
    end
  end
  return string.format('<div class="pyodide-cell" %s>\n<pre class="pyodide-code"><code class="language-python">%s</code></pre>\n</div>',
    table.concat(attrs, " "), code_html)
end

-- Metadata strings arrive parsed as Markdown, so `__init__.py` is Strong("init").py: undo the emphasis.
local function meta_text(inlines)
  local parts = {}
  for _, x in ipairs(inlines) do
    if x.t == "Strong" then
      parts[#parts + 1] = "__" .. meta_text(x.content) .. "__"
    elseif x.t == "Emph" then
      parts[#parts + 1] = "_" .. meta_text(x.content) .. "_"
    else
      parts[#parts + 1] = pandoc.utils.stringify(x)
    end
  end
  return table.concat(parts)
end

-- Metadata values arrive as pandoc AST nodes; the page config wants plain JSON values.
local function plain(value)
  local t = pandoc.utils.type(value)
  if t == "boolean" or t == "number" or t == "string" then
    return value
  elseif t == "Inlines" then
    return meta_text(value)
  elseif t == "List" then
    local out = {}
    for i, item in ipairs(value) do out[i] = plain(item) end
    return out
  elseif t == "table" or t == "Meta" then
    local out = {}
    for k, item in pairs(value) do out[k] = plain(item) end
    return out
  end
  return pandoc.utils.stringify(value)
end

local function page_config(meta)
  local config = meta.pyodide and plain(meta.pyodide) or {}
  if type(config) ~= "table" then
    error("the pyodide: metadata key must be a map (version, base-url, packages, timeout, files)", 0)
  end
  -- Under Quarto the `files` paths arrive already relative to the page (Quarto rewrites project-level paths
  -- that name existing files), so the page itself is their root; plain pandoc leaves them as written.
  return config
end

-- Under Quarto the runtime is an HTML dependency (copied into site_libs); under plain pandoc (tests) it is
-- linked from `pyodide.assets-url` (default: a pyodide-cells/ folder next to the page).
local function runtime_blocks(config)
  if quarto and quarto.doc then
    quarto.doc.add_html_dependency({
      name = "pyodide-cells", version = VERSION,
      scripts = { "editor.min.js", "pyodide-cells.js" },
      stylesheets = { "pyodide-cells.css" },
      resources = { { name = "pyodide-worker.js", path = "pyodide-worker.js" } },
    })
    return {}
  end
  local assets = config["assets-url"] or "pyodide-cells/"
  return { pandoc.RawBlock("html", string.format(
    '<link rel="stylesheet" href="%spyodide-cells.css">\n<script src="%seditor.min.js" defer></script>\n' ..
    '<script src="%spyodide-cells.js" defer></script>', assets, assets, assets)) }
end

-- ---------------------------------------------------------------- notebooks (ipynb)
local NOTEBOOK_TEXT = {
  en = { hint = "Hint:", solution = "Solution (collapsed; it runs before the check below):",
         setup = "# The book's files (the trained char model's weights) beside this notebook; no network.",
         chapter = "Chapter", section = "Section", appendix = "Appendix", figure = "Figure", table = "Table" },
  zh = { hint = "提示：", solution = "參考解答（已收合；它會在下面的檢查之前執行）：",
         setup = "# 把本書的檔案（訓練好的字元模型權重）放到這本筆記本旁邊；不需要網路。",
         chapter = "章", section = "節", appendix = "附錄", figure = "圖", table = "表" },
}

local function notebook_text(meta)
  local lang = meta.lang and pandoc.utils.stringify(meta.lang) or "en"
  return NOTEBOOK_TEXT[lang:match("^zh") and "zh" or "en"]
end

local function code_cell(code, metadata)
  local attributes = {}
  for key, value in pairs(metadata or {}) do attributes[key] = pandoc.json.encode(value) end
  return pandoc.Div({ pandoc.CodeBlock(code, pandoc.Attr("", { "python" })) },
    pandoc.Attr("", { "cell", "code" }, attributes))
end

local function notebook_cell(options, code, text)
  if options.role == "solution" then
    return { pandoc.Para({ pandoc.Emph(pandoc.Inlines(text.solution)) }),
             code_cell(code, { jupyter = { source_hidden = true }, tags = { "solution" } }) }
  elseif options.role == "check" then
    return { code_cell(code, { tags = { "check" } }) }
  end
  local blocks = {}
  if options.hint then
    blocks[1] = pandoc.BlockQuote({ pandoc.Para({ pandoc.Strong(pandoc.Inlines(text.hint)), pandoc.Space(),
                                                  pandoc.Str(options.hint) }) })
  end
  blocks[#blocks + 1] = code_cell(code, options.exercise and { tags = { "exercise" } } or nil)
  return blocks
end

-- A notebook is one chapter, so a reference to another chapter cannot be resolved by Quarto: it becomes a
-- link to that chapter's web page, numbered as the book numbers it (`notebook-crossrefs`, written by
-- book/website.py: id -> {kind = chapter | section | appendix | figure | table, number, page, href}).
local function other_chapter_references(doc, text)
  local known = doc.meta["notebook-crossrefs"]
  if not (known and quarto and quarto.doc and quarto.doc.input_file) then return doc end
  local this_page = pandoc.path.split_extension(pandoc.path.filename(quarto.doc.input_file)) .. ".html"
  return doc:walk({
    Cite = function(cite)
      local target = known[cite.citations[1].id]
      if #cite.citations ~= 1 or not target or pandoc.utils.stringify(target.page) == this_page then
        return nil
      end
      local kind = pandoc.utils.stringify(target.kind)
      return pandoc.Link(text[kind] .. "\u{a0}" .. pandoc.utils.stringify(target.number),
                         pandoc.utils.stringify(target.href))
    end,
  })
end

local function is_cell(block)
  return block.t == "CodeBlock" and (block.classes:includes("{pyodide}") or block.classes:includes("pyodide")
                                     or block.classes:includes("notebook-only"))
end

local function notebook(doc)
  local text = notebook_text(doc.meta)
  local block_number = 0
  doc.blocks = doc.blocks:walk({
    CodeBlock = function(block)
      -- ```{.python .notebook-only} inside `::: {.content-visible when-format="ipynb"}`: a cell that only
      -- the notebook has (real PyTorch, which the browser cannot run).
      if block.classes:includes("notebook-only") then
        return code_cell(block.text, { tags = { "notebook-only" } })
      end
      if not (block.classes:includes("{pyodide}") or block.classes:includes("pyodide")) then
        return nil
      end
      block_number = block_number + 1
      local options, code = parse_cell(block.text, block_number)
      return notebook_cell(options, code, text)
    end,
  })
  -- A chapter's title is its first heading; a notebook shows it once, as its title.
  if not doc.meta.title and doc.blocks[1] and doc.blocks[1].t == "Header" and doc.blocks[1].level == 1 then
    doc.meta.title = doc.blocks[1].content
    doc.blocks:remove(1)
  end
  if block_number > 0 then
    doc.blocks:insert(1, code_cell(text.setup .. "\nfrom llmparts.notebook import use_book_files\n\nuse_book_files()",
                                   { tags = { "setup" } }))
  end
  return other_chapter_references(doc, text)
end

-- ---------------------------------------------------------------- the document
-- A notebook cell must be a top-level cell: in a notebook, a callout that holds cells (an exercise) is
-- opened up into its title, as a bold line, and its content. (Quarto hands callouts to filters as this
-- custom node, before `Pandoc` below sees the document.)
function Callout(callout)
  if FORMAT ~= "ipynb" then return nil end
  local holds_cell = false
  callout.content:walk({ CodeBlock = function(b) holds_cell = holds_cell or is_cell(b) end })
  if not holds_cell then return nil end
  local opened = pandoc.Blocks({})
  if callout.title then
    opened:insert(pandoc.Para({ pandoc.Strong(pandoc.utils.stringify(callout.title)) }))
  end
  opened:extend(callout.content)
  return opened
end

function Pandoc(doc)
  if FORMAT == "ipynb" then
    return notebook(doc)
  end
  if not (FORMAT:match("html") or FORMAT == "native") then
    return nil
  end
  local block_number, cell_number = 0, 0
  doc.blocks = doc.blocks:walk({
    CodeBlock = function(block)
      -- Quarto hands the filter ```{pyodide} blocks with the class "{pyodide}", braces included;
      -- pandoc's reader gives "pyodide" for ```{.pyodide}.
      if not (block.classes:includes("{pyodide}") or block.classes:includes("pyodide")) then
        return nil
      end
      block_number = block_number + 1
      local options, code = parse_cell(block.text, block_number)
      if not options.role then
        cell_number = cell_number + 1
      end
      return pandoc.RawBlock("html", cell_html(options, code, cell_number))
    end,
  })
  if block_number == 0 then
    return doc
  end
  local config = page_config(doc.meta)
  local head = runtime_blocks(config)
  config["assets-url"] = nil
  head[#head + 1] = pandoc.RawBlock("html",
    '<script type="application/json" id="pyodide-cells-config">' ..
    pandoc.json.encode(config):gsub("</", "<\\/") .. "</script>")
  doc.blocks = head .. doc.blocks
  return doc
end
