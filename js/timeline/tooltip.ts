/**
 * The hover tooltip: what is under the pointer, in the words of the slot's lane kind
 * (lanes/), placed beside the pointer inside the plot. Answers a kind asks for (an event's
 * details, a folded row's `_fold`) are fetched once the pointer rests, and the tooltip is
 * drawn again when they arrive.
 */
import { type Hover, type ViewHost, GUTTER } from "./host";
import { laneKind } from "./lanes";
import type { TipContext } from "./lanes/kind";
import { el } from "../dom";

/** Milliseconds the pointer rests before a tooltip asks the owner for more. */
const ASK_DELAY_MS = 60;

export class Tooltip {
  readonly element: HTMLDivElement;
  private timer = 0;
  /** The last answer that arrived, and what it was for. */
  private kept: { key: string; value: unknown } | null = null;

  constructor(
    private readonly host: ViewHost,
    parent: HTMLElement,
  ) {
    this.element = el("div", "tv-tooltip", parent);
    this.element.hidden = true;
  }

  dispose(): void {
    window.clearTimeout(this.timer);
  }

  hide(): void {
    this.element.hidden = true;
    this.host.root.dataset.hover = "";
  }

  position(h: Hover): void {
    const tip = this.element;
    const tw = tip.offsetWidth || 280;
    const left = h.x + 14 + tw > this.host.width + GUTTER ? h.x - 14 - tw : h.x + 14;
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${h.y + 14 + this.host.scroller.scrollTop}px`;
  }

  render(h: Hover): void {
    const host = this.host;
    if (!host.data) return;
    const slot = host.layout.slots[h.slot]!;
    const tip = laneKind(slot).tooltip(this.context(h), slot);
    if (!tip) return;
    const box = this.element;
    box.replaceChildren();
    el("div", "tv-tooltip-title", box, tip.title);
    const table = el("table", "", box);
    for (const [k, v] of tip.lines) {
      const tr = el("tr", "", table);
      el("th", "", tr, k);
      el("td", "", tr, v);
    }
    box.hidden = false;
    host.root.dataset.hover = tip.title;
  }

  private context(h: Hover): TipContext {
    const host = this.host;
    return {
      host,
      hover: h,
      later: <T>(key: string, get: () => Promise<T | null>): T | null => {
        if (this.kept?.key === key) return this.kept.value as T;
        window.clearTimeout(this.timer);
        this.timer = window.setTimeout(() => {
          void get().then((value) => {
            const cur = host.hover;
            if (value && cur && cur.slot === h.slot && cur.event === h.event && cur.bin === h.bin) {
              this.kept = { key, value };
              this.render(cur);
              this.position(cur);
            }
          });
        }, ASK_DELAY_MS);
        return null;
      },
    };
  }
}
