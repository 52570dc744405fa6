/**
 * A rank's folded CPU threads: one row for all of them (the rank's `cpu_collapsed`), drawn
 * from their summary (views/timeline/fold.py), or from the threads' top rows drawn over each
 * other where the owner sends none. A click on it (plot or label) unfolds the threads.
 *
 * Its tooltip (`foldTooltip`, pure, unit-tested): the column's summary from the window (time
 * any thread works, the kind covering most of it, events starting), then, once the owner's
 * `_fold` answer arrives, how many threads work in the column, the mean number busy, and the
 * names taking most time.
 */
import { formatCount, formatDuration, formatPct, formatTimePrecise as formatTime } from "../../format";
import { binAt } from "../hittest";
import type { ViewHost } from "../host";
import type { Slot } from "../layout";
import type { FoldSummary } from "../messages";
import { type BinRow, NO_KIND } from "../protocol";
import { type LaneKind, type Tip, columnSpan } from "./kind";

export type FoldTip = Tip;

/**
 * Lines for column `k` (`[a, b)` ns) of rank `rank`'s folded row `bins`, with `threads` CPU
 * threads; `fold`: the owner's `_fold` answer for that column (null while it is on its way);
 * `kindLabel`: a kind code's label.
 */
export function foldTooltip(
  rank: number,
  threads: number,
  bins: BinRow,
  k: number,
  a: number,
  b: number,
  fold: FoldSummary | null,
  kindLabel: (code: number) => string,
): FoldTip {
  const span = b - a;
  const lines: [string, string][] = [];
  const title = `rank ${rank}: ${threads} CPU thread${threads === 1 ? "" : "s"} folded`;
  if (fold) {
    lines.push(["working", `${fold.active} of ${fold.threads} thread${fold.threads === 1 ? "" : "s"}`]);
    lines.push(["busy", `${formatPct((fold.busy_ns / span) * 100)} of ${formatDuration(span)} (any thread)`]);
    if (fold.threads > 1 && fold.thread_ns > 0)
      lines.push(["busy threads", `${(fold.thread_ns / span).toFixed(2)} on average`]);
    lines.push(["events", formatCount(fold.events)]);
    for (const [i, t] of fold.top.slice(0, 3).entries())
      lines.push([
        i === 0 ? "top" : "",
        `${t.short} · ${formatDuration(t.time_ns)} · ${formatCount(t.events)}×`,
      ]);
  } else {
    lines.push(["busy", `${formatPct((bins.frac[k] ?? 0) * 100)} of ${formatDuration(span)} (any thread)`]);
    lines.push(["starting", formatCount(bins.count[k] ?? 0)]);
  }
  const kind = bins.kind[k] ?? NO_KIND;
  if (kind !== NO_KIND) lines.push(["mostly", kindLabel(kind)]);
  lines.push(["at", formatTime(a)]);
  lines.push(["", "click to unfold the threads"]);
  return { title, lines };
}

/** Unfold the CPU threads of `slot`'s rank. */
function unfold(host: ViewHost, slot: Slot): void {
  host.save(
    "cpu_collapsed",
    host.model.get("cpu_collapsed").filter((r) => r !== slot.rank),
  );
}

export const foldLane: LaneKind = {
  place(rank, data, out) {
    if (data.collapsed.has(rank) || !data.showCpu || !data.cpuCollapsed.has(rank)) return;
    const cpu = (data.lanesByRank.get(rank) ?? []).filter((l) => l.type === "cpu");
    const tops = cpu
      .map((l) => l.rows.find((rid) => (data.rowById.get(rid)?.depth ?? 0) === 0) ?? l.rows[0])
      .filter((r): r is number => r !== undefined);
    if (!tops.length) return;
    out.add(
      {
        rank,
        row: -1,
        lane: -1,
        depth: 0,
        label: `▸ CPU: ${cpu.length} thread${cpu.length === 1 ? "" : "s"}`,
        collapsed: false,
        folded: true,
        foldRows: tops,
      },
      data.opts.cpuRowHeight,
    );
    out.gap();
  },

  draw(p, slot, y) {
    const fd = p.host.data?.folds.get(slot.rank);
    if (fd) p.bins(fd, y + 1, slot.h - 2);
    else for (const rid of slot.foldRows ?? []) p.row(rid, slot, y);
  },

  hit(host, slot, t) {
    // A column of the summary (empty ones too: the tooltip says how many threads there are
    // and that a click unfolds them).
    const d = host.data;
    const k = d && d.folds.has(slot.rank) ? binAt(d.lo, d.hi, d.width, t) : -1;
    return k >= 0 ? { event: -1, bin: k } : null;
  },

  tooltip(tip, slot) {
    const host = tip.host;
    const d = host.data!;
    const bins = d.folds.get(slot.rank);
    if (!bins) return null;
    const k = tip.hover.bin;
    const [a, b] = columnSpan(d, k);
    const threads = [...host.lanes.values()].filter((l) => l.rank === slot.rank && l.type === "cpu").length;
    const fold = tip.later(`fold:${slot.rank}:${d.lo}:${d.hi}:${d.width}:${k}`, () =>
      host.fold(slot.rank, a, b),
    );
    const palette = host.model.get("_palette");
    return foldTooltip(slot.rank, threads, bins, k, a, b, fold, (code) =>
      host.colors.label(palette.kinds[code]?.key ?? ""),
    );
  },

  want(host, slot, w) {
    if (host.foldsSupported) w.folds.push(slot.rank);
    else w.rows.push(...(slot.foldRows ?? []));
  },

  click(host, slot) {
    unfold(host, slot);
    return true;
  },

  clickLabel: unfold,
};
