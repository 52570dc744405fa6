/**
 * Panels drawn over the plot, inside the widget: the keyboard help (`?`) and the measured
 * range's summary (Shift+drag), so that neither lands below the canvas, out of view.
 */
import { formatCount, formatDuration, formatPct, formatTimePrecise as formatTime } from "../format";
import type { Measure, ViewHost } from "./host";
import type { RangeSummary } from "./messages";
import { el } from "../dom";

/** The keys and gestures of the timeline, as the help overlay lists them. */
export const KEYS: readonly (readonly [string, string])[] = [
  ["Wheel, + / −, W / S", "zoom at the pointer"],
  ["Drag, A / D, ← / →", "pan"],
  ["Shift+wheel, ↑ / ↓, PgUp / PgDn", "scroll the lanes"],
  ["Double-click, F", "fit the trace (F: the selected event)"],
  ["Shift+drag", "measure a range and summarise it"],
  ["Click", "select an event (arrow from its CPU launch)"],
  ["Click a communication kernel", "its collective on every rank; the last to arrive marked"],
  ["Drag the bar under the plot", "resize (remembered for this notebook)"],
  ["Click a rank's name", "collapse or expand its lanes"],
  ["Alt+← / Alt+→, Backspace", "back / forward to the view before a link (ranks, range, emphasis)"],
  ["Click a folded “CPU” row's name", "unfold the rank's CPU threads"],
  ["Enter / Shift+Enter in search", "next / previous match (names and args), in time order"],
  ["Esc", "clear the selection and the range, close this help"],
  ["?", "show or hide this help"],
];

export class HelpOverlay {
  readonly element: HTMLDivElement;

  constructor(parent: HTMLElement, onClose: () => void) {
    const box = el("div", "tv-overlay tv-help-overlay", parent);
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Timeline keys");
    box.hidden = true;
    const head = el("div", "tv-overlay-head", box);
    el("b", "", head, "Keys and gestures");
    const close = el("button", "tv-overlay-close", head, "×");
    close.setAttribute("aria-label", "Close help");
    close.addEventListener("click", onClose);
    const table = el("table", "tv-keys", box);
    for (const [k, v] of KEYS) {
      const tr = el("tr", "", table);
      el("th", "tv-key", tr, k);
      el("td", "", tr, v);
    }
    this.element = box;
  }

  get open(): boolean {
    return !this.element.hidden;
  }

  toggle(show = !this.open): void {
    this.element.hidden = !show;
  }
}

/** The measured range's panel over the plot: its bounds, duration and per-kind summary. */
export class MeasureOverlay {
  readonly element: HTMLDivElement;

  constructor(
    private readonly host: ViewHost,
    parent: HTMLElement,
    onClose: () => void,
  ) {
    this.element = el("div", "tv-overlay tv-measure", parent);
    this.element.hidden = true;
    this.element.setAttribute("aria-label", "Measured range");
    this.onClose = onClose;
  }

  private readonly onClose: () => void;

  render(m: Measure | null, s: RangeSummary | null): void {
    const box = this.element;
    box.replaceChildren();
    box.hidden = m === null;
    if (!m) return;
    const lo = Math.min(m.a, m.b);
    const hi = Math.max(m.a, m.b);
    const head = el("div", "tv-overlay-head", box);
    const title = el("b", "", head, `Range ${formatDuration(hi - lo)}`);
    title.title = "Shift+drag measures a range; Esc clears it";
    const close = el("button", "tv-overlay-close", head, "×");
    close.setAttribute("aria-label", "Clear the range");
    close.addEventListener("click", this.onClose);
    el("div", "tv-status-line", box, `${formatTime(lo)} → ${formatTime(hi)}`);
    if (!s) {
      el("div", "tv-hint", box, "summarising…");
      return;
    }
    el(
      "div",
      "tv-status-line",
      box,
      `${s.source === "cpu" ? "CPU" : "GPU"} busy ${formatPct(s.all.pct)} over ${s.ranks.length} rank${s.ranks.length === 1 ? "" : "s"}`,
    );
    const { colors } = this.host;
    const table = el("table", "tv-summary", box);
    const head2 = el("tr", "", table);
    for (const h of ["kind", "busy", "% of range", "events"]) el("th", "", head2, h);
    for (const k of s.kinds) {
      const tr = el("tr", "", table);
      const td = el("td", "", tr);
      const sw = el("span", "tv-swatch", td);
      sw.style.background = colors.kind(colors.code(k.kind));
      td.append(colors.label(k.kind));
      el("td", "", tr, formatDuration(k.busy_ns));
      el("td", "", tr, formatPct(k.pct));
      el("td", "", tr, formatCount(k.events));
    }
    if (s.top.length) {
      const top = el("div", "tv-measure-top", box);
      el("b", "", top, "Top");
      for (const t of s.top) {
        const line = el("div", "tv-status-line", top, `${t.short} (${formatDuration(t.time_ns)})`);
        line.title = t.name;
      }
    }
  }
}
