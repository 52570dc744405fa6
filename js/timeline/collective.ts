/**
 * Cross-rank collectives: selecting a communication kernel highlights the same collective
 * instance on every rank and marks who arrived last (the straggler the others waited for).
 *
 * The kernel answers the `_collective` command with the instance's interval on each rank
 * (jupyter_traceview/views/timeline/collective.py, `collective_instance`; instances matched by
 * jupyter_traceview/model/collectives.py, as clock alignment and the critical path match them).
 * Drawn here over the rows: each rank's interval outlined, the time each rank waited for the
 * last one (its start to the last start) shaded, the last arrival marked and labelled.
 * `collectiveMarks` and `collectiveText` are pure (js/tests/collective.test.ts).
 */
import { formatDuration, formatRanges } from "../format";
import { withAlpha } from "./colors";
import type { Scale } from "./draw";
import { xOf } from "./draw";
import type { Layout } from "./layout";
import type { CollectiveInstance } from "./messages";
import type { Invoke } from "./state";

/** A found instance (every optional field present). */
export type FoundInstance = Required<Omit<CollectiveInstance, "reason">>;

export function isFound(c: CollectiveInstance | null): c is FoundInstance {
  return c !== null && c.found && c.ranks !== undefined && c.last !== undefined && c.first !== undefined;
}

/** Where one rank's interval is drawn. */
export interface CollectiveMark {
  rank: number;
  /** Slot index (the kernel's row, else the rank's header when its lanes are collapsed). */
  slot: number;
  x0: number;
  x1: number;
  /** Right end of the wait shading (x of the last arrival), or x0 for the last rank. */
  waitX1: number;
  last: boolean;
}

/** The marks of an instance in `layout` at scale `s` (ranks not shown have none). */
export function collectiveMarks(inst: FoundInstance, layout: Layout, s: Scale): CollectiveMark[] {
  const out: CollectiveMark[] = [];
  const lastX = xOf(s, inst.last.start);
  for (const p of inst.ranks) {
    let slot = p.row !== null ? layout.rowSlot.get(p.row) : undefined;
    if (slot === undefined) {
      const h = layout.headerSlot.get(p.rank);
      if (h === undefined || !layout.slots[h]!.collapsed) continue;
      slot = h;
    }
    const x0 = xOf(s, p.start);
    const isLast = p.rank === inst.last.rank;
    out.push({
      rank: p.rank,
      slot,
      x0,
      x1: Math.max(xOf(s, p.end), x0 + 1),
      waitX1: isLast ? x0 : Math.max(x0, lastX),
      last: isLast,
    });
  }
  return out;
}

/** One line on the instance: its kind, ranks and who arrived last, how long after the first. */
export function collectiveText(inst: FoundInstance): string {
  const ranks = inst.ranks.map((p) => p.rank);
  const head = `${inst.collective} on ranks ${formatRanges(ranks)}`;
  if (inst.wait_ns <= 0) return `${head} · every rank arrived together`;
  const tail = inst.consistent
    ? ""
    : " · ranks' clocks or matching disagree: some rank starts after another ended";
  return `${head} · last to arrive: rank ${inst.last.rank}, ${formatDuration(inst.wait_ns)} after rank ${inst.first.rank}${tail}`;
}

/** What the highlight needs of the view. */
export interface CollectiveHost {
  readonly root: HTMLElement;
  invalidate(): void;
  /** The status panel changed (re-render it). */
  statusChanged(): void;
}

/** The instance of the selected kernel, asked for when a communication kernel is selected. */
export class CollectiveHighlight {
  instance: FoundInstance | null = null;
  private asked = "";

  constructor(
    private readonly host: CollectiveHost,
    private readonly invoke: Invoke,
    private readonly signal: AbortSignal,
  ) {}

  /** The selection changed: ask for the instance of a communication kernel, forget it otherwise. */
  async select(rank: number | null, eid: number | null, kind: string | null): Promise<void> {
    const key = rank === null || eid === null ? "" : `${rank}:${eid}`;
    if (key === this.asked) return;
    this.asked = key;
    if (!key || kind !== "communication") {
      this.set(null);
      return;
    }
    try {
      const [c] = await this.invoke<CollectiveInstance>(
        "_collective",
        { rank, eid },
        { signal: this.signal },
      );
      if (this.asked !== key) return;
      this.set(isFound(c) ? c : null);
    } catch {
      if (this.asked === key) this.set(null); // aborted or kernel gone
    }
  }

  private set(inst: FoundInstance | null): void {
    this.instance = inst;
    const ds = this.host.root.dataset;
    ds.collectiveRanks = inst ? inst.ranks.map((p) => p.rank).join(",") : "";
    ds.collectiveLast = inst ? String(inst.last.rank) : "";
    this.host.statusChanged();
    this.host.invalidate();
  }
}

/** Colours of the highlight. */
export interface CollectiveStyle {
  outline: string;
  straggler: string;
  text: string;
  font: string;
}

/**
 * Draw the instance: each rank's interval outlined, its wait for the last arrival shaded, the
 * last arrival marked with a label. `slotTop(i)` is the canvas y of slot `i`. Returns the
 * number of ranks drawn.
 */
export function drawCollective(
  ctx: CanvasRenderingContext2D,
  inst: FoundInstance,
  layout: Layout,
  s: Scale,
  slotTop: (slot: number) => number,
  top: number,
  bottom: number,
  style: CollectiveStyle,
): number {
  const marks = collectiveMarks(inst, layout, s);
  const left = s.x0;
  const right = s.x0 + s.width;
  const clip = (x: number) => Math.min(Math.max(x, left - 2), right + 2);
  ctx.save();
  ctx.setLineDash([]);
  // The last arrival across the plot: every rank's wait ends there.
  const lx = xOf(s, inst.last.start);
  if (lx >= left && lx <= right) {
    ctx.strokeStyle = withAlpha(style.straggler, 0.7);
    ctx.lineWidth = 1;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(Math.round(lx) + 0.5, top);
    ctx.lineTo(Math.round(lx) + 0.5, bottom);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  let labelled: { x: number; y: number } | null = null;
  for (const m of marks) {
    const slot = layout.slots[m.slot]!;
    const y = slotTop(m.slot);
    if (y + slot.h < top || y > bottom) continue;
    if (m.waitX1 > m.x0) {
      ctx.fillStyle = withAlpha(style.outline, 0.22);
      ctx.fillRect(clip(m.x0), y + 1, clip(m.waitX1) - clip(m.x0), slot.h - 2);
    }
    const x0 = clip(m.x0);
    const x1 = clip(m.x1);
    ctx.strokeStyle = m.last ? style.straggler : style.outline;
    ctx.lineWidth = m.last ? 2.5 : 1.5;
    ctx.strokeRect(x0 - 1, y + 0.5, Math.max(x1 - x0, 1) + 2, slot.h - 1);
    if (m.last) labelled = { x: m.x0, y };
  }
  if (labelled && labelled.x >= left - 1 && labelled.x <= right + 1) {
    // A marker on the straggler's arrival and its label, right of it (left near the edge).
    const { x, y } = labelled;
    ctx.fillStyle = style.straggler;
    ctx.beginPath();
    ctx.moveTo(x - 5, y - 1);
    ctx.lineTo(x + 5, y - 1);
    ctx.lineTo(x, y + 6);
    ctx.closePath();
    ctx.fill();
    const text = `last: rank ${inst.last.rank} (+${formatDuration(inst.wait_ns)})`;
    ctx.font = style.font;
    const tw = ctx.measureText(text).width + 8;
    const tx = x + 8 + tw <= right ? x + 8 : Math.max(left, x - 8 - tw);
    const ty = Math.max(top, y - 15);
    ctx.fillRect(tx, ty, tw, 14);
    ctx.fillStyle = style.text;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    ctx.fillText(text, tx + 4, ty + 7);
  }
  ctx.restore();
  return marks.length;
}
