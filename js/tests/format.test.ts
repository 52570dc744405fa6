// The front end's one formatter (js/format.ts), on the cases the Python twin passes too.
import { describe, expect, it } from "vitest";
import {
  formatBytes,
  formatCount,
  formatDuration,
  formatPct,
  formatRanges,
  formatRate,
  formatTime,
  plural,
} from "../format";
import cases from "./format_cases.json";

type Case = [number | null, string];

const FUNCTIONS: Record<string, (v: number) => string> = {
  duration: formatDuration,
  time: formatTime,
  size: formatBytes,
  rate: formatRate,
  percent: formatPct,
  count: formatCount,
};

describe("format.ts writes what format.py writes", () => {
  for (const [kind, fn] of Object.entries(FUNCTIONS)) {
    it(kind, () => {
      for (const [value, text] of (cases as unknown as Record<string, Case[]>)[kind]!) {
        // JSON null stands for a missing value (None in Python).
        expect([value, fn(value as number)]).toEqual([value, text]);
      }
    });
  }

  it("words and ranges", () => {
    expect(plural(1, "rank")).toBe("1 rank");
    expect(plural(2104, "kernel")).toBe("2,104 kernels");
    expect(formatRanges([0, 1, 2, 3, 5])).toBe("0-3, 5");
    expect(formatRanges([])).toBe("");
  });
});
