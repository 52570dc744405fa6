/**
 * The timeline view: owns the state and the DOM, and composes its parts: `Fetcher` (window
 * requests to the kernel), `Input` (pointer and keys), `Tooltip`, `Toolbar` (and the status
 * panel) and `drawFrame`. Uses only the DOM, a `StateModel` (an anywidget model or a
 * `LocalModel`) and an `Invoke` function answering the timeline's commands (no JupyterLab
 * import), so it works in JupyterLab, Notebook 7 and VS Code, inside `tv.Timeline`,
 * `tv.Dashboard` or the Traces sidebar.
 */
import { Colors } from "./colors";
import { laneKind } from "./lanes";
import type { Wants } from "./lanes/kind";
import { memoryOnScreen } from "./lanes/memory";
import { Fetcher } from "./fetcher";
import { drawFrame } from "./frame";
import { type Hover, type Measure, type Selected, type ViewHost, AXIS, GUTTER, SCROLLBAR } from "./host";
import { Input } from "./input";
import { RankPicker, displayOrder } from "./ranks";
import { HelpOverlay, MeasureOverlay } from "./overlays";
import { type Layout, computeLayout, visibleSlots } from "./layout";
import type { EventDetails, FoldSummary, LaneMeta, RangeSummary, TimelineModel } from "./messages";
import type { WindowData } from "./protocol";
import type { Invoke, StateModel } from "./state";
import { type Theme, readTheme } from "./theme";
import { Tooltip } from "./tooltip";
import { Toolbar, renderStatus } from "./toolbar";
import { Sizer, pageStorage, storageKey } from "./resize";
import { CollectiveHighlight, type FoundInstance, collectiveText } from "./collective";
import { ViewHistory } from "./history";
import { type Limits, type Range, fitRange, limitsFor } from "./viewport";
import { el } from "../dom";

/** What a host without a kernel may add (the HTML report, js/report/index.ts). */
export interface ViewExtras {
  /** Names of the events starting in `[a, b)` of a row or of a rank's rows (tooltips of merged columns). */
  binNames?: (target: { rank: number } | { row: number }, a: number, b: number) => [string, number][];
}

/** A view to go back to. */
interface View {
  ranks: number[];
  range: Range;
  focus: number | null;
}

export class TimelineView implements ViewHost {
  readonly root: HTMLDivElement;
  readonly scroller: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  private readonly spacer: HTMLDivElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly status: HTMLDivElement;
  private readonly abort = new AbortController();
  private readonly cleanups: (() => void)[] = [];
  private readonly fetcher: Fetcher;
  private readonly input: Input;
  private readonly tooltip: Tooltip;
  private readonly toolbar: Toolbar;
  private readonly help: HelpOverlay;
  private readonly measurePanel: MeasureOverlay;
  private readonly sizer: Sizer;
  private readonly collectives: CollectiveHighlight;
  /** The rank picker and the focused rank's band (ranks.ts); null until built. */
  private rankPicker: RankPicker | null = null;
  /** Room kept under the last lane for the focused rank (ranks.ts, `focusScroll`), px. */
  private focusRoom = 0;

  theme!: Theme;
  colors!: Colors;
  layout!: Layout;
  lanes = new Map<number, LaneMeta>();
  limits: Limits;
  range: Range;
  width = 0;
  viewHeight = 0;
  scrollTop = 0;
  hover: Hover | null = null;
  selected: Selected | null = null;
  measuring: Measure | null = null;
  measure: Measure | null = null;
  charWidth = 6.5;
  private summary: RangeSummary | null = null;
  binNames?: (target: { rank: number } | { row: number }, a: number, b: number) => [string, number][];
  /** The match the last search step selected (see `findNext`). */
  private lastMatch: { rank: number; eid: number; start: number; pattern: string } | null = null;
  /** Views to go back and forward to (ranks, range, emphasis), pushed when they change from outside or by "All ranks". */
  private readonly history = new ViewHistory<View>();
  private historyBatch = false;
  private restoring = false;
  private shownRanks: number[] = [];
  private shownFocus: number | null = null;
  private lastSentRange: [number, number] | null = null;
  private rangeSyncTimer = 0;
  private frame = 0;
  private firstPaint = false;
  private readonly created = performance.now();

  constructor(
    readonly model: StateModel<TimelineModel>,
    parent: HTMLElement,
    invoke: Invoke,
    extras: ViewExtras = {},
  ) {
    if (extras.binNames) this.binNames = extras.binNames;
    const root = el("div", "tv-timeline", parent);
    root.tabIndex = 0;
    // JupyterLab / Notebook 7: keys typed in the widget are not notebook shortcuts.
    root.setAttribute("data-lm-suppress-shortcuts", "true");
    root.setAttribute("role", "application");
    root.setAttribute("aria-label", "Trace timeline");
    this.root = root;

    const on = (
      target: EventTarget,
      type: string,
      fn: (e: Event) => void,
      opts?: AddEventListenerOptions,
    ) => {
      target.addEventListener(type, fn, opts);
      this.cleanups.push(() => target.removeEventListener(type, fn, opts));
    };
    this.toolbar = new Toolbar(this, root, on, {
      findNext: (direction) => void this.findNext(direction),
      fit: () => this.setRange(fitRange(this.limits)),
      help: () => this.toggleHelp(),
      allRanks: () => this.save("ranks", [...this.model.get("_all_ranks")]),
      back: () => this.back(),
      forward: () => this.forward(),
    });
    // The plot and the panels over it (help, measured range).
    const stage = el("div", "tv-stage", root);
    this.scroller = el("div", "tv-scroller", stage);
    this.canvas = el("canvas", "tv-canvas", this.scroller);
    this.spacer = el("div", "tv-spacer", this.scroller);
    this.tooltip = new Tooltip(this, this.scroller);
    this.measurePanel = new MeasureOverlay(this, stage, () => this.save("selected_range", []));
    this.help = new HelpOverlay(stage, () => this.toggleHelp(false));
    // The resize handle under the plot (resize.ts: the height and where it is remembered).
    this.sizer = new Sizer(
      {
        // Asked for once the layout exists (resize() runs after rebuildLayout()).
        contentHeight: () => this.layout.height + AXIS,
        applyHeight: () => this.resize(),
        saveHeight: (h) => this.save("height", h),
      },
      root,
      this.model.get("height"),
      storageKey(this.model.get("_height_key") || window.location.pathname),
      pageStorage(),
      on,
    );
    this.status = el("div", "tv-status", root);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) throw new Error("canvas 2D is not available");
    this.ctx = ctx;
    this.input = new Input(this);
    this.collectives = new CollectiveHighlight(
      { root, invalidate: () => this.invalidate(), statusChanged: () => this.renderStatus() },
      invoke,
      this.abort.signal,
    );
    this.fetcher = new Fetcher(invoke, this.abort.signal, root, {
      want: () => (this.width <= 0 ? null : this.want()),
      onData: () => this.invalidate(),
      onError: (message) => this.showError(message),
      extent: () => this.limits,
    });

    const span = this.model.get("_span");
    this.limits = limitsFor(span[0], span[1]);
    const xr = this.model.get("x_range");
    this.range = { lo: xr[0], hi: xr[1] };
    this.shownRanks = [...this.model.get("ranks")];
    this.shownFocus = this.model.get("focus_rank");
    // A timeline opened on a link (its first dashboard or findings link, or show_range before
    // it was shown) can go back to the view it would have opened on: the whole trace.
    const full = fitRange(this.limits);
    if (this.range.lo !== full.lo || this.range.hi !== full.hi || this.shownFocus !== null)
      this.history.push({ ranks: [...this.shownRanks], range: full, focus: null });

    this.readTheme();
    this.rebuildLayout();
    this.syncToolbar();
    this.toolbar.renderLegend();

    // Events.
    const input = this.input;
    on(this.canvas, "wheel", (e) => input.onWheel(e as WheelEvent), { passive: false });
    on(this.canvas, "mousedown", (e) => input.onMouseDown(e as MouseEvent));
    on(window, "mousemove", (e) => input.onMouseMove(e as MouseEvent));
    on(window, "mouseup", (e) => input.onMouseUp(e as MouseEvent));
    on(this.canvas, "mouseleave", () => this.setHover(null));
    on(this.canvas, "dblclick", (e) => input.onDoubleClick(e as MouseEvent));
    on(root, "keydown", (e) => input.onKey(e as KeyboardEvent));
    on(this.scroller, "scroll", () => {
      this.scrollTop = this.scroller.scrollTop;
      this.invalidate();
      this.fetcher.maybeRequest();
    });

    const modelEvents: [string, () => void][] = [
      ["change:x_range", () => this.onModelRange()],
      ["change:ranks", () => this.onRanks()],
      ["change:collapsed", () => this.onStructure()],
      ["change:cpu_collapsed", () => this.onStructure()],
      ["change:pinned", () => this.onStructure()],
      ["change:focus_rank", () => this.onFocus()],
      ["change:show_cpu", () => this.onStructure()],
      ["change:color_by", () => this.onStyle()],
      ["change:search", () => this.onSearchChanged()],
      ["change:_search_count", () => this.syncToolbar()],
      ["change:selected_event", () => this.onModelSelection()],
      ["change:selected_range", () => this.onModelRangeSelection()],
      ["change:height", () => this.sizer.onModelHeight(this.model.get("height"))],
    ];
    for (const [name, fn] of modelEvents) {
      this.model.on(name, fn);
      this.cleanups.push(() => this.model.off(name, fn));
    }

    // After the view's own listeners: the picker reads the layout they rebuild.
    this.rankPicker = new RankPicker(this, this.toolbar.allRanksButton, stage, on, invoke, this.abort.signal);
    this.rankPicker.onFocus();

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
    this.toolbar.dispose();
    this.tooltip.dispose();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.root.remove();
  }

  get data(): WindowData | null {
    return this.fetcher.data;
  }

  get collective(): FoundInstance | null {
    return this.collectives.instance;
  }

  get dataPattern(): string {
    return this.fetcher.dataPattern;
  }

  get foldsSupported(): boolean {
    return this.fetcher.foldsSupported;
  }

  // ---------------------------------------------------------------- model plumbing
  save<K extends keyof TimelineModel>(key: K, value: TimelineModel[K]): void {
    this.model.set(key, value);
    this.model.save_changes();
  }

  private readTheme(): void {
    this.theme = readTheme(this.root);
    this.colors = new Colors(this.model.get("_palette"), this.theme.dark);
    this.root.classList.toggle("tv-dark", this.theme.dark);
    this.ctx.font = this.font(11);
    this.charWidth = this.ctx.measureText("abcdefghijklmnopqrstuvwxyz_:").width / 28;
    if (this.toolbar.hasLegend) this.toolbar.renderLegend();
  }

  font(px: number): string {
    return `${px}px ${this.theme.font}`;
  }

  private rebuildLayout(): void {
    const lanes = this.model.get("_lanes");
    this.lanes = new Map(lanes.map((l) => [l.id, l]));
    this.layout = computeLayout(
      this.model.get("_rows"),
      lanes,
      displayOrder(this.model.get("ranks"), this.model.get("pinned")),
      new Set(this.model.get("collapsed")),
      this.model.get("show_cpu"),
      undefined,
      this.model.get("_memory"),
      new Set(this.model.get("cpu_collapsed")),
    );
    this.placeSpacer();
    this.rankPicker?.layoutChanged();
  }

  /** The scroller's content: the lanes, plus the room a focused rank near the end needs to reach the top. */
  private placeSpacer(): void {
    this.spacer.style.height = `${Math.max(0, this.layout.height + this.focusRoom + AXIS - this.viewHeight)}px`;
  }

  setFocusRoom(px: number): void {
    if (px === this.focusRoom) return;
    this.focusRoom = px;
    this.placeSpacer();
  }

  private onRanks(): void {
    this.remember(this.currentView());
    this.shownRanks = [...this.model.get("ranks")];
    this.onStructure();
  }

  private onFocus(): void {
    this.remember(this.currentView());
    this.shownFocus = this.model.get("focus_rank");
    this.rankPicker?.onFocus();
  }

  /** The view shown before the change being handled (ranks, range, emphasised rank). */
  private currentView(): View {
    return { ranks: this.shownRanks, range: this.range, focus: this.shownFocus };
  }

  /** Keep `view` to go back to (changes arriving together, e.g. a link's ranks and range, make one entry). */
  private remember(view: View): void {
    if (this.restoring || this.historyBatch) return;
    this.history.push({ ranks: [...view.ranks], range: { ...view.range }, focus: view.focus });
    this.historyBatch = true;
    window.setTimeout(() => {
      this.historyBatch = false;
    }, 0);
    this.syncToolbar();
  }

  /** Return to the previous view (Back, Alt+←, Backspace). */
  back(): void {
    this.restore(this.history.back(this.viewNow()));
  }

  /** Return to the view Back left (Forward, Alt+→). */
  forward(): void {
    this.restore(this.history.forward(this.viewNow()));
  }

  /** The view on screen now (the range as drawn, not as last synced). */
  private viewNow(): View {
    return { ranks: [...this.shownRanks], range: { ...this.range }, focus: this.shownFocus };
  }

  private restore(prev: View | null): void {
    if (!prev) return;
    this.restoring = true;
    try {
      this.save("ranks", prev.ranks);
      this.shownRanks = [...prev.ranks];
      this.save("focus_rank", prev.focus);
      this.shownFocus = prev.focus;
      this.setRange(prev.range);
    } finally {
      this.restoring = false;
    }
    this.syncToolbar();
  }

  private syncToolbar(): void {
    this.toolbar.sync(this.history.canBack, this.history.canForward);
    this.root.dataset.history = `${this.history.canBack ? 1 : 0}${this.history.canForward ? 1 : 0}`;
  }

  private onStructure(): void {
    this.rebuildLayout();
    if (this.sizer.automatic) this.resize();
    this.syncToolbar();
    this.invalidate();
    this.fetcher.maybeRequest(true);
  }

  private onStyle(): void {
    this.syncToolbar();
    this.toolbar.renderLegend();
    this.invalidate();
    this.fetcher.maybeRequest(true);
  }

  private onSearchChanged(): void {
    this.syncToolbar();
    this.fetcher.maybeRequest(true);
  }

  private onModelRange(): void {
    const xr = this.model.get("x_range");
    if (this.lastSentRange && xr[0] === this.lastSentRange[0] && xr[1] === this.lastSentRange[1]) return;
    this.remember(this.currentView());
    this.range = { lo: xr[0], hi: Math.max(xr[1], xr[0] + 1) };
    this.invalidate();
    this.fetcher.maybeRequest();
  }

  private onModelSelection(): void {
    const sel = this.model.get("selected_event");
    if (sel.rank === undefined || sel.eid === undefined) {
      this.selected = null;
      void this.collectives.select(null, null, null);
    } else if (!this.selected || this.selected.rank !== sel.rank || this.selected.eid !== sel.eid) {
      this.selected = { rank: sel.rank, eid: sel.eid, details: null };
      void this.details(sel.rank, sel.eid).then((d) => {
        if (this.selected && this.selected.rank === sel.rank && this.selected.eid === sel.eid) {
          this.selected.details = d;
          void this.collectives.select(sel.rank, sel.eid, d?.kind ?? null);
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
  setRange(r: Range): void {
    this.range = r;
    this.invalidate();
    this.fetcher.maybeRequest();
    window.clearTimeout(this.rangeSyncTimer);
    this.rangeSyncTimer = window.setTimeout(() => {
      this.lastSentRange = [this.range.lo, this.range.hi];
      this.save("x_range", [this.range.lo, this.range.hi]);
    }, 150);
  }

  // ---------------------------------------------------------------- geometry
  private resize(): void {
    const height = this.sizer.height();
    this.scroller.style.height = `${height}px`;
    this.root.dataset.height = String(height);
    const w = Math.max(200, this.scroller.clientWidth);
    const h = Math.max(60, this.scroller.clientHeight);
    const dpr = window.devicePixelRatio || 1;
    if (
      w === this.width + GUTTER + SCROLLBAR &&
      h === this.viewHeight &&
      this.canvas.width === Math.round(w * dpr)
    ) {
      this.rankPicker?.shown();
      return;
    }
    this.width = Math.max(50, w - GUTTER - SCROLLBAR);
    this.viewHeight = h;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.placeSpacer();
    this.rankPicker?.layoutChanged();
    this.invalidate();
    this.fetcher.maybeRequest(true);
  }

  // ---------------------------------------------------------------- requests
  /** The window the view needs: visible rows and collapsed ranks' summaries (with some slack). */
  private want() {
    const [a, b] = visibleSlots(this.layout, this.scrollTop - 100, this.viewHeight + 200);
    const w: Wants = { rows: [], summaries: [], memory: [], folds: [] };
    for (let i = a; i < b; i++) {
      const s = this.layout.slots[i]!;
      laneKind(s).want(this, s, w);
    }
    return {
      range: this.range,
      width: this.width,
      ...w,
      pattern: this.model.get("search"),
      nameColors: this.model.get("color_by") === "name",
    };
  }

  private showError(message: string): void {
    this.status.textContent = `Error from the kernel: ${message}`;
    this.status.classList.add("tv-error");
  }

  details(rank: number, eid: number): Promise<EventDetails | null> {
    return this.fetcher.details(rank, eid);
  }

  fold(rank: number, lo: number, hi: number): Promise<FoldSummary | null> {
    return this.fetcher.fold(rank, lo, hi);
  }

  private async loadSummary(): Promise<void> {
    const m = this.measure;
    if (!m) return;
    const ranks = this.model.get("ranks");
    try {
      const s = await this.fetcher.summary(Math.min(m.a, m.b), Math.max(m.a, m.b), ranks);
      if (this.measure !== m) return;
      this.summary = s;
      this.renderStatus();
    } catch {
      /* aborted or kernel gone: keep the measurement without its summary */
    }
  }

  // ---------------------------------------------------------------- search
  /**
   * Select the next (1) or previous (-1) match in time order. The walk starts at the trace's
   * earliest match (or latest, backwards) and goes on from the match it selected last, as
   * long as that match is still the selection and the pattern has not changed.
   */
  private async findNext(direction: number): Promise<void> {
    const pattern = this.model.get("search");
    if (!pattern) return;
    const last = this.lastMatch;
    const sel = this.selected;
    // A match known to its bin only (eid < 0, the HTML report) is never selected: go on from it.
    const continuing =
      last !== null &&
      last.pattern === pattern &&
      (last.eid < 0 || (sel !== null && sel.rank === last.rank && sel.eid === last.eid));
    const from = continuing ? last.start : direction > 0 ? this.limits.start - 1 : this.limits.end + 1;
    const shown = new Set(this.model.get("ranks"));
    const rows = this.model
      .get("_rows")
      .filter((r) => shown.has(r.rank))
      .map((r) => r.id);
    const res = await this.fetcher.find(pattern, from, direction, rows);
    if (!res.found || res.rank === undefined || res.eid === undefined || res.row === undefined) {
      this.toolbar.searchCount.textContent = "no more matches";
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
    this.lastMatch = { rank: res.rank, eid: res.eid, start, pattern };
    this.root.dataset.matchStart = String(start);
    // eid < 0: a match known to its bin only (the HTML report): shown, not selected.
    if (res.eid >= 0) this.select(res.rank, res.eid);
  }

  /** Make memory lane `id` visible: show and expand its rank, scroll to the lane. */
  revealMemory(id: number): void {
    const meta = this.model.get("_memory").find((c) => c.id === id);
    if (!meta) return;
    const ranks = this.model.get("ranks");
    if (!ranks.includes(meta.rank))
      this.save(
        "ranks",
        [...ranks, meta.rank].sort((x, y) => x - y),
      );
    const collapsed = this.model.get("collapsed");
    if (collapsed.includes(meta.rank))
      this.save(
        "collapsed",
        collapsed.filter((r) => r !== meta.rank),
      );
    this.rebuildLayout();
    const idx = this.layout.memorySlot.get(id);
    if (idx === undefined) return;
    const slot = this.layout.slots[idx]!;
    const visibleH = this.viewHeight - AXIS;
    if (slot.y < this.scrollTop || slot.y + slot.h > this.scrollTop + visibleH) {
      this.scroller.scrollTop = Math.max(0, slot.y + slot.h - visibleH + 8);
      this.scrollTop = this.scroller.scrollTop;
    }
    this.invalidate();
    this.fetcher.maybeRequest(true);
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
    const folded = this.model.get("cpu_collapsed");
    if (meta.type === "cpu" && folded.includes(meta.rank))
      this.save(
        "cpu_collapsed",
        folded.filter((r) => r !== meta.rank),
      );
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

  // ---------------------------------------------------------------- selection and hover
  select(rank: number, eid: number): void {
    this.save("selected_event", { rank, eid });
  }

  clearSelection(): void {
    if (this.model.get("selected_event").eid !== undefined) this.save("selected_event", {});
  }

  setHover(h: Hover | null): void {
    const same =
      (h === null && this.hover === null) ||
      (h !== null &&
        this.hover !== null &&
        h.slot === this.hover.slot &&
        h.event === this.hover.event &&
        h.bin === this.hover.bin);
    this.hover = h;
    if (!h) {
      this.tooltip.hide();
      this.invalidate();
      return;
    }
    this.tooltip.position(h);
    if (!same) {
      this.tooltip.render(h);
      this.invalidate();
    }
  }

  private renderStatus(): void {
    renderStatus(this.status, this.selected, this.measure);
    const coll = this.collectives.instance;
    if (coll && this.selected)
      el("div", "tv-status-line tv-collective-line", this.status, collectiveText(coll));
    this.measurePanel.render(this.measure, this.summary);
  }

  get helpOpen(): boolean {
    return this.help.open;
  }

  toggleHelp(show?: boolean): void {
    this.help.toggle(show);
    this.root.dataset.help = this.help.open ? "1" : "0";
  }

  // ---------------------------------------------------------------- drawing
  invalidate(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Draw everything; returns the rectangles drawn. */
  draw(): number {
    const t = performance.now();
    const stats = drawFrame(this, this.ctx);
    const ds = this.root.dataset;
    ds.drawMs = (performance.now() - t).toFixed(2);
    ds.drawRects = String(stats.rects);
    ds.drawRawRects = String(stats.rawRects);
    ds.matchRects = String(stats.matchRects);
    ds.dimmed = String(stats.dimmed);
    ds.collectiveDrawn = String(stats.collectiveRanks);
    ds.range = `${this.range.lo},${this.range.hi}`;
    ds.memoryLanes = JSON.stringify(memoryOnScreen(this));
    if (this.data && !this.firstPaint) {
      this.firstPaint = true;
      ds.firstPaint = performance.now().toFixed(1);
      ds.firstPaintSinceRender = (performance.now() - this.created).toFixed(1);
    }
    return stats.rects;
  }
}
