/** Table cells and evidence values in their column's format (pure, unit-tested); numbers by js/format.ts. */
import {
  MISSING,
  formatBytes,
  formatCount,
  formatDuration,
  formatPct,
  formatRanges,
  formatRate,
  sig3,
} from "../format";

/** A value of a table cell in its column's format. */
export function formatCell(value: unknown, format: string): string {
  if (value === null || value === undefined) return MISSING;
  if (typeof value === "string") return value;
  if (typeof value !== "number") return JSON.stringify(value);
  if (!Number.isFinite(value)) return MISSING;
  switch (format) {
    case "duration":
      return formatDuration(value);
    case "pct":
      return formatPct(value);
    case "bytes":
      return formatBytes(value);
    case "gbps":
      return formatRate(value);
    case "int":
      return formatCount(value);
    case "float":
      return sig3(value);
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

/** Keys whose value -1 means "not recorded" (docs/schema.md): shown empty, not as data (format.py ABSENT_IF_NEGATIVE). */
const ABSENT_IF_NEGATIVE = new Set(["seq", "stream", "device", "tid", "correlation"]);

/** An evidence value as text (format.py `evidence`). */
export function formatEvidence(key: string, value: unknown): string {
  if (typeof value === "number" && value < 0 && ABSENT_IF_NEGATIVE.has(key)) return "";
  if (typeof value === "number") {
    const f = formatOfKey(key);
    return Number.isInteger(value) && f === "float" ? formatCount(value) : formatCell(value, f);
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

/**
 * The header of an evidence value: its key without the unit suffix, which the formatted
 * cells carry themselves ("gap_ns" -> "gap", its cells "387 us"; format.py `evidence_label`).
 */
export function evidenceLabel(key: string): string {
  return key.replace(/_(ns|pct|bytes|gbps)$/, "").replaceAll("_", " ");
}

/** Ranks as ranges: [0,1,2,3,5] -> "0-3, 5". */
export function formatRanks(ranks: number[]): string {
  return formatRanges(ranks);
}
