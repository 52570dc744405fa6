import { describe, expect, it } from "vitest";
import {
  AUTO_WINDOW_CHROME,
  MAX_AUTO_HEIGHT,
  MIN_HEIGHT,
  autoHeight,
  clampHeight,
  initialHeight,
  readStored,
  storageKey,
  writeStored,
} from "../timeline/resize";

class MapStorage {
  readonly map = new Map<string, string>();
  getItem(k: string): string | null {
    return this.map.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.map.set(k, v);
  }
}

describe("timeline height", () => {
  it("fits the content between the minimum and the maximum", () => {
    // 2 ranks of GPU lanes: 26 px axis + 2 x (20 header + 18 row + 3 gap) = 108 -> the minimum 120.
    expect(autoHeight(108, 1000)).toBe(MIN_HEIGHT);
    expect(autoHeight(400, 1000)).toBe(400);
    // 8 ranks with CPU lanes, far taller than the window: the window less its chrome (160 px).
    expect(autoHeight(3000, 1200)).toBe(1040);
    // The 900 px window used to give 630 px (70 %); now 740, and a 1600 px one 1440.
    expect(autoHeight(3000, 900)).toBe(900 - AUTO_WINDOW_CHROME);
    expect(autoHeight(3000, 1600)).toBe(1440);
    // Content that fits the window is not stretched; the window unknown (0): the old cap.
    expect(autoHeight(1100, 1600)).toBe(1100);
    expect(autoHeight(3000, 0)).toBe(MAX_AUTO_HEIGHT);
    // A small window: 600 - 160 = 440.
    expect(autoHeight(3000, 600)).toBe(440);
    // A tiny window never goes under the minimum.
    expect(autoHeight(3000, 100)).toBe(MIN_HEIGHT);
  });

  it("clamps and rounds heights", () => {
    expect(clampHeight(10)).toBe(MIN_HEIGHT);
    expect(clampHeight(333.6)).toBe(334);
    expect(clampHeight(900, 500)).toBe(500);
    expect(clampHeight(Number.NaN)).toBe(MIN_HEIGHT);
  });

  it("opens at the dragged height when asked for the height asked for then", () => {
    const dragged = { height: 555, requested: 0 };
    expect(initialHeight(dragged, 0)).toBe(555);
    // Python now asks for another height: that wins.
    expect(initialHeight(dragged, 300)).toBe(300);
    expect(initialHeight({ height: 555, requested: 300 }, 300)).toBe(555);
    // Nothing stored: the requested height, or automatic (null).
    expect(initialHeight(null, 300)).toBe(300);
    expect(initialHeight(null, 0)).toBeNull();
  });

  it("stores a record per notebook and ignores what is not one", () => {
    const st = new MapStorage();
    const a = storageKey("work/a.ipynb");
    const b = storageKey("work/b.ipynb");
    expect(a).not.toBe(b);
    writeStored(st, a, { height: 600, requested: 0 });
    expect(readStored(st, a)).toEqual({ height: 600, requested: 0 });
    expect(readStored(st, b)).toBeNull();
    st.setItem(b, "not json");
    expect(readStored(st, b)).toBeNull();
    st.setItem(b, JSON.stringify({ height: -4, requested: 0 }));
    expect(readStored(st, b)).toBeNull();
    expect(readStored(null, a)).toBeNull();
  });
});
