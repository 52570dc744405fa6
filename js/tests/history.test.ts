import { describe, expect, it } from "vitest";
import { ViewHistory } from "../timeline/history";

describe("ViewHistory: back and forward through replaced views", () => {
  it("has nothing to go back to at first", () => {
    const h = new ViewHistory<string>();
    expect(h.canBack).toBe(false);
    expect(h.canForward).toBe(false);
    expect(h.back("now")).toBeNull();
    expect(h.forward("now")).toBeNull();
  });

  it("goes back through pushed views and forward again", () => {
    const h = new ViewHistory<string>();
    h.push("full"); // a link replaced the full view with "link1"
    h.push("link1"); // then "link2"
    expect(h.back("link2")).toBe("link1");
    expect(h.back("link1")).toBe("full");
    expect(h.canBack).toBe(false);
    expect(h.forward("full")).toBe("link1");
    expect(h.forward("link1")).toBe("link2");
    expect(h.canForward).toBe(false);
    expect(h.back("link2")).toBe("link1");
  });

  it("forgets the views ahead when a new view replaces the current one", () => {
    const h = new ViewHistory<string>();
    h.push("a");
    h.push("b");
    expect(h.back("c")).toBe("b");
    expect(h.canForward).toBe(true);
    h.push("b"); // a new link from "b"
    expect(h.canForward).toBe(false);
    expect(h.back("d")).toBe("b");
    expect(h.back("b")).toBe("a");
  });

  it("keeps at most its capacity, dropping the oldest", () => {
    const h = new ViewHistory<number>(3);
    for (let i = 0; i < 5; i++) h.push(i);
    expect(h.back(5)).toBe(4);
    expect(h.back(4)).toBe(3);
    expect(h.back(3)).toBe(2);
    expect(h.back(2)).toBeNull();
  });
});
