import { describe, expect, it, vi } from "vitest";
import { Fetcher, PREFETCH_DELAY_MS, type WindowWant } from "../timeline/fetcher";
import type { WindowRequest, WindowResponseMeta } from "../timeline/messages";
import type { Invoke } from "../timeline/state";

/** An owner answering `_window` requests when the test says so (one bin row per request). */
function fakeOwner() {
  const sent: WindowRequest[] = [];
  const waiting: (() => void)[] = [];
  const invoke = (<T>(name: string, msg?: unknown) => {
    expect(name).toBe("_window");
    const req = msg as WindowRequest;
    sent.push(req);
    return new Promise<[T, DataView[]]>((resolve) => {
      waiting.push(() => {
        const width = req.width;
        const meta: WindowResponseMeta = {
          seq: req.seq,
          lo: req.lo,
          hi: req.hi,
          width,
          rows: req.rows.map((row, i) => ({ row, mode: "bins", offset: i * width, count: width })),
          summaries: [],
          names: [],
          name_colors: [],
          layout: {},
          kernel_ms: 0,
        };
        resolve([meta as T, []]);
      });
    });
  }) as Invoke;
  const answer = async () => {
    waiting.shift()!();
    // Let the fetcher's continuation (decode, coalesced request) run.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { invoke, sent, answer, waiting };
}

function setup(initial: WindowWant) {
  const owner = fakeOwner();
  const timings: unknown[] = [];
  const root = {
    dataset: {} as Record<string, string>,
    dispatchEvent: (e: CustomEvent) => timings.push(e.detail),
  } as unknown as HTMLElement;
  let current: WindowWant = initial;
  let drawn = 0;
  const fetcher = new Fetcher(owner.invoke, new AbortController().signal, root, {
    want: () => current,
    onData: () => drawn++,
    onError: (m) => {
      throw new Error(m);
    },
    extent: () => ({ start: 0, end: 1e6 }),
  });
  return {
    owner,
    root,
    timings,
    fetcher,
    drawnCount: () => drawn,
    set: (w: WindowWant) => {
      current = w;
    },
  };
}

const view = (lo: number, hi: number): WindowWant => ({
  range: { lo, hi },
  width: 1000,
  rows: [0],
  summaries: [],
  pattern: "",
  nameColors: false,
});

describe("Fetcher", () => {
  it("coalesces the wants of a zoom gesture into one request after the one in flight", async () => {
    const t = setup(view(0, 100_000));
    t.fetcher.maybeRequest();
    expect(t.owner.sent.length).toBe(1);
    // Five wheel steps while the first window is on its way.
    for (let i = 1; i <= 5; i++) {
      t.set(view(0, 100_000 / 2 ** i));
      t.fetcher.maybeRequest();
    }
    expect(t.owner.sent.length).toBe(1);
    expect(t.root.dataset.loading).toBe("1");
    await t.owner.answer();
    // One request for the last view only.
    expect(t.owner.sent.length).toBe(2);
    expect(t.owner.sent[1]!.hi - t.owner.sent[1]!.lo).toBeCloseTo((100_000 / 32) * 1.5);
    // Meanwhile the first window is drawn (scaled): the view is never empty.
    expect(t.fetcher.data?.lo).toBe(t.owner.sent[0]!.lo);
    await t.owner.answer();
    expect(t.fetcher.data?.lo).toBe(t.owner.sent[1]!.lo);
    expect(t.root.dataset.loading).toBe("0");
  });

  it("sends nothing for a view the window in flight fits", async () => {
    const t = setup(view(10_000, 20_000));
    t.fetcher.maybeRequest();
    t.set(view(11_000, 21_000)); // a small pan, inside the fetched margin
    t.fetcher.maybeRequest();
    await t.owner.answer();
    expect(t.owner.sent.length).toBe(1);
    expect(t.root.dataset.loading).toBe("0");
  });

  it("redraws from a kept window when the view returns to it, without asking", async () => {
    const t = setup(view(10_000, 20_000));
    t.fetcher.maybeRequest();
    await t.owner.answer();
    const first = t.fetcher.data;
    t.set(view(12_000, 14_000)); // zoom in: a new window
    t.fetcher.maybeRequest();
    await t.owner.answer();
    expect(t.fetcher.data).not.toBe(first);
    t.set(view(10_000, 20_000)); // back out: the first window again, no request
    t.fetcher.maybeRequest();
    expect(t.owner.sent.length).toBe(2);
    expect(t.fetcher.data).toBe(first);
  });

  it("asks again when forced (new rows, colours or pattern) even if a window fits", async () => {
    const t = setup(view(10_000, 20_000));
    t.fetcher.maybeRequest();
    await t.owner.answer();
    t.fetcher.maybeRequest(true);
    expect(t.owner.sent.length).toBe(2);
  });

  it("never holds the view's request behind a prefetch that does not fit it", async () => {
    vi.useFakeTimers();
    try {
      const t = setup(view(10_000, 20_000));
      t.fetcher.maybeRequest();
      await t.owner.answer();
      // At rest: the neighbour is prefetched after PREFETCH_DELAY_MS.
      vi.advanceTimersByTime(PREFETCH_DELAY_MS + 1);
      expect(t.owner.sent.length).toBe(2);
      // The view jumps elsewhere while the prefetch is in flight: asked at once, beside it.
      t.set(view(500_000, 500_500));
      t.fetcher.maybeRequest();
      expect(t.owner.sent.length).toBe(3);
      expect(t.root.dataset.loading).toBe("1");
      await t.owner.answer(); // the prefetch
      expect(t.root.dataset.loading).toBe("1");
      await t.owner.answer(); // the view's window
      expect(t.root.dataset.loading).toBe("0");
      expect(t.fetcher.data?.lo).toBe(t.owner.sent[2]!.lo);
      // Each round trip was reported (the frame benchmark reads them).
      expect(t.timings.length).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("waits for a prefetch in flight that fits the view instead of asking again", async () => {
    vi.useFakeTimers();
    try {
      // Zoomed out as far as the view goes (5% past each end of the trace's [0, 1e6]).
      const t = setup(view(-50_000, 1_050_000));
      t.fetcher.maybeRequest();
      await t.owner.answer();
      // At rest: the first step in, around the middle, is prefetched (nothing else to fetch).
      vi.advanceTimersByTime(PREFETCH_DELAY_MS + 1);
      expect(t.owner.sent.length).toBe(2);
      expect((t.owner.sent[1]!.lo + t.owner.sent[1]!.hi) / 2).toBeCloseTo(500_000);
      t.set(view(200_000, 800_000)); // a wheel step in around the middle
      t.fetcher.maybeRequest();
      expect(t.owner.sent.length).toBe(2);
      expect(t.root.dataset.loading).toBe("1");
      await t.owner.answer();
      expect(t.root.dataset.loading).toBe("0");
      expect(t.fetcher.data?.lo).toBe(t.owner.sent[1]!.lo);
    } finally {
      vi.useRealTimers();
    }
  });
});
