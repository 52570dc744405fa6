/**
 * The sidebar's runs in object storage: those the server finds under its remote roots
 * (`c.TraceviewServer.remote_roots`, server configuration only), listed below the local runs.
 *
 * Read-only: a remote run has no dashboard panel, baseline or notes here (the server writes
 * nothing to the store); its row inserts `trace = tv.load("s3://...")` into the notebook,
 * whose kernel reads it with its own credentials. Hidden while the server has no remote roots.
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

export class RemoteRunList extends Widget {
  /** `insert`: puts a run's load code into the notebook (null without notebooks). */
  constructor(api: ITracesApi, insert: ((url: string) => Promise<void>) | null) {
    super({ node: el("section", "tv-RemoteRuns") });
    this._api = api;
    this._insert = insert;
    this.node.setAttribute("aria-label", "Trace runs in object storage");
    this.hide();
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
    const node = this.node;
    node.replaceChildren();
    const view = remoteView(listing, error, Date.now());
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
    const insert = this._insert;
    if (insert !== null) {
      const button = el("button", "jp-mod-styled tv-RemoteRun-insert", "Insert load code");
      button.title = `Insert trace = tv.load("${view.url}") below the active cell of the current notebook`;
      button.addEventListener("click", () => void insert(view.url));
      row.appendChild(button);
      row.addEventListener("dblclick", () => void insert(view.url));
    }
    return row;
  }

  private readonly _api: ITracesApi;
  private readonly _insert: ((url: string) => Promise<void>) | null;
}
