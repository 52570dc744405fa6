/**
 * Requests to the timeline's owner (the kernel, or the server for the Traces sidebar, or the
 * page itself for an offline report): windows to draw, event details (cached), range
 * summaries and search steps.
 *
 * Windows: the last `CACHE_SIZE` received are kept and each frame draws the best of them for
 * the view (windows.ts: `pickWindow`), so zooming and panning redraw at once from what is at
 * hand, scaled, while a better window is on its way. One request is in flight at a time;
 * wants arriving meanwhile coalesce into one request sent when it returns, or into none when
 * the window in flight fits them. When the view rests, its neighbours are prefetched
 * (`prefetchWants`).
 */
import type {
  CommandError,
  DetailsRequest,
  EventDetails,
  FindRequest,
  FindResult,
  FoldRequest,
  FoldSummary,
  RangeSummary,
  SummaryRequest,
  WindowError,
  WindowRequest,
  WindowResponseMeta,
} from "./messages";
import { type WindowData, aligned, decodeWindow } from "./protocol";
import type { Invoke } from "./state";
import { MARGIN } from "./viewport";
import {
  CACHE_SIZE,
  FETCH_MARGIN,
  type WindowExtent,
  type WindowKey,
  type Motion,
  fits,
  motionOf,
  paddedRequest,
  pickWindow,
  prefetchWants,
  requestedExtent,
} from "./windows";

export { FETCH_MARGIN };

/** What the view wants drawn now. */
export type WindowWant = WindowKey;

/**
 * Milliseconds the view must rest before its likeliest neighbour is prefetched (short: a
 * prefetch never holds back the view's own request, which is sent beside it).
 */
export const PREFETCH_DELAY_MS = 40;
/** ... and before each next one (both directions of a zoom, then the sides). */
export const PREFETCH_MORE_MS = 80;

export interface FetcherCallbacks {
  /** What the view wants now; null when it cannot draw (no width yet). */
  want(): WindowWant | null;
  /** A window arrived (`fetcher.data` may be new). */
  onData(): void;
  onError(message: string): void;
  /** The trace's extent (ns), to keep prefetches inside it. */
  extent?(): { start: number; end: number };
}

/** One `_window` round trip, dispatched on the root as a "tv-window" event (performance.now() times, ms). */
export interface WindowTiming {
  seq: number;
  prefetch: boolean;
  sent: number;
  received: number;
  decoded: number;
  /** When the owner started answering (null when it does not say). */
  kernelAt: number | null;
  kernelMs: number;
  kernelCpuMs: number | null;
  bytes: number;
}

/** A received window and what it was asked for with. */
interface Entry extends WindowExtent {
  data: WindowData;
}

export class Fetcher {
  /** The window drawn now: the best received for the view. */
  data: WindowData | null = null;
  /** The search pattern `data` was asked for with (its matches are for that pattern). */
  dataPattern = "";
  /** Does the owner answer folded CPU rows (`folds`)? Until one says it does not. */
  foldsSupported = true;
  /** Requests sent (tests and benchmarks read it as data-requests). */
  requests = 0;
  private seq = 0;
  /** Generation: a forced request (new rows, colours, pattern) makes older windows unfit. */
  private epoch = 0;
  private cache: Entry[] = [];
  /** The view's own request in flight, and a prefetch in flight (at most one of each). */
  private inFlight: WindowExtent | null = null;
  private prefetchInFlight: WindowExtent | null = null;
  private pendingRequest = false;
  private prefetchTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private prefetchQueue: WindowWant[] = [];
  /** The view's last range, and how it moved to it (orders the prefetches). */
  private lastRange: { lo: number; hi: number } | null = null;
  private motion: Motion = { kind: "none" };
  private readonly detailsCache = new Map<string, EventDetails>();

  constructor(
    private readonly invoke: Invoke,
    private readonly signal: AbortSignal,
    /** Gets the data-* flags tests and benchmarks read. */
    private readonly root: HTMLElement,
    private readonly cb: FetcherCallbacks,
  ) {
    signal.addEventListener("abort", () => clearTimeout(this.prefetchTimer));
  }

  /** Draw the best window at hand and ask for a new one unless one fits the view (`force`: always). */
  maybeRequest(force = false): void {
    const want = this.cb.want();
    if (!want) return;
    if (force) this.epoch++;
    const r = want.range;
    if (this.lastRange && (r.lo !== this.lastRange.lo || r.hi !== this.lastRange.hi)) {
      this.motion = motionOf(this.lastRange, r);
    }
    this.lastRange = { lo: r.lo, hi: r.hi };
    this.prefetchQueue = [];
    clearTimeout(this.prefetchTimer);
    this.choose(want);
    if (this.cache.some((e) => fits(e, want, this.epoch))) {
      this.settleLoading();
      this.schedulePrefetch();
      return;
    }
    if (this.inFlight) {
      // Coalesce: one request after the one in flight, unless that one fits.
      this.pendingRequest = !fits(this.inFlight, want, this.epoch);
      this.root.dataset.loading = "1";
      return;
    }
    if (this.prefetchInFlight && fits(this.prefetchInFlight, want, this.epoch)) {
      // The prefetch guessed right: wait for it rather than ask again.
      this.pendingRequest = false;
      this.root.dataset.loading = "1";
      return;
    }
    // A prefetch in flight that does not fit never holds the view's request back.
    void this.request(want, false);
  }

  /** Make the best window at hand for `want` the one drawn. */
  private choose(want: WindowWant): void {
    const i = pickWindow(this.cache, want, this.epoch);
    const e = i >= 0 ? this.cache[i]! : null;
    if (e && e.data !== this.data) {
      this.data = e.data;
      this.dataPattern = e.pattern;
    }
  }

  private async request(want: WindowWant, prefetch: boolean): Promise<void> {
    const epoch = this.epoch;
    const extent = requestedExtent(want, epoch);
    if (prefetch) this.prefetchInFlight = extent;
    else this.inFlight = extent;
    this.requests++;
    const ds = this.root.dataset;
    ds.requests = String(this.requests);
    // Tests and benchmarks wait for data-loading="0": the view's data has arrived.
    if (!prefetch) ds.loading = "1";
    this.pendingRequest = false;
    const req: WindowRequest = {
      seq: ++this.seq,
      ...paddedRequest(want),
      rows: want.rows,
      summaries: want.summaries,
      memory: want.memory ?? [],
      ...(want.folds?.length ? { folds: want.folds } : {}),
      pattern: want.pattern,
      name_colors: want.nameColors,
    };
    const t = performance.now();
    try {
      const [meta, buffers] = await this.invoke<WindowResponseMeta | WindowError>("_window", req, {
        signal: this.signal,
      });
      if ("error" in meta) {
        if (!prefetch) this.cb.onError(meta.error);
      } else {
        const received = performance.now();
        const buf = buffers[0];
        const data = decodeWindow(meta, buf ? aligned(buf) : null);
        // Where the time went (the frame benchmark listens): sent, owner started, owner done, here.
        const timing: WindowTiming = {
          seq: req.seq,
          prefetch,
          sent: t,
          received,
          decoded: performance.now(),
          kernelAt: meta.kernel_at_ms === undefined ? null : meta.kernel_at_ms - performance.timeOrigin,
          kernelMs: meta.kernel_ms,
          kernelCpuMs: meta.kernel_cpu_ms ?? null,
          bytes: buf ? buf.byteLength : 0,
        };
        this.root.dispatchEvent(new CustomEvent("tv-window", { detail: timing }));
        if (want.folds?.length && !data.foldsAnswered) {
          // An owner that does not know folded rows (an older server): draw them from the threads' rows.
          this.foldsSupported = false;
          this.epoch++;
          this.pendingRequest = true;
        }
        this.cache.push({
          data,
          lo: data.lo,
          hi: data.hi,
          width: data.width,
          rows: data.rows,
          summaries: data.summaries,
          memory: data.memory,
          folds: data.folds,
          pattern: want.pattern,
          nameColors: want.nameColors,
          epoch,
          exact:
            want.summaries.length === 0 &&
            (want.memory ?? []).length === 0 &&
            (want.folds ?? []).length === 0 &&
            data.rows.size > 0 &&
            [...data.rows.values()].every((x) => x.mode === "raw"),
        });
        if (this.cache.length > CACHE_SIZE) this.cache.shift();
        if (!prefetch) {
          ds.windowMs = (performance.now() - t).toFixed(1);
          ds.kernelMs = meta.kernel_ms.toFixed(1);
          ds.rawEvents = String(data.rawEvents);
        }
        const now = this.cb.want();
        const before = this.data;
        if (now) this.choose(now);
        if (this.data !== before) this.cb.onData();
      }
    } catch (err) {
      if (this.signal.aborted) return;
      if (!prefetch) this.cb.onError(String(err));
    } finally {
      if (prefetch) this.prefetchInFlight = null;
      else this.inFlight = null;
    }
    if (this.signal.aborted) return;
    if (this.takePending()) {
      this.maybeRequest();
    } else if (!this.inFlight && !this.prefetchInFlight) {
      // The view rests on what arrived: go on with (or start) its neighbours.
      this.schedulePrefetch(prefetch ? PREFETCH_MORE_MS : PREFETCH_DELAY_MS);
    }
    this.settleLoading();
  }

  /** After the view rests `delay` ms, fetch the next neighbour of the view no window fits. */
  private schedulePrefetch(delay = PREFETCH_DELAY_MS): void {
    clearTimeout(this.prefetchTimer);
    this.prefetchTimer = setTimeout(() => this.prefetchNext(), delay);
  }

  private prefetchNext(): void {
    if (this.inFlight || this.prefetchInFlight || this.signal.aborted) return;
    const want = this.cb.want();
    if (!want) return;
    if (!this.prefetchQueue.length) {
      const ext = this.cb.extent?.() ?? { start: -Infinity, end: Infinity };
      // The view may go MARGIN past the trace's ends (viewport.ts): so may the prefetches.
      const m = MARGIN * (ext.end - ext.start);
      this.prefetchQueue = prefetchWants(want, ext.start - m, ext.end + m, this.motion);
      this.prefetchQueue.reverse(); // popped from the end: most useful first
    }
    while (this.prefetchQueue.length) {
      const next = this.prefetchQueue.pop()!;
      if (this.cache.some((e) => fits(e, next, this.epoch))) continue;
      void this.request(next, true);
      return;
    }
  }

  /** Mark the view's data as arrived unless a request is in flight for it. */
  settleLoading(): void {
    if (!this.pendingRequest && !this.waitingFor()) this.root.dataset.loading = "0";
  }

  /** Is a request in flight one the view waits for (nothing at hand fits the view)? */
  private waitingFor(): boolean {
    const want = this.cb.want();
    if (!want) return false;
    const own = this.inFlight !== null;
    const guessed = this.prefetchInFlight !== null && fits(this.prefetchInFlight, want, this.epoch);
    if (!own && !guessed) return false;
    return !this.cache.some((e) => fits(e, want, this.epoch));
  }

  /** Was a request asked for while one was in flight (then send it)? */
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

  /** What `rank`'s CPU threads do in `[lo, hi)` (the folded row's tooltip); null when unavailable. */
  async fold(rank: number, lo: number, hi: number): Promise<FoldSummary | null> {
    try {
      const req: FoldRequest = { rank, lo, hi };
      const [f] = await this.invoke<FoldSummary | CommandError>("_fold", req, { signal: this.signal });
      return "error" in f ? null : f;
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
