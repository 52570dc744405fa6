/**
 * Decoding the report timeline's embedded details and memory levels (base64 of zlib-deflated
 * little-endian arrays, written by views/timeline/details.py and memory.py::memory_levels).
 */
import {
  type MemoryLevel,
  type MemoryLevelsPayload,
  type DetailsPayload,
  type RankDetails,
  ReportDetails,
  type SummaryRowMeta,
} from "./details";
import { base64Bytes, inflate } from "./offline";

async function bytes(text: string): Promise<ArrayBuffer> {
  const b = await inflate(base64Bytes(text));
  // A fresh, aligned copy: typed arrays need their element alignment.
  return b.slice().buffer;
}

const f64 = async (t: string) => new Float64Array(await bytes(t));
const u32 = async (t: string) => new Uint32Array(await bytes(t));

/** The details, with the timeline's rows (`_rows`). */
export async function decodeDetails(
  p: DetailsPayload,
  rows: readonly SummaryRowMeta[],
): Promise<ReportDetails> {
  const ranks: RankDetails[] = [];
  for (const r of p.ranks) {
    const names = await u32(r.names);
    const half = names.length / 2;
    ranks.push({
      rank: r.rank,
      source: r.source,
      kinds: r.kinds,
      busy: await f64(r.busy),
      starts: await u32(r.starts),
      across: await u32(r.across),
      all: await f64(r.all),
      nameCell: names.subarray(0, half),
      nameCode: names.subarray(half),
      nameNs: await f64(r.name_ns),
    });
  }
  const table = await u32(p.rows);
  return new ReportDetails(p.cells, p.end, p.kinds, p.names, p.short, ranks, table, p.row_entries, rows);
}

export async function decodeMemoryLevels(p: MemoryLevelsPayload): Promise<MemoryLevel[]> {
  const out: MemoryLevel[] = [];
  for (const lv of p.levels) out.push({ cells: lv.cells, values: await f64(lv.data) });
  return out;
}
