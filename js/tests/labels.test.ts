// Category labels bounded to a chart's width (issue 38: charts at any output width).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type BkModel,
  FIT_LABELS_TAG,
  LABEL_MIN_CHARS,
  TITLE_LEFT_PX,
  alignTitles,
  fitLabels,
  labelChars,
} from "../dashboard/bokeh";

const signal = { connect: () => true, disconnect: () => true };

function formatter(args: Map<string, unknown>): BkModel & { args: Map<string, unknown> } {
  return { id: "f", tags: [FIT_LABELS_TAG], change: signal, args };
}

describe("fitLabels", () => {
  it("gives a narrow chart's labels under a third of its width", () => {
    expect(labelChars(0)).toBe(0);
    expect(labelChars(320)).toBeGreaterThanOrEqual(LABEL_MIN_CHARS);
    expect(labelChars(320) * 6.5).toBeLessThan(0.35 * 320);
    expect(labelChars(1600)).toBeGreaterThan(60); // a wide chart keeps the labels whole
  });

  it("sets each tagged formatter's chars and re-lays out the axes using it, once", () => {
    const f = formatter(new Map([["chars", 0]]));
    let emitted = 0;
    const axis = { id: "a", change: { ...signal, emit: () => emitted++ }, formatter: f };
    const other = { id: "o", tags: ["x"], change: signal, args: new Map([["chars", 0]]) };
    const models = [f, axis, other] as BkModel[];
    expect(fitLabels(models, 340)).toBe(true);
    expect(f.args.get("chars")).toBe(labelChars(340));
    expect(other.args.get("chars")).toBe(0);
    expect(emitted).toBe(1);
    expect(fitLabels(models, 340)).toBe(false); // same width: nothing to do
    expect(emitted).toBe(1);
  });

  it("uses the tag the Python charts set", () => {
    const py = readFileSync(new URL("../../jupyter_traceview/charts/_style.py", import.meta.url), "utf8");
    expect(py).toContain(`FIT_LABELS_TAG = "${FIT_LABELS_TAG}"`);
  });

  it("the Python formatter keeps a label's start and end", () => {
    const py = readFileSync(new URL("../../jupyter_traceview/charts/_style.py", import.meta.url), "utf8");
    const code = /_FIT_LABELS_JS = """([\s\S]*?)"""/.exec(py)![1]!;
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const f = new Function("tick", "index", "ticks", "chars", code) as (...a: unknown[]) => string;
    expect(f("3. kernel_template_long_name [2]", 0, [], 0)).toBe("3. kernel_template_long_name [2]");
    const short = f("3. kernel_template_long_name [2]", 0, [], 12);
    expect(short).toBe("3. ker\u2026e [2]");
    expect(short.length).toBe(12);
    expect(f("short", 0, [], 12)).toBe("short");
  });
});

describe("alignTitles", () => {
  it("starts a plot's titles at its left edge, in nested layouts too", () => {
    const top = { type: "Title", text: "Top 15 kernels by total GPU time (all", offset: 0 };
    const main = { type: "Title", text: "ranks)", offset: 0 };
    const legend = { type: "Legend", offset: 0 };
    const plot = { frame: { bbox: { left: 122 } }, model: { title: main, above: [legend, top] } };
    alignTitles([{ model: {}, child_views: [plot] }]);
    expect(top.offset).toBe(TITLE_LEFT_PX - 122);
    expect(main.offset).toBe(TITLE_LEFT_PX - 122);
    expect(legend.offset).toBe(0);
  });
});
