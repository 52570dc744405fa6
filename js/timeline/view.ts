/**
 * The timeline view: DOM, interactions, window requests to the kernel and the draw loop.
 * Uses only the DOM, a `StateModel` (an anywidget model or a `LocalModel`) and an `Invoke`
 * function answering the timeline's commands (no JupyterLab import), so it works in
 * JupyterLab, Notebook 7 and VS Code, inside `tv.Timeline`, `tv.Dashboard` or the Traces
 * sidebar.
 */
import { formatCount, formatDuration, formatTimePrecise as formatTime } from "../format";
import { ticks } from "./axis";
import { Colors, withAlpha } from "./colors";
import {
  type Ctx,
  type Label,
  type Scale,
  RectBatch,
  drawArrow,
  drawAxis,
  drawLabels,
  drawMatches,
  drawRange,
  drawSteps,
  layoutBinRow,
  layoutRawRow,
  xOf,
} from "./draw";
import { binAt, eventAt } from "./hittest";
import { type Layout, type Slot, computeLayout, slotAt, visibleSlots } from "./layout";
import type {
  EventDetails,
  FindResult,
  LaneMeta,
  RangeSummary,
  TimelineModel,
  WindowRequest,
  WindowResponseMeta,
} from "./model";
import { type BinRow, type RawRow, type WindowData, NO_KIND, aligned, decodeWindow } from "./protocol";
import type { Invoke, StateModel } from "./state";
import { type Theme, readTheme } from "./theme";
import {
  type Limits,
  type Range,
  covers,
  fitRange,
  limitsFor,
  panByPixels,
  wheelFactor,
  xToTime,
  zoomAround,
} from "./viewport";
import { el } from "../dom";

const GUTTER = 172;
const AXIS = 26;
const SCROLLBAR = 12;
/** Extra time fetched on each side of the visible range, as a fraction of its span. */
const FETCH_MARGIN = 0.25;
/** Zoom step of W/S and +/-; pan step of A/D (fraction of the span). */
const KEY_ZOOM = 0.8;
const KEY_PAN = 0.15;

interface Hover {
  slot: number;
  /** Raw event index in its row, or -1. */
  event: number;
  /** Column of a binned row or summary, or -1. */
  bin: number;
  x: number;
  y: number;
}

interface Selected {
  rank: number;
  eid: number;
  details: EventDetails | null;
}

export class TimelineView {
  private readonly root: HTMLDivElement;
  private readonly scroller: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly legend: HTMLSpanElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchCount: HTMLSpanElement;
  private readonly colorSelect: HTMLSelectElement;
  private readonly cpuToggle: HTMLInputElement;
  private readonly abort = new AbortController();
  private readonly cleanups: (() => void)[] = [];

  private theme!: Theme;
  private colors!: Colors;
  private layout!: Layout;
  private lanes = new Map<number, LaneMeta>();
  private limits: Limits;
  private range: Range;
  private width = 0;
  private viewHeight = 0;
  private scrollTop = 0;
  private data: WindowData | null = null;
  private seq = 0;
  private inFlight = false;
  private pendingRequest = false;
  private lastSentRange: [number, number] | null = null;
  private rangeSyncTimer = 0;
  private searchTimer = 0;
  private frame = 0;
  private hover: Hover | null = null;
  private selected: Selected | null = null;
  private measuring: { a: number; b: number } | null = null;
  private measure: { a: number; b: number } | null = null;
  private summary: RangeSummary | null = null;
  private drag: { x: number; y: number; range: Range; moved: boolean; shift: boolean } | null = null;
  private detailsCache = new Map<string, EventDetails>();
  private detailsTimer = 0;
  private charWidth = 6.5;
  private firstPaint = false;
  private readonly created = performance.now();

  constructor(
    private readonly model: StateModel<TimelineModel>,
    parent: HTMLElement,
    private readonly invoke: Invoke,
  ) {
    const root = el("div", "tv-timeline", parent);
    root.tabIndex = 0;
    // JupyterLab / Notebook 7: keys typed in the widget are not notebook shortcuts.
    root.setAttribute("data-lm-suppress-shortcuts", "true");
    root.setAttribute("role", "application");
    root.setAttribute("aria-label", "Trace timeline");
    this.root = root;

    const bar = el("div", "tv-toolbar", root);
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

    this.scroller = el("div", "tv-scroller", root);
    this.canvas = el("canvas", "tv-canvas", this.scroller);
    this.spacer = el("div", "tv-spacer", this.scroller);
    this.tooltip = el("div", "tv-tooltip", this.scroller);
    this.tooltip.hidden = true;
    this.status = el("div", "tv-status", root);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) throw new Error("canvas 2D is not available");
    this.ctx = ctx;

    const span = this.model.get("_span");
    this.limits = limitsFor(span[0], span[1]);
    const xr = this.model.get("x_range");
    this.range = { lo: xr[0], hi: xr[1] };

    this.readTheme();
    this.rebuildLayout();
    this.syncControls();
    this.renderLegend();

    // Events.
    const on = (
      target: EventTarget,
      type: string,
      fn: (e: Event) => void,
      opts?: AddEventListenerOptions,
    ) => {
      target.addEventListener(type, fn, opts);
      this.cleanups.push(() => target.removeEventListener(type, fn, opts));
    };
    on(this.canvas, "wheel", (e) => this.onWheel(e as WheelEvent), { passive: false });
    on(this.canvas, "mousedown", (e) => this.onMouseDown(e as MouseEvent));
    on(window, "mousemove", (e) => this.onMouseMove(e as MouseEvent));
    on(window, "mouseup", (e) => this.onMouseUp(e as MouseEvent));
    on(this.canvas, "mouseleave", () => this.setHover(null));
    on(this.canvas, "dblclick", (e) => this.onDoubleClick(e as MouseEvent));
    on(root, "keydown", (e) => this.onKey(e as KeyboardEvent));
    on(this.scroller, "scroll", () => {
      this.scrollTop = this.scroller.scrollTop;
      this.invalidate();
      this.maybeRequest();
    });
    on(this.searchInput, "input", () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.commitSearch(), 250);
    });
    on(this.searchInput, "keydown", (ev) => {
      const e = ev as KeyboardEvent;
      if (e.key === "Enter") {
        e.preventDefault();
        this.commitSearch();
        void this.findNext(e.shiftKey ? -1 : 1);
      }
      e.stopPropagation();
    });
    on(prev, "click", () => void this.findNext(-1));
    on(next, "click", () => void this.findNext(1));
    on(fit, "click", () => this.setRange(fitRange(this.limits)));
    on(this.colorSelect, "change", () =>
      this.save("color_by", this.colorSelect.value === "name" ? "name" : "kind"),
    );
    on(this.cpuToggle, "change", () => this.save("show_cpu", this.cpuToggle.checked));

    const modelEvents: [string, () => void][] = [
      ["change:x_range", () => this.onModelRange()],
      ["change:ranks", () => this.onStructure()],
      ["change:collapsed", () => this.onStructure()],
      ["change:show_cpu", () => this.onStructure()],
      ["change:color_by", () => this.onStyle()],
      ["change:search", () => this.onSearchChanged()],
      ["change:_search_count", () => this.syncControls()],
      ["change:selected_event", () => this.onModelSelection()],
      ["change:selected_range", () => this.onModelRangeSelection()],
      ["change:height", () => this.resize()],
    ];
    for (const [name, fn] of modelEvents) {
      this.model.on(name, fn);
      this.cleanups.push(() => this.model.off(name, fn));
    }

    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.root);
    this.cleanups.push(() => ro.disconnect());
    // Theme changes: JupyterLab switches attributes on <body>; VS Code its classes.
    const mo = new MutationObserver(() => {
      this.readTheme();
      this.invalidate();
    });
    mo.observe(document.body, {
      attributes: true,
      attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class"],
    });
    this.cleanups.push(() => mo.disconnect());
    const mq = window.matchMedia("(prefers-color-scheme: dark)");
    const onScheme = () => {
      this.readTheme();
      this.invalidate();
    };
    mq.addEventListener("change", onScheme);
    this.cleanups.push(() => mq.removeEventListener("change", onScheme));

    // Used by the UI benchmark (ui-tests/tests/benchmark.spec.ts): draw a frame now.
    Object.defineProperty(root, "traceviewDraw", { value: () => this.draw(), configurable: true });

    this.onModelSelection();
    this.onModelRangeSelection();
    this.resize();
  }

  dispose(): void {
    this.abort.abort();
    for (const c of this.cleanups.splice(0)) c();
    window.clearTimeout(this.rangeSyncTimer);
    window.clearTimeout(this.searchTimer);
    window.clearTimeout(this.detailsTimer);
    if (this.frame) cancelAnimationFrame(this.frame);
    this.root.remove();
  }

  // ---------------------------------------------------------------- model plumbing
  private save<K extends keyof TimelineModel>(key: K, value: TimelineModel[K]): void {
    this.model.set(key, value);
    this.model.save_changes();
  }

  private syncControls(): void {
    this.colorSelect.value = this.model.get("color_by");
    this.cpuToggle.checked = this.model.get("show_cpu");
    const pattern = this.model.get("search");
    if (document.activeElement !== this.searchInput) this.searchInput.value = pattern;
    const n = this.model.get("_search_count");
    this.searchCount.textContent = pattern ? `${formatCount(n)} match${n === 1 ? "" : "es"}` : "";
    this.root.dataset.searchCount = String(pattern ? n : 0);
  }

  private renderLegend(): void {
    this.legend.replaceChildren();
    if (this.model.get("color_by") === "name") {
      el("span", "tv-legend-note", this.legend, "coloured by name; merged columns by kind");
    }
    for (const key of this.model.get("_kinds")) {
      const chip = el("span", "tv-chip", this.legend);
      const sw = el("span", "tv-swatch", chip);
      sw.style.background = this.colors.kind(this.colors.code(key));
      chip.append(this.colors.label(key));
    }
  }

  private readTheme(): void {
    this.theme = readTheme(this.root);
    this.colors = new Colors(this.model.get("_palette"), this.theme.dark);
    this.root.classList.toggle("tv-dark", this.theme.dark);
    this.ctx.font = this.font(11);
    this.charWidth = this.ctx.measureText("abcdefghijklmnopqrstuvwxyz_:").width / 28;
    if (this.legend.childElementCount) this.renderLegend();
  }

  private font(px: number): string {
    return `${px}px ${this.theme.font}`;
  }

  private rebuildLayout(): void {
    const lanes = this.model.get("_lanes");
    this.lanes = new Map(lanes.map((l) => [l.id, l]));
    this.layout = computeLayout(
      this.model.get("_rows"),
      lanes,
      this.model.get("ranks"),
      new Set(this.model.get("collapsed")),
      this.model.get("show_cpu"),
    );
    this.spacer.style.height = `${Math.max(0, this.layout.height + AXIS - this.viewHeight)}px`;
  }

  private onStructure(): void {
    this.rebuildLayout();
    this.syncControls();
    this.invalidate();
    this.maybeRequest(true);
  }

  private onStyle(): void {
    this.syncControls();
    this.renderLegend();
    this.invalidate();
    this.maybeRequest(true);
  }

  private onSearchChanged(): void {
    this.syncControls();
    this.maybeRequest(true);
  }

  private onModelRange(): void {
    const xr = this.model.get("x_range");
    if (this.lastSentRange && xr[0] === this.lastSentRange[0] && xr[1] === this.lastSentRange[1]) return;
    this.range = { lo: xr[0], hi: Math.max(xr[1], xr[0] + 1) };
    this.invalidate();
    this.maybeRequest();
  }

  private onModelSelection(): void {
    const sel = this.model.get("selected_event");
    if (sel.rank === undefined || sel.eid === undefined) {
      this.selected = null;
    } else if (!this.selected || this.selected.rank !== sel.rank || this.selected.eid !== sel.eid) {
      this.selected = { rank: sel.rank, eid: sel.eid, details: null };
      void this.loadDetails(sel.rank, sel.eid).then((d) => {
        if (this.selected && this.selected.rank === sel.rank && this.selected.eid === sel.eid) {
          this.selected.details = d;
          this.renderStatus();
          this.invalidate();
        }
      });
    }
    this.renderStatus();
    this.invalidate();
  }

  private onModelRangeSelection(): void {
    const r = this.model.get("selected_range");
    const a = r[0];
    const b = r[1];
    if (r.length === 2 && a !== undefined && b !== undefined) {
      if (!this.measure || this.measure.a !== a || this.measure.b !== b) {
        this.measure = { a, b };
        void this.loadSummary();
      }
    } else {
      this.measure = null;
      this.summary = null;
    }
    this.renderStatus();
    this.invalidate();
  }

  /** Set the visible range locally and, shortly after the last change, in the model. */
  private setRange(r: Range): void {
    this.range = r;
    this.invalidate();
    this.maybeRequest();
    window.clearTimeout(this.rangeSyncTimer);
    this.rangeSyncTimer = window.setTimeout(() => {
      this.lastSentRange = [this.range.lo, this.range.hi];
      this.save("x_range", [this.range.lo, this.range.hi]);
    }, 150);
  }

  // ---------------------------------------------------------------- geometry
  private resize(): void {
    const height = Math.max(160, this.model.get("height"));
    this.scroller.style.height = `${height}px`;
    const w = Math.max(200, this.scroller.clientWidth);
    const h = Math.max(60, this.scroller.clientHeight);
    const dpr = window.devicePixelRatio || 1;
    if (
      w === this.width + GUTTER + SCROLLBAR &&
      h === this.viewHeight &&
      this.canvas.width === Math.round(w * dpr)
    )
      return;
    this.width = Math.max(50, w - GUTTER - SCROLLBAR);
    this.viewHeight = h;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.spacer.style.height = `${Math.max(0, this.layout.height + AXIS - h)}px`;
    this.invalidate();
    this.maybeRequest(true);
  }

  private scale(): Scale {
    return { lo: this.range.lo, hi: this.range.hi, x0: GUTTER, width: this.width };
  }

  /** Canvas-relative pointer position. */
  private pointer(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private inPlot(p: { x: number; y: number }): boolean {
    return p.x >= GUTTER && p.x < GUTTER + this.width && p.y >= AXIS;
  }

  /** Slot index under canvas y (rows scroll under the fixed axis band). */
  private slotAtY(y: number): number {
    if (y < AXIS) return -1;
    return slotAt(this.layout, y - AXIS + this.scrollTop);
  }

  private slotY(slot: Slot): number {
    return slot.y + AXIS - this.scrollTop;
  }

  // ---------------------------------------------------------------- requests
  private visibleRowsAndSummaries(): { rows: number[]; summaries: number[] } {
    const [a, b] = visibleSlots(this.layout, this.scrollTop - 100, this.viewHeight + 200);
    const rows: number[] = [];
    const summaries: number[] = [];
    for (let i = a; i < b; i++) {
      const s = this.layout.slots[i]!;
      if (s.kind === "row") rows.push(s.row);
      else if (s.collapsed) summaries.push(s.rank);
    }
    return { rows, summaries };
  }

  /** Ask the kernel for a new window unless the data at hand covers the view well. */
  private maybeRequest(force = false): void {
    if (this.width <= 0) return;
    const want = this.visibleRowsAndSummaries();
    const d = this.data;
    if (!force && d) {
      const missing =
        want.rows.some((r) => !d.rows.has(r)) || want.summaries.some((r) => !d.summaries.has(r));
      const nsPerPxData = (d.hi - d.lo) / d.width;
      const nsPerPxView = (this.range.hi - this.range.lo) / this.width;
      const ratio = nsPerPxData / nsPerPxView;
      if (!missing && covers({ lo: d.lo, hi: d.hi }, this.range) && ratio < 1.5 && ratio > 1 / 1.5) {
        this.settleLoading();
        return;
      }
    }
    if (this.inFlight) {
      this.pendingRequest = true;
      return;
    }
    void this.request(want);
  }

  private async request(want: { rows: number[]; summaries: number[] }): Promise<void> {
    this.inFlight = true;
    // Tests and benchmarks wait for data-loading="0": the view's data has arrived.
    this.root.dataset.loading = "1";
    this.pendingRequest = false;
    const span = this.range.hi - this.range.lo;
    const lo = this.range.lo - FETCH_MARGIN * span;
    const hi = this.range.hi + FETCH_MARGIN * span;
    const req: WindowRequest = {
      seq: ++this.seq,
      lo,
      hi,
      width: Math.max(1, Math.round(this.width * (1 + 2 * FETCH_MARGIN))),
      rows: want.rows,
      summaries: want.summaries,
      pattern: this.model.get("search"),
      name_colors: this.model.get("color_by") === "name",
    };
    const t = performance.now();
    try {
      const [meta, buffers] = await this.invoke<WindowResponseMeta>("_window", req, {
        signal: this.abort.signal,
      });
      if (meta.error) {
        this.showError(meta.error);
      } else {
        const buf = buffers[0];
        this.data = decodeWindow(meta, buf ? aligned(buf) : null);
        this.root.dataset.windowMs = (performance.now() - t).toFixed(1);
        this.root.dataset.kernelMs = meta.kernel_ms.toFixed(1);
        this.root.dataset.rawEvents = String(this.data.rawEvents);
        this.invalidate();
      }
    } catch (err) {
      if (this.abort.signal.aborted) return;
      this.showError(String(err));
    } finally {
      this.inFlight = false;
    }
    this.maybeRequest(this.takePending());
    this.settleLoading();
  }

  private settleLoading(): void {
    if (!this.inFlight) this.root.dataset.loading = "0";
  }

  /** Was a request asked for while one was in flight (then send it, forced)? */
  private takePending(): boolean {
    const p = this.pendingRequest;
    this.pendingRequest = false;
    return p;
  }

  private showError(message: string): void {
    this.status.textContent = `Error from the kernel: ${message}`;
    this.status.classList.add("tv-error");
  }

  private async loadDetails(rank: number, eid: number): Promise<EventDetails | null> {
    const key = `${rank}:${eid}`;
    const hit = this.detailsCache.get(key);
    if (hit) return hit;
    try {
      const [d] = await this.invoke<EventDetails>("_details", { rank, eid }, { signal: this.abort.signal });
      if (d.error) return null;
      if (this.detailsCache.size > 500) this.detailsCache.clear();
      this.detailsCache.set(key, d);
      return d;
    } catch {
      return null;
    }
  }

  private async loadSummary(): Promise<void> {
    const m = this.measure;
    if (!m) return;
    const ranks = this.model.get("ranks");
    try {
      const [s] = await this.invoke<RangeSummary>(
        "_summary",
        { lo: Math.min(m.a, m.b), hi: Math.max(m.a, m.b), ranks },
        { signal: this.abort.signal },
      );
      if (this.measure !== m) return;
      this.summary = s.error ? null : s;
      this.renderStatus();
    } catch {
      /* aborted or kernel gone: keep the measurement without its summary */
    }
  }

  // ---------------------------------------------------------------- search
  private commitSearch(): void {
    window.clearTimeout(this.searchTimer);
    const v = this.searchInput.value.trim();
    if (v !== this.model.get("search")) this.save("search", v);
  }

  private async findNext(direction: number): Promise<void> {
    const pattern = this.model.get("search");
    if (!pattern) return;
    const from =
      this.selected?.details && this.selected.details.name
        ? this.selected.details.start
        : direction > 0
          ? this.range.lo - 1
          : this.range.hi;
    const shown = new Set(this.model.get("ranks"));
    const rows = this.model
      .get("_rows")
      .filter((r) => shown.has(r.rank))
      .map((r) => r.id);
    const [res] = await this.invoke<FindResult>(
      "_find",
      { pattern, t: from, direction, rows },
      { signal: this.abort.signal },
    );
    if (!res.found || res.rank === undefined || res.eid === undefined || res.row === undefined) {
      this.searchCount.textContent = "no more matches";
      return;
    }
    this.revealRow(res.row);
    const start = res.start ?? 0;
    const end = Math.max(res.end ?? start, start + 1);
    const span = this.range.hi - this.range.lo;
    const tooSmall = ((end - start) / span) * this.width < 2;
    const newSpan = tooSmall ? Math.max((end - start) * 20, 2000) : span;
    const mid = (start + end) / 2;
    this.setRange({ lo: mid - newSpan / 2, hi: mid + newSpan / 2 });
    this.select(res.rank, res.eid);
  }

  /** Make a row visible: expand its rank, show CPU lanes if needed, scroll to it. */
  private revealRow(row: number): void {
    const meta = this.model.get("_rows").find((r) => r.id === row);
    if (!meta) return;
    const collapsed = this.model.get("collapsed");
    if (collapsed.includes(meta.rank))
      this.save(
        "collapsed",
        collapsed.filter((r) => r !== meta.rank),
      );
    if (meta.type === "cpu" && !this.model.get("show_cpu")) this.save("show_cpu", true);
    this.rebuildLayout();
    const idx = this.layout.rowSlot.get(row);
    if (idx === undefined) return;
    const slot = this.layout.slots[idx]!;
    const visibleH = this.viewHeight - AXIS;
    if (slot.y < this.scrollTop || slot.y + slot.h > this.scrollTop + visibleH) {
      this.scroller.scrollTop = Math.max(0, slot.y - visibleH / 3);
      this.scrollTop = this.scroller.scrollTop;
    }
  }

  // ---------------------------------------------------------------- selection
  private select(rank: number, eid: number): void {
    this.save("selected_event", { rank, eid });
  }

  private clearSelection(): void {
    if (this.model.get("selected_event").eid !== undefined) this.save("selected_event", {});
  }

  // ---------------------------------------------------------------- interaction
  private onWheel(e: WheelEvent): void {
    const p = this.pointer(e);
    if (p.x < GUTTER) return; // over the labels: let the scroller scroll
    e.preventDefault();
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      this.setRange(panByPixels(this.range, this.width, e.deltaX, this.limits));
      return;
    }
    const anchor = xToTime(this.range, this.width, Math.min(Math.max(p.x - GUTTER, 0), this.width));
    this.setRange(zoomAround(this.range, anchor, wheelFactor(e.deltaY, e.deltaMode), this.limits));
  }

  private onMouseDown(e: MouseEvent): void {
    if (e.button !== 0) return;
    this.root.focus({ preventScroll: true });
    const p = this.pointer(e);
    if (p.x < GUTTER) {
      const i = this.slotAtY(p.y);
      const slot = i >= 0 ? this.layout.slots[i] : undefined;
      if (slot && slot.kind === "header") {
        const collapsed = new Set(this.model.get("collapsed"));
        if (collapsed.has(slot.rank)) collapsed.delete(slot.rank);
        else collapsed.add(slot.rank);
        this.save(
          "collapsed",
          [...collapsed].sort((a, b) => a - b),
        );
      }
      return;
    }
    if (!this.inPlot(p)) return;
    e.preventDefault();
    this.drag = { x: p.x, y: p.y, range: this.range, moved: false, shift: e.shiftKey };
    if (e.shiftKey) {
      const t = xToTime(this.range, this.width, p.x - GUTTER);
      this.measuring = { a: t, b: t };
    }
  }

  private onMouseMove(e: MouseEvent): void {
    const p = this.pointer(e);
    const d = this.drag;
    if (d) {
      if (Math.abs(p.x - d.x) > 3 || Math.abs(p.y - d.y) > 3) d.moved = true;
      if (d.shift && this.measuring) {
        this.measuring.b = xToTime(this.range, this.width, Math.min(Math.max(p.x - GUTTER, 0), this.width));
        this.invalidate();
      } else if (d.moved) {
        this.setRange(panByPixels(d.range, this.width, d.x - p.x, this.limits));
      }
      this.setHover(null);
      return;
    }
    if (e.target !== this.canvas) return;
    this.setHover(this.hitTest(p));
  }

  private onMouseUp(e: MouseEvent): void {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    const p = this.pointer(e);
    if (d.shift && this.measuring) {
      const m = this.measuring;
      this.measuring = null;
      if (Math.abs(xOf(this.scale(), m.b) - xOf(this.scale(), m.a)) >= 2) {
        this.save("selected_range", [Math.min(m.a, m.b), Math.max(m.a, m.b)]);
      }
      this.invalidate();
      return;
    }
    if (d.moved) return;
    const hit = this.hitTest(p);
    if (hit && hit.event >= 0) {
      const slot = this.layout.slots[hit.slot]!;
      const row = this.data?.rows.get(slot.row);
      if (row && row.mode === "raw") {
        this.select(slot.rank, row.eid[hit.event]!);
        return;
      }
    }
    this.clearSelection();
  }

  private onDoubleClick(e: MouseEvent): void {
    if (!this.inPlot(this.pointer(e))) return;
    this.setRange(fitRange(this.limits));
  }

  private onKey(e: KeyboardEvent): void {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const center = (this.range.lo + this.range.hi) / 2;
    const anchor =
      this.hover && this.hover.x >= GUTTER ? xToTime(this.range, this.width, this.hover.x - GUTTER) : center;
    let handled = true;
    switch (e.key) {
      case "w":
      case "W":
      case "+":
      case "=":
        this.setRange(zoomAround(this.range, anchor, KEY_ZOOM, this.limits));
        break;
      case "s":
      case "S":
      case "-":
      case "_":
        this.setRange(zoomAround(this.range, anchor, 1 / KEY_ZOOM, this.limits));
        break;
      case "a":
      case "A":
      case "ArrowLeft":
        this.setRange(panByPixels(this.range, this.width, -KEY_PAN * this.width, this.limits));
        break;
      case "d":
      case "D":
      case "ArrowRight":
        this.setRange(panByPixels(this.range, this.width, KEY_PAN * this.width, this.limits));
        break;
      case "ArrowDown":
        this.scroller.scrollTop += 40;
        break;
      case "ArrowUp":
        this.scroller.scrollTop -= 40;
        break;
      case "f":
      case "F": {
        const det = this.selected?.details;
        if (det) {
          const pad = Math.max(det.dur_ns, 1000) * 0.5;
          this.setRange({ lo: det.start - pad, hi: det.start + det.dur_ns + pad });
        } else {
          this.setRange(fitRange(this.limits));
        }
        break;
      }
      case "Escape":
        this.clearSelection();
        if (this.model.get("selected_range").length) this.save("selected_range", []);
        break;
      default:
        handled = false;
    }
    if (handled) {
      e.preventDefault();
      e.stopPropagation();
    }
  }

  private hitTest(p: { x: number; y: number }): Hover | null {
    if (!this.inPlot(p)) return null;
    const i = this.slotAtY(p.y);
    if (i < 0) return null;
    const slot = this.layout.slots[i]!;
    const t = xToTime(this.range, this.width, p.x - GUTTER);
    const d = this.data;
    if (!d) return null;
    if (slot.kind === "header") {
      const s = d.summaries.get(slot.rank);
      if (!slot.collapsed || !s) return null;
      const k = binAt(d.lo, d.hi, d.width, t);
      return k >= 0 && s.count[k]! + (s.frac[k]! > 0 ? 1 : 0) > 0
        ? { slot: i, event: -1, bin: k, x: p.x, y: p.y }
        : null;
    }
    const row = d.rows.get(slot.row);
    if (!row) return null;
    if (row.mode === "raw") {
      const tol = (3 * (this.range.hi - this.range.lo)) / this.width;
      const k = eventAt(row.start, row.dur, t, tol);
      return k >= 0 ? { slot: i, event: k, bin: -1, x: p.x, y: p.y } : null;
    }
    const k = binAt(d.lo, d.hi, d.width, t);
    return k >= 0 && (row.frac[k]! > 0 || row.count[k]! > 0)
      ? { slot: i, event: -1, bin: k, x: p.x, y: p.y }
      : null;
  }

  private setHover(h: Hover | null): void {
    const same =
      (h === null && this.hover === null) ||
      (h !== null &&
        this.hover !== null &&
        h.slot === this.hover.slot &&
        h.event === this.hover.event &&
        h.bin === this.hover.bin);
    this.hover = h;
    if (!h) {
      this.tooltip.hidden = true;
      this.root.dataset.hover = "";
      this.invalidate();
      return;
    }
    this.positionTooltip(h);
    if (!same) {
      this.renderTooltip(h, null);
      this.invalidate();
    }
  }

  private positionTooltip(h: Hover): void {
    const tw = this.tooltip.offsetWidth || 280;
    const left = h.x + 14 + tw > this.width + GUTTER ? h.x - 14 - tw : h.x + 14;
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${h.y + 14 + this.scroller.scrollTop}px`;
  }

  private renderTooltip(h: Hover, details: EventDetails | null): void {
    const d = this.data;
    if (!d) return;
    const slot = this.layout.slots[h.slot]!;
    const lines: [string, string][] = [];
    let title = "";
    if (h.event >= 0) {
      const row = d.rows.get(slot.row) as RawRow | undefined;
      if (!row) return;
      const i = h.event;
      title = d.names[row.name[i]!] ?? "";
      const kindKey = this.model.get("_palette").kinds[row.kind[i]!]?.key ?? "";
      lines.push(["duration", formatDuration(row.dur[i]!)]);
      lines.push(["start", formatTime(row.start[i]!)]);
      const lane = this.lanes.get(slot.lane);
      lines.push(["rank", String(slot.rank)]);
      if (lane)
        lines.push([
          lane.type === "gpu" ? "stream" : "thread",
          lane.type === "gpu" ? `${lane.stream} (GPU ${lane.device})` : lane.label,
        ]);
      lines.push(["kind", this.colors.label(kindKey)]);
      if (details) {
        if (details.grid && details.block)
          lines.push(["grid · block", `[${details.grid.join(", ")}] · [${details.block.join(", ")}]`]);
        if (details.registers_per_thread !== undefined)
          lines.push(["registers", String(details.registers_per_thread)]);
        if (details.occupancy_pct !== undefined)
          lines.push(["est. occupancy", `${details.occupancy_pct.toFixed(0)}%`]);
        if (details.bytes !== undefined) lines.push(["bytes", formatCount(details.bytes)]);
        if (details.bandwidth_gbps !== undefined)
          lines.push(["bandwidth", `${details.bandwidth_gbps.toFixed(1)} GB/s`]);
        if (details.collective)
          lines.push(["collective", `${details.collective.collective} ${details.collective.dtype ?? ""}`]);
        if (details.operator) lines.push(["operator", details.operator.name]);
        if (details.launch)
          lines.push(["launched by", `${details.launch.name} at ${formatTime(details.launch.start)}`]);
      } else {
        const rank = slot.rank;
        const eid = row.eid[i]!;
        window.clearTimeout(this.detailsTimer);
        this.detailsTimer = window.setTimeout(() => {
          void this.loadDetails(rank, eid).then((det) => {
            const cur = this.hover;
            if (det && cur && cur.slot === h.slot && cur.event === h.event) {
              this.renderTooltip(cur, det);
              this.positionTooltip(cur);
            }
          });
        }, 60);
      }
    } else {
      const bins: BinRow | undefined =
        slot.kind === "header" ? d.summaries.get(slot.rank) : (d.rows.get(slot.row) as BinRow | undefined);
      if (!bins) return;
      const k = h.bin;
      const a = d.lo + ((d.hi - d.lo) * k) / d.width;
      const b = d.lo + ((d.hi - d.lo) * (k + 1)) / d.width;
      const kind = bins.kind[k]!;
      title =
        slot.kind === "header"
          ? `rank ${slot.rank}: ${formatCount(bins.count[k]!)} events`
          : `${formatCount(bins.count[k]!)} events merged`;
      lines.push(["busy", `${(bins.frac[k]! * 100).toFixed(0)}% of ${formatDuration(b - a)}`]);
      if (kind !== NO_KIND)
        lines.push(["mostly", this.colors.label(this.model.get("_palette").kinds[kind]?.key ?? "")]);
      lines.push(["at", formatTime(a)]);
      if (bins.match && bins.match[k]! > 0) lines.push(["matches", formatCount(bins.match[k]!)]);
      lines.push(["", "zoom in to see the events"]);
    }
    this.tooltip.replaceChildren();
    el("div", "tv-tooltip-title", this.tooltip, title);
    const table = el("table", "", this.tooltip);
    for (const [k, v] of lines) {
      const tr = el("tr", "", table);
      el("th", "", tr, k);
      el("td", "", tr, v);
    }
    this.tooltip.hidden = false;
    this.root.dataset.hover = title;
  }

  private renderStatus(): void {
    this.status.classList.remove("tv-error");
    this.status.replaceChildren();
    const sel = this.selected;
    if (sel) {
      const d = sel.details;
      const line = el("div", "tv-status-line", this.status);
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
    const m = this.measure;
    if (m) {
      const lo = Math.min(m.a, m.b);
      const hi = Math.max(m.a, m.b);
      const line = el("div", "tv-status-line", this.status);
      el("b", "", line, "Range ");
      line.append(`${formatTime(lo)} → ${formatTime(hi)} (${formatDuration(hi - lo)})`);
      const s = this.summary;
      if (s) {
        line.append(
          ` · ${s.source === "cpu" ? "CPU" : "GPU"} busy ${s.all.pct.toFixed(1)}% over ${s.ranks.length} rank${s.ranks.length === 1 ? "" : "s"}`,
        );
        const table = el("table", "tv-summary", this.status);
        const head = el("tr", "", table);
        for (const h of ["kind", "busy", "% of range", "events"]) el("th", "", head, h);
        for (const k of s.kinds) {
          const tr = el("tr", "", table);
          const td = el("td", "", tr);
          const sw = el("span", "tv-swatch", td);
          sw.style.background = this.colors.kind(this.colors.code(k.kind));
          td.append(this.colors.label(k.kind));
          el("td", "", tr, formatDuration(k.busy_ns));
          el("td", "", tr, `${k.pct.toFixed(1)}%`);
          el("td", "", tr, formatCount(k.events));
        }
        if (s.top.length) {
          const top = el("div", "tv-status-line", this.status);
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
      el(
        "span",
        "tv-hint",
        this.status,
        "Click an event to select it · Shift+drag to measure a range · ? for keys",
      );
    }
  }

  // ---------------------------------------------------------------- drawing
  private invalidate(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Draw everything; returns the rectangles drawn. */
  draw(): number {
    const t = performance.now();
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const W = this.canvas.width / dpr;
    const H = this.canvas.height / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const th = this.theme;
    ctx.fillStyle = th.background;
    ctx.fillRect(0, 0, W, H);
    const s = this.scale();
    const tk = ticks(s.lo, s.hi, s.width);
    const c = ctx as Ctx;
    // Rows.
    const [first, last] = visibleSlots(this.layout, this.scrollTop, H - AXIS);
    const batch = new RectBatch();
    const labels: Label[] = [];
    const matches: number[] = [];
    const d = this.data;
    const byName = this.model.get("color_by") === "name";
    let rects = 0;
    let rawRects = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, W, H - AXIS);
    ctx.clip();
    // Gridlines under everything.
    ctx.strokeStyle = th.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const v of tk.values) {
      const x = Math.round(xOf(s, v)) + 0.5;
      ctx.moveTo(x, AXIS);
      ctx.lineTo(x, H);
    }
    ctx.stroke();
    for (let i = first; i < last; i++) {
      const slot = this.layout.slots[i]!;
      const y = this.slotY(slot);
      if (slot.kind === "header") {
        ctx.fillStyle = withAlpha(th.foreground, th.dark ? 0.06 : 0.04);
        ctx.fillRect(0, y, W, slot.h);
        const sm = d?.summaries.get(slot.rank);
        if (slot.collapsed && d && sm) {
          rects += layoutBinRow(
            sm,
            d.lo,
            d.hi,
            s,
            y + 2,
            slot.h - 3,
            { fill: (k) => this.colors.kind(sm.kind[k]!) },
            batch,
            matches,
          );
        }
        continue;
      }
      const row = d?.rows.get(slot.row);
      if (!row || !d) continue;
      const h = slot.h - 2;
      if (row.mode === "raw") {
        const names = d.names;
        const nameColors = d.nameColors;
        const nameMatch = d.nameMatch;
        const n = layoutRawRow(
          row,
          s,
          y + 1,
          h,
          {
            fill: byName
              ? (j) => this.colors.name(nameColors[row.name[j]!] ?? 0)
              : (j) => this.colors.kind(row.kind[j]!),
            text: byName
              ? (j) =>
                  this.colors.nameText[(nameColors[row.name[j]!] ?? 0) % this.colors.nameText.length] ??
                  "#000"
              : (j) => this.colors.kindText[row.kind[j]!] ?? "#000",
            label: slot.h >= 14 ? (j) => names[row.name[j]!] ?? "" : null,
            charWidth: this.charWidth,
            match: this.model.get("search") ? (j) => nameMatch[row.name[j]!] === true : null,
          },
          batch,
          labels,
          matches,
        );
        rects += n;
        rawRects += n;
      } else {
        const colorsOf = row.color;
        rects += layoutBinRow(
          row,
          d.lo,
          d.hi,
          s,
          y + 1,
          h,
          {
            fill:
              byName && colorsOf
                ? (k) =>
                    colorsOf[k]! !== NO_KIND ? this.colors.name(colorsOf[k]!) : this.colors.kind(row.kind[k]!)
                : (k) => this.colors.kind(row.kind[k]!),
          },
          batch,
          matches,
        );
      }
    }
    batch.flush(c);
    drawLabels(c, labels, this.font(11));
    drawMatches(c, matches, this.colors.highlight);
    this.drawSelection(s);
    // Hover outline.
    const hv = this.hover;
    if (hv && hv.event >= 0 && d) {
      const slot = this.layout.slots[hv.slot];
      const row = slot ? d.rows.get(slot.row) : undefined;
      if (slot && row && row.mode === "raw") {
        const x0 = Math.max(xOf(s, row.start[hv.event]!), GUTTER);
        const x1 = Math.min(xOf(s, row.start[hv.event]! + row.dur[hv.event]!), GUTTER + this.width);
        ctx.strokeStyle = th.foreground;
        ctx.lineWidth = 1;
        ctx.strokeRect(x0 - 0.5, this.slotY(slot) + 0.5, Math.max(x1 - x0, 1) + 1, slot.h - 1);
      }
    }
    // Steps and measured range over the rows.
    drawSteps(c, this.model.get("_steps"), s, AXIS, 0, H, withAlpha(th.muted, 0.8), this.font(10));
    const mr = this.measuring ?? this.measure;
    if (mr) {
      drawRange(c, xOf(s, mr.a), xOf(s, mr.b), AXIS, H, withAlpha(th.accent, 0.12), th.accent);
    }
    ctx.restore();
    // Label gutter.
    this.drawGutter(first, last, H);
    // Axis band with step numbers.
    drawAxis(c, tk, s, 0, AXIS, AXIS, {
      background: th.panel,
      foreground: th.foreground,
      muted: th.muted,
      grid: th.border,
      font: this.font(10),
    });
    drawSteps(c, this.model.get("_steps"), s, 0, AXIS - 1, AXIS, th.muted, this.font(10));
    ctx.fillStyle = th.panel;
    ctx.fillRect(0, 0, GUTTER, AXIS);
    ctx.fillStyle = th.muted;
    ctx.font = this.font(10);
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    ctx.fillText(`time since start · ${formatDuration(s.hi - s.lo)} shown`, 6, AXIS / 2);
    if (mr) {
      const xa = xOf(s, Math.min(mr.a, mr.b));
      const xb = xOf(s, Math.max(mr.a, mr.b));
      const text = formatDuration(Math.abs(mr.b - mr.a));
      ctx.font = this.font(11);
      const tw = ctx.measureText(text).width + 8;
      const x = Math.min(Math.max((xa + xb) / 2 - tw / 2, GUTTER), GUTTER + this.width - tw);
      ctx.fillStyle = th.accent;
      ctx.fillRect(x, AXIS - 16, tw, 15);
      ctx.fillStyle = "#ffffff";
      ctx.fillText(text, x + 4, AXIS - 8.5);
    }
    ctx.strokeStyle = th.border;
    ctx.beginPath();
    ctx.moveTo(0, AXIS - 0.5);
    ctx.lineTo(W, AXIS - 0.5);
    ctx.moveTo(GUTTER - 0.5, 0);
    ctx.lineTo(GUTTER - 0.5, H);
    ctx.stroke();
    const ms = performance.now() - t;
    this.root.dataset.drawMs = ms.toFixed(2);
    this.root.dataset.drawRects = String(rects);
    this.root.dataset.drawRawRects = String(rawRects);
    this.root.dataset.matchRects = String(matches.length / 4);
    this.root.dataset.range = `${this.range.lo},${this.range.hi}`;
    if (d && !this.firstPaint) {
      this.firstPaint = true;
      this.root.dataset.firstPaint = performance.now().toFixed(1);
      this.root.dataset.firstPaintSinceRender = (performance.now() - this.created).toFixed(1);
    }
    return rects;
  }

  private drawGutter(first: number, last: number, H: number): void {
    const ctx = this.ctx;
    const th = this.theme;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, GUTTER, H - AXIS);
    ctx.clip();
    ctx.fillStyle = th.panel;
    ctx.fillRect(0, AXIS, GUTTER, H - AXIS);
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (let i = first; i < last; i++) {
      const slot = this.layout.slots[i]!;
      const y = this.slotY(slot);
      if (slot.kind === "header") {
        ctx.fillStyle = withAlpha(th.foreground, th.dark ? 0.08 : 0.05);
        ctx.fillRect(0, y, GUTTER, slot.h);
        ctx.fillStyle = th.foreground;
        ctx.font = `600 ${this.font(12)}`;
        ctx.fillText(`${slot.collapsed ? "▸" : "▾"} ${slot.label}`, 6, y + slot.h / 2);
        continue;
      }
      if (!slot.label) continue;
      ctx.fillStyle = th.muted;
      ctx.font = this.font(11);
      const text =
        slot.label.length * this.charWidth > GUTTER - 24
          ? `${slot.label.slice(0, Math.floor((GUTTER - 24) / this.charWidth) - 1)}…`
          : slot.label;
      ctx.fillText(text, 16, y + slot.h / 2);
    }
    ctx.restore();
  }

  private drawSelection(s: Scale): void {
    const sel = this.selected;
    const det = sel?.details;
    if (!sel || !det) return;
    const ctx = this.ctx;
    const idx = det.row !== null ? this.layout.rowSlot.get(det.row) : undefined;
    if (idx === undefined) return;
    const slot = this.layout.slots[idx]!;
    const y = this.slotY(slot);
    const x0 = Math.max(xOf(s, det.start), GUTTER - 2);
    const x1 = Math.min(xOf(s, det.start + det.dur_ns), GUTTER + this.width + 2);
    ctx.strokeStyle = this.colors.selection;
    ctx.lineWidth = 2;
    ctx.setLineDash([]);
    ctx.strokeRect(x0 - 1, y, Math.max(x1 - x0, 1) + 2, slot.h);
    const launch = det.launch;
    if (launch && launch.row !== null) {
      const li = this.layout.rowSlot.get(launch.row);
      if (li !== undefined) {
        const ls = this.layout.slots[li]!;
        const ly = this.slotY(ls) + ls.h / 2;
        drawArrow(
          ctx,
          xOf(s, launch.start),
          ly,
          xOf(s, det.start),
          ly < y ? y : y + slot.h,
          this.colors.flow,
        );
      }
    }
  }
}
