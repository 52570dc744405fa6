/**
 * The tooltip of a rank's folded CPU row (pure, unit-tested): the column's summary from the
 * window (views/timeline/fold.py: time any thread works, the kind covering most of it, events
 * starting), then, once the owner's `_fold` answer arrives, how many threads work in the
 * column, the mean number busy, and the names taking most time.
 */
import { formatCount, formatDuration, formatPct, formatTimePrecise as formatTime } from "../format";
import type { FoldSummary } from "./model";
import { type BinRow, NO_KIND } from "./protocol";

export interface FoldTip {
  title: string;
  lines: [string, string][];
}

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
