// npm ci && npm run build  ->  ../_extensions/pyodide-cells/editor.min.js (window.PyodideCellsEditor)
import { build } from "esbuild";

await build({
  entryPoints: ["editor.js"],
  bundle: true,
  minify: true,
  format: "iife",
  globalName: "PyodideCellsEditor",
  target: "es2020",
  legalComments: "eof",
  outfile: "../_extensions/pyodide-cells/editor.min.js",
});
