/**
 * jupyter_traceview's JupyterLab extension: the Traces sidebar, run and diff panels, and
 * their commands. Wiring only: the parts live in the modules imported below.
 */
import { ILayoutRestorer } from "@jupyterlab/application";
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette, WidgetTracker, showErrorMessage } from "@jupyterlab/apputils";
import type { MainAreaWidget } from "@jupyterlab/apputils";
import { INotebookTracker } from "@jupyterlab/notebook";
import { ISettingRegistry } from "@jupyterlab/settingregistry";
import { refreshIcon } from "@jupyterlab/ui-components";

import { RestTracesApi } from "./api";
import { RestDashboardSource } from "./dashboardsource";
import { tracesIcon } from "./icons";
import { TracesModel } from "./model";
import { insertLoadCode } from "./notebook";
import { CommandIds, TracesPanel } from "./panel";
import { RemoteRunList } from "./remote";
import { isUrl, pendingOpen } from "./format";
import { activateShown, showInMain } from "./placement";
import { createRunWidget } from "./runpanel";
import type { RunView } from "./runpanel";
import { DEFAULT_SETTINGS, ITraces } from "./tokens";
import type { ITracesModel, TracesSettings } from "./tokens";

const PLUGIN_ID = "jupyter_traceview:plugin";
const CATEGORY = "Traces";

function readSettings(settings: ISettingRegistry.ISettings): TracesSettings {
  const roots = settings.get("roots").composite;
  const interval = settings.get("refreshInterval").composite;
  return {
    roots: Array.isArray(roots)
      ? roots.filter((r): r is string => typeof r === "string")
      : DEFAULT_SETTINGS.roots,
    refreshInterval: typeof interval === "number" ? interval : DEFAULT_SETTINGS.refreshInterval,
  };
}

async function activate(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null,
  restorer: ILayoutRestorer | null,
  settingRegistry: ISettingRegistry | null,
  notebooks: INotebookTracker | null,
): Promise<ITracesModel> {
  const { commands, shell } = app;
  const api = new RestTracesApi(app.serviceManager.serverSettings);
  const model = new TracesModel(api);
  // Settings first, so that the first listing already searches the configured folders.
  if (settingRegistry) {
    try {
      const settings = await settingRegistry.load(PLUGIN_ID);
      model.settings = readSettings(settings);
      settings.changed.connect(() => (model.settings = readSettings(settings)));
    } catch (reason) {
      console.error("jupyter_traceview: cannot load the Traces settings", reason);
    }
  }
  const insertRemote = notebooks
    ? async (url: string): Promise<void> => {
        try {
          // The server checks it again (inside a remote root, still a run) before the code names it.
          const run = await api.remoteRun(url);
          const nb = await insertLoadCode(notebooks, commands, app.serviceManager, run.url);
          if (nb) shell.activateById(nb.id);
        } catch (err) {
          await showErrorMessage("Cannot insert the code", err instanceof Error ? err.message : String(err));
        }
      }
    : null;
  const remote = new RemoteRunList(api, {
    // A remote run opens as a local one: its URL is the run's path (the server reads it).
    open: async (url, kind) => {
      await commands.execute(CommandIds.openRun, { path: url, kind });
    },
    insert: insertRemote,
  });
  // One filter box for the local and the remote runs.
  model.changed.connect(() => (remote.filter = model.filter));
  const panel = new TracesPanel({ model, commands, remote });
  shell.add(panel, "left", { rank: 600 });

  const runs = new WidgetTracker<MainAreaWidget<RunView>>({ namespace: "traceview-run" });
  const diffs = new WidgetTracker<MainAreaWidget<RunView>>({ namespace: "traceview-diff" });
  const transport = api.dashboard.bind(api);

  const selectedPath = (args: Record<string, unknown>): string | null => {
    if (typeof args.path === "string" && args.path) return args.path;
    const sel = model.selectedRuns;
    return sel.length === 1 ? sel[0]!.path : (model.activeRun?.path ?? null);
  };
  const refreshCommands = (): void => {
    for (const id of [
      CommandIds.openRun,
      CommandIds.insertLoadCode,
      CommandIds.diffRuns,
      CommandIds.compareBaseline,
      CommandIds.setBaseline,
    ]) {
      commands.notifyCommandChanged(id);
    }
  };
  model.changed.connect(refreshCommands);
  notebooks?.currentChanged.connect(refreshCommands);

  commands.addCommand(CommandIds.openSidebar, {
    label: "Open the Traces Panel",
    caption: "Show the list of trace runs",
    icon: (args) => (args.isPalette ? undefined : tracesIcon),
    execute: () => {
      shell.activateById(panel.id);
    },
  });

  commands.addCommand(CommandIds.refresh, {
    label: (args) => (args.toolbar ? "" : "Refresh the Traces List"),
    caption: "List the trace runs again",
    icon: (args) => (args.isPalette ? undefined : refreshIcon),
    execute: () => Promise.all([model.refresh(), remote.refresh()]),
  });

  commands.addCommand(CommandIds.openRun, {
    label: (args) => (args.toolbar ? "Open" : "Open the Selected Trace Run"),
    caption: "Show the selected run's dashboard (figures, findings, charts, timeline) in the main area",
    isEnabled: (args) => selectedPath(args) !== null,
    execute: async (args) => {
      const path = selectedPath(args);
      if (path === null) return;
      const open = runs.find((w) => w.content.path === path);
      if (open) {
        activateShown(shell, open);
        return;
      }
      // (A run in object storage is not in the model: its row gives its kind.)
      const kind =
        typeof args.kind === "string"
          ? args.kind
          : (model.runs.find((r) => r.path === path)?.kind ?? "folder");
      const widget = createRunWidget({
        source: new RestDashboardSource(transport, path, null),
        kind,
        commands,
        insertCommand: notebooks ? CommandIds.insertLoadCode : null,
      });
      await runs.add(widget);
      showInMain(shell, widget, { path, baseline: null });
    },
  });

  commands.addCommand(CommandIds.insertLoadCode, {
    label: (args) => (args.toolbar ? "Insert load code" : "Insert Code Loading the Selected Trace Run"),
    caption: 'Insert `trace = tv.load("<path>")` below the active cell of the current notebook',
    isEnabled: (args) => notebooks !== null && selectedPath(args) !== null,
    execute: async (args) => {
      const path = selectedPath(args);
      if (path === null || notebooks === null) return;
      if (isUrl(path) && insertRemote !== null) {
        await insertRemote(path); // a remote run's panel: checked by the server first, as from its row
        return;
      }
      try {
        const nb = await insertLoadCode(notebooks, commands, app.serviceManager, path);
        if (nb) shell.activateById(nb.id);
      } catch (err) {
        await showErrorMessage("Cannot insert the code", err instanceof Error ? err.message : String(err));
      }
    },
  });

  commands.addCommand(CommandIds.diffRuns, {
    label: (args) => (args.toolbar ? "Diff" : "Diff the Two Selected Trace Runs"),
    caption:
      "Compare two runs (select two with Ctrl+click or Shift+arrows): why the newer one's steps are slower or faster (tv.compare)",
    isEnabled: (args) =>
      (typeof args.a === "string" && typeof args.b === "string") || model.diffPair() !== null,
    execute: async (args) => {
      let a: string;
      let b: string;
      if (typeof args.a === "string" && typeof args.b === "string") {
        a = args.a;
        b = args.b;
      } else {
        const pair = model.diffPair();
        if (pair === null) return;
        [a, b] = [pair[0].path, pair[1].path];
      }
      // The dashboard of `b` with `a` as its baseline, on its Diff tab (tv.compare(a, b)).
      const open = diffs.find((w) => w.content.baseline === a && w.content.path === b);
      if (open) {
        activateShown(shell, open);
        return;
      }
      const widget = createRunWidget({
        source: new RestDashboardSource(transport, b, a),
        kind: model.runs.find((r) => r.path === b)?.kind ?? "folder",
        commands,
        insertCommand: notebooks ? CommandIds.insertLoadCode : null,
      });
      await diffs.add(widget);
      showInMain(shell, widget, { path: b, baseline: a });
    },
  });

  commands.addCommand(CommandIds.compareBaseline, {
    label: (args) => (args.toolbar ? "Compare" : "Compare with Baseline"),
    caption: () => {
      const b = model.baseline;
      return b === null
        ? "No baseline yet: set one with “Set as Baseline” or `traceview baseline set NAME RUN`"
        : `Compare the selected run with baseline ${b.name} (${b.path}): why its steps are slower or faster`;
    },
    isEnabled: (args) =>
      (typeof args.path === "string" && model.baseline !== null) || model.baselinePair() !== null,
    execute: async (args) => {
      const pair = model.baselinePair();
      const b = typeof args.path === "string" ? args.path : pair?.[1].path;
      const a = model.baseline?.path;
      if (a === undefined || b === undefined || a === b) return;
      await commands.execute(CommandIds.diffRuns, { a, b });
    },
  });

  commands.addCommand(CommandIds.setBaseline, {
    label: "Set as Baseline",
    caption:
      "Keep the selected run as baseline “main”, beside the runs (as `traceview baseline set main RUN`)",
    isEnabled: (args) => selectedPath(args) !== null && !model.isBaseline(selectedPath(args) ?? ""),
    execute: async (args) => {
      const path = selectedPath(args);
      if (path === null) return;
      try {
        await model.setBaseline(path);
      } catch (err) {
        await showErrorMessage("Cannot set the baseline", err instanceof Error ? err.message : String(err));
      }
    },
  });

  if (palette) {
    for (const command of Object.values(CommandIds)) {
      palette.addItem({ command, category: CATEGORY });
    }
  }

  app.contextMenu.addItem({ command: CommandIds.openRun, selector: ".tv-RunRow", rank: 1 });
  app.contextMenu.addItem({ command: CommandIds.insertLoadCode, selector: ".tv-RunRow", rank: 2 });
  app.contextMenu.addItem({ command: CommandIds.diffRuns, selector: ".tv-RunRow", rank: 3 });
  app.contextMenu.addItem({ command: CommandIds.compareBaseline, selector: ".tv-RunRow", rank: 4 });
  app.contextMenu.addItem({ command: CommandIds.setBaseline, selector: ".tv-RunRow", rank: 5 });

  if (restorer) {
    restorer.add(panel, "jupyter_traceview:traces");
    void restorer.restore(runs, {
      command: CommandIds.openRun,
      args: (w) => ({ path: w.content.path }),
      name: (w) => w.content.path,
    });
    void restorer.restore(diffs, {
      command: CommandIds.diffRuns,
      args: (w) => ({ a: w.content.baseline, b: w.content.path }),
      name: (w) => `${w.content.baseline ?? ""}|${w.content.path}`,
    });
  }

  // A page opened to show a run or a diff (Notebook 7: see placement.ts).
  const pending = pendingOpen(window.location.search);
  if (pending) {
    void app.restored.then(() =>
      pending.baseline === null
        ? commands.execute(CommandIds.openRun, { path: pending.path })
        : commands.execute(CommandIds.diffRuns, { a: pending.baseline, b: pending.path }),
    );
  }

  return model;
}

const plugin: JupyterFrontEndPlugin<ITracesModel> = {
  id: PLUGIN_ID,
  description: "The Traces sidebar: trace runs with their headline figures, run and diff panels.",
  autoStart: true,
  provides: ITraces,
  optional: [ICommandPalette, ILayoutRestorer, ISettingRegistry, INotebookTracker],
  activate,
};

export default plugin;
export * from "./messages";
export * from "./tokens";
