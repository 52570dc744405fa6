/**
 * The Traces sidebar's model: the runs the server lists, the filter, the selection and the
 * live refresh. No DOM: the view (panel.ts) renders it and reports the user's actions.
 */
import type { IDisposable } from "@lumino/disposable";
import { Signal } from "@lumino/signaling";
import type { ISignal } from "@lumino/signaling";

import { matchesFilter } from "./format";
import { DEFAULT_SETTINGS, TracesApiError } from "./tokens";
import type { BaselineRef, RunRow } from "./messages";
import type { ITracesApi, ITracesModel, SelectMode, TracesSettings } from "./tokens";

/** Seconds between refreshes while some run is being analysed (progress moves). */
export const BUSY_INTERVAL_S = 1;

/** Newest first, then by path. */
function newestFirst(a: RunRow, b: RunRow): number {
  return b.mtime - a.mtime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

/** Does `run` match every whitespace-separated term of `filter` (case-insensitive)? */
export function matches(run: RunRow, filter: string): boolean {
  return matchesFilter(`${run.path} ${run.kind} ${run.status}`, filter);
}

export class TracesModel implements ITracesModel, IDisposable {
  constructor(api: ITracesApi, settings: TracesSettings = DEFAULT_SETTINGS) {
    this._api = api;
    this._settings = { ...settings, roots: [...settings.roots] };
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get runs(): readonly RunRow[] {
    return this._runs;
  }

  get visibleRuns(): readonly RunRow[] {
    if (this._visible === null) this._visible = this._runs.filter((r) => matches(r, this._filter));
    return this._visible;
  }

  get selectedRuns(): readonly RunRow[] {
    const byPath = new Map(this._runs.map((r) => [r.path, r]));
    return this._selected.map((p) => byPath.get(p)).filter((r): r is RunRow => r !== undefined);
  }

  get activeRun(): RunRow | null {
    return this._runs.find((r) => r.path === this._active) ?? null;
  }

  /** Whether `path` is selected. */
  isSelected(path: string): boolean {
    return this._selected.includes(path);
  }

  /** Runs that appeared after the first listing (shown as new). */
  isNew(path: string): boolean {
    return this._fresh.has(path);
  }

  /** Runs being analysed or waiting for it. */
  get pending(): number {
    const busy = (s: string | undefined): boolean => s === "queued" || s === "running";
    return this._runs.filter((r) => busy(r.status) || busy(r.verdict?.status)).length;
  }

  /** Whether the server left runs out (more than it lists). */
  get truncated(): boolean {
    return this._truncated;
  }

  /** Whether a listing is in flight. */
  get loading(): boolean {
    return this._inflight !== null;
  }

  /** Whether the first listing has come back (successfully or not). */
  get listed(): boolean {
    return this._listed;
  }

  get error(): string | null {
    return this._error;
  }

  get baseline(): BaselineRef | null {
    return this._baseline;
  }

  /** Whether `path` is the baseline's run. */
  isBaseline(path: string): boolean {
    return this._baseline?.path === path;
  }

  /** The run to compare with the baseline: the one selected run, if it is not the baseline. */
  baselinePair(): [string, RunRow] | null {
    const sel = this.selectedRuns;
    if (this._baseline === null || sel.length !== 1 || sel[0]!.path === this._baseline.path) return null;
    return [this._baseline.path, sel[0]!];
  }

  /** Keep `path` as the baseline (beside the runs, as `traceview baseline set` does), then list again. */
  async setBaseline(path: string, name?: string): Promise<BaselineRef> {
    const answer = await this._api.setBaseline(path, { roots: this._settings.roots, name });
    this._baseline = answer.baseline;
    this._changed.emit();
    await this.refresh();
    return answer.baseline;
  }

  get filter(): string {
    return this._filter;
  }

  set filter(value: string) {
    if (value === this._filter) return;
    this._filter = value;
    this._visible = null;
    // Keep the selection to what stays visible: actions apply to what the user sees.
    const visible = new Set(this.visibleRuns.map((r) => r.path));
    this._selected = this._selected.filter((p) => visible.has(p));
    if (this._active !== null && !visible.has(this._active)) this._active = null;
    this._changed.emit();
  }

  get settings(): TracesSettings {
    return this._settings;
  }

  set settings(value: TracesSettings) {
    const old = this._settings;
    this._settings = { ...value, roots: [...value.roots] };
    const where = old.roots.join("\n") !== value.roots.join("\n");
    if (where) {
      void this.refresh();
    } else if (old.refreshInterval !== value.refreshInterval) {
      this._schedule();
    }
  }

  /** List the runs again (concurrent calls share one request). */
  refresh(): Promise<void> {
    if (this._inflight === null) {
      this._inflight = this._list().finally(() => {
        this._inflight = null;
        this._schedule();
      });
      this._changed.emit(); // loading
    }
    return this._inflight;
  }

  /** Start live refresh: list now, then every `settings.refreshInterval` seconds. */
  start(): void {
    if (this._polling || this._disposed) return;
    this._polling = true;
    void this.refresh();
  }

  /** Stop live refresh (a refresh in flight still lands). */
  stop(): void {
    this._polling = false;
    this._clearTimer();
  }

  get polling(): boolean {
    return this._polling;
  }

  select(path: string, mode: SelectMode = "replace"): void {
    if (!this._runs.some((r) => r.path === path)) return;
    if (mode === "toggle") {
      this._selected = this._selected.includes(path)
        ? this._selected.filter((p) => p !== path)
        : [...this._selected, path];
      this._anchor = path;
    } else if (mode === "range" && this._anchor !== null) {
      const visible = this.visibleRuns.map((r) => r.path);
      const i = visible.indexOf(this._anchor);
      const j = visible.indexOf(path);
      if (i < 0 || j < 0) {
        this._selected = [path];
        this._anchor = path;
      } else {
        this._selected = visible.slice(Math.min(i, j), Math.max(i, j) + 1);
      }
    } else {
      this._selected = [path];
      this._anchor = path;
    }
    this._active = path;
    this._changed.emit();
  }

  /**
   * Move the keyboard's place by `step` rows (or to the first or last), selecting that run,
   * or with `extend` the range from the anchor (Shift+arrows).
   */
  moveActive(step: number | "first" | "last", extend = false): void {
    const visible = this.visibleRuns;
    if (visible.length === 0) return;
    const current = visible.findIndex((r) => r.path === this._active);
    let next: number;
    if (step === "first") next = 0;
    else if (step === "last") next = visible.length - 1;
    else if (current < 0) next = step >= 0 ? 0 : visible.length - 1;
    else next = Math.min(visible.length - 1, Math.max(0, current + step));
    const path = visible[next]!.path;
    this.select(path, extend ? "range" : "replace");
  }

  /** Space: add the active run to the selection or take it out. */
  toggleActive(): void {
    if (this._active !== null) this.select(this._active, "toggle");
  }

  selectAll(): void {
    this._selected = this.visibleRuns.map((r) => r.path);
    this._changed.emit();
  }

  clearSelection(): void {
    if (this._selected.length === 0) return;
    this._selected = [];
    this._changed.emit();
  }

  diffPair(): [RunRow, RunRow] | null {
    const sel = this.selectedRuns;
    if (sel.length !== 2) return null;
    const [x, y] = sel as [RunRow, RunRow];
    return x.mtime < y.mtime || (x.mtime === y.mtime && x.path <= y.path) ? [x, y] : [y, x];
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    this.stop();
    Signal.clearData(this);
  }

  private async _list(): Promise<void> {
    try {
      const listing = await this._api.listRuns({ roots: this._settings.roots });
      if (this._disposed) return;
      const runs = [...listing.runs].sort(newestFirst);
      if (this._listed) {
        const known = new Set(this._runs.map((r) => r.path));
        for (const r of runs) if (!known.has(r.path)) this._fresh.add(r.path);
      }
      const paths = new Set(runs.map((r) => r.path));
      for (const p of this._fresh) if (!paths.has(p)) this._fresh.delete(p);
      const baseline = listing.baseline ?? null;
      const signature = JSON.stringify(runs) + String(listing.truncated) + JSON.stringify(baseline);
      const changed = signature !== this._signature || this._error !== null || !this._listed;
      this._signature = signature;
      this._runs = runs;
      this._visible = null;
      this._truncated = listing.truncated;
      this._baseline = baseline;
      this._selected = this._selected.filter((p) => paths.has(p));
      if (this._active !== null && !paths.has(this._active)) this._active = null;
      this._error = null;
      this._listed = true;
      if (changed) this._changed.emit();
    } catch (err) {
      if (this._disposed) return;
      this._error = err instanceof TracesApiError || err instanceof Error ? err.message : String(err);
      this._listed = true;
      this._changed.emit();
    }
  }

  private _schedule(): void {
    this._clearTimer();
    if (!this._polling || this._disposed) return;
    const interval = this._settings.refreshInterval;
    if (!(interval > 0)) return;
    const seconds = this.pending > 0 ? Math.min(interval, BUSY_INTERVAL_S) : interval;
    this._timer = setTimeout(() => {
      this._timer = null;
      void this.refresh();
    }, seconds * 1000);
  }

  private _clearTimer(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private readonly _api: ITracesApi;
  private _settings: TracesSettings;
  private _runs: RunRow[] = [];
  private _visible: RunRow[] | null = null;
  private _signature = "";
  private _truncated = false;
  private _filter = "";
  private _selected: string[] = [];
  private _active: string | null = null;
  private _anchor: string | null = null;
  private _error: string | null = null;
  private _baseline: BaselineRef | null = null;
  private _listed = false;
  private readonly _fresh = new Set<string>();
  private _inflight: Promise<void> | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _polling = false;
  private _disposed = false;
  private readonly _changed = new Signal<this, void>(this);
}
