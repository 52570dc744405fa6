/**
 * The toolbar above the plot (search with previous/next, colour mode, CPU lanes, Fit, the
 * legend, the keys hint) and the status panel below it (selection, measured range).
 */
import { formatCount, formatDuration, formatTimePrecise as formatTime } from "../format";
import type { Measure, Selected, ViewHost } from "./host";
import { patternProblem } from "./search";
import { el } from "../dom";

/** Adds an event listener that the view removes on dispose. */
export type Listen = (target: EventTarget, type: string, fn: (e: Event) => void) => void;

export interface ToolbarActions {
  /** Find the next (1) or previous (-1) match. */
  findNext(direction: number): void;
  /** Show the whole trace. */
  fit(): void;
  /** Show or hide the keyboard help. */
  help(): void;
  /** Show every rank again. */
  allRanks(): void;
  /** Return to the view before the last change of ranks or of the range from outside. */
  back(): void;
  /** Return to the view the last Back left. */
  forward(): void;
}

/** The "All ranks" button's text (the button keeps the width of its longest, see `sync`). */
export function allRanksText(shown: number, all: number): string {
  return shown < all ? `All ranks (${shown} of ${all} shown)` : `All ranks (${all})`;
}

export class Toolbar {
  readonly searchInput: HTMLInputElement;
  readonly searchCount: HTMLSpanElement;
  private readonly legend: HTMLSpanElement;
  private readonly colorSelect: HTMLSelectElement;
  private readonly cpuToggle: HTMLInputElement;
  private readonly allButton: HTMLButtonElement;
  private readonly backButton: HTMLButtonElement;
  private readonly forwardButton: HTMLButtonElement;
  private searchTimer = 0;

  constructor(
    private readonly host: ViewHost,
    parent: HTMLElement,
    listen: Listen,
    actions: ToolbarActions,
  ) {
    const bar = el("div", "tv-toolbar", parent);
    // Always first, whatever wraps: the way back to every rank and to the previous view.
    this.backButton = el("button", "tv-button tv-back", bar, "← Back");
    this.backButton.title = "Back to the previous view: ranks, range and emphasis (Alt+←)";
    this.forwardButton = el("button", "tv-button tv-forward", bar, "→");
    this.forwardButton.title = "Forward to the view Back left (Alt+→)";
    this.forwardButton.setAttribute("aria-label", "Forward");
    this.allButton = el("button", "tv-button tv-all-ranks", bar, "All ranks");
    this.allButton.title = "Show every rank";
    this.searchInput = el("input", "tv-search", bar);
    this.searchInput.type = "search";
    this.searchInput.placeholder = "Search names and args (regex)";
    this.searchInput.setAttribute("aria-label", "Search event names and arguments");
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
    const help = el("button", "tv-help", bar, "?");
    help.title = "Keys and gestures (?)";
    help.setAttribute("aria-label", "Keys and gestures");

    listen(this.searchInput, "input", () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.commitSearch(), 250);
    });
    listen(this.searchInput, "keydown", (ev) => {
      const e = ev as KeyboardEvent;
      if (e.key === "Enter") {
        e.preventDefault();
        if (this.commitSearch()) actions.findNext(e.shiftKey ? -1 : 1);
      }
      e.stopPropagation();
    });
    listen(prev, "click", () => actions.findNext(-1));
    listen(next, "click", () => actions.findNext(1));
    listen(fit, "click", () => actions.fit());
    listen(help, "click", () => actions.help());
    listen(this.allButton, "click", () => actions.allRanks());
    listen(this.backButton, "click", () => actions.back());
    listen(this.forwardButton, "click", () => actions.forward());
    listen(this.colorSelect, "change", () =>
      host.save("color_by", this.colorSelect.value === "name" ? "name" : "kind"),
    );
    listen(this.cpuToggle, "change", () => host.save("show_cpu", this.cpuToggle.checked));
  }

  dispose(): void {
    window.clearTimeout(this.searchTimer);
  }

  /** The "All ranks" button (the rank picker's button follows it, js/timeline/ranks.ts). */
  get allRanksButton(): HTMLButtonElement {
    return this.allButton;
  }

  /** Save the typed pattern to the model (now, not after the typing pause); false if it was refused. */
  commitSearch(): boolean {
    window.clearTimeout(this.searchTimer);
    const v = this.searchInput.value.trim();
    const problem = patternProblem(v);
    this.searchInput.setCustomValidity(problem ?? "");
    this.searchInput.setAttribute("aria-invalid", problem ? "true" : "false");
    if (problem) {
      this.searchCount.textContent = problem;
      return false;
    }
    if (v !== this.host.model.get("search")) this.host.save("search", v);
    return true;
  }

  /** Show the model's values in the controls; `canGoBack`/`canGoForward`: is there a view to go to. */
  sync(canGoBack = false, canGoForward = false): void {
    const model = this.host.model;
    const all = model.get("_all_ranks").length;
    const shown = model.get("ranks").length;
    this.allButton.textContent = allRanksText(shown, all);
    this.allButton.title = "Show every rank";
    // As wide as its longest text for this trace: the count changing never reflows the toolbar.
    this.allButton.style.minWidth = `${allRanksText(all - 1, all).length + 2}ch`;
    this.allButton.disabled = shown >= all;
    this.backButton.disabled = !canGoBack;
    this.forwardButton.disabled = !canGoForward;
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

/** The status panel: the selected event (the measured range has its overlay, overlays.ts). */
export function renderStatus(status: HTMLElement, sel: Selected | null, m: Measure | null): void {
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
  if (!sel && !m) {
    el("span", "tv-hint", status, "Click an event to select it · Shift+drag to measure a range · ? for keys");
  }
}
