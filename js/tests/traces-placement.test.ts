// Where run panels open in Notebook 7: the tree page's URL carrying the run (js/labextension/placement.ts).
import { describe, expect, it } from "vitest";
import { BASELINE_PARAM, OPEN_PARAM, pendingOpen, treeUrl } from "../labextension/format";

describe("Notebook 7: a run opened from a notebook's page", () => {
  it("opens the tree page with the run in its URL, and the page reads it back", () => {
    const run = { path: "traceview-runs/loss fn/20260101-120000", baseline: null };
    const url = treeUrl(run, "/user/me/");
    expect(url.startsWith("/user/me/tree?")).toBe(true);
    expect(url).toContain(`${OPEN_PARAM}=traceview-runs%2Floss%20fn%2F20260101-120000`);
    expect(url).not.toContain(BASELINE_PARAM);
    expect(pendingOpen(url.slice(url.indexOf("?")))).toEqual(run);
    const diff = { path: "runs/b", baseline: "runs/a" };
    const diffUrl = treeUrl(diff, "/");
    expect(pendingOpen(diffUrl.slice(diffUrl.indexOf("?")))).toEqual(diff);
  });

  it("a page opened otherwise opens nothing", () => {
    expect(pendingOpen("")).toBeNull();
    expect(pendingOpen("?reset")).toBeNull();
    expect(pendingOpen(`?${OPEN_PARAM}=`)).toBeNull();
  });
});
