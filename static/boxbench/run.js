/* boxbench: a running run's page refreshes its own progress from progress.json.
   No numbers are computed here: the server sends the counts and the estimate of the time left. */
"use strict";

function cell(row, text, span) {
  const td = row.insertCell();
  td.textContent = String(text);
  if (span) td.colSpan = span;
}

function renderProgress(section, data) {
  const body = section.querySelector("#live-table tbody");
  body.replaceChildren();
  data.cells.forEach((c) => {
    const row = body.insertRow();
    cell(row, c.provider);
    cell(row, c.benchmark);
    if (c.refusal) {
      row.className = "refused";
      cell(row, `refused: ${c.refusal} (missing ${c.missing})`, 4);
      return;
    }
    [`${c.done} / ${c.target || "?"}`, c.failures, c.running, c.queued].forEach((v) => cell(row, v));
  });
  section.querySelector(".live-counts").textContent =
    `${data.finished} trials finished (${data.successes} successful, ${data.failures} failed), ` +
    `${data.remaining} queued or running.`;
  const eta = section.querySelector(".live-eta");
  eta.replaceChildren();
  if (data.active) {
    if (data.time_left) {
      eta.append("Time left: ");
      const b = document.createElement("b");
      b.textContent = data.time_left;
      eta.append(b, " at the pace so far.");
    } else {
      eta.append("Time left: estimated once the first trial has finished.");
    }
  }
  const badge = document.getElementById("run-badge");
  badge.textContent = data.badge.text;
  badge.className = `badge ${data.badge.css}`;
}

function setupLiveProgress() {
  const section = document.getElementById("live-progress");
  if (!section || section.dataset.active !== "true") return;
  const seconds = Number(section.dataset.pollSeconds) || 5;
  let timer = null;
  async function poll() {
    try {
      const response = await fetch(section.dataset.url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`progress: HTTP ${response.status}`);
      const data = await response.json();
      renderProgress(section, data);
      if (!data.active) {
        // The run has ended: reload once so the audit and the final counts show.
        window.clearInterval(timer);
        window.location.reload();
      }
    } catch (error) {
      section.dataset.pollError = String(error);
    }
  }
  timer = window.setInterval(poll, seconds * 1000);
}

function setupConfirm() {
  document.querySelectorAll("button[data-confirm]").forEach((button) => {
    button.form.addEventListener("submit", (event) => {
      if (!window.confirm(button.dataset.confirm)) event.preventDefault();
    });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupLiveProgress();
  setupConfirm();
});
