/** Formatting of table cells and evidence values (pure, unit-tested). */
import { formatDuration } from "../timeline/axis";

/** Bytes in binary units: 512 B, 1.5 KiB, 3 MiB. */
export function formatBytes(n: number): string {
  const units: [string, number][] = [
    ["GiB", 2 ** 30],
    ["MiB", 2 ** 20],
    ["KiB", 2 ** 10],
  ];
  for (const [u, s] of units) if (Math.abs(n) >= s) return `${trim(n / s)} ${u}`;
  return `${Math.round(n)} B`;
}

/** Three significant digits, no trailing zeros. */
function trim(v: number): string {
  return String(Number(v.toPrecision(3)));
}

/** A value of a table cell in its column's format. */
export function formatCell(value: unknown, format: string): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "string") return value;
  if (typeof value !== "number") return JSON.stringify(value);
  if (!Number.isFinite(value)) return "–";
  switch (format) {
    case "duration":
      return formatDuration(value);
    case "pct":
      return `${value.toFixed(1)}%`;
    case "bytes":
      return formatBytes(value);
    case "gbps":
      return `${trim(value)} GB/s`;
    case "int":
      return Math.round(value).toLocaleString("en-US");
    case "float":
      return trim(value);
    default:
      return String(value);
  }
}

/** The format of an evidence value, from its key's suffix (the analyses' naming rules). */
export function formatOfKey(key: string): string {
  if (key.endsWith("_ns")) return "duration";
  if (key.endsWith("_pct")) return "pct";
  if (key === "bytes" || key.endsWith("_bytes")) return "bytes";
  if (key.endsWith("_gbps")) return "gbps";
  return "float";
}

/** An evidence value as text. */
export function formatEvidence(key: string, value: unknown): string {
  if (typeof value === "number") {
    const f = formatOfKey(key);
    return Number.isInteger(value) && f === "float" ? value.toLocaleString("en-US") : formatCell(value, f);
  }
  if (Array.isArray(value))
    return value.map((v) => (Array.isArray(v) ? v.join(" × ") : String(v))).join(", ");
  if (value && typeof value === "object")
    return Object.entries(value as Record<string, unknown>)
      .map(
        ([k, v]) => `${k}: ${typeof v === "object" && v !== null ? JSON.stringify(v) : formatEvidence(k, v)}`,
      )
      .join(" · ");
  return String(value);
}

/** Ranks as ranges: [0,1,2,3,5] -> "0-3, 5". */
export function formatRanks(ranks: number[]): string {
  const v = [...new Set(ranks)].sort((a, b) => a - b);
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
