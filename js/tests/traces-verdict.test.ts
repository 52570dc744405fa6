// A run's verdict badge against the baseline (js/labextension/verdict.ts): text, tone, tooltip.
import { describe, expect, it } from "vitest";
import { signedDuration, signedPct, verdictBadge } from "../labextension/verdict";
import type { RunVerdict, VerdictState } from "../labextension/messages";

function result(extra: Partial<RunVerdict> = {}): RunVerdict {
  return {
    verdict: "slower",
    base_ns: 10_000_000,
    new_ns: 12_500_000,
    delta_ns: 2_500_000,
    delta_pct: 25,
    top_cause: "operator aten::mm",
    top_cause_delta_ns: 2_000_000,
    top_cause_within_noise: false,
    noise_test: "bootstrap 95% interval [2.1 ms, 2.9 ms]",
    warnings: ["base: step #1 left out as warm-up"],
    ...extra,
  };
}

function ready(extra: Partial<RunVerdict> = {}): VerdictState {
  return { status: "ready", baseline: "traceview-runs/base", result: result(extra) };
}

describe("verdictBadge", () => {
  it("shows nothing without a verdict (no baseline, or the baseline itself)", () => {
    expect(verdictBadge(undefined)).toBeNull();
  });

  it("says slower with the change of the mean step, and the top cause in the tooltip", () => {
    const b = verdictBadge(ready(), "main")!;
    expect(b.tone).toBe("slower");
    expect(b.text).toBe("slower +2.5 ms (+25.0%)");
    const lines = b.title.split("\n");
    expect(lines[0]).toBe("Against baseline main (traceview-runs/base): slower");
    expect(lines[1]).toBe("Mean step 10 ms → 12.5 ms (+2.5 ms (+25.0%))");
    expect(lines[2]).toBe("Top cause: operator aten::mm +2 ms");
    expect(b.title).toContain("Noise: bootstrap 95% interval");
    expect(b.title).toContain("Note: base: step #1 left out as warm-up");
  });

  it("says faster with a negative change, and same within noise", () => {
    const f = verdictBadge(ready({ verdict: "faster", delta_ns: -850, delta_pct: -0.5, new_ns: 9_999_150 }))!;
    expect([f.tone, f.text]).toEqual(["faster", "faster -850 ns (-0.5%)"]);
    const s = verdictBadge(
      ready({
        verdict: "same",
        delta_ns: 1200,
        delta_pct: 0.01,
        top_cause_within_noise: true,
        top_cause_delta_ns: 900,
      }),
    )!;
    expect([s.tone, s.text]).toEqual(["same", "same +1.2 us (+0.0%)"]);
    expect(s.title).toContain("Top cause: operator aten::mm +900 ns (within noise)");
  });

  it("keeps a verdict whose change is not finite readable", () => {
    const b = verdictBadge(ready({ delta_pct: null, base_ns: 0 }))!;
    expect(b.text).toBe("slower +2.5 ms");
    const n = verdictBadge(ready({ delta_ns: null, delta_pct: null, top_cause: "" }))!;
    expect(n.text).toBe("slower");
    expect(n.title).not.toContain("Top cause");
  });

  it("says it is comparing, or why there is no verdict", () => {
    const p = verdictBadge({ status: "running", baseline: "b", progress: { stage: "comparing" } })!;
    expect([p.tone, p.text]).toEqual(["pending", "comparing…"]);
    expect(p.title).toBe("Against baseline baseline (b): comparing");
    const e = verdictBadge({ status: "error", baseline: "b", message: "this run cannot be read" }, "main")!;
    expect([e.tone, e.text, e.title]).toEqual([
      "error",
      "no verdict",
      "Against baseline main (b): this run cannot be read",
    ]);
  });
});

describe("signed figures", () => {
  it("puts the sign first, one formatter for durations and percentages", () => {
    expect(signedDuration(0)).toBe("+0 ns");
    expect(signedDuration(-1_500_000)).toBe("-1.5 ms");
    expect(signedPct(-12.34)).toBe("-12.3%");
  });
});
