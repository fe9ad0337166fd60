// bufferlab serve: the page (docs/bench.md). No framework, no network beyond this server:
// uPlot (VENDORED.md beside this file) draws the charts.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const COLORS = ["#2f6fd0", "#d9480f", "#2e9d4f", "#9c36b5", "#c92a2a", "#0b7285", "#e67700", "#495057",
  "#5c940d", "#a61e4d"];
// timings the benchmark and the tests read (benches/serve.py)
window.bench = {runClicked: null, firstChart: null, checks: 0, drawMs: []};

async function api(path, body) {
  const opts = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify(body)};
  const r = await fetch(path, {credentials: "same-origin", ...opts});
  const doc = r.status === 204 ? {} : await r.json();
  if (!r.ok && r.status !== 409) throw new Error(doc.error || r.statusText);
  doc._status = r.status;
  return doc;
}
function flash(msg) { $("flash").textContent = msg || ""; }

// ---------------------------------------------------------------- tabs and the file lists

const state = {tree: null, file: null, dirty: false, job: null, es: null, diags: [], checkSeq: 0,
  hidden: {}, resultsFor: null};

function showTab(name) {
  for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("on", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== `tab-${name}`;
  if (name === "results") showResults();
  if (name === "compare") fillCompare();
  if (name === "sweep") fillSweeps();
}

async function loadTree() {
  const t = await api("/api/tree");
  state.tree = t;
  $("root").textContent = `${t.root.split(/[\\/]/).pop()}/`;
  $("root").title = t.root;
  for (const kind of ["scenarios", "scripts", "sweeps"]) {
    const ul = $(`list-${kind}`);
    ul.replaceChildren(...t[kind].map((f) => el("li", {text: f.path, "data-path": f.path,
      class: state.file === f.path ? "on" : "", onclick: () => openFile(f.path)})));
  }
  $("list-results").replaceChildren(...t.results.map((r) => el("li", {"data-path": r.path,
    onclick: () => { if (r.kind === "sweep") { showTab("sweep"); pickSweepDir(r.path); }
                     else if (r.kind !== "compare") { state.resultsFor = r.path; showTab("results"); } }},
    r.name, el("span", {class: "badge", text: r.kind === "run" || r.kind === "mininet"
      ? (r.complete ? "" : "partial") : r.kind}))));
  return t;
}

// ---------------------------------------------------------------- the editor

const src = () => $("src");

async function openFile(path) {
  if (state.dirty && !confirm(`${state.file} has unsaved changes. Leave them?`)) return;
  const doc = await api(`/api/file?path=${encodeURIComponent(path)}`);
  state.file = path;
  state.dirty = false;
  src().disabled = false;
  src().value = doc.text;
  $("file-name").textContent = path;
  for (const li of document.querySelectorAll("#side li")) li.classList.toggle("on", li.dataset.path === path);
  const runnable = !path.startsWith("sweeps/") && !(state.tree.sweeps || []).some((s) => s.path === path);
  $("run").disabled = !runnable;
  $("save").disabled = true;
  state.diags = [];
  render();
  showTab("editor");
  check();
  const running = (state.tree.jobs || []).find((j) => j.source === path && (j.state === "running" || j.state === "stopping"));
  if (running) attach(running); else resetRunPane();
}

// TOML, and inside its strings the command lines ("h1: iperf3 -c 10.0.0.3 -t 90 &")
const TOML = /(#.*$)|("(?:[^"\\]|\\.)*"?|'[^']*'?)|(^\s*\[\[?[^\]]*\]\]?)|([A-Za-z0-9_.-]+(?=\s*=))|(\b(?:true|false)\b)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b)/gm;
const CMD = /(\$\{[^}]*\}?)|(&&|\|\||[&;|]|>>|>)|(\s-{1,2}[A-Za-z][\w-]*)|(\b\d+(?:\.\d+)?(?:[a-zA-Z%]+)?\b)/g;

function lineSpans(line, inTriple) {
  // [start, end, class] spans of one line
  const spans = [];
  if (inTriple) {
    const end = line.indexOf('"""');
    spans.push([0, end < 0 ? line.length : end + 3, "t-str"]);
    if (end < 0) return {spans, triple: true};
  }
  TOML.lastIndex = 0;
  let m;
  const from = spans.length ? spans[0][1] : 0;
  const rest = line.slice(from);
  while ((m = TOML.exec(rest)) !== null) {
    const s = from + m.index, e = s + m[0].length;
    if (m[1]) spans.push([s, e, "t-com"]);
    else if (m[2]) {
      if (m[0].startsWith('"""')) { spans.push([s, line.length, "t-str"]); return {spans, triple: !line.slice(s + 3).includes('"""')}; }
      spans.push([s, e, "t-str"]);
      commandSpans(line, s + 1, e - 1, spans);
    } else if (m[3]) spans.push([s, e, "t-hdr"]);
    else if (m[4]) spans.push([s, e, "t-key"]);
    else if (m[5]) spans.push([s, e, "t-bool"]);
    else if (m[6]) spans.push([s, e, "t-num"]);
    if (m[0].length === 0) TOML.lastIndex++;
  }
  return {spans, triple: false};
}

function commandSpans(line, s, e, spans) {
  const text = line.slice(s, e);
  const head = /^(\s*)([\w-]+:)(\s+)(sudo\s+)?([\w./-]+)/.exec(text);
  if (!head) return;
  const termAt = s + head[1].length;
  spans.push([termAt, termAt + head[2].length, "t-term"]);
  const progAt = termAt + head[2].length + head[3].length + (head[4] ? head[4].length : 0);
  spans.push([progAt, progAt + head[5].length, "t-prog"]);
  const body = text.slice(progAt - s + head[5].length);
  const base = progAt + head[5].length;
  CMD.lastIndex = 0;
  let m;
  while ((m = CMD.exec(body)) !== null) {
    const a = base + m.index, b = a + m[0].length;
    const cls = m[1] ? "t-par" : m[2] ? "t-op" : m[3] ? "t-opt" : "t-num";
    spans.push([m[3] ? a + 1 : a, b, cls]);
    if (m[2] && /^(&&|\|\||;|\|)$/.test(m[0])) {  // the next word is a program again
      const nxt = /^\s*(sudo\s+)?([\w./-]+)/.exec(body.slice(m.index + m[0].length));
      if (nxt) { const p = b + nxt[0].length - nxt[2].length; spans.push([p, p + nxt[2].length, "t-prog"]); }
    }
  }
}

function paint(line, spans, marks) {
  // the line's HTML: token classes, and the diagnostics' marks over them
  const cuts = new Set([0, line.length]);
  for (const [a, b] of [...spans, ...marks]) { cuts.add(Math.max(0, Math.min(a, line.length))); cuts.add(Math.max(0, Math.min(b, line.length))); }
  const pts = [...cuts].sort((x, y) => x - y);
  let out = "";
  for (let i = 0; i + 1 < pts.length; i++) {
    const a = pts[i], b = pts[i + 1];
    if (b <= a) continue;
    const cls = [];
    let tok = null;
    for (const sp of spans) if (sp[0] <= a && b <= sp[1]) tok = sp[2];  // innermost: the last one
    if (tok) cls.push(tok);
    for (const mk of marks) if (mk[0] <= a && b <= mk[1]) cls.push(mk[2]);
    const text = esc(line.slice(a, b));
    out += cls.length ? `<span class="${cls.join(" ")}">${text}</span>` : text;
  }
  return out;
}

function markRange(line, col) {
  if (!col) return [0, Math.max(line.length, 1)];
  const a = Math.min(col - 1, line.length);
  let b = a;
  while (b < line.length && !/[\s"',\]]/.test(line[b])) b++;
  return [a, Math.max(b, a + 1)];
}

function render() {
  const text = src().value;
  const lines = text.split("\n");
  const byLine = {};
  for (const d of state.diags) if (d.line) (byLine[d.line] = byLine[d.line] || []).push(d);
  let triple = false;
  const python = (state.file || "").endsWith(".py");
  const html = lines.map((line, i) => {
    const ds = byLine[i + 1] || [];
    const marks = ds.map((d) => [...markRange(line, d.col), `mark-${d.severity}`]);
    if (python) return paint(line, pythonSpans(line), marks);
    const r = lineSpans(line, triple);
    triple = r.triple;
    return paint(line, r.spans, marks);
  });
  $("hl").innerHTML = html.join("\n") + "\n";
  const gutter = $("gutter");
  gutter.replaceChildren(...lines.map((_, i) => {
    const ds = byLine[i + 1] || [];
    const sev = ds.some((d) => d.severity === "error") ? "error" : ds.length ? "warning" : "";
    return el("div", {class: sev, title: ds.map((d) => d.message).join("\n"), text: String(i + 1)});
  }));
  syncScroll();
}

function pythonSpans(line) {
  const spans = [];
  const re = /(#.*$)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|\b(def|class|import|from|return|if|else|elif|for|while|in|with|as|try|except|finally|not|and|or|None|True|False|lambda|pass|raise)\b|(\b\d+(?:\.\d+)?\b)/g;
  let m;
  while ((m = re.exec(line)) !== null) {
    spans.push([m.index, m.index + m[0].length, m[1] ? "t-com" : m[2] ? "t-str" : m[3] ? "t-prog" : "t-num"]);
  }
  return spans;
}

function syncScroll() {
  const t = src();
  $("hl").scrollTop = t.scrollTop;
  $("hl").scrollLeft = t.scrollLeft;
  $("gutter").scrollTop = t.scrollTop;
}

let checkTimer = null;
function onInput() {
  state.dirty = true;
  $("save").disabled = false;
  render();
  clearTimeout(checkTimer);
  checkTimer = setTimeout(check, 250);  // debounced: as you type, not on every key
}

async function check() {
  if (!state.file) return;
  const seq = ++state.checkSeq;
  const text = src().value;
  let r;
  try { r = await api("/api/check", {path: state.file, text}); } catch (e) { flash(e.message); return; }
  if (seq !== state.checkSeq) return;  // a later check is under way
  window.bench.checks++;
  state.diags = r.diagnostics;
  const status = $("check-status");
  status.textContent = r.ok ? r.summary : `${r.diagnostics.filter((d) => d.severity === "error").length} error`;
  status.className = r.ok ? "muted ok" : "bad";
  $("diags").replaceChildren(...r.diagnostics.map((d) => el("li", {class: d.severity,
    onclick: () => goTo(d.line, d.col),
    text: `${d.line ? `line ${d.line}${d.col ? `, column ${d.col}` : ""}: ` : ""}${d.severity}: ${d.message}`
      + (d.expected ? `\n  expected: ${d.expected}` : "") + (d.hint ? `\n  hint: ${d.hint}` : "")})));
  render();
}

function goTo(line, col) {
  if (!line) return;
  const lines = src().value.split("\n");
  let at = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
  at += Math.max(0, (col || 1) - 1);
  src().focus();
  src().setSelectionRange(at, at);
}

async function save() {
  if (!state.file) return false;
  try { await api("/api/file", {path: state.file, text: src().value}); } catch (e) { flash(e.message); return false; }
  state.dirty = false;
  $("save").disabled = true;
  flash("");
  return true;
}

// ---------------------------------------------------------------- runs

function resetRunPane(idle = true) {
  document.querySelector(".split").classList.toggle("idle", idle);  // no run: the editor takes the room
  $("progress").replaceChildren();
  $("run-overview").replaceChildren();
  $("run-charts").replaceChildren();
  $("log").textContent = "";
  $("stop").disabled = true;
}

async function run() {
  if (state.dirty && !(await save())) return;
  window.bench.runClicked = performance.now();
  window.bench.firstChart = null;
  let r;
  try { r = await api("/api/run", {path: state.file}); } catch (e) { flash(e.message); return; }
  if (r._status === 409) flash("already running: showing that run");
  resetRunPane(false);
  attach(r.job);
}

function attach(job) {
  if (state.es) state.es.close();
  document.querySelector(".split").classList.remove("idle");
  state.job = job;
  $("stop").disabled = false;
  const rows = {};
  let refreshing = false, again = false, lastRefresh = 0;
  const refresh = async (live) => {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      const doc = await api(`/api/series?sel=${encodeURIComponent(job.results)}${live ? "&live=1" : ""}`);
      showOverview($("run-overview"), doc, job.results);
      drawCharts($("run-charts"), doc.charts, "run");
    } catch (e) { /* the folder is being replaced: the next event tries again */ }
    refreshing = false;
    lastRefresh = performance.now();
    if (again) { again = false; refresh(live); }
  };
  const es = new EventSource(`/api/jobs/${job.id}/events`);
  state.es = es;
  es.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    if (ev.event === "part") {
      const row = el("div", {class: "part"}, el("b", {text: ev.part}), el("div", {class: "bar"}, el("i")),
        el("span", {class: "muted", text: "running"}));
      rows[ev.part] = row;
      $("progress").append(row);
    } else if (ev.event === "progress" && rows[ev.part] && !rows[ev.part].classList.contains("done")) {
      const f = ev.total_s > 0 ? Math.min(1, ev.done_s / ev.total_s) : 0;
      rows[ev.part].querySelector("i").style.width = `${(100 * f).toFixed(1)}%`;
      rows[ev.part].lastChild.textContent = `${ev.done_s.toFixed(1)} / ${ev.total_s.toFixed(1)} s`;
    } else if (ev.event === "summary") {
      for (const p of ev.parts || []) if (rows[p] && !rows[p].classList.contains("done")) {
        rows[p].classList.add("done");
        rows[p].querySelector("i").style.width = "100%";
        rows[p].lastChild.textContent = "done";
      }
      refresh(true);
    } else if (ev.event === "log") {
      const log = $("log");
      log.textContent += ev.line + "\n";
      if (log.textContent.length > 200000) log.textContent = log.textContent.slice(-150000);
    } else if (ev.event === "end") {
      es.close();
      state.es = null;
      $("stop").disabled = true;
      for (const [name, row] of Object.entries(rows)) if (!row.classList.contains("done")) {
        row.classList.add(ev.state === "stopped" ? "stopped" : "done");
        row.lastChild.textContent = ev.state === "stopped" ? "interrupted" : "ended";
      }
      $("progress").append(el("div", {}, el("span", {class: `state ${ev.state}`,
        text: `${ev.state} (exit status ${ev.status})`})));
      refresh(false);
      loadTree();
    }
  };
}

async function stop() {
  if (!state.job) return;
  try { await api(`/api/jobs/${state.job.id}/stop`, {}); } catch (e) { flash(e.message); }
}

function showOverview(box, doc, root) {
  const kids = [];
  for (const ov of doc.overviews || []) {
    const st = ov.interrupted ? `interrupted (${ov.interrupted})` : ov.error ? "error" : ov.stopped ? "stopped" : "";
    kids.push(el("div", {}, el("b", {text: ov.scenario}), ` · ${(ov.simulated_s || 0).toFixed(3)} s simulated `,
      st ? el("span", {class: "state stopped", text: st}) : "",
      " ", el("a", {href: `/files/${ov.results}/report.html`, target: "_blank", rel: "noopener", text: "report.html"})));
    for (const p of ov.parts) {
      kids.push(el("div", {class: "p"}, el("b", {text: p.name}),
        p.interrupted ? el("span", {class: "state stopped", text: " interrupted"}) : "",
        p.error ? el("span", {class: "state failed", text: " error"}) : "",
        el("pre", {text: p.lines.join("\n")})));
    }
    for (const f of ov.failures || []) kids.push(el("div", {class: "diags"}, el("li", {text: f})));
  }
  for (const p of doc.problems || []) kids.push(el("div", {class: "muted", text: p}));
  box.replaceChildren(...kids);
}

// ---------------------------------------------------------------- charts

const plots = {};  // container id -> uPlot instances (destroyed before a redraw)

// when the page has nothing else to do (a key, a click go first), and within half a second
const later = (fn) => (window.requestIdleCallback ? requestIdleCallback(fn, {timeout: 500}) : setTimeout(fn, 0));

function drawCharts(box, charts, key) {
  // one chart per task: the page answers keys and clicks between two charts
  const gens = drawCharts.gens = drawCharts.gens || {};
  const gen = gens[key] = (gens[key] || 0) + 1;
  for (const u of plots[key] || []) u.destroy();
  plots[key] = [];
  const hidden = state.hidden[key] = state.hidden[key] || {};
  const cards = charts.filter((c) => c.series.length).map((c) => {
    const old = box.querySelector(`.chart[data-key="${c.key}"]`);
    const card = el("div", {class: "chart", "data-key": c.key});
    if (old) card.style.minHeight = `${old.offsetHeight}px`;  // no jump while it is redrawn
    return [c, card];
  });
  box.replaceChildren(...cards.map(([, card]) => card));
  if (!cards.length) box.append(el("p", {class: "muted", text: "nothing to plot yet"}));
  const one = (i) => {
    if (i >= cards.length || gens[key] !== gen) return;
    const [c, card] = cards[i];
    const t0 = performance.now();
    plots[key].push(chart(c, card, hidden));
    window.bench.drawMs.push(performance.now() - t0);
    card.style.minHeight = "";
    if (window.bench.runClicked !== null && window.bench.firstChart === null && key === "run") {
      window.bench.firstChart = performance.now();
    }
    later(() => one(i + 1));
  };
  later(() => one(0));
}

function chart(c, card, hidden) {
  const width = Math.max(300, card.clientWidth - 10);
  const data = c.series.length === 1 ? [c.series[0].x, c.series[0].y]
    : uPlot.join(c.series.map((s) => [s.x, s.y]));
  const opts = {
    title: c.title, width, height: 230,
    scales: {x: {time: false}},
    axes: [{label: c.x, size: 40}, {label: c.y, size: 60}],
    cursor: {drag: {x: true, y: false}},
    series: [{label: c.x, value: (u, v) => v == null ? "–" : (+v).toFixed(3)},
      ...c.series.map((s, i) => ({label: s.label, stroke: COLORS[i % COLORS.length], width: 1.25,
        spanGaps: true, show: !hidden[`${c.key}|${s.label}`], points: {show: c.key === "ping" ? undefined : false},
        value: (u, v) => v == null ? "–" : (Math.abs(v) >= 100 ? v.toFixed(0) : (+v).toPrecision(4))}))],
    hooks: {setSeries: [(u, i) => { if (i) hidden[`${c.key}|${u.series[i].label}`] = !u.series[i].show; }]},
  };
  const u = new uPlot(opts, data, card);
  card.append(el("div", {class: "hint", text: "drag to zoom, double-click to reset, click a legend entry to hide it"}));
  return u;
}

window.addEventListener("resize", () => {
  for (const list of Object.values(plots)) for (const u of list) {
    const card = u.root.parentNode;
    if (card) u.setSize({width: Math.max(300, card.clientWidth - 10), height: 230});
  }
});

// ---------------------------------------------------------------- results

async function showResults() {
  const pick = $("result-pick");
  const runs = (state.tree.results || []).filter((r) => r.kind === "run" || r.kind === "mininet");
  pick.replaceChildren(...runs.map((r) => el("option", {value: r.path, text: r.path})));
  if (!runs.length) { $("res-overview").textContent = "No results yet: run a scenario."; return; }
  if (state.resultsFor && runs.some((r) => r.path === state.resultsFor)) pick.value = state.resultsFor;
  const r = runs.find((x) => x.path === pick.value) || runs[0];
  state.resultsFor = r.path;
  $("part-chips").replaceChildren(...(r.parts || []).map((p) => el("label", {},
    el("input", {type: "checkbox", checked: "", value: p, onchange: () => drawResults(r)}), ` ${p}`)));
  $("report-link").href = `/files/${r.path}/report.html`;
  $("report-link").hidden = false;
  drawResults(r);
}

async function drawResults(r) {
  const boxes = [...document.querySelectorAll("#part-chips input")];
  const on = boxes.filter((b) => b.checked).map((b) => b.value);
  const sels = on.length === boxes.length || !boxes.length ? [r.path] : on.map((p) => `${r.path}/${p}`);
  if (!sels.length) { $("res-charts").replaceChildren(); return; }
  try {
    const doc = await api("/api/series?" + sels.map((s) => `sel=${encodeURIComponent(s)}`).join("&"));
    showOverview($("res-overview"), {...doc, overviews: doc.overviews.slice(0, 1)}, r.path);
    drawCharts($("res-charts"), doc.charts, "results");
  } catch (e) { flash(e.message); }
}

// ---------------------------------------------------------------- compare

function fillCompare() {
  const runs = (state.tree.results || []).filter((r) => r.kind === "run" || r.kind === "mininet");
  $("compare-pick").replaceChildren(...runs.map((r) => el("div", {},
    el("label", {}, el("input", {type: "checkbox", value: r.path}), ` ${r.path}`),
    ...(r.parts || []).map((p) => el("label", {}, el("input", {type: "checkbox", value: `${r.path}/${p}`}), ` ${p}`)))));
}

async function compareGo() {
  const sels = [...document.querySelectorAll("#compare-pick input:checked")].map((b) => b.value);
  if (sels.length < 2) { flash("pick at least two runs or parts"); return; }
  flash("");
  try {
    const doc = await api("/api/compare", {paths: sels});
    const t = el("table");
    t.append(el("tr", {}, ...doc.headers.map((h) => el("th", {text: h}))));
    for (const row of doc.rows) t.append(el("tr", {}, ...row.map((c) => el("td", {text: c}))));
    $("compare-table").replaceChildren(el("div", {class: "scroll"}, t),
      ...doc.problems.map((p) => el("div", {class: "muted", text: p})));
    $("compare-out").textContent = `written to ${doc.output}/ (compare.csv, compare.html)`;
    const series = await api("/api/series?" + sels.map((s) => `sel=${encodeURIComponent(s)}`).join("&"));
    drawCharts($("compare-charts"), series.charts, "compare");
  } catch (e) { flash(e.message); }
}

// ---------------------------------------------------------------- sweeps

let sweepJob = null;

function fillSweeps() {
  $("sweep-file").replaceChildren(...(state.tree.sweeps || []).map((s) => el("option", {value: s.path, text: s.path})));
  const dirs = (state.tree.results || []).filter((r) => r.kind === "sweep");
  const cur = $("sweep-dir").value;
  $("sweep-dir").replaceChildren(...dirs.map((d) => el("option", {value: d.path, text: d.path})));
  if (cur && dirs.some((d) => d.path === cur)) $("sweep-dir").value = cur;
  if (dirs.length) sweepInfo();
}

function pickSweepDir(path) {
  fillSweeps();
  $("sweep-dir").value = path;
  sweepInfo();
}

async function sweepInfo() {
  const dir = $("sweep-dir").value;
  if (!dir) return;
  const info = await api(`/api/sweep?dir=${encodeURIComponent(dir)}`);
  const fill = (sel, names, blank) => {
    const cur = sel.value;
    sel.replaceChildren(...(blank ? [el("option", {value: "", text: "(none)"})] : []),
      ...names.map((n) => el("option", {value: n, text: n})));
    if (names.includes(cur) || (blank && cur === "")) sel.value = cur;
  };
  fill($("sweep-x"), info.params, false);
  fill($("sweep-y"), info.columns, false);
  if (!$("sweep-y").dataset.touched && info.columns.includes("goodput_bps")) $("sweep-y").value = "goodput_bps";
  fill($("sweep-by"), [...info.params, ...info.others.filter((c) => ["part", "node", "kind", "flow"].includes(c))], true);
  $("sweep-progress").textContent = sweepJob && sweepJob.state === "running" ? $("sweep-progress").textContent
    : `${info.runs} runs finished${info.failed ? `, ${info.failed} failed` : ""}`;
  sweepPlot();
}

async function sweepPlot() {
  const dir = $("sweep-dir").value, x = $("sweep-x").value, y = $("sweep-y").value, by = $("sweep-by").value;
  if (!dir || !x || !y) return;
  let doc;
  try {
    doc = await api(`/api/sweep/plot?dir=${encodeURIComponent(dir)}&x=${encodeURIComponent(x)}&y=${encodeURIComponent(y)}&by=${encodeURIComponent(by)}`);
  } catch (e) { flash(e.message); return; }
  for (const u of plots.sweep || []) u.destroy();
  plots.sweep = [];
  const box = $("sweep-chart");
  box.replaceChildren();
  if (!doc.lines.length) { box.append(el("p", {class: "muted", text: "no finished run yet"})); return; }
  const card = el("div", {class: "chart"});
  box.append(card);
  const xs = [...new Set(doc.lines.flatMap((l) => l.x))].sort((a, b) => a - b);
  const data = [xs];
  const series = [{label: x, value: (u, v) => v == null ? "–" : doc.ticks ? doc.ticks[v] : v}];
  const bands = [];
  doc.lines.forEach((l, i) => {
    const at = (arr) => xs.map((v) => { const k = l.x.indexOf(v); return k < 0 ? undefined : arr[k]; });
    const c = COLORS[i % COLORS.length];
    const base = data.length;
    data.push(at(l.mean), at(l.hi), at(l.lo));
    series.push({label: `${l.label} (mean)`, stroke: c, width: 1.5, points: {show: true, size: 6}},
      {label: `${l.label} 95 % CI high`, stroke: c + "88", width: 1, dash: [4, 4]},
      {label: `${l.label} 95 % CI low`, stroke: c + "88", width: 1, dash: [4, 4]});
    bands.push({series: [base + 1, base + 2], fill: c + "22"});
  });
  const opts = {title: `${y} against ${x} (mean over seeds, 95 % confidence interval)`,
    width: Math.max(320, card.clientWidth - 10), height: 300, scales: {x: {time: false}}, bands,
    axes: [{label: x, values: doc.ticks ? (u, vals) => vals.map((v) => doc.ticks[v] ?? "") : undefined}, {label: y, size: 70}],
    series};
  const u = new uPlot(opts, data, card);
  plots.sweep.push(u);
  // the interval's edges are drawn as a band: their legend entries would only repeat the line's
  u.root.querySelectorAll(".u-legend .u-series").forEach((row, i) => { if (i && i % 3 !== 1) row.style.display = "none"; });
  const t = el("table");
  t.append(el("tr", {}, ...["line", x, "mean", "95 % CI", "n"].map((h) => el("th", {text: h}))));
  for (const l of doc.lines) l.x.forEach((v, k) => t.append(el("tr", {}, el("td", {text: l.label}),
    el("td", {text: doc.ticks ? doc.ticks[v] : v}), el("td", {text: l.mean[k] == null ? "–" : l.mean[k].toPrecision(5)}),
    el("td", {text: l.mean[k] == null ? "–" : `± ${(l.hi[k] - l.mean[k]).toPrecision(3)}`}), el("td", {text: l.n[k]}))));
  $("sweep-table").replaceChildren(t);
}

async function sweepGo() {
  const file = $("sweep-file").value;
  if (!file) return;
  let r;
  try { r = await api("/api/sweep", {path: file}); } catch (e) { flash(e.message); return; }
  sweepJob = r.job;
  $("sweep-stop").disabled = false;
  const total = r.total;
  $("sweep-progress").textContent = `0 / ${total} runs`;
  await loadTree();
  let last = 0;
  const es = new EventSource(`/api/jobs/${r.job.id}/events`);
  es.onmessage = async (m) => {
    const ev = JSON.parse(m.data);
    if (ev.event === "sweep_run") {
      $("sweep-progress").textContent = `${ev.done} / ${ev.todo} runs to do (${total} in the sweep)`;
      if (performance.now() - last > 1000) {  // watch it fill, at most once a second
        last = performance.now();
        await loadTree();
        pickSweepDir(r.job.results);
      }
    } else if (ev.event === "end") {
      es.close();
      sweepJob.state = ev.state;
      $("sweep-stop").disabled = true;
      $("sweep-progress").textContent = `sweep ${ev.state} (exit status ${ev.status})`;
      await loadTree();
      pickSweepDir(r.job.results);
    }
  };
}

// ---------------------------------------------------------------- start

function start() {
  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  const t = src();
  t.addEventListener("input", onInput);
  t.addEventListener("scroll", syncScroll);
  t.addEventListener("keydown", (e) => {
    if (e.key === "Tab") { e.preventDefault(); document.execCommand("insertText", false, "  "); }
    if ((e.ctrlKey || e.metaKey) && e.key === "s") { e.preventDefault(); save(); }
  });
  $("save").addEventListener("click", save);
  $("run").addEventListener("click", run);
  $("stop").addEventListener("click", stop);
  $("result-pick").addEventListener("change", () => { state.resultsFor = $("result-pick").value; showResults(); });
  $("compare-go").addEventListener("click", compareGo);
  $("sweep-go").addEventListener("click", sweepGo);
  $("sweep-stop").addEventListener("click", async () => { if (sweepJob) await api(`/api/jobs/${sweepJob.id}/stop`, {}); });
  $("sweep-dir").addEventListener("change", sweepInfo);
  for (const id of ["sweep-x", "sweep-y", "sweep-by"]) $(id).addEventListener("change", () => { $(id).dataset.touched = "1"; sweepPlot(); });
  window.addEventListener("beforeunload", (e) => { if (state.dirty) { e.preventDefault(); e.returnValue = ""; } });
  loadTree().then((tr) => {
    const want = new URLSearchParams(location.hash.slice(1)).get("file");
    if (want && tr.scenarios.concat(tr.scripts, tr.sweeps).some((f) => f.path === want)) openFile(want);
  }).catch((e) => flash(e.message));
}
document.addEventListener("DOMContentLoaded", start);
