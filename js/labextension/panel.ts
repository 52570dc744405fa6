/**
 * The Traces sidebar: a Lumino panel that owns the model and its views (a toolbar with the
 * filter and the actions, the list of runs, a status line).
 *
 * The list is an ARIA listbox that keeps the keyboard focus while rows are re-rendered:
 * the active row is named by `aria-activedescendant`. Keys: Up/Down (with Shift to extend
 * the selection), Home/End, Page Up/Down, Space (toggle), Enter (open), Ctrl+A, Escape.
 */
import type { CommandRegistry } from "@lumino/commands";
import type { Message } from "@lumino/messaging";
import { Signal } from "@lumino/signaling";
import { Panel, Widget } from "@lumino/widgets";
import { CommandToolbarButton, Toolbar } from "@jupyterlab/ui-components";

import { formatBytes, formatDuration, formatPct, plural } from "../format";
import {
  RUN_STATUS_TEXT,
  displayName,
  formatAge,
  formatProgress,
  middleEllipsis,
  skippedText,
} from "./format";
import type { TracesModel } from "./model";
import type { BaselineRef, RunRow } from "./messages";
import { tracesIcon } from "./icons";
import type { RemoteRunList } from "./remote";
import { verdictBadge } from "./verdict";

/** Command ids (index.ts registers them). */
export const CommandIds = {
  openSidebar: "traceview:open-sidebar",
  refresh: "traceview:refresh",
  openRun: "traceview:open-run",
  insertLoadCode: "traceview:insert-load-code",
  diffRuns: "traceview:diff-runs",
  compareBaseline: "traceview:compare-baseline",
  setBaseline: "traceview:set-baseline",
} as const;

/** Seconds between updates of the "3 min ago" texts. */
const AGE_UPDATE_S = 30;

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

/** The filter box above the list. */
class FilterBox extends Widget {
  constructor(model: TracesModel, list: () => HTMLElement) {
    super({ node: el("div", "tv-TracesFilter") });
    this._model = model;
    const input = el("input", "jp-mod-styled tv-TracesFilter-input");
    input.type = "search";
    input.placeholder = "Filter runs";
    input.setAttribute("aria-label", "Filter runs");
    input.spellcheck = false;
    input.addEventListener("input", () => (this._model.filter = input.value));
    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown") {
        event.preventDefault();
        list().focus();
        if (this._model.activeRun === null) this._model.moveActive("first");
      } else if (event.key === "Escape" && input.value) {
        event.preventDefault();
        event.stopPropagation();
        input.value = "";
        this._model.filter = "";
      }
    });
    this.node.appendChild(input);
    this._input = input;
  }

  /** Put the keyboard in the filter box. */
  focusInput(): void {
    this._input.focus();
  }

  private readonly _model: TracesModel;
  private readonly _input: HTMLInputElement;
}

/** The list of runs. */
export class RunList extends Widget {
  constructor(model: TracesModel, commands: CommandRegistry) {
    super({ node: el("ul", "tv-RunList") });
    this._model = model;
    this._commands = commands;
    this.id = `tv-RunList-${String(++RunList._count)}`;
    const node = this.node;
    node.tabIndex = 0;
    node.setAttribute("role", "listbox");
    node.setAttribute("aria-label", "Trace runs");
    node.setAttribute("aria-multiselectable", "true");
    model.changed.connect(() => {
      this._render();
    }, this);
  }

  protected override onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.node.addEventListener("keydown", this);
    this.node.addEventListener("mousedown", this);
    this.node.addEventListener("dblclick", this);
    this.node.addEventListener("contextmenu", this);
    this._ages = window.setInterval(() => this._updateAges(), AGE_UPDATE_S * 1000);
    this._render();
  }

  protected override onBeforeDetach(msg: Message): void {
    this.node.removeEventListener("keydown", this);
    this.node.removeEventListener("mousedown", this);
    this.node.removeEventListener("dblclick", this);
    this.node.removeEventListener("contextmenu", this);
    window.clearInterval(this._ages);
    super.onBeforeDetach(msg);
  }

  override dispose(): void {
    Signal.clearData(this);
    super.dispose();
  }

  handleEvent(event: Event): void {
    switch (event.type) {
      case "keydown":
        this._onKeyDown(event as KeyboardEvent);
        break;
      case "mousedown":
        this._onMouseDown(event as MouseEvent);
        break;
      case "dblclick":
        this._onDoubleClick(event as MouseEvent);
        break;
      case "contextmenu":
        this._onContextMenu(event as MouseEvent);
        break;
    }
  }

  private _rowPath(event: Event): string | null {
    const target = event.target as HTMLElement | null;
    const row = target?.closest<HTMLElement>(".tv-RunRow");
    return row?.dataset.path ?? null;
  }

  private _onMouseDown(event: MouseEvent): void {
    const path = this._rowPath(event);
    if (path === null || event.button !== 0) return;
    const mode = event.shiftKey ? "range" : event.ctrlKey || event.metaKey ? "toggle" : "replace";
    if (mode === "range") event.preventDefault(); // no text selection
    this._model.select(path, mode);
    this.node.focus();
  }

  private _onDoubleClick(event: MouseEvent): void {
    const path = this._rowPath(event);
    if (path !== null) void this._commands.execute(CommandIds.openRun, { path });
  }

  private _onContextMenu(event: MouseEvent): void {
    // The context menu acts on the selection: right-click outside it selects the row.
    const path = this._rowPath(event);
    if (path !== null && !this._model.isSelected(path)) this._model.select(path, "replace");
  }

  private _onKeyDown(event: KeyboardEvent): void {
    const m = this._model;
    const extend = event.shiftKey;
    const actions: Record<string, (() => void) | undefined> = {
      ArrowDown: () => m.moveActive(1, extend),
      ArrowUp: () => m.moveActive(-1, extend),
      PageDown: () => m.moveActive(10, extend),
      PageUp: () => m.moveActive(-10, extend),
      Home: () => m.moveActive("first", extend),
      End: () => m.moveActive("last", extend),
      " ": () => m.toggleActive(),
      Escape: () => m.clearSelection(),
      Enter: () => {
        const run = m.activeRun;
        if (run) void this._commands.execute(CommandIds.openRun, { path: run.path });
      },
    };
    if ((event.ctrlKey || event.metaKey) && event.key === "a") actions.a = () => m.selectAll();
    const action = actions[event.key];
    if (action === undefined || event.altKey) return;
    event.preventDefault();
    event.stopPropagation();
    action();
  }

  private _rowId(index: number): string {
    return `${this.id}-row-${String(index)}`;
  }

  private _render(): void {
    const m = this._model;
    const node = this.node;
    const runs = m.visibleRuns;
    const active = m.activeRun?.path ?? null;
    const now = Date.now();
    const rows: HTMLElement[] = [];
    let activeId = "";
    runs.forEach((run, i) => {
      const row = renderRow(
        run,
        now,
        m.isSelected(run.path),
        run.path === active,
        m.isNew(run.path),
        m.baseline,
      );
      row.id = this._rowId(i);
      if (run.path === active) activeId = row.id;
      rows.push(row);
    });
    if (rows.length === 0) {
      const empty = el("li", "tv-RunList-empty");
      empty.setAttribute("role", "presentation");
      empty.textContent = emptyText(m);
      rows.push(empty);
    }
    node.replaceChildren(...rows);
    if (activeId) node.setAttribute("aria-activedescendant", activeId);
    else node.removeAttribute("aria-activedescendant");
    node.dataset.count = String(runs.length);
    node.dataset.pending = String(m.pending);
    if (activeId) document.getElementById(activeId)?.scrollIntoView({ block: "nearest" });
  }

  private _updateAges(): void {
    const now = Date.now();
    for (const span of this.node.querySelectorAll<HTMLElement>("[data-mtime]")) {
      span.textContent = formatAge(Number(span.dataset.mtime), now);
    }
  }

  private static _count = 0;
  private readonly _model: TracesModel;
  private readonly _commands: CommandRegistry;
  private _ages = 0;
}

function emptyText(m: TracesModel): string {
  if (!m.listed) return "Looking for trace runs…";
  if (m.error !== null) return "";
  if (m.runs.length > 0) return `No run matches “${m.filter}”.`;
  const where = m.settings.roots.length ? m.settings.roots.join(", ") : "the server's folders";
  return (
    `No trace runs in ${where}. Profile a cell with %%traceprofile, or put PyTorch profiler ` +
    "traces (one file per rank) in a folder here."
  );
}

/** Characters of a run's name shown in its row (the whole name on hover): fits a default-width sidebar. */
const NAME_CHARS = 32;

function figure(text: string, title: string, className = ""): HTMLElement {
  const span = el("span", `tv-RunRow-figure ${className}`.trim(), text);
  span.title = title;
  return span;
}

/** One row of the list. */
export function renderRow(
  run: RunRow,
  nowMs: number,
  selected: boolean,
  active: boolean,
  fresh: boolean,
  baseline: BaselineRef | null = null,
): HTMLElement {
  const row = el("li", "tv-RunRow");
  row.setAttribute("role", "option");
  row.setAttribute("aria-selected", String(selected));
  row.dataset.path = run.path;
  row.dataset.status = run.status;
  row.classList.toggle("tv-mod-selected", selected);
  row.classList.toggle("tv-mod-active", active);
  row.classList.toggle("tv-mod-new", fresh);
  row.classList.toggle("tv-mod-error", run.status === "error");
  const skipped = run.status === "ready" ? (run.figures?.skipped_files ?? []) : [];
  const files = `${String(run.files)} trace file${run.files === 1 ? "" : "s"}`;
  const read = skipped.length ? ` (${String(skipped.length)} not read:\n${skippedText(skipped)})` : "";
  const fullName = displayName(run.path, run.kind, run.title);
  row.title = `${fullName === run.path ? "" : fullName + "\n"}${run.path}\n${files}${read}, ${formatBytes(run.size)}`;

  const head = el("div", "tv-RunRow-head");
  const name = el("span", "tv-RunRow-name", middleEllipsis(fullName, NAME_CHARS));
  name.title = fullName;
  head.appendChild(name);
  if (run.kind !== "folder") head.appendChild(el("span", "tv-RunRow-kind", run.kind));
  const status = run.status === "ready" ? RUN_STATUS_TEXT[run.figures?.run_status ?? "ok"] : undefined;
  if (status) {
    const badge = el("span", "tv-RunRow-kind tv-RunRow-warnBadge tv-RunRow-partial", status.badge);
    badge.title = status.hint;
    head.appendChild(badge);
  }
  if (skipped.length) {
    const badge = el(
      "span",
      "tv-RunRow-kind tv-RunRow-warnBadge tv-RunRow-skipped",
      `${String(skipped.length)} skipped`,
    );
    badge.title = `Trace files not read (a rank missing from every figure):\n${skippedText(skipped)}`;
    head.appendChild(badge);
  }
  if (fresh) head.appendChild(el("span", "tv-RunRow-kind tv-RunRow-newBadge", "new"));
  if (baseline !== null && baseline.path === run.path) {
    const badge = el("span", "tv-RunRow-kind tv-RunRow-baselineBadge", "baseline");
    badge.title = `Baseline ${baseline.name} (kept in ${baseline.file}, set ${baseline.set_at}): the runs' verdicts are against it`;
    head.appendChild(badge);
  }

  const age = el("span", "tv-RunRow-age", formatAge(run.mtime, nowMs));
  age.dataset.mtime = String(run.mtime);
  age.title = `Modified ${new Date(run.mtime * 1000).toLocaleString()}`;
  head.appendChild(age);
  row.appendChild(head);

  // A titled %%traceprofile run shows its whole folder below (NAME/timestamp tell runs apart).
  const parts = run.path.split("/");
  const parent = run.kind !== "traceprofile" ? parts.slice(0, -1) : run.title ? parts : parts.slice(0, -2);
  if (parent.length) row.appendChild(el("div", "tv-RunRow-path", parent.join("/") + "/"));

  if (run.status === "ready" && run.figures) {
    const f = run.figures;
    const figures = el("div", "tv-RunRow-figures");
    figures.appendChild(
      figure(
        plural(f.ranks, "rank"),
        skipped.length
          ? `Ranks read: ${files}, ${String(skipped.length)} not read (on_error "skip")`
          : "Ranks (trace files)",
        skipped.length ? "tv-RunRow-warnFigure" : "",
      ),
    );
    figures.appendChild(
      f.gpu
        ? figure(formatDuration(f.job_span_ns), "Job span: first GPU work to last, all ranks")
        : figure(formatDuration(f.trace_span_ns), "Trace span: first event to last (no GPU work)"),
    );
    if (f.gpu) {
      figures.appendChild(
        figure(
          `GPU ${formatPct(f.gpu_busy_pct)}`,
          "GPU busy: time any GPU work runs, % of each rank's span (mean over ranks)",
        ),
      );
      figures.appendChild(
        figure(`idle ${formatPct(f.idle_pct)}`, "GPU idle, % of each rank's span (mean over ranks)"),
      );
      figures.appendChild(
        figure(
          `comm ${formatPct(f.exposed_comm_pct)}`,
          "Exposed communication: communication with no compute beside it, % of each rank's span (mean over ranks)",
        ),
      );
    } else {
      figures.appendChild(figure("CPU only", "No GPU work in the trace", "tv-RunRow-cpu"));
    }
    if (f.workload && f.workload !== "cpu_only")
      figures.appendChild(figure(f.workload, `Workload (tv.workload): ${f.workload_evidence}`));
    row.appendChild(figures);
  } else if (run.status === "error") {
    const error = el("div", "tv-RunRow-error", run.message ?? "This run cannot be read.");
    row.appendChild(error);
  } else {
    const progress = el("div", "tv-RunRow-progress");
    const bar = el("progress", "tv-RunRow-bar");
    const p = run.progress;
    if (p?.total && p.stage?.startsWith("loading")) {
      bar.max = p.total;
      bar.value = p.done ?? 0;
    }
    bar.setAttribute("aria-label", `Analysing ${run.path}`);
    progress.appendChild(bar);
    progress.appendChild(el("span", "tv-RunRow-stage", formatProgress(p)));
    row.appendChild(progress);
  }
  // Against the baseline: its own line, so that the run's name keeps the head.
  const verdict = verdictBadge(run.verdict, baseline?.name);
  if (verdict !== null) {
    const line = el("div", "tv-RunRow-compare");
    const badge = el("span", `tv-RunRow-verdict tv-mod-${verdict.tone}`, verdict.text);
    badge.title = `${verdict.title}\n(right-click: Compare with Baseline)`;
    badge.dataset.verdict = verdict.tone;
    line.appendChild(badge);
    row.appendChild(line);
  }
  return row;
}

/** The status line below the list: counts, analysis in progress, listing errors. */
class StatusLine extends Widget {
  constructor(model: TracesModel) {
    super({ node: el("div", "tv-TracesStatus") });
    this._model = model;
    this.node.setAttribute("aria-live", "polite");
    model.changed.connect(() => {
      this._render();
    }, this);
    this._render();
  }

  override dispose(): void {
    Signal.clearData(this);
    super.dispose();
  }

  private _render(): void {
    const m = this._model;
    const node = this.node;
    node.replaceChildren();
    node.classList.toggle("tv-mod-error", m.error !== null);
    if (m.error !== null) {
      const msg = el("div", "tv-TracesStatus-error", `Cannot list runs: ${m.error}`);
      msg.setAttribute("role", "alert");
      node.appendChild(msg);
      return;
    }
    if (!m.listed) return;
    const parts = [`${String(m.runs.length)} run${m.runs.length === 1 ? "" : "s"}`];
    if (m.visibleRuns.length !== m.runs.length) parts.push(`${String(m.visibleRuns.length)} shown`);
    if (m.pending) parts.push(`${String(m.pending)} being analysed`);
    const selected = m.selectedRuns.length;
    if (selected) parts.push(`${String(selected)} selected`);
    if (m.truncated) parts.push("more runs exist than listed (c.TraceviewServer.max_runs)");
    node.textContent = parts.join(" · ");
  }

  private readonly _model: TracesModel;
}

/** The Traces sidebar: filter, actions, list and status; owns the model. */
export class TracesPanel extends Panel {
  constructor(options: { model: TracesModel; commands: CommandRegistry; remote?: RemoteRunList }) {
    super();
    const { model, commands } = options;
    this._remote = options.remote ?? null;
    this._model = model;
    this.id = "jp-traceview-traces";
    this.addClass("tv-TracesPanel");
    this.title.icon = tracesIcon;
    this.title.caption = "Traces";
    this.node.setAttribute("role", "region");
    this.node.setAttribute("aria-label", "Traces");

    const header = el("header", "tv-TracesPanel-header");
    header.appendChild(el("h2", "tv-TracesPanel-title", "Traces"));
    const headerWidget = new Widget({ node: header });

    const toolbar = new Toolbar();
    toolbar.addClass("tv-TracesPanel-toolbar");
    const buttons: [string, string][] = [
      ["refresh", CommandIds.refresh],
      ["open", CommandIds.openRun],
      ["insert", CommandIds.insertLoadCode],
      ["diff", CommandIds.diffRuns],
    ];
    for (const [name, id] of buttons) {
      toolbar.addItem(name, new CommandToolbarButton({ commands, id, args: { toolbar: true } }));
    }
    this._list = new RunList(model, commands);
    this._filter = new FilterBox(model, () => this._list.node);
    this.addWidget(headerWidget);
    this.addWidget(toolbar);
    this.addWidget(this._filter);
    this.addWidget(this._list);
    this.addWidget(new StatusLine(model));
    if (this._remote) this.addWidget(this._remote);
  }

  get model(): TracesModel {
    return this._model;
  }

  /** Put the keyboard on the list (or on the filter box). */
  focusList(): void {
    this._list.node.focus();
  }

  focusFilter(): void {
    this._filter.focusInput();
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._model.start(); // live refresh while the panel is visible
    void this._remote?.refresh();
  }

  protected override onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) this._model.start();
  }

  protected override onAfterHide(msg: Message): void {
    this._model.stop();
    super.onAfterHide(msg);
  }

  protected override onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    if (this.isAttached) this.focusList();
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this._model.dispose();
    super.dispose();
  }

  private readonly _model: TracesModel;
  private readonly _remote: RemoteRunList | null;
  private readonly _list: RunList;
  private readonly _filter: FilterBox;
}
