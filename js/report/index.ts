/**
 * The HTML report's interactive timeline (jupyter_traceview/report/html.py inlines this
 * bundle, jupyter_traceview/static/report.js, and report.css): mounts the timeline view on
 * each `.tvr-timeline` element, with a `LocalModel` holding the timeline's opening state and
 * the in-page owner of offline.ts answering its requests from the embedded levels, details
 * (search by name, hovered columns' names, range summaries) and memory levels.
 *
 * The element's `data-source` names the `<script type="application/json">` holding
 * `{state, levels, details, memory}`; once the view is mounted the element gets
 * `data-ready="1"` (or `data-error` with the reason), what the tests read.
 */
import type { TimelineModel } from "../timeline/messages";
import { LocalModel } from "../timeline/state";
import { TimelineView } from "../timeline/view";
import "../timeline/timeline.css";
import type { MemoryLevelsPayload, DetailsPayload } from "./details";
import { decodeMemoryLevels, decodeDetails } from "./decode";
import { type LevelsPayload, LevelWindows, decodeLevels, offlineInvoke } from "./offline";

interface Embedded {
  state: TimelineModel;
  levels: LevelsPayload;
  details?: DetailsPayload | null;
  memory?: MemoryLevelsPayload | null;
}

async function mount(host: HTMLElement): Promise<void> {
  const source = document.getElementById(host.dataset.source ?? "");
  if (!source?.textContent) throw new Error(`the timeline's data (#${host.dataset.source ?? ""}) is missing`);
  const embedded = JSON.parse(source.textContent) as Embedded;
  const levels = await decodeLevels(embedded.levels);
  const rowRank = new Map(embedded.state._rows.map((r) => [r.id, r.rank]));
  const details = embedded.details ? await decodeDetails(embedded.details, embedded.state._rows) : null;
  const memory = embedded.memory
    ? { payload: embedded.memory, levels: await decodeMemoryLevels(embedded.memory) }
    : null;
  const windows = new LevelWindows(embedded.levels, levels, details, memory);
  const model = new LocalModel<TimelineModel>(embedded.state);
  // The toolbar's match count: what the kernel's Timeline sets, here from the details.
  if (details)
    model.on("change:search", () => model.set("_search_count", details.matchCount(model.get("search"))));
  new TimelineView(model, host, offlineInvoke(windows, rowRank), {
    binNames: details
      ? (target, a, b) => details.namesIn("rank" in target ? details.rowsOf(target.rank) : [target.row], a, b)
      : undefined,
  });
  host.dataset.ready = "1";
}

function mountAll(): void {
  for (const host of Array.from(document.querySelectorAll<HTMLElement>(".tvr-timeline"))) {
    mount(host).catch((err: unknown) => {
      host.dataset.error = String(err);
      host.textContent = `The timeline could not be shown: ${String(err)}`;
    });
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
else mountAll();
