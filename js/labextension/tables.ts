/**
 * Tables of the run and diff panels: a server Table (worker.py `_frame_json`) as an HTML
 * table, cells formatted by the column's unit (`*_ns` durations, `*_pct` percentages).
 */
import { formatDuration, formatPct } from "./format";
import type { Table } from "./tokens";

export type Cell = Table["data"][number][number];

/** A column's value in a row of `table`, by name. */
export function column(table: Table, name: string): Cell[] {
  const i = table.columns.indexOf(name);
  return i < 0 ? [] : table.data.map((row) => row[i] ?? null);
}

/** Rows of `table` as objects by column name. */
export function records(table: Table): Record<string, Cell>[] {
  return table.data.map((row) => Object.fromEntries(table.columns.map((c, i) => [c, row[i] ?? null])));
}

/** A cell as plain text (objects as JSON, null as ""). */
export function cellText(value: Cell | undefined): string {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** A cell as text, by its column's unit. */
export function formatCell(name: string, value: Cell): string {
  if (value === null) return "–";
  if (typeof value === "number") {
    if (name.endsWith("_ns")) return formatDuration(value);
    if (name.endsWith("_pct")) return formatPct(value);
    return Number.isInteger(value) ? value.toLocaleString("en-US") : value.toPrecision(4);
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "object") return JSON.stringify(value);
  return value;
}

/** A column name as a header: "gpu_busy_pct" -> "gpu busy %", "dur_ns" -> "dur". */
export function columnLabel(name: string): string {
  return name.replace(/_pct$/, " %").replace(/_ns$/, "").replace(/_/g, " ");
}

export interface TableOptions {
  /** Columns shown, in order (default: all). */
  columns?: string[];
  /** Rows shown at most (a note says how many more there are). */
  maxRows?: number;
  /** Header text per column (default: columnLabel). */
  labels?: Record<string, string>;
  /** A class for some rows (e.g. by status). */
  rowClass?: (row: Record<string, Cell>) => string;
  /** Cell text overrides per column. */
  format?: Record<string, (value: Cell, row: Record<string, Cell>) => string>;
  caption?: string;
}

/** `table` as an HTML table (numbers right-aligned), with a note when rows are left out. */
export function renderTable(table: Table, options: TableOptions = {}): HTMLElement {
  const cols = (options.columns ?? table.columns).filter((c) => table.columns.includes(c));
  const wrap = document.createElement("div");
  wrap.className = "tv-Table-wrap";
  const t = document.createElement("table");
  t.className = "tv-Table";
  if (options.caption) {
    const cap = document.createElement("caption");
    cap.textContent = options.caption;
    t.appendChild(cap);
  }
  const head = t.createTHead().insertRow();
  for (const c of cols) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = options.labels?.[c] ?? columnLabel(c);
    head.appendChild(th);
  }
  const body = t.createTBody();
  const rows = records(table);
  const shown = options.maxRows === undefined ? rows : rows.slice(0, options.maxRows);
  for (const row of shown) {
    const tr = body.insertRow();
    const cls = options.rowClass?.(row);
    if (cls) tr.className = cls;
    for (const c of cols) {
      const td = tr.insertCell();
      const value = row[c] ?? null;
      td.textContent = options.format?.[c]?.(value, row) ?? formatCell(c, value);
      if (typeof value === "number") td.className = "tv-Table-num";
    }
  }
  wrap.appendChild(t);
  const hidden = table.rows - shown.length;
  if (hidden > 0) {
    const note = document.createElement("p");
    note.className = "tv-Table-note";
    note.textContent = `${hidden.toLocaleString("en-US")} more row${hidden === 1 ? "" : "s"} not shown: load the run in a notebook for the whole table.`;
    wrap.appendChild(note);
  }
  return wrap;
}
