"""What makes a rendered JobGraph navigable in the browser: zoom, pan, search, and text kept inside
its box. Plain CSS and one inline script (no library, nothing fetched), added by
:func:`udfs.render.layout.page` to each graph's panel.

- **Zoom and pan** on the SVG's ``viewBox``: the mouse wheel zooms at the pointer, dragging pans,
  the buttons zoom in and out, fit the whole graph, or show it at 100 %; with the panel focused,
  ``+`` / ``-`` / ``0`` and the arrow keys do the same. The page opens fitted (never above 100 %).
- **Search** by operator ID, uid, vertex ID or name (any part, any case): every vertex that holds
  a match is outlined, the first one is centred at a readable size, Enter / Shift+Enter step through
  them. The search reads the panel's JSON index (full names, which the boxes may shorten).
- **Text in its box**: Graphviz sizes a cell by its own font measurement, which can be a few
  percent narrower than the browser's; a line that would cross its box's right edge gets a font
  just small enough to end inside it, so no text overflows whatever fonts the browser has.

Without script (a mail client, a viewer that blocks it) the page is the plain SVG, scrolling as before.
Panels present when the page loads are set up then; a page that adds panels later (the fleet report
opens a job's diff on demand) calls ``window.flinkJobGraphViewer.setUp(section)`` for each.
"""

from __future__ import annotations

CSS = """
.tools { display: flex; gap: 6px; align-items: center; margin: 0 0 6px 0; font-size: 13px; }
.tools input { width: 22em; padding: 3px 6px; font-size: 13px; }
.tools button { padding: 2px 8px; font-size: 13px; }
.tools .hits { color: #5b6b82; min-width: 7em; }
.view { overflow: auto; border: 1px solid #e3e8ef; }
.view.zoomable { overflow: hidden; height: 75vh; cursor: grab; touch-action: none; outline: none; }
.view.zoomable.dragging { cursor: grabbing; }
.view.zoomable > svg { display: block; width: 100%; height: 100%; }
.view:focus-visible { box-shadow: 0 0 0 2px #3a5a8c; }
g.node.match polygon[fill="none"] { stroke: #ef6c00; stroke-width: 4px; }
g.node.current polygon[fill="none"] { stroke: #d84315; stroke-width: 6px; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  const PT = 4 / 3;  // CSS px per SVG unit at 100 % (Graphviz draws in points)
  function setUp(side) {
    if (side.dataset.viewer) return;
    side.dataset.viewer = "on";
    const view = side.querySelector(".view");
    const svg = view && view.querySelector("svg");
    if (!svg || !svg.viewBox || !svg.viewBox.baseVal) return;
    const full = svg.viewBox.baseVal;
    const W = full.width, H = full.height, X0 = full.x, Y0 = full.y;
    view.classList.add("zoomable");
    view.tabIndex = 0;
    view.style.height = Math.max(240, Math.min(H * PT + 4, window.innerHeight * 0.75)) + "px";
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    const st = { x: X0, y: Y0, s: PT };
    const size = () => [Math.max(1, view.clientWidth), Math.max(1, view.clientHeight)];
    function apply() {
      const [vw, vh] = size();
      svg.setAttribute("viewBox", [st.x, st.y, vw / st.s, vh / st.s].join(" "));
      side.dataset.scale = (st.s / PT).toFixed(4);
    }
    apply();  // at 100 %, where the text is measured
    fitText(svg, view, st);
    function clampScale(s) {
      const [vw, vh] = size();
      const fit = Math.min(vw / W, vh / H);
      return Math.min(Math.max(s, Math.min(fit, PT) / 4), PT * 8);
    }
    function fit() {
      const [vw, vh] = size();
      st.s = Math.min(vw / W, vh / H, PT);
      st.x = X0 - (vw / st.s - W) / 2;
      st.y = Y0 - (vh / st.s - H) / 2;
      apply();
    }
    function zoomAt(factor, px, py) {
      const ux = st.x + px / st.s, uy = st.y + py / st.s;
      st.s = clampScale(st.s * factor);
      st.x = ux - px / st.s;
      st.y = uy - py / st.s;
      apply();
    }
    function centre(factor) { const [vw, vh] = size(); zoomAt(factor, vw / 2, vh / 2); }
    function pan(dx, dy) { st.x -= dx / st.s; st.y -= dy / st.s; apply(); }
    function show(node) {
      // the node's box in SVG units, from where the browser draws it now
      const r = node.getBoundingClientRect(), v = view.getBoundingClientRect();
      const bx = st.x + (r.left - v.left) / st.s, by = st.y + (r.top - v.top) / st.s;
      const bw = r.width / st.s, bh = r.height / st.s;
      const [vw, vh] = size();
      st.s = clampScale(Math.min(PT, (vw * 0.9) / bw, (vh * 0.9) / bh));
      st.x = bx + bw / 2 - vw / st.s / 2;
      st.y = by + bh / 2 - vh / st.s / 2;
      apply();
    }
    view.addEventListener("wheel", (e) => {
      e.preventDefault();
      const v = view.getBoundingClientRect();
      const d = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
      zoomAt(Math.exp(-d * 0.0015), e.clientX - v.left, e.clientY - v.top);
    }, { passive: false });
    let drag = null;
    view.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, id: e.pointerId };
      view.classList.add("dragging");
      if (view.setPointerCapture) view.setPointerCapture(e.pointerId);
    });
    view.addEventListener("pointermove", (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      pan(e.clientX - drag.x, e.clientY - drag.y);
      drag.x = e.clientX; drag.y = e.clientY;
    });
    const stop = () => { drag = null; view.classList.remove("dragging"); };
    view.addEventListener("pointerup", stop);
    view.addEventListener("pointercancel", stop);
    view.addEventListener("keydown", (e) => {
      const k = e.key, step = 60;
      if (k === "+" || k === "=") centre(1.25);
      else if (k === "-" || k === "_") centre(0.8);
      else if (k === "0") fit();
      else if (k === "ArrowLeft") pan(step, 0);
      else if (k === "ArrowRight") pan(-step, 0);
      else if (k === "ArrowUp") pan(0, step);
      else if (k === "ArrowDown") pan(0, -step);
      else return;
      e.preventDefault();
    });
    side.querySelectorAll(".tools button").forEach((b) => b.addEventListener("click", () => {
      const a = b.dataset.act;
      if (a === "in") centre(1.25); else if (a === "out") centre(0.8);
      else if (a === "fit") fit(); else if (a === "one") { st.s = PT; centre(1); }
    }));
    // search
    const input = side.querySelector(".tools input");
    const hits = side.querySelector(".tools .hits");
    const indexEl = side.querySelector("script.index");
    const index = (indexEl ? JSON.parse(indexEl.textContent) : [])
      .map((v) => ({ id: v.id, text: v.text.toLowerCase() }));
    let found = [], at = -1;
    function mark() {
      svg.querySelectorAll("g.node.match, g.node.current").forEach((n) => n.classList.remove("match", "current"));
      found.forEach((n, i) => { n.classList.add("match"); if (i === at) n.classList.add("current"); });
      hits.textContent = !input.value.trim() ? "" : found.length ? (at + 1) + " of " + found.length : "no match";
      if (at >= 0) show(found[at]);
    }
    function search() {
      const q = input.value.trim().toLowerCase();
      found = [];
      if (q) {
        for (const v of index) {
          if (v.text.indexOf(q) >= 0) {
            // this panel's node: two panels (two versions, or two jobs of a report) share vertex IDs
            const n = svg.querySelector('[id="vertex_' + v.id + '"]');
            if (n) found.push(n);
          }
        }
      }
      at = found.length ? 0 : -1;
      mark();
    }
    let timer = null;
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 150); });
    input.addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      e.preventDefault();
      clearTimeout(timer);
      const q = input.value.trim().toLowerCase();
      if (q !== side.dataset.query) { side.dataset.query = q; search(); return; }
      if (!found.length) return;
      at = (at + (e.shiftKey ? found.length - 1 : 1)) % found.length;
      mark();
    });
    input.addEventListener("search", () => { side.dataset.query = input.value.trim().toLowerCase(); search(); });
    side.flinkJobGraph = { fit: fit, zoomAt: zoomAt, pan: pan, state: st, find: (q) => {
      input.value = q; side.dataset.query = q.trim().toLowerCase(); search(); return found.length; } };
    fit();
    window.addEventListener("resize", () => apply());
  }
  // A line Graphviz measured narrower than the browser draws it at 100 % gets a smaller font, so
  // that it ends inside its box (measured as drawn: the text's range on the screen).
  function fitText(svg, view, st) {
    const v = view.getBoundingClientRect();
    const user = (px) => st.x + (px - v.left) / st.s;
    const range = document.createRange();
    svg.querySelectorAll("g.node").forEach((node) => {
      const border = node.querySelector('polygon[fill="none"]') || node.querySelector("polygon");
      if (!border) return;
      const right = user(border.getBoundingClientRect().right) - 2;
      node.querySelectorAll('text[text-anchor="start"]').forEach((t) => {
        for (let i = 0; i < 4; i++) {
          range.selectNodeContents(t);
          const r = range.getBoundingClientRect();
          const drawnRight = user(r.right), left = user(r.left);
          if (drawnRight <= right || right <= left) return;
          const size = parseFloat(t.getAttribute("font-size")) || 14;
          t.setAttribute("font-size", (size * (right - left) / (drawnRight - left) - 0.05).toFixed(2));
        }
      });
    });
  }
  window.flinkJobGraphViewer = { setUp: setUp };
  function start() { document.querySelectorAll("section.side").forEach(setUp); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
"""
