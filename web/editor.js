// The cell editor: CodeMirror 6 with Python highlighting. Token colours come from CSS classes
// (classHighlighter), so the extension's stylesheet can follow Quarto's light and dark themes.
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { syntaxHighlighting, indentOnInput, bracketMatching } from "@codemirror/language";
import { classHighlighter } from "@lezer/highlight";
import { python } from "@codemirror/lang-python";

// create(parent, code, {readOnly, label, onRun}) -> {getCode(), setCode(code), focus()}
export function create(parent, code, { readOnly = false, label = "Python code", onRun = () => {} } = {}) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: code,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        highlightActiveLine(),
        indentOnInput(),
        bracketMatching(),
        python(),
        syntaxHighlighting(classHighlighter),
        // Shift+Enter runs the cell; it comes first so it wins over the default newline binding.
        keymap.of([{ key: "Shift-Enter", run: () => { onRun(); return true; } }, indentWithTab,
                   ...defaultKeymap, ...historyKeymap]),
        EditorState.readOnly.of(readOnly),
        EditorView.editable.of(!readOnly),
        EditorView.contentAttributes.of({ "aria-label": label }),
      ],
    }),
  });
  return {
    getCode: () => view.state.doc.toString(),
    setCode: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    focus: () => view.focus(),
  };
}
