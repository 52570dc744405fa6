/**
 * BokehJS: loaded once per page from the kernel or server (the bokeh package's own
 * bokeh.min.js, never a CDN), then used to draw the charts' JSON items. Only the few
 * BokehJS calls used here are typed, as plain interfaces.
 */
import type { DashboardSource } from "./protocol";

interface BkSignal {
  connect(slot: () => void): boolean;
  disconnect(slot: () => void): boolean;
}

/** The BokehJS models touched here: any model, a ColumnDataSource, its Selection. */
export interface BkModel {
  id: string;
  tags?: unknown[];
  change: BkSignal;
}
export interface BkSelection extends BkModel {
  indices: number[];
}
export interface BkSource extends BkModel {
  data: Record<string, ArrayLike<unknown>>;
  selected: BkSelection;
}
interface BkDocument {
  all_models: Set<BkModel>;
  clear(): void;
}
interface BkView {
  model: { document: BkDocument | null };
  remove(): void;
}
/** A title (bokeh's Title): its `offset` moves it along its side. */
interface BkTitle {
  type?: string;
  text?: unknown;
  offset: number;
}
/** A plot's view, as far as titles go: where its plot area starts, its titles. */
/** A plot area: px in its canvas. */
export interface BkBox {
  left: number;
  top: number;
  width: number;
  height: number;
}
interface BkPlotLike {
  frame?: { bbox: BkBox };
  child_views?: BkPlotLike[];
  model: { title?: BkTitle | null; above?: unknown[] };
}
interface BkViewManager {
  roots: BkView[];
}
export interface BokehJS {
  version: string;
  embed: { embed_item(item: unknown, target: HTMLElement): Promise<BkViewManager> };
  documents?: BkDocument[];
}

type BokehGlobal = Record<string, BokehJS | undefined> & { __bokeh__?: boolean };

declare global {
  interface Window {
    Bokeh?: BokehGlobal;
  }
}

const loading = new Map<string, Promise<BokehJS>>();

/** BokehJS `version` if the page already has it (bokeh.min.js registers `Bokeh[version]`). */
function present(version: string): BokehJS | undefined {
  const b = window.Bokeh;
  if (!b) return undefined;
  const v = b[version];
  if (v && typeof v === "object" && "embed" in v) return v;
  return undefined;
}

/** Run a classic script's text: a blob <script> (CSP-friendly in JupyterLab), else `Function`. */
async function runScript(text: string): Promise<void> {
  const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
  try {
    await new Promise<void>((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error("the BokehJS script did not load"));
      document.head.appendChild(s);
    });
  } catch {
    // A page whose content security policy refuses blob: scripts.
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    (new Function(text) as (this: Window) => void).call(window);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * The signal of the `_bokehjs` request: never aborted. Without a signal, anywidget's invoke
 * gives up after 3 s, and a kernel busy with the next cells (Run All) answers later: every
 * chart of the first dashboard then said "Charts need BokehJS: TimeoutError" for good. The
 * load is shared by every dashboard, so no one dashboard's disposal may abort it either.
 */
export const BOKEH_LOAD_SIGNAL: AbortSignal = new AbortController().signal;

/** BokehJS `version`, asked from the source (`_bokehjs`) the first time, then shared by every dashboard. */
export function loadBokeh(source: DashboardSource, version: string): Promise<BokehJS> {
  const have = present(version);
  if (have) return Promise.resolve(have);
  let p = loading.get(version);
  if (!p) {
    p = (async () => {
      const { msg, buffers } = await source.invoke("_bokehjs", {}, undefined, { signal: BOKEH_LOAD_SIGNAL });
      const m = msg as { version?: string; error?: string };
      if (m.error) throw new Error(m.error);
      const buf = buffers[0];
      if (!buf) throw new Error("no BokehJS in the answer to _bokehjs");
      if (!present(version)) {
        const text = new TextDecoder().decode(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength));
        await runScript(text);
      }
      const b = present(version);
      if (!b) throw new Error(`BokehJS ${version} did not register itself (window.Bokeh["${version}"])`);
      return b;
    })();
    loading.set(version, p);
    p.catch(() => loading.delete(version));
  }
  return p;
}

/** A drawn chart: its models (to find link sources) and how to remove it. */
export interface Embedded {
  models: BkModel[];
  dispose(): void;
}

/**
 * Draw a JSON item into `target`. Its category labels follow `target`'s width
 * ({@link fitLabels}), as it is now and when it changes.
 */
export async function embed(bokeh: BokehJS, item: unknown, target: HTMLElement): Promise<Embedded> {
  const views = await bokeh.embed.embed_item(item, target);
  const docs = new Set<BkDocument>();
  for (const v of views.roots) if (v.model.document) docs.add(v.model.document);
  const models: BkModel[] = [];
  for (const d of docs) for (const m of d.all_models) models.push(m);
  const fit = () => {
    fitLabels(models, target.clientWidth);
    // After BokehJS has laid the plots out again (the labels' new width).
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        const frame = alignTitles(views.roots);
        // The first plot area, px in its canvas (UI tests aim at cells of it).
        if (frame)
          target.dataset.frame = [frame.left, frame.top, frame.width, frame.height].map(Math.round).join(",");
      }),
    );
  };
  fit();
  const resize = typeof ResizeObserver === "undefined" ? undefined : new ResizeObserver(fit);
  resize?.observe(target);
  return {
    models,
    dispose() {
      resize?.disconnect();
      for (const v of views.roots) v.remove();
      const all = bokeh.documents;
      for (const d of docs) {
        if (all) {
          const i = all.indexOf(d);
          if (i >= 0) all.splice(i, 1);
        }
      }
    },
  };
}

/** The tag of sources whose rows link to the timeline (charts/_style.py LINK_TAG). */
export const LINK_TAG = "traceview-link";

/** Sources tagged as links, with their target ("heatmap", "rank", ...). */
export function linkSources(models: BkModel[]): { source: BkSource; target: string }[] {
  const out: { source: BkSource; target: string }[] = [];
  for (const m of models) {
    const tag = (m.tags ?? []).find(
      (t): t is string => typeof t === "string" && t.startsWith(`${LINK_TAG}:`),
    );
    if (tag && "selected" in m && "data" in m)
      out.push({ source: m as BkSource, target: tag.slice(LINK_TAG.length + 1) });
  }
  return out;
}

/** The `link_*` columns of row `i`, without the prefix: {rank: 3, bin: 17, ...}. */
export function linkFields(source: BkSource, i: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, col] of Object.entries(source.data)) {
    if (!key.startsWith("link_")) continue;
    const v = col[i];
    out[key.slice(5)] = typeof v === "bigint" ? Number(v) : v;
  }
  return out;
}

/** Room left of a title, px. */
export const TITLE_LEFT_PX = 4;

/**
 * Start each plot's titles at its left edge, not at its plot area's: a title line of the
 * narrowest chart (charts/_style.py TITLE_LINE_CHARS) fits the chart, not the plot area
 * right of long category labels. Returns the first plot area found (px in its canvas).
 */
export function alignTitles(roots: unknown[]): BkBox | undefined {
  const seen = new Set<unknown>();
  let first: BkBox | undefined;
  const visit = (v: BkPlotLike) => {
    if (seen.has(v)) return;
    seen.add(v);
    if (v.frame) {
      first ??= v.frame.bbox;
      const offset = Math.round(TITLE_LEFT_PX - v.frame.bbox.left);
      const titles = [v.model.title, ...(v.model.above ?? [])].filter(
        (t): t is BkTitle => !!t && typeof t === "object" && (t as BkTitle).type === "Title",
      );
      for (const t of titles) if (t.offset !== offset) t.offset = offset;
    }
    for (const c of v.child_views ?? []) visit(c);
  };
  for (const r of roots) visit(r as BkPlotLike);
  return first;
}

/** The tag of a category axis's label formatter that shortens to `chars` (charts/_style.py FIT_LABELS_TAG). */
export const FIT_LABELS_TAG = "traceview-fit-labels";
/** Share of a chart's width its category labels may take: the plot area keeps over half. */
export const LABEL_SHARE = 0.3;
/** Width of a label character at the theme's 11 px (generous). */
export const LABEL_CHAR_PX = 6.5;
/** Fewest characters a label is shortened to (the start of a name, "…", its end). */
export const LABEL_MIN_CHARS = 8;

/** The characters a category label may have in a chart `width` px wide (0: no bound, for no width). */
export function labelChars(width: number): number {
  if (!(width > 0)) return 0;
  return Math.max(LABEL_MIN_CHARS, Math.floor((LABEL_SHARE * width) / LABEL_CHAR_PX));
}

interface BkFormatter extends BkModel {
  args: Map<string, unknown> | Record<string, unknown>;
}

/**
 * Bound the category labels of a drawn chart to its width: each tagged formatter's `chars`
 * (a label longer loses its middle; the hover keeps the full name). Returns whether
 * anything changed.
 */
export function fitLabels(models: BkModel[], width: number): boolean {
  const chars = labelChars(width);
  const changed = new Set<BkFormatter>();
  for (const m of models) {
    if (!(m.tags ?? []).includes(FIT_LABELS_TAG) || !("args" in m)) continue;
    const f = m as BkFormatter;
    const now = f.args instanceof Map ? f.args.get("chars") : f.args.chars;
    if (now === chars) continue;
    f.args = f.args instanceof Map ? new Map([...f.args, ["chars", chars]]) : { ...f.args, chars };
    changed.add(f);
  }
  if (!changed.size) return false;
  // The axes using a changed formatter lay out again (an axis listens to its own model only).
  for (const m of models) {
    const a = m as BkModel & { formatter?: unknown; change: { emit?: () => void } };
    if (a.formatter && changed.has(a.formatter as BkFormatter)) a.change.emit?.();
  }
  return true;
}
