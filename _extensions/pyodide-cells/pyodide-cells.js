// pyodide-cells: Python cells that run in the reader's browser.
// The Lua filter leaves <div class="pyodide-cell"> elements and a JSON config in the page; this script turns
// them into editors with Run/Reset buttons and drives one Pyodide worker per page (pyodide-worker.js).
(() => {
  "use strict";

  // Subresource Integrity of Pyodide's core files, computed from npm's pyodide@0.27.7
  // (`python scripts/build_pyodide_assets.py --sri`; tests/test_extension_filter.py keeps them in step).
  const PYODIDE_SRI = {
    "0.27.7": {
      "pyodide.js": "sha384-90so5tCKvl0xs9agU29IMKlAVzhfzFX7QO//YxQkRhJG58bBZrFN+2ZTRB026X5X",
      "pyodide.asm.js": "sha384-J3SxzZJh4tkb2bgoUc72zArF45FJ+ngsbiqNsmxqkkecNVpZ/bUHAM0JMp+YPVpx",
      "pyodide.asm.wasm": "sha384-wDap6JvXxf3C8g5beY3kd1xMIjAtw/oTKjTqGltdxc+B9VXnYyYBoM7hveNKilxM",
      "python_stdlib.zip": "sha384-VLeJs79hxVEBNt1hRU5Wo7VmBcyb4sdW564EJAvEWDin3Aa3QXLHm3E5mOg2GiFH",
      "pyodide-lock.json": "sha384-1cFE0bj3+mm1a83kcqiWxoaBhrf6jPPJJORlx1TComnZ0WaHwE4znlohwPXL5tUL",
    },
  };

  const STRINGS = {
    en: {
      loading: "Loading Python…", loadingPackages: (p) => `Loading Python packages: ${p}…`,
      ready: "Python ready", readyMissing: (f) => `Python ready (missing files: ${f})`,
      running: (n) => `Running cell ${n}…`, failed: (m) => `Python failed to load: ${m}`,
      loadHelp: "Check your connection: the page needs the Pyodide files from its base URL.",
      loadTimeout: (s) => `no answer after ${s} s`,
      run: "Run", runCell: (n) => `Run cell ${n}`, reset: "Reset", resetCell: (n) => `Reset cell ${n} to its original code`,
      runAll: "Run all", runAllLabel: "Run every cell on this page in order",
      hint: "Hint", solution: "Solution", hideSolution: "Hide solution", check: "Check",
      correct: "Correct!", wrong: (m) => `Not yet: ${m}`, editorLabel: (n) => `Python code of cell ${n}`,
      timeout: (s) => `Stopped: the cell ran longer than ${s} s. Python was restarted, so every variable is gone; run the cells above again.`,
      skipped: "Not run: Python was restarted while this cell waited.",
      figure: (n, k) => `Figure ${k} from cell ${n}`, notReady: "Python could not load, so this cell cannot run.",
    },
    zh: {
      loading: "正在載入 Python…", loadingPackages: (p) => `正在載入 Python 套件：${p}…`,
      ready: "Python 已就緒", readyMissing: (f) => `Python 已就緒（缺少檔案：${f}）`,
      running: (n) => `正在執行第 ${n} 格…`, failed: (m) => `Python 載入失敗：${m}`,
      loadHelp: "請檢查網路連線：本頁需要從其基底網址下載 Pyodide 檔案。",
      loadTimeout: (s) => `${s} 秒內沒有回應`,
      run: "執行", runCell: (n) => `執行第 ${n} 格`, reset: "還原", resetCell: (n) => `把第 ${n} 格還原成原本的程式碼`,
      runAll: "全部執行", runAllLabel: "依序執行本頁每一格",
      hint: "提示", solution: "解答", hideSolution: "隱藏解答", check: "檢查",
      correct: "答對了！", wrong: (m) => `還不對：${m}`, editorLabel: (n) => `第 ${n} 格的 Python 程式碼`,
      timeout: (s) => `已中止：這一格執行超過 ${s} 秒。Python 已重新啟動，所有變數都已清除；請重新執行上方各格。`,
      skipped: "未執行：等待期間 Python 已重新啟動。",
      figure: (n, k) => `第 ${n} 格的圖 ${k}`, notReady: "Python 無法載入，所以這一格無法執行。",
    },
  };
  const T = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? STRINGS.zh : STRINGS.en;
  const scriptURL = document.currentScript.src;

  function el(tag, attrs = {}, text = "") {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    if (text) node.textContent = text;
    return node;
  }

  function button(label, ariaLabel, onClick, cls) {
    const b = el("button", { type: "button", class: `pyodide-btn ${cls}`, "aria-label": ariaLabel }, label);
    b.addEventListener("click", onClick);
    return b;
  }

  // ------------------------------------------------------------------ the runtime: one worker per page

  class Runtime {
    constructor(config, onStatus) {
      this.config = config;
      this.onStatus = onStatus;
      this.queue = Promise.resolve();
      this.pending = new Map();  // run id -> {resolve, onStream}
      this.nextId = 1;
      this.start();
    }

    start() {
      this.generation = (this.generation || 0) + 1;
      this.state = "loading";
      this.onStatus("loading", T.loading);
      this.worker = new Worker(new URL("pyodide-worker.js", scriptURL));
      this.ready = new Promise((resolve) => {
        const giveUp = setTimeout(() => this.fail(T.loadTimeout(this.config.loadTimeout)), this.config.loadTimeout * 1000);
        this.settleReady = (ok) => { clearTimeout(giveUp); resolve(ok); };
      });
      this.worker.onmessage = ({ data }) => this.receive(data);
      this.worker.onerror = (event) => this.fail(event.message || "worker error");
      const version = this.config.version;
      this.worker.postMessage({ type: "init", config: {
        baseURL: this.config.baseURL, packages: this.config.packages, files: this.config.files,
        sri: PYODIDE_SRI[version] || null,
      } });
    }

    fail(message) {
      if (this.state !== "loading") return;
      this.state = "failed";
      this.worker.terminate();
      this.onStatus("failed", `${T.failed(message)} ${T.loadHelp}`);
      this.settleReady(false);
    }

    receive(data) {
      if (data.type === "progress") {
        this.onStatus("loading", T.loadingPackages(data.text));
      } else if (data.type === "ready") {
        this.state = "ready";
        this.onStatus("ready", data.warnings.length ? T.readyMissing(data.warnings.join(", ")) : T.ready);
        this.settleReady(true);
      } else if (data.type === "load-error") {
        this.fail(data.message);
      } else if (data.type === "stream" && this.pending.has(data.id)) {
        this.pending.get(data.id).onStream(data.name, data.text);
      } else if (data.type === "done" && this.pending.has(data.id)) {
        this.pending.get(data.id).resolve(data);
        this.pending.delete(data.id);
      }
    }

    // Runs after everything queued before it; resolves with {value, figures, error, assertion} or
    // {timedOut} / {skipped} / {notReady}. A run past its time limit terminates the worker and starts a new one.
    run(code, { kind = "cell", label, timeout, onStart = () => {}, onStream = () => {} }) {
      const generation = this.generation;
      const result = this.queue.then(async () => {
        if (generation !== this.generation) return { skipped: true };
        if (!(await this.ready)) return { notReady: true };
        const id = this.nextId++;
        onStart();
        this.onStatus("running", T.running(label));
        const outcome = await new Promise((resolve) => {
          const timer = setTimeout(() => {
            this.pending.delete(id);
            this.worker.terminate();
            this.start();
            resolve({ timedOut: true });
          }, timeout * 1000);
          this.pending.set(id, { onStream, resolve: (data) => { clearTimeout(timer); resolve(data); } });
          this.worker.postMessage({ type: "run", id, code, kind, filename: `<cell ${label}>` });
        });
        if (this.state === "ready") this.onStatus("ready", T.ready);
        return outcome;
      });
      this.queue = result;
      return result;
    }
  }

  // ------------------------------------------------------------------ cells

  class Cell {
    constructor(node, index, page) {
      this.node = node;
      this.label = String(index);
      this.page = page;
      const d = node.dataset;
      this.original = node.querySelector("pre.pyodide-code").textContent;
      this.timeout = Number(d.timeout || page.config.timeout);
      this.autorun = d.autorun === "true";
      this.echo = d.echo !== "false";
      this.exercise = d.exercise || null;
      this.hint = d.hint || null;
      this.build(d.edit !== "false");
    }

    build(editable) {
      const node = this.node;
      node.querySelector("pre.pyodide-code").remove();
      const editorBox = el("div", { class: "pyodide-editor" });
      if (!this.echo) editorBox.hidden = true;
      node.append(editorBox);
      this.editor = window.PyodideCellsEditor.create(editorBox, this.original, {
        readOnly: !editable, label: T.editorLabel(this.label), onRun: () => this.run(),
      });
      const bar = el("div", { class: "pyodide-toolbar" });
      this.runButton = button(T.run, T.runCell(this.label), () => this.run(), "pyodide-run");
      bar.append(this.runButton);
      if (editable && this.echo) bar.append(button(T.reset, T.resetCell(this.label), () => this.reset(), "pyodide-reset"));
      const exercise = this.exercise && this.page.exercises[this.exercise];
      if (this.hint) this.addReveal(bar, T.hint, T.hint, el("div", { class: "pyodide-hint" }, this.hint));
      if (exercise && exercise.solution) {
        const pre = el("pre", { class: "pyodide-solution-code" }, exercise.solution);
        this.addReveal(bar, T.solution, T.hideSolution, pre);
      }
      if (exercise && exercise.check) {
        bar.append(button(T.check, `${T.check} ${this.exercise}`, () => this.check(exercise.check), "pyodide-check"));
      }
      this.output = el("div", { class: "pyodide-output", "aria-live": "polite" });
      node.append(bar, this.output);
    }

    addReveal(bar, showLabel, hideLabel, content) {
      content.hidden = true;
      const toggle = button(showLabel, showLabel, () => {
        content.hidden = !content.hidden;
        toggle.textContent = content.hidden ? showLabel : hideLabel;
        toggle.setAttribute("aria-expanded", String(!content.hidden));
      }, "pyodide-reveal");
      toggle.setAttribute("aria-expanded", "false");
      bar.append(toggle);
      this.node.append(content);
    }

    reset() {
      this.editor.setCode(this.original);
      this.output.replaceChildren();
    }

    show(kind, text, role) {
      const block = el("pre", { class: `pyodide-${kind}` }, text);
      if (role) block.setAttribute("role", role);
      this.output.append(block);
      return block;
    }

    stream(name, text) {
      if (name === "status") return;
      const last = this.output.lastElementChild;
      if (last && last.classList.contains(`pyodide-${name}`)) last.textContent += text;
      else this.show(name, text);
    }

    // Shows one run's outcome; returns true when the code ran without error.
    render(result) {
      if (result.timedOut) { this.show("error", T.timeout(this.timeout), "alert"); return false; }
      if (result.skipped) { this.show("stderr", T.skipped); return false; }
      if (result.notReady) { this.show("error", T.notReady, "alert"); return false; }
      if (result.value !== null) this.show("value", result.value);
      result.figures.forEach((png, k) => {
        this.output.append(el("img", { class: "pyodide-figure", src: `data:image/png;base64,${png}`,
                                       alt: T.figure(this.label, k + 1) }));
      });
      if (result.error) { this.show("error", result.error, "alert"); return false; }
      return true;
    }

    submit(code, kind) {
      return this.page.runtime.run(code, {
        kind, label: this.label, timeout: this.timeout,
        onStart: () => {
          if (kind === "cell") this.output.replaceChildren();
          this.node.classList.add("pyodide-running");
        },
        onStream: (name, text) => this.stream(name, text),
      }).then((result) => { this.node.classList.remove("pyodide-running"); return result; });
    }

    // data-runs / data-checks count finished runs, so tests and the benchmark can wait for them.
    async run() {
      const ok = this.render(await this.submit(this.editor.getCode(), "cell"));
      this.node.dataset.runs = Number(this.node.dataset.runs || 0) + 1;
      return ok;
    }

    // The reader's code first, then the check in the same namespace: an AssertionError is a wrong answer.
    async check(checkCode) {
      if (await this.run()) {
        const result = await this.submit(checkCode, "check");
        if (this.render(result)) {
          const ok = result.assertion === null;
          this.output.append(el("div", { class: `pyodide-feedback ${ok ? "pyodide-correct" : "pyodide-wrong"}`,
                                         role: "status" }, ok ? T.correct : T.wrong(result.assertion)));
        }
      }
      this.node.dataset.checks = Number(this.node.dataset.checks || 0) + 1;
    }
  }

  // ------------------------------------------------------------------ the page

  function readConfig() {
    const tag = document.getElementById("pyodide-cells-config");
    const raw = tag ? JSON.parse(tag.textContent) : {};
    const version = raw.version || "0.27.7";
    const root = new URL(raw.root || "./", document.baseURI);
    let baseURL = raw["base-url"] || `https://cdn.jsdelivr.net/pyodide/v${version}/full/`;
    baseURL = new URL(baseURL.endsWith("/") ? baseURL : `${baseURL}/`, document.baseURI).href;
    return {
      version, baseURL,
      packages: raw.packages || ["numpy"],
      timeout: Number(raw.timeout || 30),
      loadTimeout: Number(raw["load-timeout"] || 60),
      files: (raw.files || []).map((f) => ({ url: new URL(f.src, root).href, dest: f.dest })),
    };
  }

  function setUp() {
    const nodes = [...document.querySelectorAll("div.pyodide-cell")];
    if (!nodes.length) return;
    const page = { config: readConfig(), exercises: {} };
    for (const pre of document.querySelectorAll("pre.pyodide-solution, pre.pyodide-check")) {
      const kind = pre.classList.contains("pyodide-solution") ? "solution" : "check";
      (page.exercises[pre.dataset.exercise] ||= {})[kind] = pre.textContent;
    }
    const status = el("span", { class: "pyodide-status", role: "status", "aria-live": "polite" });
    const pageBar = el("div", { class: "pyodide-page-bar" });
    page.runtime = new Runtime(page.config, (state, text) => {
      status.textContent = text;
      pageBar.dataset.state = state;
    });
    const cells = nodes.map((node, i) => new Cell(node, i + 1, page));
    pageBar.append(status, button(T.runAll, T.runAllLabel, () => cells.forEach((c) => c.run()), "pyodide-run-all"));
    nodes[0].before(pageBar);
    cells.filter((c) => c.autorun).forEach((c) => c.run());
    window.pyodideCells = { cells, runtime: page.runtime };  // for tests and the benchmark
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
