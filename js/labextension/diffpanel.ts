/**
 * The diff of two runs in the main area: `tv.trace_diff(a, b)` from `GET /traceview/api/diff`,
 * the two runs' figures side by side, and the table filtered by status.
 */
import { MainAreaWidget } from "@jupyterlab/apputils";

import { displayName, formatDuration, formatPct } from "./format";
import { tracesIcon } from "./icons";
import { cellText, renderTable } from "./tables";
import type { Cell } from "./tables";
import { TaskView } from "./task";
import type { DiffData, ITracesApi, RunFigures, TaskState } from "./tokens";

/** Rows drawn at most (the server sends up to 5,000, sorted by |total delta|). */
const MAX_ROWS = 1000;
const STATUSES = ["changed", "added", "removed", "unchanged"] as const;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = "",
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function signed(ns: Cell): string {
  if (typeof ns !== "number") return "–";
  return `${ns > 0 ? "+" : ""}${formatDuration(ns)}`;
}

function signedPct(p: Cell): string {
  if (typeof p !== "number") return "–";
  return `${p > 0 ? "+" : ""}${formatPct(p)}`;
}

/** The two runs' figures as a small table: figure, baseline, other, change. */
function compareFigures(data: DiffData): HTMLElement {
  const t = el("table", "tv-Table tv-DiffFigures");
  const head = t.createTHead().insertRow();
  for (const h of ["", `baseline: ${data.a.path}`, `other: ${data.b.path}`]) {
    const th = el("th", "", h);
    th.scope = "col";
    head.appendChild(th);
  }
  const body = t.createTBody();
  const row = (label: string, f: (h: RunFigures) => string): void => {
    const tr = body.insertRow();
    const th = el("th", "", label);
    th.scope = "row";
    tr.appendChild(th);
    tr.insertCell().textContent = f(data.a.headline);
    tr.insertCell().textContent = f(data.b.headline);
  };
  row("ranks", (h) => String(h.ranks));
  row("span", (h) => formatDuration(h.span_ns));
  row("GPU busy", (h) => formatPct(h.gpu_busy_pct));
  row("idle", (h) => formatPct(h.idle_pct));
  row("exposed comm", (h) => formatPct(h.exposed_comm_pct));
  row("kernels", (h) => h.kernels.toLocaleString("en-US"));
  return t;
}

export function renderDiff(host: HTMLElement, data: DiffData): void {
  host.appendChild(el("h2", "tv-RunView-heading", `${data.a.path} → ${data.b.path}`));
  host.appendChild(compareFigures(data));

  const shown = new Set<string>(["changed", "added", "removed"]);
  const chips = el("fieldset", "tv-DiffFilter");
  chips.appendChild(el("legend", "", "Show"));
  const tableHost = el("div", "tv-DiffTable");
  const draw = (): void => {
    const status = data.table.columns.indexOf("status");
    const keep = data.table.data.filter((r) => shown.has(cellText(r[status])));
    const table = { ...data.table, data: keep, rows: keep.length };
    tableHost.replaceChildren(
      renderTable(table, {
        columns: [
          "kind",
          "name",
          "count_a",
          "count_b",
          "total_ns_a",
          "total_ns_b",
          "total_delta_ns",
          "total_delta_pct",
          "status",
        ],
        labels: {
          count_a: "count (baseline)",
          count_b: "count (other)",
          total_ns_a: "total (baseline)",
          total_ns_b: "total (other)",
          total_delta_ns: "Δ total",
          total_delta_pct: "Δ %",
        },
        format: { total_delta_ns: signed, total_delta_pct: signedPct },
        rowClass: (r) => `tv-Diff-${cellText(r.status)}`,
        maxRows: MAX_ROWS,
      }),
    );
    if (data.table.truncated) {
      tableHost.appendChild(
        el(
          "p",
          "tv-Table-note",
          `The server sent the ${data.table.data.length.toLocaleString("en-US")} largest changes of ` +
            `${data.table.rows.toLocaleString("en-US")}: tv.trace_diff in a notebook gives them all.`,
        ),
      );
    }
  };
  for (const status of STATUSES) {
    const label = el("label", "tv-DiffFilter-chip");
    const box = el("input");
    box.type = "checkbox";
    box.checked = shown.has(status);
    box.addEventListener("change", () => {
      if (box.checked) shown.add(status);
      else shown.delete(status);
      draw();
    });
    label.append(box, ` ${status} (${String(data.status_counts[status] ?? 0)})`);
    chips.appendChild(label);
  }
  host.appendChild(chips);
  host.appendChild(tableHost);
  draw();
}

/** The main-area content of a diff. */
export class DiffView extends TaskView<DiffData> {
  constructor(
    readonly a: string,
    readonly b: string,
    private readonly _api: ITracesApi,
    private readonly _cache: () => string,
  ) {
    super("tv-DiffView");
    this.node.dataset.a = a;
    this.node.dataset.b = b;
  }

  protected fetch(): Promise<TaskState<DiffData>> {
    return this._api.diff(this.a, this.b, this._cache());
  }

  protected render(host: HTMLElement, data: DiffData): void {
    renderDiff(host, data);
  }

  protected describe(): string {
    return `Comparing ${this.a} with ${this.b}`;
  }
}

let widgets = 0;

/** A diff's main-area widget. */
export function createDiffWidget(content: DiffView): MainAreaWidget<DiffView> {
  const widget = new MainAreaWidget({ content });
  widget.id = `tv-diff-${String(++widgets)}`;
  widget.addClass("tv-DiffPanel");
  widget.title.label = `${displayName(content.a, "traceprofile")} → ${displayName(content.b, "traceprofile")}`;
  widget.title.caption = `Trace diff: ${content.a} (baseline) and ${content.b}`;
  widget.title.icon = tracesIcon;
  widget.title.closable = true;
  return widget;
}
