// spyre-provenance view: the page's behaviour. Plain JavaScript, no framework, no request.
//
// The document (viewer/data.py builds it; its fields are model/viewer_records.py's, held
// equal to schemas/spyre_viewer_document/v1.schema.json by tests/unit/test_viewer_document.py)
// holds, for every element, what a click on it lights (viewer/relation.py says the rule): the
// page follows it, element by element, and marks the call sites holding lit elements as their
// containers. Panels are built per graph, when the graph is first shown.
"use strict";
(function () {
  const T0 = performance.now();
  const D = JSON.parse(document.getElementById("data").textContent);
  const timings = (window.viewerTimings = { parse: performance.now() - T0 });  // what make bench reports
  const KINDS = ["line", "pre", "post", "call", "spec", "bundle"];
  const CHUNK = 200, EAGER = 3;  // rows per chunk; chunks made at once per panel
  let chunks = null, chunkOf = null, observer = null, hit = null;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  let gi = -1, G = null, rows = null, sel = null, lit = null;

  // --- the relation ----------------------------------------------------------------------
  // What a click lights is the document's (viewer/relation.py, the one rule): each element's
  // lit set by kind, itself included, and "box", the call sites marked as its containers.
  // An entry lists positions per kind in the order ENTRY (viewer/relation.py), the element
  // itself left out.
  const ENTRY = KINDS.concat(["box"]);
  function relatives(g, kind, i) {
    const e = (kind === "line" ? g.lights.line[String(i)] : g.lights[kind][i]) || [];
    const S = {}; ENTRY.forEach((k, n) => (S[k] = new Set(e[n] || [])));
    S[kind].add(i);
    return S;
  }

  // --- element keys: what a URL fragment and the tests name --------------------------------
  function lineKey(l) { const [f, n] = D.lines[l]; return D.files[f].path + ":" + n; }
  function keyOf(g, kind, i) {
    if (kind === "line") return lineKey(i);
    if (kind === "pre") return g.pre[i];
    if (kind === "post") return g.post[i];
    if (kind === "call") return g.calls[i].key;
    if (kind === "spec") return g.calls[g.opspecs[i].call].key + "#" + g.opspecs[i].index;
    return g.bundles[i].path;
  }
  function find(g, kind, key) {
    if (kind === "line") { for (const l of usedLines(g)) if (lineKey(l) === key) return l; return -1; }
    const n = { pre: g.pre.length, post: g.post.length, call: g.calls.length, spec: g.opspecs.length, bundle: g.bundles.length }[kind];
    for (let i = 0; i < n; i++) if (keyOf(g, kind, i) === key) return i;
    return -1;
  }
  function usedLines(g) {
    if (g._lines) return g._lines;
    const s = new Set(); g.calls.forEach((c) => c.lines.forEach((l) => s.add(l))); g.opspecs.forEach((x) => x.lines.forEach((l) => s.add(l)));
    Object.keys(g.launched_time_us || {}).forEach((l) => s.add(Number(l)));  // lines recorded at launch (viewer.timing)
    return (g._lines = Array.from(s).sort((a, b) => (D.lines[a][0] - D.lines[b][0]) || (D.lines[a][1] - D.lines[b][1])));
  }

  // --- panels ------------------------------------------------------------------------------
  const fmtTime = (us) => (us >= 1000 ? (us / 1000).toFixed(2) + " ms" : us.toFixed(1) + " us");
  // A panel is a list of pieces: HTML strings, and rows {i: element, f: its HTML, made when
  // its chunk is}. The chunks index rows by element.
  function row(kind, i, inner) {
    return { i, f: () => '<div class="row" data-kind="' + kind + '" data-i="' + i + '" data-key="' + esc(keyOf(G, kind, i)) + '">' + inner() + "</div>" };
  }
  function handleText(g, h) {
    const d = g.handles[h]; if (!d) return "";
    const src = d.source ? d.source.file.split("/").pop() + ":" + d.source.start_line : "no source";
    return " " + (d.aten_op || "-") + " " + src;
  }
  function renderLines(g) {
    const used = usedLines(g), usedSet = new Set(used);
    // a line's time is the document's (runtime.time_summary's rule: the kernels whose stack
    // traces end at it), over the graph's kernel time
    const time = new Map(Object.entries(g.line_time_us || {}).map(([l, t]) => [Number(l), t]));
    const total = g.calls.reduce((a, c) => a + (c.time_us || 0), 0);
    const byFile = new Map(); used.forEach((l) => { const f = D.lines[l][0]; if (!byFile.has(f)) byFile.set(f, []); byFile.get(f).push(l); });
    const lineAt = new Map(); used.forEach((l) => lineAt.set(D.lines[l][0] + ":" + D.lines[l][1], l));
    // lines only kernels named by module hold: torch's frames (model.modules: no frame of
    // those kernels is the user's), shown as recorded, never counted as lines that made kernels
    // (a line recorded at launch alone made none: it launched them)
    const made = new Set(), byUser = new Set();
    g.calls.forEach((c) => c.lines.forEach((l) => { made.add(l); if (!c.modules) byUser.add(l); }));
    g.opspecs.forEach((x) => x.lines.forEach((l) => { made.add(l); if (!g.calls[x.call].modules) byUser.add(l); }));
    const torchOnly = used.filter((l) => made.has(l) && !byUser.has(l)).length;
    const out = [];
    byFile.forEach((ls, f) => {
      const file = D.files[f];
      const theirs = ls.every((l) => made.has(l) && !byUser.has(l)) ? ' <span class="muted">(torch\'s frames: no frame of these kernels is the user\'s; see their modules below)</span>' : "";
      out.push('<div class="file">' + esc(file.path) + (file.error ? ' <span class="warn">(not read at compile time: ' + esc(file.error) + ")</span>" : "") + theirs + "</div>");
      // the captured lines and context; a made line no snapshot holds (an out folder written
      // before spyre_source_lines existed) is shown by its number alone
      const shown = Array.from(new Set(Object.keys(file.text).map(Number).concat(ls.map((l) => D.lines[l][1])))).sort((a, b) => a - b);
      let prev = null;
      shown.forEach((n) => {
        if (prev !== null && n > prev + 1) out.push('<div class="gap">\u22ef</div>');
        prev = n;
        const text = file.text[n] !== undefined ? file.text[n] : "";
        const l = lineAt.get(f + ":" + n);
        if (l === undefined) { out.push('<div class="ctx"><span class="ln">' + n + "</span>" + esc(text) + "</div>"); return; }
        let style = "", note = "";
        if (total > 0 && time.has(l)) {
          const share = time.get(l) / total;
          style = ' style="background:rgba(240,138,36,' + (0.12 + 0.6 * share).toFixed(3) + ')"';
          note = '  <span class="time">' + (100 * share).toFixed(1) + "% of kernel time</span>";
        }
        // a line the tracked process recorded at launch: the time of the kernels launched from it
        const launched = (g.launched_time_us || {})[String(l)];
        if (launched) note += '  <span class="time recorded">' + fmtTime(launched) + " launched from this line (recorded at launch)</span>";
        out.push({ i: l, f: () => '<div class="row" data-kind="line" data-i="' + l + '" data-key="' + esc(file.path + ":" + n) + '"' + style + ' title="' + esc(file.path + ":" + n) + '"><span class="ln">' + n + "</span>" + esc(text) + note + "</div>", i: l });
      });
    });
    const mods = renderModules(g, total);
    out.push(...mods);
    const named = g.calls.filter((c) => c.modules).length;
    return { html: out, count: (made.size - torchOnly) + " lines that made kernels" + (torchOnly ? ", " + torchOnly + " of torch's" : "") +
      (named ? ", " + named + " kernel" + (named === 1 ? "" : "s") + " named by module" : "") + (total ? ", shaded by share of kernel time" : "") +
      (g.launched_time_us ? ", " + Object.keys(g.launched_time_us).length + " recorded at launch" : "") };
  }
  // Kernels no user frame made, named by the modules their nodes ran in (viewer.module_names):
  // module evidence, said apart from the source lines, with the time the summary counts
  function renderModules(g, total) {
    if (!g.modules || !g.modules.length) return [];
    const time = g.module_time_us || {};
    const out = ['<div class="file mods">modules: the nodes\' nn_module_stack, for kernels with no user frame (module evidence, not source lines)</div>'];
    g.modules.forEach((m, i) => {
      const parts = [];
      if (m.ran_calls.length) parts.push("ran " + m.ran_calls.length + " kernel" + (m.ran_calls.length === 1 ? "" : "s"));
      if (m.enclosing_calls.length) parts.push("encloses " + m.enclosing_calls.length);
      const t = time[String(i)], share = total > 0 && t ? t / total : 0;
      const style = share ? ' style="background:rgba(240,138,36,' + (0.12 + 0.6 * Math.min(1, share)).toFixed(3) + ')"' : "";
      const keys = m.ran_calls.concat(m.enclosing_calls).map((c) => g.calls[c].key).join("\n");
      out.push('<div class="mod" data-mod="' + i + '"' + style + ' title="' + esc(m.module_class + "\n" + keys) + '"><span class="ln">module</span>' + esc(m.name) +
        ' <span class="muted">' + esc(parts.join(", ")) + "</span>" + (share ? '  <span class="time">' + (100 * share).toFixed(1) + "% of kernel time</span>" : "") + "</div>");
    });
    return out;
  }
  // A graph panel: the graph's code as logged (tlparse's), each node's row the line tlparse
  // finds it on; the names alone where no log was beside the artifacts.
  function renderNodes(g, kind) {
    const names = g[kind], code = g.code && g.code[kind];
    if (!code) return { html: names.map((n, i) => row(kind, i, () => esc(n))), count: names.length + " nodes" };
    const node = new Map(); code.node_lines.forEach((n, i) => { if (n >= 0) node.set(n, i); });
    const numbered = (n, text) => '<span class="ln">' + (n + 1) + "</span>" + esc(text);
    const out = code.text.split("\n").map((text, n) => node.has(n) ? row(kind, node.get(n), () => numbered(n, text)) : '<div class="ctx">' + numbered(n, text) + "</div>");
    const missing = names.map((_, i) => i).filter((i) => code.node_lines[i] < 0);
    if (missing.length) { out.push('<div class="file">not on a line of the logged graph</div>'); missing.forEach((i) => out.push(row(kind, i, () => esc(names[i])))); }
    return { html: out, count: names.length + " nodes, the code as logged" };
  }
  function renderGraph() {
    const g = G;
    const maxT = Math.max(0, ...g.calls.map((c) => c.time_us || 0));
    const parts = {
      line: renderLines(g),
      pre: renderNodes(g, "pre"),
      post: renderNodes(g, "post"),
      call: {
        html: g.calls.map((c, i) => row("call", i, () =>
          (c.time_us ? '<span class="bar" style="width:' + Math.max(1, Math.round(60 * c.time_us / maxT)) + 'px"></span>' : "") + esc(c.key) + moduleMark(g, c) +
          ' <span class="muted">' + c.opspecs.length + " OpSpec" + (c.opspecs.length === 1 ? "" : "s") + "</span>" +
          (c.time_us ? ' <span class="time">' + fmtTime(c.time_us) + ", " + c.calls + " call" + (c.calls === 1 ? "" : "s") + "</span>" : "") + sidecarMark(c))),
        count: g.calls.length,
      },
      spec: {
        html: [].concat(...g.calls.map((c, ci) => c.opspecs.length ? ['<div class="group" data-call="' + ci + '">' + esc(c.key) + "</div>"].concat(c.opspecs.map((s) => {
          const x = g.opspecs[s];
          return row("spec", s, () => "  #" + x.index + " " + esc(x.op) + (x.buffer ? " \u2192 " + esc(x.buffer) : "") + '  <span class="muted">handle ' + esc(x.handle || "none") + esc(handleText(g, x.handle)) + "</span>" +
            (x.handle_names_other ? ' <span class="warn own">\u2260 its node</span>' : ""));
        })) : [])),
        count: g.opspecs.length,
      },
      bundle: {
        html: g.bundles.map((b, i) => row("bundle", i, () => esc(b.path) + (b.opspecs.length > 1 ? ' <span class="muted">' + b.opspecs.length + " call sites</span>" : "") +
          (b.opspecs.every((x) => g.opspecs[x].bundle_is_its_own) ? "" : ' <span class="warn">debug_handle_ ' + esc(b.id) + " is not every OpSpec's</span>"))),
        count: g.bundles.length,
      },
    };
    // Rows are made in chunks of CHUNK pieces, a chunk's DOM only when it scrolls into view or
    // holds a row a selection lights (fill): a graph of 10k kernels opens as fast as a small one.
    rows = {}; chunks = {}; chunkOf = {};
    if (observer) observer.disconnect();
    observer = new IntersectionObserver((entries) => entries.forEach((e) => {
      if (e.isIntersecting) fill(e.target.dataset.kind, +e.target.dataset.n);
    }), { rootMargin: "800px" });
    KINDS.forEach((k) => {
      const panel = $("p-" + k), pieces = parts[k].html, list = [], at = new Map(), holders = [];
      for (let start = 0; start < pieces.length; start += CHUNK) {
        const n = list.length, part = pieces.slice(start, start + CHUNK);
        part.forEach((p) => { if (typeof p !== "string") at.set(p.i, n); });
        list.push({ pieces: part, done: false, el: null });
        holders.push('<div class="chunk" data-kind="' + k + '" data-n="' + n + '" style="height:' + 18 * Math.min(CHUNK, pieces.length - start) + 'px"></div>');
      }
      const body = panel.querySelector(".body");
      body.innerHTML = holders.join("") || '<div class="ctx">none in this graph</div>';
      body.querySelectorAll(".chunk").forEach((el) => { list[+el.dataset.n].el = el; observer.observe(el); });
      panel.querySelector(".count").textContent = "(" + parts[k].count + ")";
      rows[k] = new Map(); chunks[k] = list; chunkOf[k] = at;
      for (let n = 0; n < Math.min(EAGER, list.length); n++) fill(k, n);
    });
    $("bundle-view").textContent = "";
  }
  function fill(kind, n) {
    const c = chunks[kind][n];
    if (!c || c.done) return;
    c.done = true; c.el.style.height = "";
    c.el.innerHTML = c.pieces.map((p) => (typeof p === "string" ? p : p.f())).join("");
    c.el.querySelectorAll(".row").forEach((el) => {
      const i = +el.dataset.i; rows[kind].set(i, el);
      if (lit && lit[kind].has(i)) el.classList.add("lit");
      if (lit && kind === "call" && lit.box.has(i)) el.classList.add("box");
      if (sel && sel.kind === kind && sel.i === i) el.classList.add("sel");
    });
    if (hit !== null) hideMisses(c.el);
  }
  function fillAll(kind) { chunks[kind].forEach((_, n) => fill(kind, n)); }
  function fillRows(kind, indices) { indices.forEach((i) => { const n = chunkOf[kind].get(i); if (n !== undefined) fill(kind, n); }); }

  // --- selection -----------------------------------------------------------------------------
  function clearLit() {
    if (lit) {
      KINDS.forEach((k) => lit[k].forEach((i) => { const el = rows[k].get(i); if (el) el.classList.remove("lit", "sel"); }));
      lit.box.forEach((i) => { const el = rows.call.get(i); if (el) el.classList.remove("box"); });
    }
    lit = null;
  }
  function select(kind, i, opts) {
    clearLit();
    if (!(opts && opts.pair)) unselectPair();
    sel = kind === null ? null : { kind, i };
    if (!sel) { $("detail").textContent = ""; $("bundle-view").textContent = ""; setHash(); return; }
    lit = relatives(G, kind, i);
    KINDS.forEach((k) => { fillRows(k, lit[k]); lit[k].forEach((j) => { const el = rows[k].get(j); if (el) el.classList.add("lit"); }); });
    fillRows("call", lit.box); lit.box.forEach((j) => { const el = rows.call.get(j); if (el) el.classList.add("box"); });
    const el = rows[kind].get(i); if (el) el.classList.add("sel");
    KINDS.forEach((k) => {
      if (k === kind && !(opts && opts.scroll)) return;
      const first = k === kind ? el : Array.from(lit[k].size || k !== "call" ? lit[k] : lit.box).map((j) => rows[k].get(j)).filter(Boolean).sort((a, b) => a.offsetTop - b.offsetTop)[0];
      if (first) first.scrollIntoView({ block: "nearest" });
    });
    showDetail(kind, i);
    setHash();
  }
  function setHash() {
    const h = "g=" + gi + (sel ? "&" + sel.kind + "=" + encodeURIComponent(keyOf(G, sel.kind, sel.i)) : "") + (C && pairSel !== null ? "&pair=" + pairSel : "");
    history.replaceState(null, "", "#" + h);
  }
  function showDetail(kind, i) {
    const g = G, d = [];
    d.push('<b>' + kind + "</b> " + esc(keyOf(g, kind, i)));
    const specsShown = kind === "spec" ? [i] : kind === "bundle" ? g.bundles[i].opspecs : [];
    if (kind === "call") {
      const c = g.calls[i];
      d.push(' <span class="kv">post-grad nodes:</span> ' + c.post_nodes.length + ' <span class="kv">OpSpecs:</span> ' + c.opspecs.length + (c.time_us ? ' <span class="kv">time:</span> ' + fmtTime(c.time_us) + " in " + c.calls + " calls" : ""));
      if (c.modules) d.push('<br><span class="kv">no frame is the user\'s; its modules (nn_module_stack, module evidence):</span> <span class="mods-of">' + esc(c.modules.map((m) => g.modules[m].name + " (" + g.modules[m].module_class + ")").join(", ")) + "</span>");
      // torch-spyre's own provenance (its sidecar), where the run wrote one that holds this call site
      if (c.spyre_key) d.push('<br><span class="kv">torch-spyre\'s provenance key:</span> <span class="sk">' + esc(c.spyre_key) + '</span> <span class="kv">handles:</span> <span class="sh">' + esc(c.spyre_handles.join(", ") || "none") + "</span>" +
        (c.spyre_disagreements.length ? c.spyre_disagreements.map((x) => '<br><span class="warn sd">' + esc(x) + "</span>").join("") : ' <span class="muted">(the hook\'s handles agree)</span>'));
    } else if (D.trace) {
      // an element's time: its kernels', those the click lights or marks as holding it
      const held = new Set([...lit.call, ...lit.box]); let t = 0;
      held.forEach((c) => { t += g.calls[c].time_us || 0; });
      if (t) d.push(' <span class="kv">time of the kernels holding it:</span> ' + fmtTime(t) + " in " + held.size + " kernel" + (held.size === 1 ? "" : "s"));
    }
    // the same source lines in the other graphs: a backward kernel leads to the forward line it differentiates
    const lines = Array.from(lit.line);
    const others = [];
    D.graphs.forEach((og, j) => {
      if (j === gi || !lines.length) return;
      const want = new Set(lines); const hits = og.calls.filter((c) => c.lines.some((l) => want.has(l)));
      if (hits.length) others.push('<a data-g="' + j + '" data-k="' + esc(hits[0].key) + '">' + esc(og.label) + ": " + hits.length + " kernel" + (hits.length === 1 ? "" : "s") + "</a>");
    });
    if (others.length) d.push('<br><span class="kv">the same source lines in:</span> ' + others.join(""));
    $("detail").innerHTML = d.join("");
    const view = $("bundle-view");
    if (specsShown.length) {
      const x = g.opspecs[specsShown[0]], h = g.handles[x.handle];
      const text = ["OpSpec #" + x.index + " of " + g.calls[x.call].key + ": " + x.op + (x.is_reduction ? " (reduction)" : "") + ", iteration space " + JSON.stringify(x.iteration_space) + (x.buffer ? ", buffer " + x.buffer : "")];
      text.push(handleDescription(g, x.handle, h, ""));
      if (x.missing_handle) text.push("no handle: " + x.missing_handle);
      if (x.handle_names_other) text.push(x.handle_names_other);
      const b = x.bundle !== null ? g.bundles[x.bundle] : null;
      let body = b ? b.text : "";
      if (b && !b.cut) body = JSON.stringify(JSON.parse(b.text), null, 1);
      text.push(b ? "\nSuperDSC bundle " + b.path + (x.bundle_is_its_own ? "" : "  (its debug_handle_ " + b.id + " is not this OpSpec's)") +
        (b.handle_id_only ? "  (its debug_handle_ is the handle above, id " + b.id + ": only the id is repeated here)" : "") + ":\n" + body + (b.cut ? "\n\u2026 (cut)" : "") : "\nno SuperDSC bundle in the out folder for this OpSpec");
      view.textContent = text.join("\n");
    } else if (kind === "call") {
      const c = g.calls[i];
      view.textContent = c.wrapper_lines ? "the call in the wrapper code:\n" + c.wrapper_lines.join("\n") : "the wrapper code of " + c.key + " was not logged beside the artifacts";
    } else view.textContent = "";
  }
  function moduleMark(g, c) {
    return c.modules ? ' <span class="muted mod-of">module ' + esc(c.modules.map((i) => g.modules[i].name).join(", ")) + "</span>" : "";
  }
  function sidecarMark(c) {
    if (!c.spyre_key) return "";
    return ' <span class="muted">torch-spyre ' + esc(c.spyre_key) + "</span>" + (c.spyre_disagreements.length ? ' <span class="warn disagree">\u2260 hook</span>' : "");
  }
  function handleDescription(g, id, h, indent) {
    if (!h) return indent + "debug handle " + (id || "none");
    const src = h.source ? h.source.file + ":" + h.source.start_line + (h.source.end_line ? "-" + h.source.end_line : "") : "none";
    const out = [indent + "debug handle " + id, indent + "  source: " + src, indent + "  ATen op: " + (h.aten_op || "none"), indent + "  IR chain: " + (h.ir_chain || []).join(" \u2192 ")];
    (h.transform_history || []).forEach((t) => out.push(indent + "  transform: " + t.kind + " by " + t.pass_name + (t.reason ? " (" + t.reason + ")" : "")));
    (h.fused_from || []).forEach((c) => { out.push(indent + "  fused from:"); out.push(handleDescription(g, c, g.handles[c], indent + "    ")); });
    return out.join("\n");
  }

  // --- search --------------------------------------------------------------------------------
  function matches(g, q) {
    const hit = new Set();
    if (!q) return null;
    g.calls.forEach((c, i) => {
      if (c.key.toLowerCase().includes(q)) { hit.add(i); return; }
      if (c.spyre_key && [c.spyre_key].concat(c.spyre_handles).some((v) => v.toLowerCase().includes(q))) { hit.add(i); return; }  // torch-spyre's key, handles
      if (c.lines.some((l) => lineKey(l).toLowerCase().includes(q))) { hit.add(i); return; }
      if (c.opspecs.some((s) => { const x = g.opspecs[s], h = g.handles[x.handle] || {}; return [x.op, x.handle, x.buffer, h.aten_op].concat(h.fused_from || []).some((v) => v && String(v).toLowerCase().includes(q)); })) hit.add(i);
    });
    return hit;
  }
  function hideMisses(root) {
    root.querySelectorAll(".row[data-kind=call]").forEach((el) => el.classList.toggle("hidden", hit !== null && !hit.has(+el.dataset.i)));
    root.querySelectorAll(".row[data-kind=spec]").forEach((el) => el.classList.toggle("hidden", hit !== null && !hit.has(G.opspecs[+el.dataset.i].call)));
    root.querySelectorAll(".group").forEach((el) => el.classList.toggle("hidden", hit !== null && !hit.has(+el.dataset.call)));
  }
  function applySearch() {
    const q = $("search").value.trim().toLowerCase();
    hit = matches(G, q);
    hideMisses($("p-call")); hideMisses($("p-spec"));
    let status = G.calls.length + " call sites";
    if (hit !== null) {
      const elsewhere = D.graphs.map((og, j) => (j === gi ? 0 : matches(og, q).size)).reduce((a, b) => a + b, 0);
      status = hit.size + " of " + G.calls.length + " call sites match" + (elsewhere ? " (" + elsewhere + " in other graphs)" : "");
    }
    $("status").textContent = status + (D.trace ? " \u00b7 trace: " + D.trace.matched_events + " kernel events timed, " + D.trace.unmatched_events + " not matched" : "");
    return hit;
  }

  // --- graphs, keys, fragment ----------------------------------------------------------------
  function showGraph(j) {
    if (j === gi) return;
    clearLit(); sel = null; gi = j; G = D.graphs[j];
    showPerOp(j);
    const t = performance.now();
    renderGraph(); applySearch(); setHash();
    timings.render = performance.now() - t;
  }
  function fromHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const j = p.has("g") ? Number(p.get("g")) : 0;
    showGraph(j >= 0 && j < D.graphs.length ? j : 0);
    if (C && p.has("pair") && C.lines[Number(p.get("pair"))]) { selectPair(Number(p.get("pair"))); return; }
    for (const k of KINDS) if (p.has(k)) { const i = find(G, k, p.get(k)); if (i >= 0) select(k, i, { scroll: true }); break; }
  }
  function visibleRows(kind) { fillAll(kind); return Array.from(rows[kind].values()).filter((el) => !el.classList.contains("hidden")).sort((a, b) => a.offsetTop - b.offsetTop); }
  function move(step) {
    if (!sel) { const r = visibleRows("call")[0]; if (r) select("call", +r.dataset.i, { scroll: true }); return; }
    const list = visibleRows(sel.kind), at = list.indexOf(rows[sel.kind].get(sel.i)), next = list[at + step];
    if (next) select(sel.kind, +next.dataset.i, { scroll: true });
  }
  function across(step) {
    const from = sel ? KINDS.indexOf(sel.kind) : -1;
    for (let k = from + step; k >= 0 && k < KINDS.length; k += step) {
      const kind = KINDS[k];
      const cand = (lit ? Array.from(lit[kind]).map((i) => rows[kind].get(i)).filter(Boolean) : []).concat(lit ? [] : visibleRows(kind));
      cand.sort((a, b) => a.offsetTop - b.offsetTop);
      if (cand.length) { select(kind, +cand[0].dataset.i, { scroll: true }); return; }
    }
  }

  const sel0 = $("graph");
  // one group per compile (model, rank, compile id): its forward and backward, or its inference;
  // per-op (eager) compiles (links.per_op's rule, the document's per_op) one entry per ATen op,
  // in a group of their own, the op's compiles in a second selector
  const groups = new Map(), perOp = new Map(), entry = new Map();
  D.graphs.forEach((g, j) => {
    const side = g.side ? g.side.toUpperCase() + ": " : "";
    const name = side + (g.per_op ? "per-op compiles (eager mode), one entry per ATen op" : g.model + (g.rank !== null ? " rank" + g.rank : "") + (g.pid != null ? " pid" + g.pid : "") + " compile " + g.compile_id);
    const key = side + g.per_op;
    if (g.per_op && perOp.has(key)) { perOp.get(key).push(j); entry.set(j, perOp.get(key)[0]); return; }
    if (!groups.has(name)) { const og = document.createElement("optgroup"); og.label = name; if (g.per_op) og.className = "per-op"; groups.set(name, og); sel0.appendChild(og); }
    const o = document.createElement("option"); o.value = String(j); entry.set(j, j);
    o.textContent = side + g.label + " (" + g.calls.length + " kernels)";
    if (g.per_op) { perOp.set(key, [j]); o.dataset.perOp = g.per_op; }
    groups.get(name).appendChild(o);
  });
  perOp.forEach((js, key) => {
    const o = sel0.querySelector('option[value="' + js[0] + '"]'), g = D.graphs[js[0]];
    o.textContent = (g.side ? g.side.toUpperCase() + ": " : "") + "per-op " + g.per_op + " (" + js.length + " compile" + (js.length === 1 ? "" : "s") + ")";
  });
  function showPerOp(j) {
    sel0.value = String(entry.get(j));
    const g = D.graphs[j], js = g.per_op ? perOp.get((g.side ? g.side.toUpperCase() + ": " : "") + g.per_op) : null;
    $("perop-pick").hidden = !js;
    $("perop").innerHTML = js ? js.map((k) => '<option value="' + k + '">' + esc(D.graphs[k].label + " (" + D.graphs[k].calls.length + " kernels)") + "</option>").join("") : "";
    if (js) $("perop").value = String(j);
  }
  $("perop").addEventListener("change", () => { showGraph(Number($("perop").value)); if (pairSel !== null) lightPair(); });

  // --- the comparison (view A --compare B) -----------------------------------------------------
  // The document's "compare" is compare --format json's (runtime.compare, the one rule): the
  // page lists its pairs of lines as they come (changed first) and follows it. A click on a pair
  // lights what its line became in the graph shown, on that graph's side (A's graphs, B's), and
  // links the other side's graphs holding it; the pair stays chosen as graphs are switched.
  const C = D.compare || null;
  let pairSel = null;
  const lineAt = new Map(); D.lines.forEach(([f, n], l) => lineAt.set(D.files[f].path + ":" + n, l));
  function pairLine(p, side) { const u = C.lines[p][side]; const l = u ? lineAt.get(u.file + ":" + u.line) : undefined; return l === undefined ? -1 : l; }
  const holds = (g, l) => l >= 0 && usedLines(g).includes(l);
  // a compared place named by module (no frame is the user's: compare's evidence "module"),
  // held by a graph as one of its modules; lit as the first kernel it ran (or encloses)
  const byModule = (p, side) => { const u = C.lines[p][side]; return !!u && u.evidence === "module"; };
  function pairCall(g, p, side) {
    const m = (g.modules || []).find((x) => x.name === C.lines[p][side].code);
    return m ? m.ran_calls.concat(m.enclosing_calls)[0] : undefined;
  }
  const holdsPair = (g, p, side) => (byModule(p, side) ? pairCall(g, p, side) !== undefined : holds(g, pairLine(p, side)));
  function useCell(u) {
    if (!u) return '<div class="use muted">not in this compile</div>';
    const list = (xs) => (xs.length ? esc(Array.from(new Set(xs)).join(", ")) : '<span class="muted">none</span>');
    const place = u.evidence === "module" ? u.evidence + " " + u.code + "  " + D.module_mark : u.file.split("/").pop() + ":" + u.line + "  " + u.code.trim();
    return '<div class="use"><div class="code">' + esc(place) + "</div>" +
      "<div>kernels: " + list(u.kernels.map((k) => k.kernel + " (" + k.graph.split(" ").pop() + ")")) + "</div>" +
      "<div>OpSpecs: " + list(u.opspecs) + "</div><div>ops: " + list(u.ops) + "</div>" +
      (u.time_us !== null ? '<div class="time">' + fmtTime(u.time_us) + "</div>" : "") + "</div>";
  }
  function renderCompare() {
    const box = $("compare"); box.hidden = false;
    const counts = Object.entries(C.counts).filter(([, n]) => n).map(([s, n]) => n + " " + s.replace("_", " ")).join(", ");
    box.querySelector("h2").textContent = "A: " + C.a.name + "  vs  B: " + C.b.name + "  \u00b7  " + C.lines.length + " lines: " + counts + (C.same ? " (the same)" : "");
    const key = (u) => (u ? esc(u.file + ":" + u.line) : "");
    box.querySelector(".body").innerHTML = '<div class="pair head"><div>status</div><div>A</div><div>B</div><div>time B - A</div></div>' +
      C.lines.map((x, p) => '<div class="pair" data-p="' + p + '" data-status="' + x.status + '" data-a="' + key(x.a) + '" data-b="' + key(x.b) + '">' +
        '<div class="st st-' + x.status + '">' + x.status.replace("_", " ") + (x.changes.length ? '<div class="muted">' + esc(x.changes.join(", ")) + "</div>" : "") + "</div>" +
        useCell(x.a) + useCell(x.b) + '<div class="time">' + (x.time_change_us !== null ? (x.time_change_us >= 0 ? "+" : "-") + fmtTime(Math.abs(x.time_change_us)) : "") + "</div></div>").join("");
    box.querySelector(".body").addEventListener("click", (e) => { const el = e.target.closest(".pair[data-p]"); if (el) selectPair(+el.dataset.p); });
  }
  function unselectPair() {
    if (pairSel === null) return;
    pairSel = null;
    document.querySelectorAll("#compare .pair.sel").forEach((el) => el.classList.remove("sel"));
  }
  function selectPair(p) {
    unselectPair(); pairSel = p;
    const el = document.querySelector('#compare .pair[data-p="' + p + '"]'); el.classList.add("sel");
    // the graph shown when it holds the line on its side, else the first of A's, then of B's, that does
    if (!(G.side && holdsPair(G, p, G.side))) {
      for (const side of ["a", "b"]) { const j = D.graphs.findIndex((g) => g.side === side && holdsPair(g, p, side)); if (j >= 0) { showGraph(j); break; } }
    }
    lightPair();
  }
  function lightPair() {
    const p = pairSel, l = G.side ? pairLine(p, G.side) : -1;
    if (G.side && byModule(p, G.side) && holdsPair(G, p, G.side)) select("call", pairCall(G, p, G.side), { scroll: true, pair: true });
    else if (holds(G, l)) select("line", l, { scroll: true, pair: true });
    else { clearLit(); sel = null; $("bundle-view").textContent = ""; $("detail").textContent = "this graph (" + G.label + ") holds no kernel of the line"; }
    const links = [];
    ["a", "b"].forEach((side) => {
      D.graphs.forEach((g, j) => { if (g.side === side && holdsPair(g, p, side)) links.push('<a data-g="' + j + '" data-pair="' + p + '">' + side.toUpperCase() + ": " + esc(g.label) + "</a>"); });
    });
    $("detail").innerHTML += '<br><span class="kv">line ' + esc(C.lines[p].status.replace("_", " ") + " in the comparison; what it became in:") + "</span> " + (links.join("") || "no graph of the page");
  }
  sel0.addEventListener("change", () => { showGraph(Number(sel0.value)); if (pairSel !== null) lightPair(); });
  document.querySelector("main").addEventListener("click", (e) => {
    const el = e.target.closest(".row"); if (!el) return;
    select(el.dataset.kind, +el.dataset.i);
  });
  $("detail").addEventListener("click", (e) => {
    const a = e.target.closest("a[data-g]"); if (!a) return;
    if (a.dataset.pair !== undefined) { const p = +a.dataset.pair; showGraph(Number(a.dataset.g)); pairSel = p; lightPair(); return; }
    showGraph(Number(a.dataset.g)); const i = find(G, "call", a.dataset.k); if (i >= 0) select("call", i, { scroll: true });
  });
  $("search").addEventListener("input", applySearch);
  $("search").addEventListener("keydown", (e) => {
    if (e.key === "Enter") { const r = visibleRows("call")[0]; if (r) select("call", +r.dataset.i, { scroll: true }); }
    if (e.key === "Escape") { $("search").value = ""; applySearch(); $("search").blur(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.target === $("search") || e.target === sel0) return;
    if (e.key === "/") { e.preventDefault(); $("search").focus(); }
    else if (e.key === "ArrowDown" || e.key === "j") { e.preventDefault(); move(1); }
    else if (e.key === "ArrowUp" || e.key === "k") { e.preventDefault(); move(-1); }
    else if (e.key === "ArrowRight" || e.key === "l") { e.preventDefault(); across(1); }
    else if (e.key === "ArrowLeft" || e.key === "h") { e.preventDefault(); across(-1); }
    else if (e.key === "Escape") select(null);
  });
  window.addEventListener("hashchange", fromHash);
  if (C) renderCompare();
  fromHash();
  document.body.dataset.ready = "1";
})();
