// The run panel's dashboard source (js/labextension/dashboardsource.ts) over a mocked
// transport: the binary answer format of POST /traceview/api/dashboard, asking again while
// the server computes (202) with progress reports, errors, cancellation.
import { describe, expect, it } from "vitest";
import { RestDashboardSource, decodeAnswer } from "../labextension/dashboardsource";
import { TracesApiError } from "../labextension/tokens";
import type { RawAnswer } from "../labextension/tokens";
import type { ProgressReport } from "../dashboard/protocol";

/** What handlers.py `DashboardHandler._send_answer` writes. */
function encode(msg: unknown, buffers: Uint8Array[] = []): ArrayBuffer {
  const head = new TextEncoder().encode(
    JSON.stringify({ status: "ready", msg, buffers: buffers.map((b) => b.byteLength) }),
  );
  const out = new Uint8Array(4 + head.byteLength + buffers.reduce((n, b) => n + b.byteLength, 0));
  new DataView(out.buffer).setUint32(0, head.byteLength, false);
  out.set(head, 4);
  let at = 4 + head.byteLength;
  for (const b of buffers) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out.buffer;
}

const json = (status: number, body: unknown): RawAnswer => ({
  status,
  body: new TextEncoder().encode(JSON.stringify(body)).buffer,
});

/** A transport answering from `answers` in turn, recording what it was asked. */
function transport(answers: RawAnswer[]) {
  const calls: { params: Record<string, string>; body: unknown }[] = [];
  const send = (params: Record<string, string>, body: string): Promise<RawAnswer> => {
    calls.push({ params, body: JSON.parse(body) });
    const next = answers.shift();
    return next ? Promise.resolve(next) : Promise.reject(new Error("no more answers"));
  };
  return { send, calls };
}

describe("decodeAnswer", () => {
  it("splits the JSON message from the buffers", () => {
    const a = new Uint8Array([1, 2, 3]);
    const b = new Uint8Array([9, 8, 7, 6, 5]);
    const { msg, buffers } = decodeAnswer(encode({ seq: 4, x: "é" }, [a, b]));
    expect(msg).toEqual({ seq: 4, x: "é" });
    expect(buffers.map((d) => Array.from(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)))).toEqual([
      [1, 2, 3],
      [9, 8, 7, 6, 5],
    ]);
  });

  it("refuses a truncated answer", () => {
    const whole = encode({ a: 1 }, [new Uint8Array(10)]);
    expect(() => decodeAnswer(whole.slice(0, whole.byteLength - 1))).toThrow(/truncated/);
    expect(() => decodeAnswer(new ArrayBuffer(2))).toThrow(/truncated/);
  });
});

describe("RestDashboardSource", () => {
  it("asks again while the server computes, reporting its progress", async () => {
    const t = transport([
      json(202, { status: "queued", progress: { stage: "queued" }, position: 1 }),
      json(202, { status: "running", progress: { stage: "utilization_heatmap", done: 2, total: 5 } }),
      { status: 200, body: encode({ tab: "overview", seq: 1 }, [new Uint8Array([42])]) },
    ]);
    const source = new RestDashboardSource(t.send, "runs/a", "runs/base");
    const reports: ProgressReport[] = [];
    const stop = source.onProgress((r) => reports.push(r));
    const answer = await source.invoke("_tab", { tab: "overview", seq: 1 });
    stop();
    expect(answer.msg).toEqual({ tab: "overview", seq: 1 });
    expect(answer.buffers[0]!.getUint8(0)).toBe(42);
    expect(t.calls).toHaveLength(3);
    expect(t.calls[0]).toEqual({
      params: { path: "runs/a", baseline: "runs/base" }, // no cache: server configuration
      body: { command: "_tab", msg: { tab: "overview", seq: 1 } },
    });
    expect(reports.map((r) => [r.command, r.tab, r.label, r.done, r.total])).toEqual([
      ["_tab", "overview", "queued", 0, 1],
      ["_tab", "overview", "utilization_heatmap", 2, 5],
    ]);
  });

  it("gives the payload as a task state for the loading screen", async () => {
    const t = transport([
      json(202, { status: "running", progress: { stage: "loading", done: 1, total: 8 }, elapsed_s: 2 }),
      { status: 200, body: encode({ protocol: 1, source: "runs/a", tabs: [] }) },
    ]);
    const source = new RestDashboardSource(t.send, "runs/a");
    expect(await source.payloadState()).toEqual({
      status: "running",
      progress: { stage: "loading", done: 1, total: 8 },
      elapsed_s: 2,
    });
    expect(await source.payloadState()).toEqual({
      status: "ready",
      data: { protocol: 1, source: "runs/a", tabs: [] },
    });
    expect(t.calls.map((c) => c.params)).toEqual([{ path: "runs/a" }, { path: "runs/a" }]);
  });

  it("turns the server's JSON errors into TracesApiError", async () => {
    const t = transport([json(422, { message: "rank-0.json: truncated JSON" }), json(500, "not an object")]);
    const source = new RestDashboardSource(t.send, "broken");
    const first = source.invoke("_payload", {});
    await expect(first).rejects.toBeInstanceOf(TracesApiError);
    await expect(first).rejects.toMatchObject({ status: 422, message: "rank-0.json: truncated JSON" });
    await expect(source.invoke("_payload", {})).rejects.toMatchObject({ status: 500, message: "HTTP 500" });
  });

  it("stops asking once aborted", async () => {
    const controller = new AbortController();
    let asked = 0;
    const source = new RestDashboardSource(() => {
      asked += 1;
      if (asked === 2) controller.abort();
      return Promise.resolve(json(202, { status: "running", progress: { stage: "analysing" } }));
    }, "runs/a");
    await expect(
      source.invoke("_window", { seq: 1 }, [], { signal: controller.signal }),
    ).rejects.toMatchObject({
      name: "AbortError",
    });
    expect(asked).toBe(2);
  });
});
