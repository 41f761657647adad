// The Python runtime of the pyodide-cells extension, in a Web Worker so a running cell never freezes the page.
// Protocol (page -> worker): {type: "init", config}, {type: "run", id, code, kind: "cell" | "check"}.
// Worker -> page: {type: "progress", text}, {type: "ready", warnings}, {type: "load-error", message},
// {type: "stream", id, name, text}, {type: "done", id, value, figures, error, assertion}.

let pyodide = null;
let runCell = null;
let currentId = null;
const decoder = new TextDecoder();

// Subresource Integrity: the core files are checked against hashes computed from npm's pyodide files.
// Pyodide fetches the wasm, the standard library and the lock itself, so fetch() gets the hash added.
function guardFetches(baseURL, sri) {
  const plainFetch = self.fetch.bind(self);
  self.fetch = (input, init = {}) => {
    const url = String(input instanceof Request ? input.url : input);
    const name = url.startsWith(baseURL) ? url.slice(baseURL.length) : null;
    if (!(name && sri[name])) return plainFetch(input, init);
    // Pyodide only logs a failed wasm fetch and then waits forever: report it to the page at once.
    return plainFetch(input, { ...init, integrity: sri[name] }).catch((err) => {
      postMessage({ type: "load-error", message: `${name} could not be fetched or failed its integrity check (${err.message})` });
      throw err;
    });
  };
}

// importScripts() cannot check integrity: fetch the script with its hash, then run the verified bytes.
// Returns a promise of a function that runs the script, so several can download at once and run in order.
async function fetchVerified(url, integrity) {
  const response = await fetch(url, integrity ? { integrity } : {});
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const blobURL = URL.createObjectURL(new Blob([await response.arrayBuffer()], { type: "text/javascript" }));
  return () => { importScripts(blobURL); URL.revokeObjectURL(blobURL); };
}

const PY_RUNNER = `
import linecache, sys, traceback, base64, io
from pyodide.code import eval_code

namespace = {"__name__": "__main__"}

def _cell_traceback(exc, filename):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next  # hide the runtime's own frames: start at the reader's code
    return "".join(traceback.format_exception(type(exc), exc, tb))

def _figures():
    if "matplotlib.pyplot" not in sys.modules:
        return []
    plt = sys.modules["matplotlib.pyplot"]
    images = []
    for num in plt.get_fignums():
        buf = io.BytesIO()
        plt.figure(num).savefig(buf, format="png", dpi=96, bbox_inches="tight")
        images.append(base64.b64encode(buf.getvalue()).decode())
    plt.close("all")
    return images

def run_cell(code, filename, kind):
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    value = error = assertion = None
    try:
        result = eval_code(code, namespace, filename=filename)
        if result is not None:
            value = repr(result)
    except AssertionError as exc:
        if kind == "check":
            assertion = str(exc)
        else:
            error = _cell_traceback(exc, filename)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the runtime must survive them
        error = _cell_traceback(exc, filename)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        figures = _figures()
    except Exception as exc:
        figures, error = [], (error or "") + _cell_traceback(exc, "")
    return [value, figures, error, assertion]
`;

// Fetched while Python starts; written into the worker's filesystem once it exists.
function fetchFiles(files) {
  return Promise.all(files.map(async ({ url, dest }) => {
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return { dest, data: new Uint8Array(await response.arrayBuffer()) };
    } catch (err) {
      return { dest, problem: `${dest} (${err.message})` };
    }
  }));
}

async function init(config) {
  const base = config.baseURL;
  if (config.sri) guardFetches(base, config.sri);
  const files = fetchFiles(config.files);
  const scripts = ["pyodide.js", "pyodide.asm.js"].map((name) => fetchVerified(base + name, config.sri && config.sri[name]));
  for (const script of scripts) (await script)();  // fetched in parallel, run in order
  postMessage({ type: "progress", text: config.packages.join(", ") });
  // Packages named here download while Python boots; a wheel that fails its sha256 only logs an error,
  // so the imports below are what prove the packages arrived.
  pyodide = await loadPyodide({
    indexURL: base,
    packages: config.packages,
    env: { MPLBACKEND: "Agg" },  // the browser backend needs a DOM; we render figures to PNG ourselves
    stdout: () => {}, stderr: () => {},
  });
  for (const [name, stream] of [["stdout", "setStdout"], ["stderr", "setStderr"]]) {
    pyodide[stream]({ write: (buf) => {
      postMessage({ type: "stream", id: currentId, name, text: decoder.decode(buf) });
      return buf.length;
    } });
  }
  const missing = [];
  for (const { dest, data, problem } of await files) {
    if (problem) { missing.push(problem); continue; }
    const path = `/home/pyodide/${dest}`;
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    pyodide.FS.writeFile(path, data);
  }
  const imports = config.packages.map((name) => `import ${name}\n`).join("");
  pyodide.runPython(`import sys\nsys.path.insert(0, "/home/pyodide")\n${imports}`);
  runCell = pyodide.runPython(PY_RUNNER + "\nrun_cell", { globals: pyodide.toPy({}) });
  postMessage({ type: "ready", warnings: missing });
}

async function run({ id, code, kind, filename }) {
  currentId = id;
  const loadErrors = [];
  // Packages a cell imports (matplotlib) are fetched the first time, checked against the lock's sha256.
  await pyodide.loadPackagesFromImports(code, {
    messageCallback: (msg) => postMessage({ type: "stream", id, name: "status", text: msg }),
    errorCallback: (msg) => loadErrors.push(msg),
  });
  if (loadErrors.length) {
    postMessage({ type: "done", id, value: null, figures: [], error: loadErrors.join("\n"), assertion: null });
    return;
  }
  const result = runCell(code, filename, kind);
  const [value, figures, error, assertion] = result.toJs();  // Python's None arrives as undefined
  result.destroy();
  postMessage({ type: "done", id, value: value ?? null, figures, error: error ?? null, assertion: assertion ?? null });
}

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    try {
      await init(data.config);
    } catch (err) {
      postMessage({ type: "load-error", message: String(err && err.message || err) });
    }
  } else if (data.type === "run") {
    try {
      await run(data);
    } catch (err) {
      postMessage({ type: "done", id: data.id, value: null, figures: [], error: String(err), assertion: null });
    }
  }
};
