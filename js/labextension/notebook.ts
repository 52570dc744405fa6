/**
 * Putting `trace = tv.load("<path>")` into the active notebook: a new code cell below the
 * active one, with the path as the notebook's kernel sees it (relative to its folder).
 */
import type { CommandRegistry } from "@lumino/commands";
import { NotebookActions } from "@jupyterlab/notebook";
import type { INotebookTracker, NotebookPanel } from "@jupyterlab/notebook";
import type { ServiceManager } from "@jupyterlab/services";

import { loadCode } from "./format";

/** Every cell's source. */
function sources(panel: NotebookPanel): string[] {
  const cells = panel.content.model?.cells;
  const out: string[] = [];
  if (!cells) return out;
  for (let i = 0; i < cells.length; i++) out.push(cells.get(i).sharedModel.getSource());
  return out;
}

/**
 * Insert the code loading `runPath` (relative to the server root) into the current notebook,
 * or into a new one when none is open; returns the notebook when it shows on this page.
 *
 * The new notebook is written with the code in it, then opened where this application opens
 * documents: a tab of JupyterLab's main area, or a new browser tab in Notebook 7 (whose
 * pages show one document each: null is returned there).
 */
export async function insertLoadCode(
  tracker: INotebookTracker,
  commands: CommandRegistry,
  services: ServiceManager.IManager,
  runPath: string,
): Promise<NotebookPanel | null> {
  const panel = tracker.currentWidget;
  if (!panel) return newNotebookWith(commands, services, runPath);
  await panel.context.ready;
  const notebook = panel.content;
  const code = loadCode(runPath, panel.context.path, sources(panel));
  const first = notebook.widgets[0];
  const blank =
    notebook.widgets.length === 1 && first !== undefined && first.model.sharedModel.getSource() === "";
  if (blank) {
    notebook.activeCellIndex = 0;
  } else {
    NotebookActions.insertBelow(notebook);
  }
  if (notebook.activeCell?.model.type !== "code") NotebookActions.changeCellType(notebook, "code");
  notebook.activeCell?.model.sharedModel.setSource(code);
  notebook.mode = "command";
  return panel;
}

/** A new notebook at the server root holding the load code in its first cell, opened. */
async function newNotebookWith(
  commands: CommandRegistry,
  services: ServiceManager.IManager,
  runPath: string,
): Promise<NotebookPanel | null> {
  const file = await services.contents.newUntitled({ path: "", type: "notebook" });
  await services.kernelspecs.ready;
  const specs = services.kernelspecs.specs;
  const spec = specs?.default ? specs.kernelspecs[specs.default] : undefined;
  const content = {
    cells: [
      {
        cell_type: "code",
        source: loadCode(runPath, file.path, []),
        metadata: {},
        outputs: [],
        execution_count: null,
      },
    ],
    metadata: spec
      ? { kernelspec: { name: spec.name, display_name: spec.display_name, language: spec.language } }
      : {},
    nbformat: 4,
    nbformat_minor: 5,
  };
  await services.contents.save(file.path, { type: "notebook", format: "json", content });
  const widget: unknown = await commands.execute("docmanager:open", { path: file.path, factory: "Notebook" });
  return isNotebookPanel(widget) ? widget : null;
}

function isNotebookPanel(w: unknown): w is NotebookPanel {
  return (
    typeof w === "object" &&
    w !== null &&
    "content" in w &&
    "context" in w &&
    (w as { isAttached?: boolean }).isAttached === true
  );
}
