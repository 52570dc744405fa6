/**
 * The hover tooltip: what is under the pointer (a raw event, with its details once they
 * arrive, or a merged column), placed beside the pointer inside the plot.
 */
import {
  formatCount,
  formatDuration,
  formatPct,
  formatRate,
  formatTimePrecise as formatTime,
} from "../format";
import { counterSlotTooltip } from "./counter";
import { foldTooltip } from "./fold";
import { type Hover, type ViewHost, GUTTER } from "./host";
import type { EventDetails, FoldSummary } from "./model";
import { type BinRow, type RawRow, NO_KIND } from "./protocol";
import { el } from "../dom";

export class Tooltip {
  readonly element: HTMLDivElement;
  private detailsTimer = 0;
  private foldTimer = 0;
  /** The last `_fold` answer and what it was for (rank, window, column). */
  private foldAt: { key: string; fold: FoldSummary } | null = null;

  constructor(
    private readonly host: ViewHost,
    parent: HTMLElement,
  ) {
    this.element = el("div", "tv-tooltip", parent);
    this.element.hidden = true;
  }

  dispose(): void {
    window.clearTimeout(this.detailsTimer);
    window.clearTimeout(this.foldTimer);
  }

  hide(): void {
    this.element.hidden = true;
    this.host.root.dataset.hover = "";
  }

  position(h: Hover): void {
    const tip = this.element;
    const tw = tip.offsetWidth || 280;
    const left = h.x + 14 + tw > this.host.width + GUTTER ? h.x - 14 - tw : h.x + 14;
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${h.y + 14 + this.host.scroller.scrollTop}px`;
  }

  render(h: Hover, details: EventDetails | null): void {
    const host = this.host;
    const d = host.data;
    if (!d) return;
    const slot = host.layout.slots[h.slot]!;
    const palette = host.model.get("_palette");
    const lines: [string, string][] = [];
    let title = "";
    if (slot.kind === "counter") {
      const tip = counterSlotTooltip(host, slot, h.bin);
      if (!tip) return;
      title = tip.title;
      lines.push(...tip.lines);
    } else if (slot.kind === "fold") {
      const bins = d.folds.get(slot.rank);
      if (!bins) return;
      const k = h.bin;
      const a = d.lo + ((d.hi - d.lo) * k) / d.width;
      const b = d.lo + ((d.hi - d.lo) * (k + 1)) / d.width;
      const threads = [...host.lanes.values()].filter((l) => l.rank === slot.rank && l.type === "cpu").length;
      const key = `${slot.rank}:${d.lo}:${d.hi}:${d.width}:${k}`;
      const fold = this.foldAt?.key === key ? this.foldAt.fold : null;
      const tip = foldTooltip(slot.rank, threads, bins, k, a, b, fold, (code) =>
        host.colors.label(palette.kinds[code]?.key ?? ""),
      );
      title = tip.title;
      lines.push(...tip.lines);
      if (!fold) {
        window.clearTimeout(this.foldTimer);
        this.foldTimer = window.setTimeout(() => {
          void host.fold(slot.rank, a, b).then((f) => {
            const cur = host.hover;
            if (f && cur && cur.slot === h.slot && cur.bin === h.bin) {
              this.foldAt = { key, fold: f };
              this.render(cur, null);
              this.position(cur);
            }
          });
        }, 60);
      }
    } else if (h.event >= 0) {
      const row = d.rows.get(slot.row) as RawRow | undefined;
      if (!row) return;
      const i = h.event;
      title = d.names[row.name[i]!] ?? "";
      const kindKey = palette.kinds[row.kind[i]!]?.key ?? "";
      lines.push(["duration", formatDuration(row.dur[i]!)]);
      lines.push(["start", formatTime(row.start[i]!)]);
      const lane = host.lanes.get(slot.lane);
      lines.push(["rank", String(slot.rank)]);
      if (lane)
        lines.push([
          lane.type === "gpu" ? "stream" : "thread",
          lane.type === "gpu" ? `${lane.stream} (GPU ${lane.device})` : lane.label,
        ]);
      lines.push(["kind", host.colors.label(kindKey)]);
      if (details) {
        if (details.grid && details.block)
          lines.push(["grid · block", `[${details.grid.join(", ")}] · [${details.block.join(", ")}]`]);
        if (details.registers_per_thread !== undefined)
          lines.push(["registers", String(details.registers_per_thread)]);
        if (details.occupancy_pct !== undefined)
          lines.push(["est. occupancy", formatPct(details.occupancy_pct)]);
        if (details.bytes !== undefined) lines.push(["bytes", formatCount(details.bytes)]);
        if (details.bandwidth_gbps !== undefined)
          lines.push(["bandwidth", formatRate(details.bandwidth_gbps)]);
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
          void host.details(rank, eid).then((det) => {
            const cur = host.hover;
            if (det && cur && cur.slot === h.slot && cur.event === h.event) {
              this.render(cur, det);
              this.position(cur);
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
      lines.push(["busy", `${formatPct(bins.frac[k]! * 100)} of ${formatDuration(b - a)}`]);
      if (kind !== NO_KIND) lines.push(["mostly", host.colors.label(palette.kinds[kind]?.key ?? "")]);
      lines.push(["at", formatTime(a)]);
      if (bins.match && bins.match[k]! > 0) lines.push(["matches", formatCount(bins.match[k]!)]);
      const names =
        host.binNames?.(slot.kind === "header" ? { rank: slot.rank } : { row: slot.row }, a, b) ?? [];
      for (const [name, n] of names) lines.push([`× ${formatCount(n)}`, name]);
      lines.push(["", names.length ? "starting here (the report's grid)" : "zoom in to see the events"]);
    }
    const tip = this.element;
    tip.replaceChildren();
    el("div", "tv-tooltip-title", tip, title);
    const table = el("table", "", tip);
    for (const [k, v] of lines) {
      const tr = el("tr", "", table);
      el("th", "", tr, k);
      el("td", "", tr, v);
    }
    tip.hidden = false;
    host.root.dataset.hover = title;
  }
}
