/**
 * A run in the main area: the dashboard of `tv.Dashboard` (js/dashboard/ `DashboardView`:
 * tabs of figures, findings, tables, bokeh charts and the timeline), fed over HTTP by a
 * `RestDashboardSource`. With a baseline, the same dashboard has a Diff tab, opened first:
 * the diff of two runs selected in the sidebar.
 *
 * While the server loads the run, the panel shows its progress (TaskView); once the
 * dashboard's payload is there, the dashboard takes over.
 */
import { MainAreaWidget } from "@jupyterlab/apputils";
import { CommandToolbarButton, ToolbarButton, refreshIcon } from "@jupyterlab/ui-components";
import type { CommandRegistry } from "@lumino/commands";

import type { DashboardPayload } from "../dashboard/protocol";
import { DashboardView } from "../dashboard/view";
import type { DashboardState } from "../dashboard/protocol";
import { LocalModel } from "../timeline/state";
import type { RestDashboardSource } from "./dashboardsource";
import { displayName } from "./format";
import { tracesIcon } from "./icons";
import { TaskView } from "./task";
import type { TaskState } from "./messages";

/** The main-area content of a run (or of two runs compared): the dashboard. */
export class RunView extends TaskView<DashboardPayload> {
  /**
   * @param source The run's data (with a baseline for a diff).
   * @param tab The tab open first ("overview"; "diff" for a comparison).
   */
  constructor(
    readonly source: RestDashboardSource,
    tab = source.baseline !== null ? "diff" : "overview",
  ) {
    super("tv-RunView");
    this.node.dataset.path = source.path;
    if (source.baseline !== null) this.node.dataset.baseline = source.baseline;
    this._state = new LocalModel<DashboardState>({ tab, expanded: true });
  }

  /** The run, relative to the server root. */
  get path(): string {
    return this.source.path;
  }

  /** The run compared with, or null. */
  get baseline(): string | null {
    return this.source.baseline;
  }

  /** The dashboard, once the payload is there. */
  get dashboard(): DashboardView | null {
    return this._view;
  }

  protected fetch(): Promise<TaskState<DashboardPayload>> {
    return this.source.payloadState();
  }

  protected render(host: HTMLElement, payload: DashboardPayload): void {
    this._view?.dispose();
    // The tab stays open across reloads (the state outlives the view).
    this._view = new DashboardView(host, this.source, payload, { state: this._state });
  }

  protected describe(): string {
    return this.source.baseline !== null
      ? `Comparing ${this.source.path} with ${this.source.baseline}`
      : `Loading ${this.source.path}`;
  }

  override dispose(): void {
    this._view?.dispose();
    this._view = null;
    super.dispose();
  }

  private readonly _state: LocalModel<DashboardState>;
  private _view: DashboardView | null = null;
}

let widgets = 0;

/** A run's main-area widget: the view, with Reload (and Insert load code) in its toolbar. */
export function createRunWidget(options: {
  source: RestDashboardSource;
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
  const name = displayName(source.path, kind);
  if (source.baseline !== null) {
    widget.title.label = `${displayName(source.baseline, "folder")} → ${name}`;
    widget.title.caption = `Trace runs ${source.baseline} (baseline) and ${source.path} compared`;
  } else {
    widget.title.label = name;
    widget.title.caption = `Trace run ${source.path}`;
  }
  widget.title.icon = tracesIcon;
  widget.title.closable = true;
  widget.toolbar.addItem(
    "reload",
    new ToolbarButton({ icon: refreshIcon, tooltip: "Load again", onClick: () => void content.reload() }),
  );
  if (insertCommand !== null) {
    widget.toolbar.addItem(
      "insert",
      new CommandToolbarButton({ commands, id: insertCommand, args: { path: source.path, toolbar: true } }),
    );
  }
  return widget;
}
