/* boxbench: draw the prepared plotly figures and switch derived views.
   No statistics are computed here: every number comes precomputed from the server. */
"use strict";

function setParam(name, value) {
  const url = new URL(window.location.href);
  if (value) url.searchParams.set(name, value); else url.searchParams.delete(name);
  window.history.replaceState(null, "", url);
}

function drawCharts() {
  if (!window.Plotly) return;
  document.querySelectorAll("div.chart[data-figure]").forEach((el) => {
    const figure = JSON.parse(document.getElementById(el.id + "-data").textContent);
    Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true });
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
  setupAutosubmit();
});
