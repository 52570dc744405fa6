import { describe, expect, it } from "vitest";
import {
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
    // 8 ranks with CPU lanes: far taller than the cap (720, under 70 % of a 1200 px window).
    expect(autoHeight(3000, 1200)).toBe(MAX_AUTO_HEIGHT);
    // A small window: 70 % of 600 = 420.
    expect(autoHeight(3000, 600)).toBe(420);
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
