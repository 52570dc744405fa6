/**
 * A main-area view of a server task (a run's data, a diff): polls until the data is ready,
 * shows the server's progress meanwhile, the error with a Retry button if it fails, and
 * hands the data to a renderer.
 */
import type { Message } from "@lumino/messaging";
import { Widget } from "@lumino/widgets";

import { formatProgress } from "./format";
import type { TaskState } from "./messages";

/** First and longest wait between polls, ms. */
const FIRST_POLL_MS = 250;
const MAX_POLL_MS = 2000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export abstract class TaskView<T> extends Widget {
  constructor(className: string) {
    super();
    this.addClass("tv-TaskView");
    this.addClass(className);
    this.node.tabIndex = -1;
    this._status = document.createElement("div");
    this._status.className = "tv-TaskView-status";
    this._status.setAttribute("aria-live", "polite");
    this._content = document.createElement("div");
    this._content.className = "tv-TaskView-content";
    this.node.append(this._status, this._content);
  }

  /** One poll of the server. */
  protected abstract fetch(): Promise<TaskState<T>>;

  /** Fill `host` with the data. */
  protected abstract render(host: HTMLElement, data: T): void;

  /** What is being computed, for the progress line ("Analysing runs/x"). */
  protected abstract describe(): string;

  /** "loading", "pending", "ready" or "error": for tests and styles. */
  get state(): string {
    return this.node.dataset.state ?? "loading";
  }

  /** Fetch (again) and render. */
  async reload(): Promise<void> {
    const generation = ++this._generation;
    this._setState("pending");
    this._showProgress(undefined);
    let delay = FIRST_POLL_MS;
    try {
      for (;;) {
        const state = await this.fetch();
        if (this._stale(generation)) return;
        if (state.status === "ready") {
          this._status.replaceChildren();
          this._content.replaceChildren();
          this.render(this._content, state.data);
          this._setState("ready");
          return;
        }
        this._showProgress(state);
        await sleep(delay);
        if (this._stale(generation)) return;
        delay = Math.min(MAX_POLL_MS, delay * 1.5);
      }
    } catch (err) {
      if (this._stale(generation)) return;
      this._showError(err instanceof Error ? err.message : String(err));
    }
  }

  protected override onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._started) {
      this._started = true;
      void this.reload();
    }
  }

  override dispose(): void {
    this._generation += 1; // stop polling
    super.dispose();
  }

  /** Whether a newer reload (or dispose) replaced the one numbered `generation`. */
  private _stale(generation: number): boolean {
    return generation !== this._generation || this.isDisposed;
  }

  private _setState(state: string): void {
    this.node.dataset.state = state;
  }

  private _showProgress(state: Exclude<TaskState<T>, { status: "ready" }> | undefined): void {
    const box = document.createElement("div");
    box.className = "tv-TaskView-progress";
    box.setAttribute("role", "status");
    const title = document.createElement("div");
    title.textContent = this.describe();
    const bar = document.createElement("progress");
    const p = state?.progress;
    if (p?.total && p.stage?.startsWith("loading")) {
      bar.max = p.total;
      bar.value = p.done ?? 0;
    }
    bar.setAttribute("aria-label", this.describe());
    const stage = document.createElement("div");
    stage.className = "tv-TaskView-stage";
    const elapsed = state?.elapsed_s ? ` · ${state.elapsed_s.toFixed(0)} s` : "";
    stage.textContent = state ? formatProgress(p, state.position) + elapsed : "asking the server…";
    box.append(title, bar, stage);
    this._status.replaceChildren(box);
  }

  private _showError(message: string): void {
    this._setState("error");
    const box = document.createElement("div");
    box.className = "tv-TaskView-error";
    box.setAttribute("role", "alert");
    const text = document.createElement("p");
    text.textContent = message;
    const retry = document.createElement("button");
    retry.className = "jp-Button jp-mod-styled jp-mod-accept";
    retry.textContent = "Retry";
    retry.addEventListener("click", () => void this.reload());
    box.append(text, retry);
    this._status.replaceChildren(box);
  }

  private readonly _status: HTMLElement;
  private readonly _content: HTMLElement;
  private _generation = 0;
  private _started = false;
}
