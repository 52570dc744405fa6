/**
 * Pointer and keyboard input of the timeline: wheel zoom and pan, drag to pan, Shift+drag to
 * measure, click to select, keys (W/A/S/D, +/-, arrows, F, Esc), and the hit test telling
 * what is under the pointer.
 */
import { type Hover, type ViewHost, AXIS, GUTTER } from "./host";
import { laneKind } from "./lanes";
import { slotAt } from "./layout";
import { type Range, fitRange, panByPixels, wheelFactor, xToTime, zoomAround } from "./viewport";
import { xOf } from "./draw";

/** Zoom step of W/S and +/-; pan step of A/D (fraction of the span). */
const KEY_ZOOM = 0.8;
const KEY_PAN = 0.15;

interface Drag {
  x: number;
  y: number;
  range: Range;
  moved: boolean;
  shift: boolean;
}

export class Input {
  private drag: Drag | null = null;

  constructor(private readonly host: ViewHost) {}

  /** Canvas-relative pointer position. */
  pointer(e: MouseEvent): { x: number; y: number } {
    const r = this.host.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private inPlot(p: { x: number; y: number }): boolean {
    return p.x >= GUTTER && p.x < GUTTER + this.host.width && p.y >= AXIS;
  }

  /** Slot index under canvas y (rows scroll under the fixed axis band). */
  private slotAtY(y: number): number {
    if (y < AXIS) return -1;
    return slotAt(this.host.layout, y - AXIS + this.host.scrollTop);
  }

  onWheel(e: WheelEvent): void {
    const h = this.host;
    const p = this.pointer(e);
    if (e.shiftKey) {
      // Shift+wheel scrolls the lanes, as in Perfetto (browsers may turn it into deltaX).
      e.preventDefault();
      h.scroller.scrollTop += e.deltaY !== 0 ? e.deltaY : e.deltaX;
      return;
    }
    if (p.x < GUTTER) return; // over the labels: let the scroller scroll
    e.preventDefault();
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      h.setRange(panByPixels(h.range, h.width, e.deltaX, h.limits));
      return;
    }
    const anchor = xToTime(h.range, h.width, Math.min(Math.max(p.x - GUTTER, 0), h.width));
    h.setRange(zoomAround(h.range, anchor, wheelFactor(e.deltaY, e.deltaMode), h.limits));
  }

  onMouseDown(e: MouseEvent): void {
    const h = this.host;
    if (e.button !== 0) return;
    h.root.focus({ preventScroll: true });
    const p = this.pointer(e);
    if (p.x < GUTTER) {
      const i = this.slotAtY(p.y);
      const slot = i >= 0 ? h.layout.slots[i] : undefined;
      if (slot) laneKind(slot).clickLabel?.(h, slot);
      return;
    }
    if (!this.inPlot(p)) return;
    e.preventDefault();
    this.drag = { x: p.x, y: p.y, range: h.range, moved: false, shift: e.shiftKey };
    if (e.shiftKey) {
      const t = xToTime(h.range, h.width, p.x - GUTTER);
      h.measuring = { a: t, b: t };
    }
  }

  onMouseMove(e: MouseEvent): void {
    const h = this.host;
    const p = this.pointer(e);
    const d = this.drag;
    if (d) {
      if (Math.abs(p.x - d.x) > 3 || Math.abs(p.y - d.y) > 3) d.moved = true;
      if (d.shift && h.measuring) {
        h.measuring.b = xToTime(h.range, h.width, Math.min(Math.max(p.x - GUTTER, 0), h.width));
        h.invalidate();
      } else if (d.moved) {
        h.setRange(panByPixels(d.range, h.width, d.x - p.x, h.limits));
      }
      h.setHover(null);
      return;
    }
    if (e.target !== h.canvas) return;
    h.setHover(this.hitTest(p));
  }

  onMouseUp(e: MouseEvent): void {
    const h = this.host;
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    const p = this.pointer(e);
    if (d.shift && h.measuring) {
      const m = h.measuring;
      h.measuring = null;
      const s = { lo: h.range.lo, hi: h.range.hi, x0: GUTTER, width: h.width };
      if (Math.abs(xOf(s, m.b) - xOf(s, m.a)) >= 2) {
        h.save("selected_range", [Math.min(m.a, m.b), Math.max(m.a, m.b)]);
      }
      h.invalidate();
      return;
    }
    if (d.moved) return;
    const i = this.inPlot(p) ? this.slotAtY(p.y) : -1;
    const slot = i >= 0 ? h.layout.slots[i] : undefined;
    if (slot && laneKind(slot).click?.(h, slot, this.hitTest(p))) return;
    h.clearSelection();
  }

  onDoubleClick(e: MouseEvent): void {
    if (!this.inPlot(this.pointer(e))) return;
    this.host.setRange(fitRange(this.host.limits));
  }

  onKey(e: KeyboardEvent): void {
    const h = this.host;
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
    if (e.altKey && !e.ctrlKey && !e.metaKey && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
      // Back / forward through the views links opened (as a browser's Alt+←/→).
      if (e.key === "ArrowLeft") h.back();
      else h.forward();
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const center = (h.range.lo + h.range.hi) / 2;
    const anchor = h.hover && h.hover.x >= GUTTER ? xToTime(h.range, h.width, h.hover.x - GUTTER) : center;
    let handled = true;
    switch (e.key) {
      case "w":
      case "W":
      case "+":
      case "=":
        h.setRange(zoomAround(h.range, anchor, KEY_ZOOM, h.limits));
        break;
      case "s":
      case "S":
      case "-":
      case "_":
        h.setRange(zoomAround(h.range, anchor, 1 / KEY_ZOOM, h.limits));
        break;
      case "a":
      case "A":
      case "ArrowLeft":
        h.setRange(panByPixels(h.range, h.width, -KEY_PAN * h.width, h.limits));
        break;
      case "d":
      case "D":
      case "ArrowRight":
        h.setRange(panByPixels(h.range, h.width, KEY_PAN * h.width, h.limits));
        break;
      case "ArrowDown":
        h.scroller.scrollTop += 40;
        break;
      case "ArrowUp":
        h.scroller.scrollTop -= 40;
        break;
      case "PageDown":
        h.scroller.scrollTop += Math.max(40, h.viewHeight - AXIS - 40);
        break;
      case "PageUp":
        h.scroller.scrollTop -= Math.max(40, h.viewHeight - AXIS - 40);
        break;
      case "Home":
        h.scroller.scrollTop = 0;
        break;
      case "End":
        h.scroller.scrollTop = h.scroller.scrollHeight;
        break;
      case "?":
        h.toggleHelp();
        break;
      case "Backspace":
        if (e.shiftKey) h.forward();
        else h.back();
        break;
      case "f":
      case "F": {
        const det = h.selected?.details;
        if (det) {
          const pad = Math.max(det.dur_ns, 1000) * 0.5;
          h.setRange({ lo: det.start - pad, hi: det.start + det.dur_ns + pad });
        } else {
          h.setRange(fitRange(h.limits));
        }
        break;
      }
      case "Escape":
        if (h.helpOpen) {
          h.toggleHelp(false);
          break;
        }
        h.clearSelection();
        if (h.model.get("selected_range").length) h.save("selected_range", []);
        break;
      default:
        handled = false;
    }
    if (handled) {
      e.preventDefault();
      e.stopPropagation();
    }
  }

  /** What is under canvas point `p`: an event of a raw row, or a non-empty column of a binned row or summary. */
  hitTest(p: { x: number; y: number }): Hover | null {
    const h = this.host;
    if (!this.inPlot(p)) return null;
    const i = this.slotAtY(p.y);
    if (i < 0) return null;
    const slot = h.layout.slots[i]!;
    if (!h.data) return null;
    const hit = laneKind(slot).hit(h, slot, xToTime(h.range, h.width, p.x - GUTTER));
    return hit ? { slot: i, event: hit.event, bin: hit.bin, x: p.x, y: p.y } : null;
  }
}
