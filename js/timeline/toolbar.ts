/**
 * The toolbar above the plot (search with previous/next, colour mode, CPU lanes, Fit, the
 * legend, the keys hint) and the status panel below it (selection, measured range).
 */
import { formatCount, formatDuration, formatTime } from "./axis";
import type { Measure, Selected, ViewHost } from "./host";
import type { RangeSummary } from "./model";
import { el } from "../dom";

/** Adds an event listener that the view removes on dispose. */
export type Listen = (target: EventTarget, type: string, fn: (e: Event) => void) => void;

export interface ToolbarActions {
  /** Find the next (1) or previous (-1) match. */
  findNext(direction: number): void;
  /** Show the whole trace. */
  fit(): void;
}

export class Toolbar {
  readonly searchInput: HTMLInputElement;
  readonly searchCount: HTMLSpanElement;
  private readonly legend: HTMLSpanElement;
  private readonly colorSelect: HTMLSelectElement;
  private readonly cpuToggle: HTMLInputElement;
  private searchTimer = 0;

  constructor(
    private readonly host: ViewHost,
    parent: HTMLElement,
    listen: Listen,
    actions: ToolbarActions,
  ) {
    const bar = el("div", "tv-toolbar", parent);
    this.searchInput = el("input", "tv-search", bar);
    this.searchInput.type = "search";
    this.searchInput.placeholder = "Search names (regex)";
    this.searchInput.setAttribute("aria-label", "Search event names");
    const prev = el("button", "tv-button", bar, "‹");
    prev.title = "Previous match (Shift+Enter)";
    prev.setAttribute("aria-label", "Previous match");
    const next = el("button", "tv-button", bar, "›");
    next.title = "Next match (Enter)";
    next.setAttribute("aria-label", "Next match");
    this.searchCount = el("span", "tv-search-count", bar);
    const colorLabel = el("label", "tv-control", bar, "Colour ");
    this.colorSelect = el("select", "tv-select", colorLabel);
    for (const v of ["kind", "name"]) {
      const o = el("option", "", this.colorSelect, `by ${v}`);
      o.value = v;
    }
    const cpuLabel = el("label", "tv-control", bar);
    this.cpuToggle = el("input", "", cpuLabel);
    this.cpuToggle.type = "checkbox";
    cpuLabel.append(" CPU lanes");
    const fit = el("button", "tv-button", bar, "Fit");
    fit.title = "Show the whole trace (double-click)";
    this.legend = el("span", "tv-legend", bar);
    const help = el("span", "tv-help", bar, "?");
    help.title =
      "Wheel or +/-: zoom at the pointer · drag or A/D: pan · W/S: zoom · double-click: fit\n" +
      "Shift+drag: measure a range · click: select (arrow from the CPU launch) · Esc: clear\n" +
      "Click a rank's name to collapse or expand it · wheel over the names: scroll";

    listen(this.searchInput, "input", () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.commitSearch(), 250);
    });
    listen(this.searchInput, "keydown", (ev) => {
      const e = ev as KeyboardEvent;
      if (e.key === "Enter") {
        e.preventDefault();
        this.commitSearch();
        actions.findNext(e.shiftKey ? -1 : 1);
      }
      e.stopPropagation();
    });
    listen(prev, "click", () => actions.findNext(-1));
    listen(next, "click", () => actions.findNext(1));
    listen(fit, "click", () => actions.fit());
    listen(this.colorSelect, "change", () =>
      host.save("color_by", this.colorSelect.value === "name" ? "name" : "kind"),
    );
    listen(this.cpuToggle, "change", () => host.save("show_cpu", this.cpuToggle.checked));
  }

  dispose(): void {
    window.clearTimeout(this.searchTimer);
  }

  /** Save the typed pattern to the model (now, not after the typing pause). */
  commitSearch(): void {
    window.clearTimeout(this.searchTimer);
    const v = this.searchInput.value.trim();
    if (v !== this.host.model.get("search")) this.host.save("search", v);
  }

  /** Show the model's values in the controls. */
  sync(): void {
    const model = this.host.model;
    this.colorSelect.value = model.get("color_by");
    this.cpuToggle.checked = model.get("show_cpu");
    const pattern = model.get("search");
    if (document.activeElement !== this.searchInput) this.searchInput.value = pattern;
    const n = model.get("_search_count");
    this.searchCount.textContent = pattern ? `${formatCount(n)} match${n === 1 ? "" : "es"}` : "";
    this.host.root.dataset.searchCount = String(pattern ? n : 0);
  }

  /** Was the legend drawn yet (it is redrawn when the theme changes)? */
  get hasLegend(): boolean {
    return this.legend.childElementCount > 0;
  }

  renderLegend(): void {
    const { model, colors } = this.host;
    this.legend.replaceChildren();
    if (model.get("color_by") === "name") {
      el("span", "tv-legend-note", this.legend, "coloured by name; merged columns by kind");
    }
    for (const key of model.get("_kinds")) {
      const chip = el("span", "tv-chip", this.legend);
      const sw = el("span", "tv-swatch", chip);
      sw.style.background = colors.kind(colors.code(key));
      chip.append(colors.label(key));
    }
  }
}

/** The status panel: the selected event and the measured range with its summary. */
export function renderStatus(
  status: HTMLElement,
  host: ViewHost,
  sel: Selected | null,
  m: Measure | null,
  s: RangeSummary | null,
): void {
  status.classList.remove("tv-error");
  status.replaceChildren();
  if (sel) {
    const d = sel.details;
    const line = el("div", "tv-status-line", status);
    el("b", "", line, "Selected ");
    if (d) {
      const where =
        d.device >= 0
          ? `rank ${d.rank} · GPU ${d.device} stream ${d.stream}`
          : `rank ${d.rank} · thread ${d.tid}`;
      line.append(`${where} · `);
      el("span", "tv-mono", line, d.name);
      line.append(` · ${formatDuration(d.dur_ns)} at ${formatTime(d.start)}`);
      if (d.operator) line.append(` · operator ${d.operator.name}`);
      if (d.launch) line.append(` · launched by ${d.launch.name} at ${formatTime(d.launch.start)}`);
    } else {
      line.append(`rank ${sel.rank} · event ${sel.eid}`);
    }
  }
  if (m) {
    const lo = Math.min(m.a, m.b);
    const hi = Math.max(m.a, m.b);
    const line = el("div", "tv-status-line", status);
    el("b", "", line, "Range ");
    line.append(`${formatTime(lo)} → ${formatTime(hi)} (${formatDuration(hi - lo)})`);
    if (s) {
      line.append(
        ` · ${s.source === "cpu" ? "CPU" : "GPU"} busy ${s.all.pct.toFixed(1)}% over ${s.ranks.length} rank${s.ranks.length === 1 ? "" : "s"}`,
      );
      const table = el("table", "tv-summary", status);
      const head = el("tr", "", table);
      for (const h of ["kind", "busy", "% of range", "events"]) el("th", "", head, h);
      for (const k of s.kinds) {
        const tr = el("tr", "", table);
        const td = el("td", "", tr);
        const sw = el("span", "tv-swatch", td);
        sw.style.background = host.colors.kind(host.colors.code(k.kind));
        td.append(host.colors.label(k.kind));
        el("td", "", tr, formatDuration(k.busy_ns));
        el("td", "", tr, `${k.pct.toFixed(1)}%`);
        el("td", "", tr, formatCount(k.events));
      }
      if (s.top.length) {
        const top = el("div", "tv-status-line", status);
        el("b", "", top, "Top ");
        top.append(
          s.top
            .map(
              (t) =>
                `${t.name.length > 60 ? t.name.slice(0, 59) + "…" : t.name} (${formatDuration(t.time_ns)})`,
            )
            .join(" · "),
        );
      }
    }
  }
  if (!sel && !m) {
    el("span", "tv-hint", status, "Click an event to select it · Shift+drag to measure a range · ? for keys");
  }
}
