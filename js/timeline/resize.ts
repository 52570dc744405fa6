/**
 * The timeline's height: automatic (fits the lanes shown, up to a maximum), set from Python
 * (`tv.Timeline(..., height=600)`, the `height` trait), or dragged with the resize handle
 * under the plot, and then remembered per notebook.
 *
 * Where a dragged height is kept: in the widget model (the `height` trait, so that Python
 * reads it and a page reload with the kernel alive keeps it) and in the browser's
 * localStorage under the notebook's path (`_height_key`, the kernel's `JPY_SESSION_NAME`;
 * the page's path where that is empty), together with the height that was asked for when
 * it was dragged. A timeline opened again in that notebook (the cell run again, the page
 * reloaded) takes the dragged height as long as it asks for the same height as then (most
 * often: the automatic one); asking for another height in Python wins.
 *
 * The pure parts (`autoHeight`, `initialHeight`, the stored record) are unit-tested
 * (js/tests/resize.test.ts); `Sizer` owns the handle.
 */
import { el } from "../dom";

/** The lowest height of the lanes area, px. */
export const MIN_HEIGHT = 120;
/** The automatic height where the window's height is unknown, px. */
export const MAX_AUTO_HEIGHT = 720;
/**
 * The automatic height is at most the browser window's height less this (the page's own
 * bars and the timeline's toolbar, status line and handle), px: the default fits the window.
 */
export const AUTO_WINDOW_CHROME = 160;
/** Height change of one arrow key on the focused handle, px. */
export const KEY_STEP = 20;
/** Prefix of the localStorage keys. */
export const STORAGE_PREFIX = "jupyter_traceview.timeline.height:";

/** What is stored for a notebook: the dragged height and the height asked for then (0: automatic). */
export interface StoredHeight {
  height: number;
  requested: number;
}

/** The part of `Storage` used here (localStorage, or a map in tests). */
export interface HeightStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** `h` clamped to `[MIN_HEIGHT, max]`, rounded to whole pixels. */
export function clampHeight(h: number, max = Number.POSITIVE_INFINITY): number {
  if (!Number.isFinite(h)) return MIN_HEIGHT;
  return Math.round(Math.min(Math.max(h, MIN_HEIGHT), Math.max(max, MIN_HEIGHT)));
}

/**
 * The automatic height: the lanes' content height (axis included), at least `MIN_HEIGHT`,
 * at most what the window holds (its height less `AUTO_WINDOW_CHROME`; `MAX_AUTO_HEIGHT`
 * when unknown). A tall window shows every rank that fits, not a fixed few.
 */
export function autoHeight(content: number, windowHeight: number): number {
  const byWindow = windowHeight > 0 ? windowHeight - AUTO_WINDOW_CHROME : MAX_AUTO_HEIGHT;
  return clampHeight(content, byWindow);
}

/** The storage key of a notebook (or page) path. */
export function storageKey(path: string): string {
  return `${STORAGE_PREFIX}${path}`;
}

/** The stored record, or null when there is none or it is not one of ours. */
export function readStored(storage: HeightStorage | null, key: string): StoredHeight | null {
  if (!storage) return null;
  let raw: string | null;
  try {
    raw = storage.getItem(key);
  } catch {
    return null; // storage refused (privacy settings): nothing remembered
  }
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as Partial<StoredHeight>;
    if (typeof v.height !== "number" || typeof v.requested !== "number") return null;
    if (!Number.isFinite(v.height) || v.height <= 0) return null;
    return { height: v.height, requested: v.requested };
  } catch {
    return null;
  }
}

export function writeStored(storage: HeightStorage | null, key: string, value: StoredHeight): void {
  if (!storage) return;
  try {
    storage.setItem(key, JSON.stringify(value));
  } catch {
    /* full or refused: the height is still in the widget model */
  }
}

/**
 * The fixed height a timeline opens with, or null for the automatic one: the stored
 * (dragged) height when the timeline asks for the height asked for when it was dragged,
 * else the requested one (0: automatic).
 */
export function initialHeight(stored: StoredHeight | null, requested: number): number | null {
  if (stored && stored.requested === requested) return clampHeight(stored.height);
  return requested > 0 ? clampHeight(requested) : null;
}

/** What the sizer needs of the view. */
export interface SizerHost {
  /** The lanes' content height (all slots plus the axis band), px. */
  contentHeight(): number;
  /** Apply the sizer's height now (the view re-lays its canvas). */
  applyHeight(): void;
  /** Save the dragged height to the widget model. */
  saveHeight(h: number): void;
}

/** Resolves the height and owns the resize handle (a separator under the plot). */
export class Sizer {
  readonly handle: HTMLDivElement;
  /** The height asked for by the model when the view opened (0: automatic). */
  private readonly requested: number;
  /** A height dragged or set explicitly since; null while automatic. */
  private fixed: number | null;
  /** The automatic height reached so far (it grows with the lanes shown, never shrinks). */
  private auto = 0;
  /** The last height saved to the model by a drag (its change event is ours). */
  private saved = -1;
  private drag: { y: number; h: number; id: number } | null = null;

  constructor(
    private readonly host: SizerHost,
    parent: HTMLElement,
    requested: number,
    private readonly key: string,
    private readonly storage: HeightStorage | null,
    listen: (target: EventTarget, type: string, fn: (e: Event) => void) => void,
  ) {
    this.requested = Math.max(0, requested || 0);
    this.fixed = initialHeight(readStored(storage, key), this.requested);
    const handle = el("div", "tv-resize", parent);
    handle.tabIndex = 0;
    handle.setAttribute("role", "separator");
    handle.setAttribute("aria-orientation", "horizontal");
    handle.setAttribute("aria-label", "Resize the timeline (drag, or ↑ / ↓)");
    handle.setAttribute("aria-valuemin", String(MIN_HEIGHT));
    handle.title = "Drag to resize the timeline (remembered for this notebook)";
    this.handle = handle;
    listen(handle, "pointerdown", (e) => this.onDown(e as PointerEvent));
    listen(handle, "pointermove", (e) => this.onMove(e as PointerEvent));
    listen(handle, "pointerup", (e) => this.onUp(e as PointerEvent));
    listen(handle, "pointercancel", (e) => this.onUp(e as PointerEvent));
    listen(handle, "keydown", (e) => this.onKey(e as KeyboardEvent));
  }

  /** The height of the lanes area now, px. */
  height(): number {
    let h: number;
    if (this.fixed !== null) {
      h = this.fixed;
    } else {
      this.auto = Math.max(this.auto, autoHeight(this.host.contentHeight(), window.innerHeight));
      h = this.auto;
    }
    this.handle.setAttribute("aria-valuenow", String(h));
    return h;
  }

  /** Is the height automatic (nothing dragged, remembered or asked for)? */
  get automatic(): boolean {
    return this.fixed === null;
  }

  /** The model's `height` changed: from Python (a new fixed height, 0: automatic) or our own save. */
  onModelHeight(h: number): void {
    if (h === this.saved) return;
    this.fixed = h > 0 ? clampHeight(h) : null;
    this.host.applyHeight();
  }

  /** Set the height as a drag would, and remember it (`commit`: save it now). */
  setHeight(h: number, commit: boolean): void {
    this.fixed = clampHeight(h);
    this.host.applyHeight();
    if (commit) this.commit();
  }

  private commit(): void {
    if (this.fixed === null) return;
    writeStored(this.storage, this.key, { height: this.fixed, requested: this.requested });
    this.saved = this.fixed;
    this.host.saveHeight(this.fixed);
  }

  private onDown(e: PointerEvent): void {
    if (e.button !== 0) return;
    e.preventDefault();
    e.stopPropagation();
    this.drag = { y: e.clientY, h: this.height(), id: e.pointerId };
    this.handle.setPointerCapture(e.pointerId);
    this.handle.classList.add("tv-resizing");
  }

  private onMove(e: PointerEvent): void {
    const d = this.drag;
    if (!d || e.pointerId !== d.id) return;
    this.setHeight(d.h + (e.clientY - d.y), false);
  }

  private onUp(e: PointerEvent): void {
    const d = this.drag;
    if (!d || e.pointerId !== d.id) return;
    this.drag = null;
    if (this.handle.hasPointerCapture(e.pointerId)) this.handle.releasePointerCapture(e.pointerId);
    this.handle.classList.remove("tv-resizing");
    if (e.type === "pointerup") this.setHeight(d.h + (e.clientY - d.y), true);
  }

  private onKey(e: KeyboardEvent): void {
    if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
    e.preventDefault();
    e.stopPropagation();
    const step = e.shiftKey ? 5 * KEY_STEP : KEY_STEP;
    this.setHeight(this.height() + (e.key === "ArrowDown" ? step : -step), true);
  }
}

/** localStorage when the page has one (null in node, or where it is refused). */
export function pageStorage(): HeightStorage | null {
  try {
    return typeof window === "undefined" ? null : window.localStorage;
  } catch {
    return null;
  }
}
