import { describe, expect, it } from "vitest";
import { scrollToRow, stepRow, virtualWindow } from "../timeline/virtual";

describe("virtualWindow: the rows of a long list to put in the DOM", () => {
  it("renders the visible rows and an overscan, not the whole list", () => {
    // 1,024 rows of 22 px in a 260 px list, at the top: 12 visible + 1 partial + 4 below.
    const w = virtualWindow(1024, 22, 0, 260, 4);
    expect(w.start).toBe(0);
    expect(w.end).toBe(Math.ceil(260 / 22) + 1 + 4);
    expect(w.top).toBe(0);
    expect(w.height).toBe(1024 * 22);
  });

  it("follows the scroll position and covers every visible row", () => {
    for (const scrollTop of [0, 1, 21, 22, 500, 5000, 1024 * 22 - 260]) {
      const w = virtualWindow(1024, 22, scrollTop, 260, 2);
      const firstVisible = Math.floor(scrollTop / 22);
      const lastVisible = Math.floor((scrollTop + 259) / 22);
      expect(w.start).toBeLessThanOrEqual(firstVisible);
      expect(w.end).toBeGreaterThan(Math.min(lastVisible, 1023));
      expect(w.end - w.start).toBeLessThanOrEqual(Math.ceil(260 / 22) + 1 + 4);
      expect(w.top).toBe(w.start * 22);
    }
  });

  it("clamps at the ends and handles tiny and empty lists", () => {
    const end = virtualWindow(10, 20, 10_000, 100, 3);
    expect(end.end).toBe(10);
    expect(end.start).toBeGreaterThanOrEqual(0);
    expect(end.start).toBeLessThan(10);
    expect(virtualWindow(3, 20, 0, 260)).toEqual({ start: 0, end: 3, top: 0, height: 60 });
    expect(virtualWindow(0, 20, 0, 260)).toEqual({ start: 0, end: 0, top: 0, height: 0 });
    // A list not laid out yet (height 0) still renders a row.
    expect(virtualWindow(100, 20, 0, 0, 0).end).toBe(1);
  });
});

describe("scrollToRow and stepRow: keyboard navigation in a virtual list", () => {
  it("scrolls only when the row is out of view", () => {
    expect(scrollToRow(5, 20, 0, 200)).toBe(0); // visible
    expect(scrollToRow(10, 20, 0, 200)).toBe(20); // just below: its bottom at the viewport's
    expect(scrollToRow(2, 20, 100, 200)).toBe(40); // above: its top at the viewport's
  });

  it("moves by row, page and to the ends, clamped", () => {
    expect(stepRow("ArrowDown", 3, 10, 5)).toBe(4);
    expect(stepRow("ArrowDown", 9, 10, 5)).toBe(9);
    expect(stepRow("ArrowUp", 0, 10, 5)).toBe(0);
    expect(stepRow("PageDown", 3, 10, 5)).toBe(8);
    expect(stepRow("PageUp", 3, 10, 5)).toBe(0);
    expect(stepRow("Home", 7, 10, 5)).toBe(0);
    expect(stepRow("End", 0, 1024, 5)).toBe(1023);
    expect(stepRow("a", 0, 10, 5)).toBeNull();
    expect(stepRow("ArrowDown", 0, 0, 5)).toBeNull();
  });
});
