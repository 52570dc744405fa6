import { describe, expect, it } from "vitest";
import {
  type BkModel,
  type BkSource,
  BOKEH_LOAD_SIGNAL,
  LINK_TAG,
  linkFields,
  linkSources,
  loadBokeh,
} from "../dashboard/bokeh";
import { evidenceLabel, formatCell, formatEvidence, formatOfKey, formatRanks } from "../dashboard/format";
import { formatBytes } from "../format";
import { invokerOf } from "../dashboard/view";
import type { DashboardSource } from "../dashboard/protocol";
import { LocalModel, sameValue } from "../timeline/state";

const signal = { connect: () => true, disconnect: () => true };

function source(tags: unknown[], data: Record<string, unknown[]>): BkSource {
  return { id: "s", tags, change: signal, data, selected: { id: "sel", indices: [], change: signal } };
}

describe("LocalModel (the state of a view without a kernel)", () => {
  it("emits change:<key> only when a value changes, and tells onSave", () => {
    const saved: number[] = [];
    const m = new LocalModel<{ tab: string; range: number[] }>({ tab: "overview", range: [0, 1] }, (mm) =>
      saved.push(mm.get("range")[1]!),
    );
    let tabs = 0;
    const onTab = () => tabs++;
    m.on("change:tab", onTab);
    m.set("tab", "overview");
    expect(tabs).toBe(0);
    m.set("tab", "kernels");
    expect(tabs).toBe(1);
    expect(m.get("tab")).toBe("kernels");
    m.set("range", [0, 1]); // equal as JSON: no change
    m.set("range", [0, 2]);
    m.save_changes();
    expect(saved).toEqual([2]);
    m.off("change:tab", onTab);
    m.set("tab", "overview");
    expect(tabs).toBe(1);
  });

  it("compares values as JSON", () => {
    expect(sameValue([1, 2], [1, 2])).toBe(true);
    expect(sameValue({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameValue(null, {})).toBe(false);
  });
});

describe("chart links (bokeh sources tagged by charts/_style.py)", () => {
  it("finds tagged sources and reads a row's link_* columns", () => {
    const heat = source([`${LINK_TAG}:heatmap`], {
      x: [1, 2],
      link_rank: [3, 4],
      link_bin: [10, 11],
      link_heatmap: ["all", "all"],
    });
    const plain = source([], { x: [1] });
    const notASource: BkModel = { id: "m", tags: [`${LINK_TAG}:rank`], change: signal };
    const found = linkSources([heat, plain, notASource]);
    expect(found).toHaveLength(1);
    expect(found[0]!.target).toBe("heatmap");
    expect(linkFields(heat, 1)).toEqual({ rank: 4, bin: 11, heatmap: "all" });
  });

  it("turns int64 values (BigInt in BokehJS) into numbers", () => {
    const s = source([`${LINK_TAG}:rank`], { link_rank: [BigInt(7)] });
    expect(linkFields(s, 0)).toEqual({ rank: 7 });
  });
});

describe("cell and evidence formats", () => {
  it("formats each column format in human units", () => {
    expect(formatCell(1_500_000, "duration")).toBe("1.5 ms");
    expect(formatCell(12.345, "pct")).toBe("12.3%");
    expect(formatCell(1536, "bytes")).toBe("1.5 KiB");
    expect(formatCell(12345, "int")).toBe("12,345");
    expect(formatCell(3.14159, "gbps")).toBe("3.14 GB/s");
    expect(formatCell(null, "int")).toBe("–");
    expect(formatCell(Number.NaN, "pct")).toBe("–");
    expect(formatCell("aten::mm", "text")).toBe("aten::mm");
    expect(formatBytes(512)).toBe("512 B");
  });

  it("reads an evidence key's unit from its suffix", () => {
    expect(formatOfKey("wait_ns")).toBe("duration");
    expect(formatOfKey("busy_pct")).toBe("pct");
    expect(formatOfKey("bytes")).toBe("bytes");
    expect(formatEvidence("count", 1234)).toBe("1,234");
    expect(formatEvidence("seq", -1)).toBe(""); // a placeholder, not data
    expect(formatEvidence("seq", 7)).toBe("7");
    // Headers drop the unit suffix: the cells carry the unit they show.
    expect(evidenceLabel("gap_ns")).toBe("gap");
    expect(evidenceLabel("host_wait_pct")).toBe("host wait");
    expect(evidenceLabel("worst_rank")).toBe("worst rank");
    expect(formatEvidence("ranks", [0, 1])).toBe("0, 1");
    expect(formatEvidence("grid", [[8, 1, 1]])).toBe("8 × 1 × 1");
  });

  it("writes ranks as ranges", () => {
    expect(formatRanks([5, 0, 1, 2, 3, 3])).toBe("0-3, 5");
    expect(formatRanks([])).toBe("");
  });
});

describe("invokerOf (the timeline's Invoke over a DashboardSource)", () => {
  it("passes commands through and rejects when aborted", async () => {
    const calls: string[] = [];
    const src: DashboardSource = {
      payload: () => Promise.reject(new Error("unused")),
      invoke: (command, msg) => {
        calls.push(`${command}:${JSON.stringify(msg)}`);
        return new Promise((resolve) => setTimeout(() => resolve({ msg: { ok: command }, buffers: [] }), 5));
      },
    };
    const invoke = invokerOf(src);
    const [m, b] = await invoke<{ ok: string }>("_find", { pattern: "nccl" });
    expect(m.ok).toBe("_find");
    expect(b).toEqual([]);
    expect(calls).toEqual(['_find:{"pattern":"nccl"}']);
    const ctrl = new AbortController();
    const p = invoke("_window", {}, { signal: ctrl.signal });
    ctrl.abort();
    await expect(p).rejects.toThrow("aborted");
  });
});

describe("loadBokeh", () => {
  it("asks for BokehJS with a signal of its own: a busy kernel's late answer is still awaited", async () => {
    // Without a signal, anywidget's invoke aborts after 3 s (Run All: the kernel answers after
    // the next cells), and every chart said "Charts need BokehJS: TimeoutError" for good.
    const seen: (AbortSignal | undefined)[] = [];
    const src: DashboardSource = {
      payload: () => Promise.reject(new Error("unused")),
      invoke: (_command, _msg, _buffers, options) => {
        seen.push(options?.signal);
        return Promise.resolve({ msg: { error: "no BokehJS in this test" }, buffers: [] });
      },
    };
    (globalThis as { window?: unknown }).window ??= {};
    await expect(loadBokeh(src, "0.0.0-test")).rejects.toThrow("no BokehJS in this test");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBe(BOKEH_LOAD_SIGNAL);
    expect(BOKEH_LOAD_SIGNAL.aborted).toBe(false);
  });
});
