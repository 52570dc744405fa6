/**
 * Requests to the timeline's owner (the kernel, or the server for the Traces sidebar): the
 * window drawn (one request in flight; a request asked for meanwhile is sent, forced, when
 * it returns), event details (cached), range summaries and search steps.
 */
import type {
  CommandError,
  DetailsRequest,
  EventDetails,
  FindRequest,
  FindResult,
  RangeSummary,
  SummaryRequest,
  WindowError,
  WindowRequest,
  WindowResponseMeta,
} from "./model";
import { type WindowData, aligned, decodeWindow } from "./protocol";
import type { Invoke } from "./state";
import { type Range, covers } from "./viewport";

/** Extra time fetched on each side of the visible range, as a fraction of its span. */
export const FETCH_MARGIN = 0.25;

/** What the view wants drawn now. */
export interface WindowWant {
  range: Range;
  /** Plot width, px. */
  width: number;
  rows: number[];
  summaries: number[];
  pattern: string;
  nameColors: boolean;
}

export interface FetcherCallbacks {
  /** What the view wants now; null when it cannot draw (no width yet). */
  want(): WindowWant | null;
  /** A window arrived (`fetcher.data` is new). */
  onData(): void;
  onError(message: string): void;
}

export class Fetcher {
  /** The last window received. */
  data: WindowData | null = null;
  /** The search pattern `data` was asked for with (its matches are for that pattern). */
  dataPattern = "";
  private seq = 0;
  private inFlight = false;
  private pendingRequest = false;
  private readonly detailsCache = new Map<string, EventDetails>();

  constructor(
    private readonly invoke: Invoke,
    private readonly signal: AbortSignal,
    /** Gets the data-* flags tests and benchmarks read. */
    private readonly root: HTMLElement,
    private readonly cb: FetcherCallbacks,
  ) {}

  /** Ask for a new window unless the data at hand covers the view well. */
  maybeRequest(force = false): void {
    const want = this.cb.want();
    if (!want) return;
    const d = this.data;
    if (!force && d) {
      const missing =
        want.rows.some((r) => !d.rows.has(r)) || want.summaries.some((r) => !d.summaries.has(r));
      const nsPerPxData = (d.hi - d.lo) / d.width;
      const nsPerPxView = (want.range.hi - want.range.lo) / want.width;
      const ratio = nsPerPxData / nsPerPxView;
      if (!missing && covers({ lo: d.lo, hi: d.hi }, want.range) && ratio < 1.5 && ratio > 1 / 1.5) {
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

  private async request(want: WindowWant): Promise<void> {
    this.inFlight = true;
    // Tests and benchmarks wait for data-loading="0": the view's data has arrived.
    this.root.dataset.loading = "1";
    this.pendingRequest = false;
    const span = want.range.hi - want.range.lo;
    const req: WindowRequest = {
      seq: ++this.seq,
      lo: want.range.lo - FETCH_MARGIN * span,
      hi: want.range.hi + FETCH_MARGIN * span,
      width: Math.max(1, Math.round(want.width * (1 + 2 * FETCH_MARGIN))),
      rows: want.rows,
      summaries: want.summaries,
      pattern: want.pattern,
      name_colors: want.nameColors,
    };
    const t = performance.now();
    try {
      const [meta, buffers] = await this.invoke<WindowResponseMeta | WindowError>("_window", req, {
        signal: this.signal,
      });
      if ("error" in meta) {
        this.cb.onError(meta.error);
      } else {
        const buf = buffers[0];
        this.data = decodeWindow(meta, buf ? aligned(buf) : null);
        this.dataPattern = want.pattern;
        this.root.dataset.windowMs = (performance.now() - t).toFixed(1);
        this.root.dataset.kernelMs = meta.kernel_ms.toFixed(1);
        this.root.dataset.rawEvents = String(this.data.rawEvents);
        this.cb.onData();
      }
    } catch (err) {
      if (this.signal.aborted) return;
      this.cb.onError(String(err));
    } finally {
      this.inFlight = false;
    }
    this.maybeRequest(this.takePending());
    this.settleLoading();
  }

  /** Mark the view's data as arrived unless a request is in flight. */
  settleLoading(): void {
    if (!this.inFlight) this.root.dataset.loading = "0";
  }

  /** Was a request asked for while one was in flight (then send it, forced)? */
  private takePending(): boolean {
    const p = this.pendingRequest;
    this.pendingRequest = false;
    return p;
  }

  /** An event's details (cached); null when unavailable. */
  async details(rank: number, eid: number): Promise<EventDetails | null> {
    const key = `${rank}:${eid}`;
    const hit = this.detailsCache.get(key);
    if (hit) return hit;
    try {
      const req: DetailsRequest = { rank, eid };
      const [d] = await this.invoke<EventDetails | CommandError>("_details", req, { signal: this.signal });
      if ("error" in d) return null;
      if (this.detailsCache.size > 500) this.detailsCache.clear();
      this.detailsCache.set(key, d);
      return d;
    } catch {
      return null;
    }
  }

  /** The summary of `[lo, hi)` on `ranks`; null when the owner answers an error (rejects when aborted). */
  async summary(lo: number, hi: number, ranks: number[]): Promise<RangeSummary | null> {
    const req: SummaryRequest = { lo, hi, ranks };
    const [s] = await this.invoke<RangeSummary | CommandError>("_summary", req, { signal: this.signal });
    return "error" in s ? null : s;
  }

  /** The next match of `pattern` after `t` (`direction` 1) or before it (-1) among `rows`. */
  async find(pattern: string, t: number, direction: number, rows: number[]): Promise<FindResult> {
    const req: FindRequest = { pattern, t, direction, rows };
    const [res] = await this.invoke<FindResult | CommandError>("_find", req, { signal: this.signal });
    return "error" in res ? { found: false } : res;
  }
}
