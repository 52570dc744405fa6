/**
 * A virtual list: which rows of a long list of fixed-height rows to put in the DOM for a
 * scroll position (the rank picker's 1,024 ranks render ~20 rows, not 1,024). Pure,
 * unit-tested in js/tests/virtual.test.ts.
 */

/** The rows `[start, end)` to render and the list's full height, px. */
export interface VirtualWindow {
  start: number;
  end: number;
  /** Offset of row `start` from the list's top, px. */
  top: number;
  /** Height of all the rows, px (the scrolled content's height). */
  height: number;
}

/**
 * Rows of `rowH` px visible in a viewport of `viewH` px scrolled by `scrollTop`, with
 * `overscan` rows more on each side (so that keyboard steps and small scrolls find their
 * row rendered). Always at least one row when `count` > 0, even in a viewport not laid out yet.
 */
export function virtualWindow(
  count: number,
  rowH: number,
  scrollTop: number,
  viewH: number,
  overscan = 4,
): VirtualWindow {
  const height = count * rowH;
  if (count <= 0 || rowH <= 0) return { start: 0, end: 0, top: 0, height: Math.max(0, height) };
  const first = Math.floor(Math.max(0, scrollTop) / rowH);
  const shown = Math.max(1, Math.ceil(Math.max(0, viewH) / rowH) + 1);
  const start = Math.max(0, Math.min(first, count - 1) - overscan);
  const end = Math.min(count, first + shown + overscan);
  return { start, end, top: start * rowH, height };
}

/** The scrollTop that brings row `index` into a viewport of `viewH` px (unchanged if it is visible). */
export function scrollToRow(index: number, rowH: number, scrollTop: number, viewH: number): number {
  const y = index * rowH;
  if (y < scrollTop) return y;
  if (y + rowH > scrollTop + viewH) return Math.max(0, y + rowH - viewH);
  return scrollTop;
}

/** The row a navigation key moves to from `index` (null: not a navigation key). */
export function stepRow(key: string, index: number, count: number, pageRows: number): number | null {
  if (count <= 0) return null;
  const last = count - 1;
  const page = Math.max(1, pageRows);
  switch (key) {
    case "ArrowDown":
      return Math.min(last, index + 1);
    case "ArrowUp":
      return Math.max(0, index - 1);
    case "PageDown":
      return Math.min(last, index + page);
    case "PageUp":
      return Math.max(0, index - page);
    case "Home":
      return 0;
    case "End":
      return last;
    default:
      return null;
  }
}
