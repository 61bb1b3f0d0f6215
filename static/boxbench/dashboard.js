/* boxbench: draw the prepared plotly figures and switch derived views.
   No statistics are computed here: every number comes precomputed from the server. */
"use strict";

function setParam(name, value) {
  const url = new URL(window.location.href);
  if (value) url.searchParams.set(name, value); else url.searchParams.delete(name);
  window.history.replaceState(null, "", url);
}

const DARK = window.matchMedia("(prefers-color-scheme: dark)").matches;

function darken(figure) {
  /* The server draws every figure for a light page: on a dark one, light ink on no background. */
  const ink = "#d8dade";
  const grid = "#3a3d44";
  const layout = figure.layout;
  layout.paper_bgcolor = "rgba(0,0,0,0)";
  layout.plot_bgcolor = "rgba(0,0,0,0)";
  layout.font = Object.assign({}, layout.font, { color: ink });
  Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key)).forEach((key) => {
    Object.assign(layout[key], { gridcolor: grid, linecolor: grid, zerolinecolor: grid });
  });
  (layout.annotations || []).forEach((a) => { a.font = Object.assign({}, a.font, { color: ink }); });
  figure.data.forEach((trace) => {
    ["error_x", "error_y"].forEach((bars) => { if (trace[bars]) trace[bars].color = ink; });
  });
}

function drawCharts() {
  if (!window.Plotly) return;
  document.querySelectorAll("div.chart[data-figure]").forEach((el) => {
    const figure = JSON.parse(document.getElementById(el.id + "-data").textContent);
    if (DARK) darken(figure);
    // No mode bar: it sat over the chart titles, and a reader has nothing to zoom or export.
    // responsive: the chart follows its box's width (a phone, a resized window).
    Plotly.newPlot(el, figure.data, figure.layout, { displayModeBar: false, responsive: true });
    // A history point carries its run's address first in its customdata: a click opens it.
    el.on("plotly_click", (event) => {
      const data = event.points[0] && event.points[0].customdata;
      if (Array.isArray(data) && typeof data[0] === "string" && data[0].startsWith("/runs/")) {
        window.location.href = data[0];
      }
    });
  });
}

function formatNumber(value) {
  /* The server's `num` filter: one decimal from 100 up, else four significant digits. */
  if (value === null || value === undefined) return "";
  if (Math.abs(value) >= 100) return value.toFixed(1);
  return String(Number(value.toPrecision(4)));
}

function setupDerivedView() {
  const holder = document.getElementById("derived-data");
  if (!holder) return;
  const derived = JSON.parse(holder.textContent);
  const section = document.getElementById("derived");
  const boxes = Array.from(section.querySelectorAll("input[name=stage]"));
  const body = section.querySelector(".derived-table tbody");
  const wanted = new URL(window.location.href).searchParams.get("stages");
  if (wanted) {
    const chosen = new Set(wanted.split(","));
    boxes.forEach((box) => { box.checked = chosen.has(box.value); });
  }
  function show() {
    const selected = boxes.filter((b) => b.checked).map((b) => b.value);
    body.replaceChildren();
    setParam("stages", selected.length === boxes.length ? "" : selected.join(","));
    if (!selected.length) {
      const row = body.insertRow();
      const cell = row.insertCell();
      cell.colSpan = 5;
      cell.textContent = "Choose at least one stage.";
      return;
    }
    const key = derived.stages.filter((s) => selected.includes(s)).join("+");
    derived.rows.forEach((entry) => {
      const view = entry.views[key];
      const row = body.insertRow();
      const cells = view
        ? [entry.provider, view.trials, formatNumber(view.median), formatNumber(view.tail), view.tail_kind || ""]
        : [entry.provider, 0, "", "", "not recorded"];
      if (view && view.label) cells[4] = view.label;  // Not Displayed: no result in this view
      cells.forEach((text) => { row.insertCell().textContent = String(text); });
    });
  }
  boxes.forEach((box) => box.addEventListener("change", show));
  show();
}

function ancestors(path) {
  const parts = path.split("/");
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

function setupScoreTree() {
  /* The open rows live in the address (`open=`) and are opened here: the server sends every
     row, those below a section folded, so the cached page is one whatever is open. */
  const table = document.getElementById("score-tree");
  if (!table) return;
  const rows = Array.from(table.querySelectorAll("tbody tr[data-path]"));
  const openable = new Set(rows.filter((r) => r.querySelector(".toggle")).map((r) => r.dataset.path));
  const asked = new URL(window.location.href).searchParams.get("open") || "";
  const opened = new Set(asked.split(",").filter((p) => openable.has(p)));
  // A row shows when each of its ancestors that opens is open.
  const shown = (path) => ancestors(path).filter((a) => openable.has(a)).every((a) => opened.has(a));
  function render() {
    rows.forEach((row) => {
      const toggle = row.querySelector(".toggle");
      if (!row.classList.contains("level-overall") && !row.classList.contains("level-section")) {
        row.hidden = !shown(row.dataset.path);
      }
      if (toggle) {
        const open = opened.has(row.dataset.path);
        toggle.setAttribute("aria-expanded", String(open));
        toggle.textContent = open ? "\u25BE" : "\u25B8";
      }
    });
    setParam("open", Array.from(opened).filter(shown).sort().join(","));
  }
  table.addEventListener("click", (event) => {
    const toggle = event.target.closest(".toggle");
    if (!toggle) return;
    const path = toggle.dataset.path;
    if (opened.has(path)) {
      // Closing a row also closes everything under it.
      Array.from(opened).filter((p) => p === path || p.startsWith(path + "/")).forEach((p) => opened.delete(p));
    } else {
      opened.add(path);
    }
    render();
  });
  render();
}

function setupAutosubmit() {
  /* Filters that apply on change; no inline handlers, so the Content-Security-Policy can
     forbid inline scripts. */
  document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
}

document.addEventListener("DOMContentLoaded", () => {
  drawCharts();
  setupDerivedView();
  setupScoreTree();
  setupAutosubmit();
});
