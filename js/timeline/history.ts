/**
 * Back and forward through the views of the timeline (ranks shown, range, emphasised rank):
 * a browser-like history, pure (unit-tested in js/tests/history.test.ts).
 *
 * A view is pushed when something from outside replaces it (a dashboard or findings link,
 * `show_range` from Python, "All ranks"); zooming and panning by hand are not history.
 * `back(current)` returns the view to show and keeps `current` to go forward to; a new
 * push forgets the views ahead, as a browser does.
 */
export class ViewHistory<T> {
  private readonly past: T[] = [];
  private readonly ahead: T[] = [];

  constructor(private readonly capacity = 50) {}

  /** Keep `view` (the one being replaced) to go back to; the views ahead are forgotten. */
  push(view: T): void {
    this.past.push(view);
    if (this.past.length > this.capacity) this.past.shift();
    this.ahead.length = 0;
  }

  get canBack(): boolean {
    return this.past.length > 0;
  }

  get canForward(): boolean {
    return this.ahead.length > 0;
  }

  /** The previous view (null if none); `current` becomes the next forward. */
  back(current: T): T | null {
    const prev = this.past.pop();
    if (prev === undefined) return null;
    this.ahead.push(current);
    return prev;
  }

  /** The view `back` left (null if none); `current` goes back on the past. */
  forward(current: T): T | null {
    const next = this.ahead.pop();
    if (next === undefined) return null;
    this.past.push(current);
    return next;
  }
}
