/**
 * Which ranks the timeline shows, in which order, and which one it emphasises: the rank
 * picker (a "Ranks" button in the toolbar opening a panel over the plot) and the emphasis
 * band of the focused rank.
 *
 * State lives in the model (traits of jupyter_traceview/widgets/timeline.py): `ranks` (shown,
 * in display order), `pinned` (shown first), `collapsed`, `cpu_collapsed` and `focus_rank`.
 * The "slowest N" and "stragglers" presets come from the kernel's `_ranks` command
 * (jupyter_traceview/views/timeline/ranks.py::rank_presets). Pure helpers first (unit-tested
 * in js/tests/ranks.test.ts), then the DOM.
 */
import { formatCount, formatDuration } from "../format";
import { el } from "../dom";
import { AXIS, SCROLLBAR } from "./host";
import type { Layout } from "./layout";
import type { CommandError, LaneMeta, RankPresets, RowMeta, TimelineModel } from "./messages";
import type { Invoke, StateModel } from "./state";
import { scrollToRow, stepRow, virtualWindow } from "./virtual";

/** Up to this many ranks the presets are computed when the picker opens (else on a preset's click). */
export const PRESETS_ON_OPEN_MAX = 64;
/** Height of a row of the picker's list, px (fixed: the list is virtual, js/timeline/virtual.ts). */
export const PICKER_ROW_H = 24;

// ------------------------------------------------------------------ pure helpers

/** The ranks of `all` a filter selects, in `all`'s order, or why the filter is refused. */
export type FilterResult = { ranks: number[]; error?: undefined } | { ranks?: undefined; error: string };

const RANGE_LIST = /^\s*\d+\s*(-\s*\d+\s*)?(,\s*\d+\s*(-\s*\d+\s*)?)*,?\s*$/;

/**
 * Parse a rank filter: a list of ranks and inclusive ranges such as `0-7,12`, or else a
 * regular expression matched against each rank's number (`^1` selects 1 and 10-19). Empty
 * text selects every rank.
 */
export function parseRankFilter(text: string, all: readonly number[]): FilterResult {
  const t = text.trim();
  if (!t) return { ranks: [...all] };
  if (RANGE_LIST.test(t)) {
    const spans: [number, number][] = [];
    for (const part of t.split(",")) {
      if (!part.trim()) continue;
      const [a, b] = part.split("-").map((x) => Number(x.trim()));
      const lo = a!;
      const hi = b ?? lo;
      if (hi < lo) return { error: `the range ${lo}-${hi} goes backwards: write ${hi}-${lo}` };
      spans.push([lo, hi]);
    }
    return { ranks: all.filter((r) => spans.some(([lo, hi]) => r >= lo && r <= hi)) };
  }
  let rx: RegExp;
  try {
    rx = new RegExp(t);
  } catch {
    return { error: `neither ranks such as 0-7,12 nor a valid regular expression: ${t}` };
  }
  return { ranks: all.filter((r) => rx.test(String(r))) };
}

/** The order ranks are drawn in: the pinned ones that are shown (in pin order), then the others. */
export function displayOrder(ranks: readonly number[], pinned: readonly number[]): number[] {
  const shown = new Set(ranks);
  const pins = pinned.filter((r) => shown.has(r));
  const pinSet = new Set(pins);
  return [...pins, ...ranks.filter((r) => !pinSet.has(r))];
}

/** `current` plus the ranks of `add` it lacks (appended, in `add`'s order). */
export function withRanks(current: readonly number[], add: readonly number[]): number[] {
  const have = new Set(current);
  return [...current, ...add.filter((r) => !have.has(r))];
}

/** `order` with `rank` swapped with its neighbour `delta` (-1 up, +1 down) places away; unchanged at an end. */
export function moveRank(order: readonly number[], rank: number, delta: number): number[] {
  const out = [...order];
  const i = out.indexOf(rank);
  const j = i + delta;
  if (i < 0 || j < 0 || j >= out.length) return out;
  [out[i], out[j]] = [out[j]!, out[i]!];
  return out;
}

/** Ranks a selection shows: the pinned ones first (pins survive filters and presets), then `picked`. */
export function keepPinned(picked: readonly number[], pinned: readonly number[]): number[] {
  return withRanks(pinned, picked);
}

/** Vertical extent (layout coordinates) of a rank: its header down to the next rank's header. */
export function rankBlock(layout: Layout, rank: number): { y: number; h: number } | null {
  const i = layout.headerSlot.get(rank);
  if (i === undefined) return null;
  const y = layout.slots[i]!.y;
  let end = layout.height;
  for (let k = i + 1; k < layout.slots.length; k++) {
    const s = layout.slots[k]!;
    if (s.rank !== rank) {
      end = s.y;
      break;
    }
  }
  return { y, h: end - y };
}

/**
 * The slot of `rank`'s busiest GPU stream (the lane with the most events, its first row), or
 * null when the rank shows no GPU stream.
 */
export function busiestStream(
  layout: Layout,
  lanes: readonly LaneMeta[],
  rows: readonly RowMeta[],
  rank: number,
): number | null {
  const events = new Map(rows.map((r) => [r.id, r.events]));
  let best: number | null = null;
  let most = -1;
  for (const lane of lanes) {
    if (lane.rank !== rank || lane.type !== "gpu") continue;
    const slot = lane.rows.map((r) => layout.rowSlot.get(r)).find((i) => i !== undefined);
    if (slot === undefined) continue;
    const n = lane.rows.reduce((a, r) => a + (events.get(r) ?? 0), 0);
    if (n > most) {
      most = n;
      best = slot;
    }
  }
  return best;
}

/**
 * Where a link to `rank` scrolls the lanes: its first lane at the top of the plot (`view` px
 * tall under the axis), unless that would cut its busiest stream (slot `busiest`), which is
 * then brought up just enough to show whole. `room`: the space to add under the last lane so
 * that the scroll is possible (a rank near the end of the list still comes to the top, not
 * left at the bottom edge).
 */
export function focusScroll(
  layout: Layout,
  rank: number,
  view: number,
  busiest: number | null = null,
): { top: number; room: number } | null {
  const block = rankBlock(layout, rank);
  if (!block) return null;
  let top = block.y;
  const slot = busiest === null ? undefined : layout.slots[busiest];
  if (slot && slot.rank === rank && slot.y + slot.h > top + view)
    top = Math.min(slot.y, slot.y + slot.h - view);
  top = Math.max(0, top);
  return { top, room: Math.max(0, Math.ceil(top + view - layout.height)) };
}

// ------------------------------------------------------------------ the DOM

/** What the picker needs of the view (view.ts implements it). */
export interface RankHost {
  readonly model: StateModel<TimelineModel>;
  readonly root: HTMLDivElement;
  readonly scroller: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly layout: Layout;
  readonly viewHeight: number;
  save<K extends keyof TimelineModel>(key: K, value: TimelineModel[K]): void;
  /** Keep `px` of empty room under the last lane (a focused rank near the end scrolls to the top). */
  setFocusRoom(px: number): void;
}

type Listen = (target: EventTarget, type: string, fn: (e: Event) => void) => void;

export class RankPicker {
  readonly button: HTMLButtonElement;
  readonly panel: HTMLDivElement;
  private readonly band: HTMLDivElement;
  private readonly filter: HTMLInputElement;
  private readonly filterNote: HTMLSpanElement;
  private readonly slowN: HTMLInputElement;
  private readonly slowButton: HTMLButtonElement;
  private readonly stragglerButton: HTMLButtonElement;
  private readonly presetNote: HTMLDivElement;
  private readonly list: HTMLDivElement;
  /** The list's content: as tall as every row, holding only the rows in view. */
  private readonly listRows: HTMLDivElement;
  /** What the list shows (see `render`): every rank, shown ones in display order first. */
  private rowRanks: number[] = [];
  private rowState: RowState | null = null;
  private presets: RankPresets | null = null;
  private presetsLoading: Promise<RankPresets | null> | null = null;
  /** A focus waiting for the layout to hold its rank (scroll to it once it does). */
  private pendingFocus = false;
  /**
   * The scroll a link asked for (null once the user scrolls elsewhere): kept through the
   * resizes and the hidden-then-shown tab that follow a link (a hidden scroller loses its
   * scroll; the automatic height grows once the timeline is shown).
   */
  private heldTop: number | null = null;

  constructor(
    private readonly host: RankHost,
    /** The toolbar control the "Ranks" button follows ("All ranks"). */
    after: Element,
    stage: HTMLElement,
    listen: Listen,
    private readonly invoke: Invoke,
    private readonly signal: AbortSignal,
  ) {
    this.button = document.createElement("button");
    this.button.className = "tv-button tv-ranks-button";
    this.button.textContent = "Ranks ▾";
    this.button.title = "Choose, filter, pin, order, collapse ranks";
    this.button.setAttribute("aria-haspopup", "dialog");
    after.after(this.button);

    this.band = el("div", "tv-focus-band", stage);
    this.band.hidden = true;

    const p = el("div", "tv-overlay tv-ranks-panel", stage);
    p.setAttribute("role", "dialog");
    p.setAttribute("aria-label", "Rank picker");
    p.hidden = true;
    this.panel = p;
    const head = el("div", "tv-overlay-head", p);
    el("b", "", head, "Ranks");
    const close = el("button", "tv-overlay-close", head, "×");
    close.setAttribute("aria-label", "Close the rank picker");

    const frow = el("div", "tv-ranks-row", p);
    this.filter = el("input", "tv-ranks-filter", frow);
    this.filter.type = "search";
    this.filter.placeholder = "0-7,12 or a regex";
    this.filter.setAttribute("aria-label", "Filter ranks");
    const show = el("button", "tv-button", frow, "Show");
    show.title = "Show only the ranks the filter selects (pinned ranks stay)";
    this.filterNote = el("span", "tv-ranks-note", frow);

    const prow = el("div", "tv-ranks-row", p);
    this.slowButton = el("button", "tv-button", prow, "Slowest");
    this.slowButton.title = "The ranks with the longest mean ProfilerStep (tv.iteration_stats per='rank')";
    this.slowN = el("input", "tv-ranks-n", prow);
    this.slowN.type = "number";
    this.slowN.min = "1";
    this.slowN.value = "4";
    this.slowN.setAttribute("aria-label", "How many slowest ranks");
    this.stragglerButton = el("button", "tv-button", prow, "Stragglers");
    this.stragglerButton.title =
      "The ranks that arrived last at collectives, most often first (tv.stragglers)";
    this.presetNote = el("div", "tv-ranks-note", p);

    const arow = el("div", "tv-ranks-row", p);
    const allB = el("button", "tv-button", arow, "All");
    allB.title = "Show every rank";
    const collapseB = el("button", "tv-button", arow, "Collapse all");
    collapseB.title = "Fold every rank into its summary row";
    const expandB = el("button", "tv-button", arow, "Expand all");
    expandB.title = "Show every rank's streams and threads";
    const foldB = el("button", "tv-button", arow, "Fold CPU");
    foldB.title = "Fold each rank's CPU threads into one row";

    this.list = el("div", "tv-ranks-list", p);
    this.list.setAttribute("role", "list");
    this.list.setAttribute("aria-label", "Ranks");
    this.listRows = el("div", "tv-ranks-rows", this.list);

    listen(this.button, "click", () => this.toggle());
    listen(close, "click", () => this.toggle(false));
    listen(p, "keydown", (ev) => {
      const e = ev as KeyboardEvent;
      if (e.key === "Escape") this.toggle(false);
      else if (e.key === "Enter" && e.target === this.filter) this.applyFilter();
      e.stopPropagation(); // typing in the panel is not a timeline key
    });
    listen(this.filter, "input", () => this.previewFilter());
    listen(show, "click", () => this.applyFilter());
    listen(this.slowButton, "click", () => void this.applyPreset("slowest"));
    listen(this.stragglerButton, "click", () => void this.applyPreset("stragglers"));
    listen(allB, "click", () => {
      this.clearFilter();
      this.setRanks([...host.model.get("_all_ranks")]);
    });
    listen(collapseB, "click", () => host.save("collapsed", [...host.model.get("_all_ranks")]));
    listen(expandB, "click", () => {
      host.save("collapsed", []);
      host.save("cpu_collapsed", []);
    });
    listen(foldB, "click", () => host.save("cpu_collapsed", [...host.model.get("_all_ranks")]));
    listen(this.list, "scroll", () => this.renderRows());
    listen(this.list, "keydown", (ev) => this.onListKey(ev as KeyboardEvent));
    // One listener for every row's controls (rows come and go as the list scrolls).
    listen(this.list, "change", (ev) => this.onRowChange(ev));
    listen(this.list, "click", (ev) => this.onRowClick(ev));
    listen(host.scroller, "scroll", () => {
      const s = host.scroller;
      // A scroll of the user's (not ours, not the browser's reset of a hidden scroller) releases the hold.
      if (
        this.heldTop !== null &&
        s.clientHeight > 0 &&
        Math.abs(s.scrollTop - this.heldTop) > 1 &&
        s.scrollTop > 0
      )
        this.heldTop = null;
      this.placeBand();
    });
  }

  get open(): boolean {
    return !this.panel.hidden;
  }

  toggle(show = !this.open): void {
    this.panel.hidden = !show;
    this.button.setAttribute("aria-expanded", String(show));
    if (show) {
      this.render();
      // The presets run tv.iteration_stats and tv.stragglers in the kernel: on many ranks that
      // takes a while (about 100 s at 1,024 ranks on a busy machine) and holds the kernel's
      // other answers, so they are computed on opening only for a few ranks, else when asked.
      if (this.presets || this.host.model.get("_all_ranks").length <= PRESETS_ON_OPEN_MAX)
        void this.loadPresets();
      else if (!this.presetsLoading)
        this.presetNote.textContent = `${formatCount(this.host.model.get("_all_ranks").length)} ranks: the presets are computed when you click Slowest or Stragglers`;
      this.filter.focus();
    }
  }

  /** The view was shown or resized without a change of size: keep a link's scroll. */
  shown(): void {
    if (this.pendingFocus || this.heldTop !== null) this.revealFocus();
  }

  /** The model's ranks changed or the view was resized: the list and the band follow. */
  layoutChanged(): void {
    if (this.pendingFocus || this.heldTop !== null) this.revealFocus();
    this.placeBand();
    if (this.open) this.render();
  }

  /** `focus_rank` changed: make the rank shown and expanded, then scroll to it. */
  onFocus(): void {
    const m = this.host.model;
    const f = m.get("focus_rank");
    this.host.root.dataset.focusRank = f === null ? "" : String(f);
    if (f === null) {
      this.pendingFocus = false;
      this.heldTop = null;
      this.host.setFocusRoom(0);
      this.placeBand();
      return;
    }
    if (!m.get("ranks").includes(f)) this.host.save("ranks", withRanks(m.get("ranks"), [f]));
    const collapsed = m.get("collapsed");
    if (collapsed.includes(f))
      this.host.save(
        "collapsed",
        collapsed.filter((r) => r !== f),
      );
    this.pendingFocus = true;
    this.revealFocus();
  }

  private revealFocus(): void {
    const f = this.host.model.get("focus_rank");
    const s = this.host.scroller;
    // Not laid out yet (a hidden dashboard tab): scrolling would be lost; retry on resize.
    if (f === null || s.clientHeight === 0) return;
    const m = this.host.model;
    const layout = this.host.layout;
    const view = Math.max(0, this.host.viewHeight - AXIS);
    const at = focusScroll(layout, f, view, busiestStream(layout, m.get("_lanes"), m.get("_rows"), f));
    if (!at) return;
    const first = this.pendingFocus;
    this.pendingFocus = false;
    this.heldTop = at.top;
    this.host.setFocusRoom(at.room);
    s.scrollTop = at.top;
    this.host.root.dataset.focusTop = String(at.top);
    // The notebook never shows an empty viewport after a link: bring the widget into view,
    // its top first when it does not fit whole (the focused rank is at the plot's top).
    const root = this.host.root;
    if (first && typeof root.scrollIntoView === "function") {
      const r = root.getBoundingClientRect();
      const fits = r.height <= window.innerHeight;
      if (r.top < 0 || r.bottom > window.innerHeight)
        root.scrollIntoView({ block: fits ? "nearest" : "start" });
    }
    this.placeBand();
  }

  /** Position the emphasis band over the focused rank's block (clipped to the plot). */
  placeBand(): void {
    const f = this.host.model.get("focus_rank");
    const block = f === null ? null : rankBlock(this.host.layout, f);
    if (!block) {
      this.band.hidden = true;
      return;
    }
    const top = block.y + AXIS - this.host.scroller.scrollTop;
    const a = Math.max(top, AXIS);
    const b = Math.min(top + block.h, this.host.viewHeight);
    if (b <= a) {
      this.band.hidden = true;
      return;
    }
    this.band.hidden = false;
    this.band.style.top = `${a}px`;
    this.band.style.height = `${b - a}px`;
    this.band.style.right = `${SCROLLBAR}px`;
    this.band.title = `rank ${f}`;
  }

  /** Empty the filter box: a preset or "All" replaces what it selected (the box would misstate the ranks). */
  private clearFilter(): void {
    this.filter.value = "";
    this.filter.setAttribute("aria-invalid", "false");
    this.filterNote.textContent = "";
    this.filterNote.classList.remove("tv-ranks-error");
  }

  private setRanks(ranks: number[]): void {
    this.host.save("ranks", ranks);
  }

  private previewFilter(): FilterResult {
    const all = this.host.model.get("_all_ranks");
    const res = parseRankFilter(this.filter.value, all);
    this.filter.setAttribute("aria-invalid", res.error ? "true" : "false");
    this.filterNote.textContent =
      res.error ?? `${formatCount(res.ranks.length)} of ${formatCount(all.length)}`;
    this.filterNote.classList.toggle("tv-ranks-error", res.error !== undefined);
    return res;
  }

  private applyFilter(): void {
    const res = this.previewFilter();
    if (res.error !== undefined) return;
    if (!res.ranks.length) {
      this.filterNote.textContent = "no rank matches";
      return;
    }
    this.setRanks(keepPinned(res.ranks, this.host.model.get("pinned")));
  }

  private loadPresets(): Promise<RankPresets | null> {
    if (this.presets) return Promise.resolve(this.presets);
    if (!this.presetsLoading) {
      this.presetNote.textContent = "computing the presets…";
      this.presetsLoading = this.invoke<RankPresets | CommandError>("_ranks", {}, { signal: this.signal })
        .then(([res]) => {
          if ("error" in res) throw new Error(res.error);
          this.presets = res;
          this.presetNote.textContent = presetText(res);
          this.slowButton.disabled = !res.slowest.length;
          this.stragglerButton.disabled = !res.stragglers.length;
          if (this.open) this.render();
          return res;
        })
        .catch((err: unknown) => {
          this.presetsLoading = null;
          this.presetNote.textContent = `Presets unavailable: ${err instanceof Error ? err.message : String(err)}`;
          return null;
        });
    }
    return this.presetsLoading;
  }

  private async applyPreset(which: "slowest" | "stragglers"): Promise<void> {
    const p = await this.loadPresets();
    if (!p) return;
    let picked: number[];
    if (which === "slowest") {
      const n = Math.max(1, Math.floor(Number(this.slowN.value) || 1));
      picked = p.slowest.slice(0, n).map((r) => r.rank);
    } else {
      picked = p.stragglers.map((r) => r.rank);
    }
    if (!picked.length) return;
    this.clearFilter();
    this.setRanks(keepPinned(picked, this.host.model.get("pinned")));
    this.host.root.dataset.rankPreset = which;
  }

  private togglePin(rank: number): void {
    const m = this.host.model;
    const pinned = m.get("pinned");
    if (pinned.includes(rank))
      this.host.save(
        "pinned",
        pinned.filter((r) => r !== rank),
      );
    else {
      this.host.save("pinned", [...pinned, rank]);
      if (!m.get("ranks").includes(rank)) this.setRanks(withRanks(m.get("ranks"), [rank]));
    }
  }

  private move(rank: number, delta: number): void {
    const m = this.host.model;
    const pinned = m.get("pinned");
    if (pinned.includes(rank)) {
      const shownPins = displayOrder(m.get("ranks"), pinned).filter((r) => pinned.includes(r));
      this.host.save("pinned", moveRank(shownPins, rank, delta));
      return;
    }
    const rest = m.get("ranks").filter((r) => !pinned.includes(r));
    const moved = moveRank(rest, rank, delta);
    this.setRanks([...pinned.filter((r) => m.get("ranks").includes(r)), ...moved]);
  }

  /** The list: shown ranks in display order, then the hidden ones (only the rows in view are in the DOM). */
  render(): void {
    const m = this.host.model;
    const ranks = m.get("ranks");
    const pinned = m.get("pinned");
    const order = displayOrder(ranks, pinned);
    const shown = new Set(ranks);
    const hidden = m.get("_all_ranks").filter((r) => !shown.has(r));
    this.rowRanks = [...order, ...hidden];
    this.rowState = {
      shown,
      pinned: new Set(pinned),
      collapsed: new Set(m.get("collapsed")),
      focus: m.get("focus_rank"),
      info: presetInfo(this.presets),
    };
    this.listRows.style.height = `${this.rowRanks.length * PICKER_ROW_H}px`;
    this.list.dataset.rows = String(this.rowRanks.length);
    this.renderRows(true);
    this.host.root.dataset.rankOrder = order.join(",");
  }

  /** Put the rows in view in the DOM (all again when `rebuild`: the model changed). */
  private renderRows(rebuild = false): void {
    const st = this.rowState;
    if (!st) return;
    const w = virtualWindow(this.rowRanks.length, PICKER_ROW_H, this.list.scrollTop, this.list.clientHeight);
    const ds = this.list.dataset;
    if (!rebuild && ds.start === String(w.start) && ds.end === String(w.end)) return;
    // Keep the keyboard focus on the same control of the same rank across a re-render.
    const active = document.activeElement;
    const keep =
      active instanceof HTMLElement && this.listRows.contains(active)
        ? { rank: active.closest<HTMLElement>(".tv-ranks-item")?.dataset.rank, ctl: active.dataset.ctl }
        : null;
    const frag = document.createDocumentFragment();
    for (let i = w.start; i < w.end; i++) frag.append(this.row(this.rowRanks[i]!, i, st));
    this.listRows.replaceChildren(frag);
    ds.start = String(w.start);
    ds.end = String(w.end);
    ds.rendered = String(w.end - w.start);
    if (keep?.rank !== undefined && keep.ctl !== undefined)
      this.listRows
        .querySelector<HTMLElement>(`[data-rank="${keep.rank}"] [data-ctl="${keep.ctl}"]`)
        ?.focus();
  }

  /** One row: checkbox, preset note, pin, up, down, collapse (handled by the list's listeners). */
  private row(rank: number, index: number, st: RowState): HTMLDivElement {
    const on = st.shown.has(rank);
    const pin = st.pinned.has(rank);
    const folded = st.collapsed.has(rank);
    const item = document.createElement("div");
    item.className = "tv-ranks-item";
    item.setAttribute("role", "listitem");
    item.setAttribute("aria-setsize", String(this.rowRanks.length));
    item.setAttribute("aria-posinset", String(index + 1));
    item.style.top = `${index * PICKER_ROW_H}px`;
    item.style.height = `${PICKER_ROW_H}px`;
    item.dataset.rank = String(rank);
    item.dataset.index = String(index);
    item.classList.toggle("tv-ranks-focus", rank === st.focus);
    const label = el("label", "tv-ranks-label", item);
    const box = el("input", "", label);
    box.type = "checkbox";
    box.checked = on;
    box.dataset.ctl = "show";
    box.setAttribute("aria-label", `Show rank ${rank}`);
    label.append(` rank ${rank}`);
    const note = st.info.get(rank);
    if (note) el("span", "tv-ranks-info", item, note);
    const icon = (ctl: string, text: string, aria: string, disabled = false) => {
      const b = el("button", "tv-ranks-icon", item, text);
      b.dataset.ctl = ctl;
      b.setAttribute("aria-label", aria);
      b.disabled = disabled;
      return b;
    };
    const pinB = icon("pin", pin ? "★" : "☆", `${pin ? "Unpin" : "Pin"} rank ${rank}`);
    pinB.setAttribute("aria-pressed", String(pin));
    pinB.title = pin ? "Unpin" : "Pin above the other ranks";
    icon("up", "↑", `Move rank ${rank} up`, !on);
    icon("down", "↓", `Move rank ${rank} down`, !on);
    icon("fold", folded ? "▸" : "▾", `${folded ? "Expand" : "Collapse"} rank ${rank}`, !on);
    return item;
  }

  private rowOf(target: EventTarget | null): { rank: number; ctl: string; el: HTMLElement } | null {
    if (!(target instanceof HTMLElement) || !target.dataset.ctl) return null;
    const rank = Number(target.closest<HTMLElement>(".tv-ranks-item")?.dataset.rank);
    return Number.isFinite(rank) ? { rank, ctl: target.dataset.ctl, el: target } : null;
  }

  private onRowChange(ev: Event): void {
    const hit = this.rowOf(ev.target);
    if (!hit || hit.ctl !== "show" || !(hit.el instanceof HTMLInputElement)) return;
    const now = this.host.model.get("ranks");
    if (hit.el.checked) this.setRanks(withRanks(now, [hit.rank]));
    else if (now.length > 1) this.setRanks(now.filter((r) => r !== hit.rank));
    else hit.el.checked = true; // at least one rank stays shown
  }

  private onRowClick(ev: Event): void {
    const hit = this.rowOf(ev.target);
    if (!hit) return;
    const rank = hit.rank;
    if (hit.ctl === "pin") this.togglePin(rank);
    else if (hit.ctl === "up") this.move(rank, -1);
    else if (hit.ctl === "down") this.move(rank, 1);
    else if (hit.ctl === "fold") {
      const c = new Set(this.host.model.get("collapsed"));
      if (c.has(rank)) c.delete(rank);
      else c.add(rank);
      this.host.save(
        "collapsed",
        [...c].sort((a, b) => a - b),
      );
    }
  }

  /** ↑/↓, PgUp/PgDn, Home/End move the focus to the same control of another row, scrolling the list. */
  private onListKey(e: KeyboardEvent): void {
    const hit = this.rowOf(e.target);
    if (!hit) return;
    const index = Number(hit.el.closest<HTMLElement>(".tv-ranks-item")?.dataset.index);
    const page = Math.floor(this.list.clientHeight / PICKER_ROW_H);
    const next = stepRow(e.key, index, this.rowRanks.length, page);
    if (next === null) return;
    e.preventDefault();
    this.list.scrollTop = scrollToRow(next, PICKER_ROW_H, this.list.scrollTop, this.list.clientHeight);
    this.renderRows();
    const rank = this.rowRanks[next];
    this.listRows.querySelector<HTMLElement>(`[data-rank="${rank}"] [data-ctl="${hit.ctl}"]`)?.focus();
  }
}

/** What every row of the list reads (computed once per render). */
interface RowState {
  shown: Set<number>;
  pinned: Set<number>;
  collapsed: Set<number>;
  focus: number | null;
  info: Map<number, string>;
}

function presetText(p: RankPresets): string {
  const slow = p.slowest.length ? "" : "no ProfilerStep: no step times to rank by. ";
  const late = p.stragglers.length
    ? `stragglers: ${p.stragglers.map((r) => r.rank).join(", ")}`
    : "no rank arrived last at a matched collective";
  return `${slow}${late}`;
}

/** A short note per rank from the presets: mean step and how often it arrived last. */
function presetInfo(p: RankPresets | null): Map<number, string> {
  const out = new Map<number, string>();
  if (!p) return out;
  for (const r of p.slowest) out.set(r.rank, `step ${formatDuration(r.step_mean_ns)}`);
  for (const r of p.stragglers) {
    const prev = out.get(r.rank);
    const late = `last ${r.last_count}/${r.collectives}`;
    out.set(r.rank, prev ? `${prev} · ${late}` : late);
  }
  return out;
}
