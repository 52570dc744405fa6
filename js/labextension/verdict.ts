/**
 * A run's verdict against the baseline, as the Traces list shows it: a badge's text, tone and
 * tooltip from the server's `VerdictState` (`tv.compare(baseline, run)` summed up in
 * jupyter_traceview/server/tasks.py `verdict_of`). Pure: panel.ts draws it.
 */
import { formatDuration, formatPct } from "../format";
import type { VerdictState } from "./messages";

/** What the badge shows. */
export interface VerdictBadge {
  /** "slower +1.23 ms (+4.5%)", "same", "comparing…", "no verdict". */
  text: string;
  /** The CSS modifier: tv-mod-<tone>. */
  tone: "slower" | "faster" | "same" | "pending" | "error";
  /** The tooltip: against which baseline, the mean steps, the top cause, the noise test. */
  title: string;
}

/** A signed duration: "+1.23 ms", "-850 ns". */
export function signedDuration(ns: number): string {
  return `${ns >= 0 ? "+" : "-"}${formatDuration(Math.abs(ns))}`;
}

/** A signed percentage: "+4.5%", "-0.3%". */
export function signedPct(pct: number): string {
  return `${pct >= 0 ? "+" : "-"}${formatPct(Math.abs(pct))}`;
}

/** The badge of a run's verdict against `baselineName` (the baseline's name), or null without one. */
export function verdictBadge(
  state: VerdictState | undefined,
  baselineName = "baseline",
): VerdictBadge | null {
  if (state === undefined) return null;
  const against = `Against baseline ${baselineName} (${state.baseline})`;
  if (state.status === "error") {
    return { text: "no verdict", tone: "error", title: `${against}: ${state.message ?? "cannot compare"}` };
  }
  if (state.status !== "ready" || state.result === undefined) {
    const stage = state.progress?.stage;
    return { text: "comparing…", tone: "pending", title: `${against}: ${stage ?? state.status}` };
  }
  const r = state.result;
  const tone = r.verdict === "slower" || r.verdict === "faster" ? r.verdict : "same";
  const change =
    r.delta_ns !== null && r.delta_pct !== null
      ? `${signedDuration(r.delta_ns)} (${signedPct(r.delta_pct)})`
      : r.delta_ns !== null
        ? signedDuration(r.delta_ns)
        : "";
  const text = tone === "same" ? `same${change ? ` ${change}` : ""}` : `${tone} ${change}`.trim();
  const lines = [`${against}: ${tone}`];
  if (r.base_ns !== null && r.new_ns !== null) {
    lines.push(
      `Mean step ${formatDuration(r.base_ns)} → ${formatDuration(r.new_ns)}${change ? ` (${change})` : ""}`,
    );
  }
  if (r.top_cause) {
    const by = r.top_cause_delta_ns !== null ? ` ${signedDuration(r.top_cause_delta_ns)}` : "";
    const noise = r.top_cause_within_noise ? " (within noise)" : "";
    lines.push(`Top cause: ${r.top_cause}${by}${noise}`);
  }
  if (r.noise_test) lines.push(`Noise: ${r.noise_test}`);
  for (const w of r.warnings) lines.push(`Note: ${w}`);
  return { text, tone, title: lines.join("\n") };
}
