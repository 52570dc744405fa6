/**
 * The sidebar's runs in object storage: those the server finds under its remote roots
 * (`c.TraceviewServer.remote_roots`, server configuration only), listed below the local runs
 * and filtered by the same filter box.
 *
 * Read-only: a remote run has no baseline or notes here (the server writes nothing to the
 * store). Its row opens its dashboard as a local run's does (Open, double-click: the server
 * reads the objects with its own credentials) and inserts `trace = tv.load("s3://...")` into
 * the notebook, whose kernel reads it with its own. Hidden while the server has no remote roots.
 */
import { Widget } from "@lumino/widgets";

import { remoteView } from "./format";
import type { RemoteView } from "./format";
import type { RemoteListing } from "./messages";
import type { ITracesApi } from "./tokens";

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** What a remote run's row does. */
export interface RemoteRunActions {
  /** Shows the run's dashboard in the main area (as Open does for a local run). */
  open: (url: string, kind: string) => Promise<void>;
  /** Puts the run's load code into the notebook (null without notebooks). */
  insert: ((url: string) => Promise<void>) | null;
}

export class RemoteRunList extends Widget {
  constructor(api: ITracesApi, actions: RemoteRunActions) {
    super({ node: el("section", "tv-RemoteRuns") });
    this._api = api;
    this._actions = actions;
    this.node.setAttribute("aria-label", "Trace runs in object storage");
    this.hide();
  }

  /** The sidebar's filter: rows whose URL and kind do not match it are left out. */
  get filter(): string {
    return this._filter;
  }

  set filter(value: string) {
    if (value === this._filter) return;
    this._filter = value;
    if (this._shown) this._render(...this._shown);
  }

  /** List the remote runs again (nothing when the server's API has no remote listing). */
  async refresh(): Promise<void> {
    if (!this._api.listRemote) return;
    let listing: RemoteListing;
    try {
      listing = await this._api.listRemote();
    } catch (err) {
      this._render(null, err instanceof Error ? err.message : String(err));
      return;
    }
    this._render(listing, null);
  }

  private _render(listing: RemoteListing | null, error: string | null): void {
    this._shown = [listing, error];
    const node = this.node;
    node.replaceChildren();
    const view = remoteView(listing, error, Date.now(), this._filter);
    if (view.hidden) {
      this.hide(); // no remote roots configured
      return;
    }
    this.show();
    node.appendChild(el("h3", "tv-RemoteRuns-title", "Object storage (read-only)"));
    for (const text of view.problems) {
      const msg = el("div", "tv-TracesStatus-error", text);
      msg.setAttribute("role", "alert");
      node.appendChild(msg);
    }
    const list = el("ul", "tv-RemoteRuns-list");
    list.setAttribute("aria-label", "Trace runs in object storage");
    for (const row of view.rows) list.appendChild(this._row(row));
    node.appendChild(list);
    if (view.filteredOut) {
      const n = view.filteredOut;
      node.appendChild(
        el(
          "div",
          "tv-TracesStatus",
          `${String(n)} run${n === 1 ? "" : "s"} in object storage not matching the filter`,
        ),
      );
    }
    if (view.truncated) {
      node.appendChild(
        el("div", "tv-TracesStatus", "more runs exist than listed (c.TraceviewServer.max_runs)"),
      );
    }
  }

  private _row(view: RemoteView["rows"][number]): HTMLLIElement {
    const row = el("li", "tv-RunRow tv-RemoteRun");
    row.title = view.tooltip;
    const head = el("div", "tv-RunRow-head");
    head.appendChild(el("span", "tv-RunRow-name", view.name));
    row.appendChild(head);
    row.appendChild(el("div", "tv-RunRow-figure", view.detail));
    const { open, insert } = this._actions;
    const actions = el("div", "tv-RemoteRun-actions");
    const openButton = el("button", "jp-mod-styled tv-RemoteRun-open", "Open");
    openButton.title = `Show the dashboard of ${view.url} in the main area (the server reads it)`;
    openButton.addEventListener("click", () => void open(view.url, view.kind));
    actions.appendChild(openButton);
    row.addEventListener("dblclick", () => void open(view.url, view.kind));
    if (insert !== null) {
      const button = el("button", "jp-mod-styled tv-RemoteRun-insert", "Insert load code");
      button.title = `Insert trace = tv.load("${view.url}") below the active cell of the current notebook`;
      button.addEventListener("click", () => void insert(view.url));
      actions.appendChild(button);
    }
    row.appendChild(actions);
    return row;
  }

  private readonly _api: ITracesApi;
  private readonly _actions: RemoteRunActions;
  private _filter = "";
  /** The listing (or error) drawn last, drawn again when the filter changes. */
  private _shown: [RemoteListing | null, string | null] | null = null;
}
