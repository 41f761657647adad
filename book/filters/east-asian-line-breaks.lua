-- A line break inside Chinese prose is not a space: drop a SoftBreak between two East Asian wide
-- characters (what pandoc's east_asian_line_breaks extension does, which Quarto's reader does not apply).
-- Used by the zh edition only (book/quarto/_quarto-zh.yml).

local function is_wide(code)
  return code and ((code >= 0x1100 and code <= 0x115F) or (code >= 0x2E80 and code <= 0xA4CF)
    or (code >= 0xAC00 and code <= 0xD7A3) or (code >= 0xF900 and code <= 0xFAFF)
    or (code >= 0xFE30 and code <= 0xFE4F) or (code >= 0xFF00 and code <= 0xFF60)
    or (code >= 0xFFE0 and code <= 0xFFE6) or (code >= 0x20000 and code <= 0x3FFFD))
end

local function last_code(inline)
  if inline and inline.t == "Str" and #inline.text > 0 then
    local code
    for _, c in utf8.codes(inline.text) do code = c end
    return code
  end
end

local function first_code(inline)
  if inline and inline.t == "Str" and #inline.text > 0 then
    return utf8.codepoint(inline.text, 1)
  end
  if inline and inline.t == "Cite" then  -- @sec-… renders as 章/節/圖/表 N in this edition
    return utf8.codepoint("表")
  end
end

function Inlines(inlines)
  for i = #inlines - 1, 2, -1 do
    if inlines[i].t == "SoftBreak" and is_wide(last_code(inlines[i - 1])) and is_wide(first_code(inlines[i + 1])) then
      inlines:remove(i)
    end
  end
  return inlines
end
