/**
 * A run in the main area: its headline, findings and tables from `GET /traceview/api/run`.
 *
 * `IRunSource` is where the panel gets its data; `renderRunData` is what it draws. When the
 * Dashboard's components (js/dashboard/) are on main, the panel mounts them instead, fed by
 * a REST implementation of their data source: a change of `render` and of the source only.
 */
import { MainAreaWidget } from "@jupyterlab/apputils";
import { CommandToolbarButton, ToolbarButton, refreshIcon } from "@jupyterlab/ui-components";
import type { CommandRegistry } from "@lumino/commands";

import { displayName, formatDuration, formatPct } from "./format";
import { tracesIcon } from "./icons";
import { TaskView } from "./task";
import { cellText, column, records, renderTable } from "./tables";
import type { ITracesApi, RunData, RunFigures, TaskState } from "./tokens";

/** Where a run panel's data comes from. */
export interface IRunSource {
  /** The run, relative to the server root. */
  readonly path: string;
  /** One poll: the data, or how far the server is. */
  fetch(): Promise<TaskState<RunData>>;
}

/** A run's data over REST (api.ts), with the cache folder of the settings. */
export class RestRunSource implements IRunSource {
  constructor(
    readonly path: string,
    private readonly _api: ITracesApi,
    private readonly _cache: () => string,
  ) {}

  fetch(): Promise<TaskState<RunData>> {
    return this._api.runData(this.path, this._cache());
  }
}

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

function section(title: string): HTMLElement {
  const s = el("section", "tv-RunView-section");
  s.appendChild(el("h2", "tv-RunView-heading", title));
  return s;
}

/** The headline figures as labelled tiles. */
export function renderHeadline(f: RunFigures): HTMLElement {
  const dl = el("dl", "tv-Headline");
  const tile = (label: string, value: string, title: string): void => {
    const div = el("div", "tv-Headline-tile");
    div.title = title;
    div.append(el("dt", "", label), el("dd", "", value));
    dl.appendChild(div);
  };
  tile("Ranks", String(f.ranks), "Ranks (trace files)");
  tile(f.gpu ? "GPU span" : "Trace span", formatDuration(f.span_ns), "Longest rank");
  tile("Iterations", String(f.iterations), "ProfilerStep iterations (most of a rank)");
  if (f.gpu) {
    tile(
      "GPU busy",
      formatPct(f.gpu_busy_pct),
      "Time any GPU work runs, % of the GPU span (mean over ranks)",
    );
    tile("Idle", formatPct(f.idle_pct), "GPU idle, % of the GPU span (mean over ranks)");
    tile(
      "Exposed comm",
      formatPct(f.exposed_comm_pct),
      "Collectives with no compute beside them, % of the GPU span",
    );
    tile("Kernels", f.kernels.toLocaleString("en-US"), "Kernels, summed over ranks");
  } else {
    tile("Events", f.events.toLocaleString("en-US"), "Events, summed over ranks (no GPU work)");
  }
  return dl;
}

/** Findings as a list: severity, title, the detail behind a disclosure, the analyses to run. */
function renderFindings(data: RunData, host: HTMLElement): void {
  const table = data.tables.findings;
  const s = section("Findings");
  if (!table || table.data.length === 0) {
    s.appendChild(
      el(
        "p",
        "tv-RunView-note",
        data.headline.gpu ? "No findings: nothing stands out." : "No GPU work: no findings.",
      ),
    );
    host.appendChild(s);
    return;
  }
  const list = el("ol", "tv-Findings");
  for (const f of records(table)) {
    const item = el("li", `tv-Finding tv-Finding-${cellText(f.severity) || "info"}`);
    const details = el("details");
    const summary = el("summary");
    summary.append(
      el("span", "tv-Finding-severity", cellText(f.severity)),
      el("span", "", cellText(f.title)),
    );
    details.appendChild(summary);
    details.appendChild(el("p", "tv-Finding-detail", cellText(f.detail)));
    if (f.analysis) details.appendChild(el("p", "tv-Finding-analysis", `Analyses: ${cellText(f.analysis)}`));
    item.appendChild(details);
    list.appendChild(item);
  }
  s.appendChild(list);
  host.appendChild(s);
}

/** Iterations with times from the first iteration's start (absolute ns lose digits in JS). */
function renderIterations(data: RunData, host: HTMLElement): void {
  const table = data.tables.iterations;
  if (!table || table.data.length === 0) return;
  const starts = column(table, "start_ns").filter((v): v is number => typeof v === "number");
  const t0 = starts.length ? Math.min(...starts) : 0;
  const since = (v: unknown): string => (typeof v === "number" ? `+${formatDuration(v - t0)}` : "–");
  const s = section("Iterations");
  s.appendChild(
    renderTable(table, {
      columns: ["rank", "step", "start_ns", "dur_ns", "gpu_start_ns", "gpu_end_ns"],
      labels: { start_ns: "start", dur_ns: "duration", gpu_start_ns: "GPU start", gpu_end_ns: "GPU end" },
      format: { start_ns: since, gpu_start_ns: since, gpu_end_ns: since },
      maxRows: 500,
    }),
  );
  host.appendChild(s);
}

/** Everything the panel shows for a run. */
export function renderRunData(host: HTMLElement, data: RunData): void {
  const head = section(data.source);
  head.classList.add("tv-RunView-head");
  head.appendChild(renderHeadline(data.headline));
  host.appendChild(head);
  renderFindings(data, host);
  const summary = data.tables.summary;
  if (summary) {
    const s = section("Per rank");
    s.appendChild(
      renderTable(summary, {
        columns: [
          "rank",
          "iterations",
          "gpu_span_ns",
          "gpu_busy_pct",
          "idle_pct",
          "compute_pct",
          "overlap_pct",
          "exposed_comm_pct",
          "kernels",
          "cpu_ops",
          "events",
        ],
        labels: { gpu_span_ns: "GPU span", gpu_busy_pct: "GPU busy %", exposed_comm_pct: "exposed comm %" },
      }),
    );
    host.appendChild(s);
  }
  renderIterations(data, host);
  const meta = data.tables.metadata;
  if (meta) {
    const s = section("Files");
    s.appendChild(
      renderTable(meta, {
        columns: ["rank", "path", "world_size", "backend", "device_name", "events", "clock_offset_ns"],
      }),
    );
    host.appendChild(s);
  }
}

/** The main-area content of a run. */
export class RunView extends TaskView<RunData> {
  constructor(
    readonly source: IRunSource,
    private readonly _render: (host: HTMLElement, data: RunData) => void = renderRunData,
  ) {
    super("tv-RunView");
    this.node.dataset.path = source.path;
  }

  get path(): string {
    return this.source.path;
  }

  protected fetch(): Promise<TaskState<RunData>> {
    return this.source.fetch();
  }

  protected render(host: HTMLElement, data: RunData): void {
    this._render(host, data);
  }

  protected describe(): string {
    return `Analysing ${this.source.path}`;
  }
}

let widgets = 0;

/** A run's main-area widget: the view, with Reload (and Insert load code) in its toolbar. */
export function createRunWidget(options: {
  source: IRunSource;
  kind: string;
  commands: CommandRegistry;
  /** The command inserting the load code, null without notebooks. */
  insertCommand: string | null;
}): MainAreaWidget<RunView> {
  const { source, kind, commands, insertCommand } = options;
  const content = new RunView(source);
  const widget = new MainAreaWidget({ content });
  widget.id = `tv-run-${String(++widgets)}`;
  widget.addClass("tv-RunPanel");
  widget.title.label = displayName(source.path, kind);
  widget.title.caption = `Trace run ${source.path}`;
  widget.title.icon = tracesIcon;
  widget.title.closable = true;
  widget.toolbar.addItem(
    "reload",
    new ToolbarButton({ icon: refreshIcon, tooltip: "Analyse again", onClick: () => void content.reload() }),
  );
  if (insertCommand !== null) {
    widget.toolbar.addItem(
      "insert",
      new CommandToolbarButton({ commands, id: insertCommand, args: { path: source.path, toolbar: true } }),
    );
  }
  return widget;
}
