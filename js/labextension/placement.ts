/**
 * Where the run and diff panels open: JupyterLab and Notebook 7 place main-area widgets
 * differently.
 *
 * JupyterLab's main area is a dock panel: a panel opens as a tab there. Notebook 7 keeps
 * one widget per browser page (`NotebookShell.add(w, "main")` does nothing when the page
 * already shows one): on its tree page the panel opens as a tab beside Files and Running
 * (that page's main widget is a tab panel); on a notebook's page, where the notebook fills
 * the page, in a new browser tab of the tree page that opens the panel when it starts
 * (`?traceview-open=<path>`, `&traceview-baseline=<path>` for a diff; see `pendingOpen`).
 */
import type { JupyterFrontEnd } from "@jupyterlab/application";
import { PageConfig } from "@jupyterlab/coreutils";
import { TabPanel } from "@lumino/widgets";
import type { Widget } from "@lumino/widgets";

import { type OpenRequest, treeUrl } from "./format";

/**
 * Show `widget` in the main area and activate it; true when shown on this page. False
 * when this page cannot show it (a Notebook 7 notebook page): the widget is disposed and
 * the tree page is opened in a new browser tab to show `request` there.
 */
export function showInMain(
  shell: JupyterFrontEnd.IShell,
  widget: Widget,
  request: OpenRequest,
  open: (url: string) => void = (url) => void window.open(url, "_blank"),
): boolean {
  shell.add(widget, "main");
  if (widget.isAttached) {
    shell.activateById(widget.id);
    return true;
  }
  // Notebook 7: the page has its main widget already.
  const host = shell.currentWidget;
  if (host instanceof TabPanel) {
    host.addWidget(widget);
    host.currentWidget = widget;
    return true;
  }
  widget.dispose();
  open(treeUrl(request, PageConfig.getBaseUrl()));
  return false;
}

/** Bring `widget`, shown already, to the front (in Notebook 7's tree page: its tab). */
export function activateShown(shell: JupyterFrontEnd.IShell, widget: Widget): void {
  const host = widget.parent?.parent;
  if (host instanceof TabPanel) host.currentWidget = widget;
  else shell.activateById(widget.id);
}
