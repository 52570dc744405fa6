/**
 * The one way numbers are written in the front end (timeline, dashboard, Traces sidebar).
 *
 * Twin of jupyter_traceview/format.py: same rules, same text (js/tests/format.test.ts and
 * tests/test_format.py check the same cases). Durations: three significant digits in
 * ns, us, ms or s ("850 ns", "12.3 us", "4.56 ms", "14 ms"); times since the trace's origin
 * with a sign ("+18.1 ms"); sizes in binary units ("512 B", "1.5 KiB", "3 MiB"); bandwidth in
 * GB/s (10^9 bytes/s); percentages with one decimal ("42.1%"); counts with thousands
 * separators; a missing value as "–".
 */

/** How a missing value is written. */
export const MISSING = "–";

type Maybe = number | null | undefined;

const TIME_UNITS: [string, number][] = [
  ["s", 1e9],
  ["ms", 1e6],
  ["us", 1e3],
];

const SIZE_UNITS: [string, number][] = [
  ["TiB", 2 ** 40],
  ["GiB", 2 ** 30],
  ["MiB", 2 ** 20],
  ["KiB", 2 ** 10],
];

/** Number arguments may still be NaN or infinite (written as MISSING), and null in JSON. */
function finite(v: Maybe): v is number {
  return v !== null && v !== undefined && Number.isFinite(v);
}

/** Nearest integer, halves up (Python's side: math.floor(v + 0.5)). */
function round(v: number): number {
  return Math.floor(v + 0.5);
}

/** Three significant digits, trailing zeros dropped, no exponent. */
export function sig3(v: number): string {
  if (v === 0) return "0";
  return String(Number(v.toPrecision(3)));
}

function thousands(n: number): string {
  return n.toLocaleString("en-US");
}

/** A duration in ns: "850 ns", "12.3 us", "4.56 ms", "7.89 s", "1,234 s". */
export function formatDuration(ns: number): string {
  if (!finite(ns)) return MISSING;
  const a = Math.abs(ns);
  if (round(a) < 1000) return `${round(ns) || 0} ns`;
  if (a >= 999.5e9) return `${thousands(round(ns / 1e9))} s`;
  for (let i = 0; i < TIME_UNITS.length; i++) {
    const [name, scale] = TIME_UNITS[i]!;
    if (a >= scale || i === TIME_UNITS.length - 1) {
      const text = sig3(ns / scale);
      if (Math.abs(Number(text)) >= 1000) {
        const [bigName, bigScale] = TIME_UNITS[i - 1]!;
        return `${sig3(ns / bigScale)} ${bigName}`;
      }
      return `${text} ${name}`;
    }
  }
  return MISSING;
}

/** A time since the trace's origin (ns): "+18.1 ms"; negative times get "-". */
export function formatTime(relNs: number): string {
  if (!finite(relNs)) return MISSING;
  return (relNs < 0 ? "-" : "+") + formatDuration(Math.abs(relNs));
}

/**
 * A time since the trace's origin to the ns, for one event's details: "+7.268000 ms".
 * (Typed into `timeline.show_range(trace.t0_ns + t, ...)` it lands on the event.)
 */
export function formatTimePrecise(relNs: number): string {
  if (!finite(relNs)) return MISSING;
  const sign = relNs < 0 ? "-" : "+";
  const a = Math.abs(relNs);
  if (a < 1e3) return `${sign}${round(a)} ns`;
  if (a < 1e6) return `${sign}${(a / 1e3).toFixed(3)} us`;
  if (a < 1e9) return `${sign}${(a / 1e6).toFixed(6)} ms`;
  return `${sign}${(a / 1e9).toFixed(9)} s`;
}

/** A size in bytes, binary units: "512 B", "1.5 KiB", "3 MiB". */
export function formatBytes(n: Maybe): string {
  if (!finite(n)) return MISSING;
  const a = Math.abs(n);
  for (let i = 0; i < SIZE_UNITS.length; i++) {
    const [name, scale] = SIZE_UNITS[i]!;
    if (a >= scale) {
      const text = sig3(n / scale);
      if (Math.abs(Number(text)) >= 1024 && i > 0) {
        const [bigName, bigScale] = SIZE_UNITS[i - 1]!;
        return `${sig3(n / bigScale)} ${bigName}`;
      }
      return `${text} ${name}`;
    }
  }
  if (round(a) >= 1024) return `${sig3(n / 1024)} KiB`;
  return `${round(n) || 0} B`;
}

/** A bandwidth in GB/s (10^9 bytes/s): "12.3 GB/s". */
export function formatRate(gbps: Maybe): string {
  if (!finite(gbps)) return MISSING;
  if (Math.abs(gbps) >= 1000) return `${thousands(round(gbps))} GB/s`;
  return `${sig3(gbps)} GB/s`;
}

/** A percentage (already in %): "42.1%". */
export function formatPct(pct: Maybe): string {
  if (!finite(pct)) return MISSING;
  return `${pct.toFixed(1)}%`;
}

/** A count with thousands separators: "1,234". */
export function formatCount(n: number): string {
  if (!finite(n)) return MISSING;
  return thousands(round(n) || 0);
}

/** "1 rank", "8 ranks", "1,234 events". */
export function plural(n: number, word: string, words?: string): string {
  return `${formatCount(n)} ${n === 1 ? word : (words ?? `${word}s`)}`;
}

/** Integers as ranges: [0,1,2,3,5] -> "0-3, 5". */
export function formatRanges(values: readonly number[]): string {
  const v = [...new Set(values)].sort((a, b) => a - b);
  const parts: string[] = [];
  let i = 0;
  while (i < v.length) {
    let j = i;
    while (j + 1 < v.length && v[j + 1] === v[j]! + 1) j++;
    parts.push(j > i ? `${v[i]}-${v[j]}` : String(v[i]));
    i = j + 1;
  }
  return parts.join(", ");
}
