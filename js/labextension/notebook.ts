/**
 * Putting `trace = tv.load("<path>")` into the active notebook: a new code cell below the
 * active one, with the path as the notebook's kernel sees it (relative to its folder).
 */
import type { CommandRegistry } from "@lumino/commands";
import { NotebookActions } from "@jupyterlab/notebook";
import type { INotebookTracker, NotebookPanel } from "@jupyterlab/notebook";

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
 * or into a new one when none is open; returns the notebook.
 */
export async function insertLoadCode(
  tracker: INotebookTracker,
  commands: CommandRegistry,
  runPath: string,
): Promise<NotebookPanel> {
  let panel = tracker.currentWidget;
  if (!panel) {
    panel = (await commands.execute("notebook:create-new", { cwd: "" })) as NotebookPanel;
  }
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
