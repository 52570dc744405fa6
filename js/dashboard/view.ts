/**
 * The dashboard view: tabs of figures, findings, tables and bokeh charts, and the timeline,
 * linked both ways. Host-agnostic: it reads its data through a `DashboardSource` and its
 * state (tab, expanded) through a `StateModel`, so `tv.Dashboard` (anywidget) and the
 * JupyterLab Traces sidebar (HTTP) share it. Only the DOM: no JupyterLab import.
 */
import { formatDuration, formatTimePrecise as formatTime } from "../format";
import type { TimelineModel } from "../timeline/messages";
import { type StateModel, LocalModel, type Invoke, type InvokeOptions } from "../timeline/state";
import { readTheme } from "../timeline/theme";
import { withRanks } from "../timeline/ranks";
import { TimelineView } from "../timeline/view";
import { type BokehJS, type Embedded, embed, linkFields, linkSources, loadBokeh } from "./bokeh";
import { evidenceLabel, formatCell, formatEvidence, formatOfKey, formatRanks } from "./format";
import type {
  Chart,
  DashboardPayload,
  DashboardSource,
  DashboardState,
  Figure,
  Finding,
  LinkAnswer,
  LinkRequest,
  ProgressReport,
  TabContent,
  TabRequest,
  Table,
  TimelineAnswer,
} from "./protocol";
import { el } from "../dom";

/** Options of a dashboard view. */
export interface DashboardOptions {
  /** Where the open tab is kept (tv.Dashboard: its `tab` trait); default: a LocalModel. */
  state?: StateModel<DashboardState>;
  /** Height of the timeline's lanes, px. */
  timelineHeight?: number;
}

/** The part of a rendered tab that must be cleaned up: its charts. */
interface Rendered {
  key: string;
  charts: Embedded[];
}

type ThemeName = "light" | "dark";

/** An `Invoke` (the timeline view's) over a source's `invoke`. */
export function invokerOf(source: DashboardSource): Invoke {
  return async <T>(name: string, msg?: unknown, options?: InvokeOptions): Promise<[T, DataView[]]> => {
    const signal = options?.signal;
    if (signal?.aborted) throw new DOMException("aborted", "AbortError");
    const call = source.invoke(name, msg ?? {}, options?.buffers, options);
    const answer = signal
      ? await Promise.race([
          call,
          new Promise<never>((_, reject) =>
            signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")), {
              once: true,
            }),
          ),
        ])
      : await call;
    return [answer.msg as T, answer.buffers];
  };
}

export class DashboardView {
  readonly root: HTMLDivElement;
  private readonly tabBar: HTMLDivElement;
  private readonly panels = new Map<string, HTMLDivElement>();
  private readonly buttons = new Map<string, HTMLButtonElement>();
  private readonly state: StateModel<DashboardState>;
  private readonly cache = new Map<string, Promise<TabContent>>();
  private readonly rendered = new Map<string, Rendered>();
  private readonly cleanups: (() => void)[] = [];
  private readonly abort = new AbortController();
  private readonly invoke: Invoke;
  private theme: ThemeName = "light";
  private seq = 0;
  private breakdownRange: [number, number] | null = null;
  private timeline: { view: TimelineView; model: StateModel<TimelineModel> } | null = null;
  private timelinePromise: Promise<{ view: TimelineView; model: StateModel<TimelineModel> }> | null = null;
  private progressFor: { tab: string; el: HTMLElement } | null = null;
  private disposed = false;

  constructor(
    parent: HTMLElement,
    private readonly source: DashboardSource,
    private readonly payload: DashboardPayload,
    private readonly options: DashboardOptions = {},
  ) {
    this.state = options.state ?? new LocalModel<DashboardState>({ tab: "overview", expanded: true });
    this.invoke = invokerOf(source);
    const root = el("div", "tvd-dashboard", parent);
    root.setAttribute("data-lm-suppress-shortcuts", "true");
    this.root = root;

    const head = el("div", "tvd-head", root);
    const title = el("div", "tvd-title", head);
    el("b", "", title, "Trace dashboard ");
    el("code", "tvd-source", title, payload.source);
    const chips = el("div", "tvd-chips", head);
    for (const f of payload.headline) renderChip(chips, f);

    this.tabBar = el("div", "tvd-tabs", root);
    this.tabBar.setAttribute("role", "tablist");
    for (const t of payload.tabs) {
      const b = el("button", "tvd-tab", this.tabBar, t.label);
      b.setAttribute("role", "tab");
      b.dataset.tab = t.id;
      b.addEventListener("click", () => this.show(t.id));
      this.buttons.set(t.id, b);
      const p = el("div", "tvd-panel", root);
      p.setAttribute("role", "tabpanel");
      p.dataset.tab = t.id;
      p.hidden = true;
      this.panels.set(t.id, p);
    }

    if (source.onProgress) this.cleanups.push(source.onProgress((r) => this.onProgress(r)));
    this.readTheme();
    const mo = new MutationObserver(() => this.onThemeMaybeChanged());
    mo.observe(document.body, {
      attributes: true,
      attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class"],
    });
    this.cleanups.push(() => mo.disconnect());
    const onTab = () => this.activate(this.state.get("tab"));
    this.state.on("change:tab", onTab);
    this.cleanups.push(() => this.state.off("change:tab", onTab));
    this.activate(this.state.get("tab"));
  }

  dispose(): void {
    this.disposed = true;
    this.abort.abort();
    for (const c of this.cleanups.splice(0)) c();
    for (const r of this.rendered.values()) for (const c of r.charts) c.dispose();
    this.rendered.clear();
    this.timeline?.view.dispose();
    this.root.remove();
  }

  /** Open a tab (and remember it in the state). */
  show(tab: string): void {
    if (this.state.get("tab") !== tab) {
      this.state.set("tab", tab);
      this.state.save_changes();
    }
    this.activate(tab);
  }

  private activate(tab: string): void {
    if (!this.panels.has(tab)) tab = this.payload.tabs[0]?.id ?? "overview";
    this.root.dataset.tab = tab;
    for (const [id, p] of this.panels) p.hidden = id !== tab;
    for (const [id, b] of this.buttons) {
      b.classList.toggle("tvd-active", id === tab);
      b.setAttribute("aria-selected", String(id === tab));
    }
    void this.render(tab);
  }

  // ---------------------------------------------------------------- theme
  private readTheme(): boolean {
    const t = readTheme(this.root);
    const name: ThemeName = t.dark ? "dark" : "light";
    this.root.classList.toggle("tvd-dark", t.dark);
    const changed = name !== this.theme;
    this.theme = name;
    this.root.dataset.theme = name;
    return changed;
  }

  private onThemeMaybeChanged(): void {
    // Wait a frame: JupyterLab swaps its stylesheet, then the variables apply.
    requestAnimationFrame(() => {
      if (this.disposed || !this.readTheme()) return;
      // Charts are themed in the kernel: draw them again in the new theme.
      for (const [tab, r] of this.rendered) {
        for (const c of r.charts) c.dispose();
        this.rendered.delete(tab);
      }
      void this.render(this.root.dataset.tab ?? "overview");
    });
  }

  // ---------------------------------------------------------------- tabs
  private keyOf(tab: string): string {
    const range = tab === "breakdown" && this.breakdownRange ? this.breakdownRange.join(",") : "";
    return `${tab}|${this.theme}|${range}`;
  }

  private fetchTab(tab: string): Promise<TabContent> {
    const key = this.keyOf(tab);
    let p = this.cache.get(key);
    if (!p) {
      const req: TabRequest = {
        seq: ++this.seq,
        tab,
        theme: this.theme,
        range: tab === "breakdown" ? this.breakdownRange : null,
      };
      p = this.invoke<TabContent>("_tab", req, { signal: this.abort.signal }).then(([c]) => {
        if (c.error) throw new Error(c.error);
        return c;
      });
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    return p;
  }

  private async render(tab: string): Promise<void> {
    const panel = this.panels.get(tab);
    if (!panel) return;
    if (tab === "timeline") {
      await this.renderTimeline(panel);
      return;
    }
    const key = this.keyOf(tab);
    const done = this.rendered.get(tab);
    if (done && done.key === key) return;
    if (done) {
      for (const c of done.charts) c.dispose();
      this.rendered.delete(tab);
    }
    const slot: Rendered = { key, charts: [] };
    this.rendered.set(tab, slot);
    panel.dataset.state = "loading";
    panel.replaceChildren();
    const loading = this.loadingLine(panel, `Computing ${this.labelOf(tab)}…`);
    this.progressFor = { tab, el: loading };
    const t = performance.now();
    let content: TabContent;
    try {
      content = await this.fetchTab(tab);
    } catch (err) {
      if (this.disposed || this.rendered.get(tab) !== slot) return;
      panel.replaceChildren();
      el(
        "div",
        "tvd-error",
        panel,
        `Could not compute this tab: ${String(err instanceof Error ? err.message : err)}`,
      );
      panel.dataset.state = "error";
      this.rendered.delete(tab);
      return;
    }
    if (this.disposed || this.rendered.get(tab) !== slot) return;
    this.clearProgress(tab);
    panel.replaceChildren();
    this.renderContent(panel, content);
    panel.dataset.computeMs = String(content.elapsed_ms);
    panel.dataset.readyMs = (performance.now() - t).toFixed(0);
    const charts = panel.querySelectorAll<HTMLDivElement>(".tvd-chart");
    if (!charts.length) {
      panel.dataset.state = "ready";
      return;
    }
    let bokeh: BokehJS;
    try {
      bokeh = await loadBokeh(this.source, this.payload.bokeh_version);
    } catch (err) {
      for (const c of charts) c.textContent = `Charts need BokehJS: ${String(err)}`;
      panel.dataset.state = "error";
      return;
    }
    await Promise.all(
      content.charts.map(async (chart, i) => {
        const host = charts[i];
        if (!host) return;
        try {
          const e = await embed(bokeh, chart.item, host);
          if (this.disposed || this.rendered.get(tab) !== slot) {
            e.dispose();
            return;
          }
          slot.charts.push(e);
          this.hookLinks(e, chart, content);
          host.dataset.drawn = "1";
        } catch (err) {
          host.textContent = `This chart could not be drawn: ${String(err)}`;
          host.dataset.drawn = "error";
        }
      }),
    );
    if (this.rendered.get(tab) === slot) {
      panel.dataset.state = "ready";
      panel.dataset.readyMs = (performance.now() - t).toFixed(0);
    }
  }

  private labelOf(tab: string): string {
    return this.payload.tabs.find((t) => t.id === tab)?.label ?? tab;
  }

  private loadingLine(panel: HTMLElement, text: string): HTMLElement {
    const box = el("div", "tvd-loading", panel);
    el("span", "tvd-spinner", box);
    const label = el("span", "tvd-loading-text", box, text);
    const bar = el("progress", "tvd-progress", box);
    bar.max = 1;
    bar.removeAttribute("value");
    const started = performance.now();
    const timer = window.setInterval(() => {
      if (!box.isConnected) {
        window.clearInterval(timer);
        return;
      }
      box.dataset.elapsed = ((performance.now() - started) / 1000).toFixed(1);
    }, 250);
    this.cleanups.push(() => window.clearInterval(timer));
    label.dataset.initial = text;
    return box;
  }

  private clearProgress(tab: string): void {
    if (this.progressFor && this.progressFor.tab === tab) this.progressFor = null;
  }

  private onProgress(r: ProgressReport): void {
    const p = this.progressFor;
    if (!p || r.command !== "_tab" || r.tab !== p.tab || !p.el.isConnected) return;
    const text = p.el.querySelector(".tvd-loading-text");
    const bar = p.el.querySelector("progress");
    if (text) text.textContent = `Computing ${this.labelOf(p.tab)}: ${r.label} (${r.done + 1}/${r.total})`;
    if (bar) {
      bar.max = Math.max(r.total, 1);
      bar.value = r.done;
    }
  }

  // ---------------------------------------------------------------- content
  private renderContent(panel: HTMLElement, c: TabContent): void {
    if (c.tab === "breakdown") this.renderRangeBanner(panel, c);
    if (c.figures.length) this.renderFigures(panel, c.figures);
    for (const n of c.notes) if (n) el("div", "tvd-note", panel, n);
    if (c.findings) this.renderFindings(panel, c.findings);
    if (c.checks?.length) this.renderChecks(panel, c.checks);
    if (c.charts.length) {
      const grid = el("div", "tvd-charts", panel);
      for (const ch of c.charts) {
        const box = el("div", `tvd-chart${ch.wide ? " tvd-wide" : ""}`, grid);
        box.dataset.chart = ch.id;
        if (ch.empty) box.dataset.empty = "1";
      }
    }
    for (const t of c.tables) this.renderTable(panel, t);
  }

  private renderRangeBanner(panel: HTMLElement, c: TabContent): void {
    const box = el("div", "tvd-banner", panel);
    if (c.range) {
      const [lo, hi] = c.range;
      box.append(
        `Range selected on the timeline: ${formatTime(lo)} → ${formatTime(hi)} (${formatDuration(hi - lo)}). `,
      );
      const clear = el("button", "tvd-button", box, "Whole trace");
      clear.addEventListener("click", () => this.clearRange());
    } else {
      box.append("Whole trace. Shift+drag a range on the Timeline tab to break that range down here.");
    }
  }

  private renderFigures(panel: HTMLElement, figures: Figure[]): void {
    const grid = el("div", "tvd-figures", panel);
    for (const f of figures) {
      const card = el("div", `tvd-figure${f.tone ? ` tvd-${f.tone}` : ""}`, grid);
      el("div", "tvd-figure-label", card, f.label);
      el("div", "tvd-figure-value", card, f.value);
      if (f.hint) el("div", "tvd-figure-hint", card, f.hint);
    }
  }

  private renderFindings(panel: HTMLElement, findings: Finding[]): void {
    const box = el("div", "tvd-findings", panel);
    el("h3", "tvd-h", box, findings.length ? `Findings (${findings.length})` : "Findings");
    if (!findings.length) {
      el("div", "tvd-note", box, "Nothing to report: no rule found time at stake in this trace.");
      return;
    }
    for (const f of findings) {
      const card = el("div", `tvd-finding tvd-sev-${f.severity}`, box);
      card.dataset.finding = f.id;
      const head = el("div", "tvd-finding-head", card);
      el("span", "tvd-badge", head, f.severity);
      el("b", "tvd-finding-title", head, f.title);
      if (f.stake) el("div", "tvd-finding-stake", card, f.stake);
      if (f.fix) el("div", "tvd-finding-fix", card, f.fix);
      el("div", "tvd-finding-detail", card, f.detail);
      if (f.ranks.length) {
        const ranks = el("div", "tvd-finding-ranks", card, "Ranks: ");
        const shown = f.ranks.slice(0, 32);
        for (const r of shown) {
          const b = el("button", "tvd-rank", ranks, String(r));
          b.title = `Show rank ${r} in the timeline`;
          b.addEventListener("click", () => void this.follow({ target: "rank", rank: r }));
        }
        if (f.ranks.length > shown.length) ranks.append(` … (${formatRanks(f.ranks)})`);
      }
      const details = el("details", "tvd-evidence", card);
      el("summary", "", details, "Evidence and rule");
      this.renderEvidence(details, f.evidence);
      el("div", "tvd-rule", details, `Rule: ${f.rule}`);
      el("div", "tvd-rule", details, `More: ${f.analysis}`);
    }
  }

  /** The rules that did not fire, each with why: "checked, fine" or "not applicable". */
  private renderChecks(panel: HTMLElement, checks: string[]): void {
    const box = el("details", "tvd-checks", panel);
    box.open = true;
    el("summary", "", box, `Checked, no finding (${checks.length} rules)`);
    const list = el("ul", "tvd-checks-list", box);
    for (const line of checks) el("li", "tvd-check", list, line);
  }

  private renderEvidence(parent: HTMLElement, evidence: Record<string, unknown>): void {
    const kv = el("table", "tvd-kv", parent);
    for (const [k, v] of Object.entries(evidence)) {
      if (Array.isArray(v) && v.length && typeof v[0] === "object" && v[0] !== null && !Array.isArray(v[0]))
        continue;
      const tr = el("tr", "", kv);
      el("th", "", tr, evidenceLabel(k));
      el("td", "", tr, formatEvidence(k, v));
    }
    // Lists of records (per_rank, kernels, ...) as tables.
    for (const [k, v] of Object.entries(evidence)) {
      if (!(
        Array.isArray(v) &&
        v.length &&
        typeof v[0] === "object" &&
        v[0] !== null &&
        !Array.isArray(v[0])
      ))
        continue;
      const rows = v as Record<string, unknown>[];
      const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
      el("div", "tvd-evidence-title", parent, k.replaceAll("_", " "));
      const t = el("table", "tvd-table tvd-compact", parent);
      const hr = el("tr", "", el("thead", "", t));
      for (const key of keys) el("th", "", hr, evidenceLabel(key));
      const body = el("tbody", "", t);
      for (const r of rows.slice(0, 64)) {
        const tr = el("tr", "", body);
        for (const key of keys) {
          const td = el("td", "", tr, formatEvidence(key, r[key] ?? ""));
          if (typeof r[key] === "number" && formatOfKey(key) !== "float") td.classList.add("tvd-num");
        }
      }
    }
  }

  private renderTable(panel: HTMLElement, t: Table): void {
    const box = el("div", "tvd-table-box", panel);
    box.dataset.table = t.id;
    const head = el("div", "tvd-table-title", box, t.title);
    if (t.total_rows > t.rows.length)
      el("span", "tvd-muted", head, ` (first ${t.rows.length} of ${t.total_rows})`);
    if (!t.rows.length) {
      el("div", "tvd-note", box, "No rows.");
      return;
    }
    const wrap = el("div", "tvd-table-scroll", box);
    const table = el("table", "tvd-table", wrap);
    const hr = el("tr", "", el("thead", "", table));
    const body = el("tbody", "", table);
    let order = t.rows.map((_, i) => i);
    let sortCol = -1;
    let asc = true;
    const fill = () => {
      body.replaceChildren();
      for (const i of order) {
        const row = t.rows[i]!;
        const tr = el("tr", "", body);
        t.columns.forEach((c, j) => {
          const v = row[j];
          const text = formatCell(v, c.format);
          const isText = c.format === "text" || c.format === "name";
          const td = el("td", isText ? "" : "tvd-num", tr, text);
          // A name column holds short names (format.label_names); the full one shows on hover.
          const full = t.full[c.key]?.[i];
          if (full !== undefined) {
            td.title = full;
            td.classList.add("tvd-name");
          } else if (c.format === "text" && text.length > 70) {
            // Long names (C++ kernel signatures) wrap in full: their ends tell kernels apart.
            td.classList.add("tvd-long");
            td.title = text;
          }
        });
      }
    };
    t.columns.forEach((c, j) => {
      const th = el("th", c.format === "text" || c.format === "name" ? "" : "tvd-num", hr, c.label);
      th.title = "Sort";
      th.addEventListener("click", () => {
        asc = sortCol === j ? !asc : c.format === "text";
        sortCol = j;
        order = t.rows
          .map((_, i) => i)
          .sort((a, b) => {
            // Name columns sort by the full names (their short ones may reorder).
            const names = t.full[c.key];
            const x = names ? names[a] : t.rows[a]![j];
            const y = names ? names[b] : t.rows[b]![j];
            const cmp =
              typeof x === "number" && typeof y === "number" ? x - y : cellText(x).localeCompare(cellText(y));
            return asc ? cmp : -cmp;
          });
        fill();
      });
    });
    fill();
  }

  // ---------------------------------------------------------------- links
  private hookLinks(e: Embedded, chart: Chart, content: TabContent): void {
    for (const { source, target } of linkSources(e.models)) {
      const selected = source.selected;
      const slot = () => {
        const i = selected.indices[0];
        if (i === undefined) return;
        const fields = linkFields(source, i);
        // Clear the selection so that clicking the same bar again follows it again.
        selected.indices = [];
        const req = { target, ...fields } as unknown as LinkRequest;
        if (target === "rank" || target === "kernel") req.range = content.range;
        this.root.dataset.lastLink = JSON.stringify({ chart: chart.id, ...req });
        void this.follow(req);
      };
      selected.change.connect(slot);
    }
  }

  /** Follow a link: ask where it goes, move the timeline there and show it. */
  async follow(req: LinkRequest): Promise<void> {
    try {
      const [answer] = await this.invoke<LinkAnswer>("_link", req, { signal: this.abort.signal });
      if (answer.error) throw new Error(answer.error);
      const tl = await this.ensureTimeline();
      const m = tl.model;
      // The other ranks stay; the link's rank is emphasised (js/timeline/ranks.ts).
      m.set("ranks", withRanks(m.get("ranks"), answer.ranks));
      m.set("focus_rank", answer.focus);
      m.set("x_range", answer.x_range);
      if (answer.search !== undefined) m.set("search", answer.search);
      m.save_changes();
      this.show("timeline");
      if (answer.memory !== undefined) tl.view.revealMemory(answer.memory);
    } catch (err) {
      if (this.disposed) return;
      this.flash(`Could not follow the link: ${String(err instanceof Error ? err.message : err)}`);
    }
  }

  private flash(message: string): void {
    const box = el("div", "tvd-error tvd-flash", this.root, message);
    window.setTimeout(() => box.remove(), 6000);
  }

  private clearRange(): void {
    const m = this.timeline?.model;
    if (m) {
      m.set("selected_range", []);
      m.save_changes();
    }
    this.setRange(null);
  }

  private setRange(range: [number, number] | null): void {
    const same =
      (range === null && this.breakdownRange === null) ||
      (range !== null &&
        this.breakdownRange !== null &&
        range[0] === this.breakdownRange[0] &&
        range[1] === this.breakdownRange[1]);
    if (same) return;
    this.breakdownRange = range;
    const b = this.buttons.get("breakdown");
    if (b) b.classList.toggle("tvd-ranged", range !== null);
    if (this.root.dataset.tab === "breakdown") void this.render("breakdown");
  }

  // ---------------------------------------------------------------- timeline
  private ensureTimeline(): Promise<{ view: TimelineView; model: StateModel<TimelineModel> }> {
    if (!this.timelinePromise) {
      this.timelinePromise = (async () => {
        const [answer] = await this.invoke<TimelineAnswer>("_timeline", {}, { signal: this.abort.signal });
        if (answer.error) throw new Error(answer.error);
        let model: StateModel<TimelineModel>;
        if (this.source.timelineModel) model = await this.source.timelineModel(answer);
        else if (answer.state) model = new LocalModel<TimelineModel>(answer.state);
        else throw new Error("the answer to _timeline holds no state");
        if (this.options.timelineHeight) model.set("height", this.options.timelineHeight);
        const panel = this.panels.get("timeline")!;
        panel.replaceChildren();
        const view = new TimelineView(model, panel, this.invoke);
        const onRange = () => {
          const r = model.get("selected_range");
          const a = r[0];
          const b = r[1];
          this.setRange(
            r.length === 2 && a !== undefined && b !== undefined && b !== a
              ? [Math.min(a, b), Math.max(a, b)]
              : null,
          );
        };
        model.on("change:selected_range", onRange);
        this.cleanups.push(() => model.off("change:selected_range", onRange));
        onRange();
        const tl = { view, model };
        this.timeline = tl;
        return tl;
      })();
      this.timelinePromise.catch(() => {
        this.timelinePromise = null;
      });
    }
    return this.timelinePromise;
  }

  private async renderTimeline(panel: HTMLElement): Promise<void> {
    if (this.timeline) {
      panel.dataset.state = "ready";
      return;
    }
    if (!panel.childElementCount) this.loadingLine(panel, "Building the timeline index…");
    panel.dataset.state = "loading";
    try {
      await this.ensureTimeline();
      panel.dataset.state = "ready";
    } catch (err) {
      if (this.disposed) return;
      panel.replaceChildren();
      el(
        "div",
        "tvd-error",
        panel,
        `Could not open the timeline: ${String(err instanceof Error ? err.message : err)}`,
      );
      panel.dataset.state = "error";
    }
  }
}

/** A cell value as text for sorting. */
function cellText(v: unknown): string {
  if (v === null || v === undefined) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * A headline figure as a chip of the header or the card, its meaning on hover. A warning
 * (skipped trace files, a partial run: `tone` "warn") is a badge: "⚠ skipped …".
 */
function renderChip(parent: HTMLElement, f: Figure): void {
  const warn = f.tone === "warn";
  const c = el("span", warn ? "tvd-chip tvd-chip-warn" : "tvd-chip", parent);
  if (warn) c.setAttribute("role", "status");
  el("span", "tvd-chip-label", c, warn ? `⚠ ${f.label}` : f.label);
  c.append(` ${f.value}`);
  if (f.hint) c.title = f.hint;
}

/** The compact card `trace` shows on the last line of a cell: headline figures and a button. */
export function renderCard(parent: HTMLElement, payload: DashboardPayload, onOpen: () => void): () => void {
  const card = el("div", "tvd-card", parent);
  const head = el("div", "tvd-title", card);
  el("b", "", head, "Trace ");
  el("code", "tvd-source", head, payload.source);
  const chips = el("div", "tvd-chips", card);
  for (const f of payload.headline) renderChip(chips, f);
  const open = el("button", "tvd-button tvd-primary", card, "Open dashboard");
  open.title = "Figures, findings, charts and the timeline of this trace";
  open.addEventListener("click", onOpen);
  const dark = readTheme(card).dark;
  card.classList.toggle("tvd-dark", dark);
  return () => card.remove();
}
