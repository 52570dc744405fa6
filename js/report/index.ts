/**
 * The HTML report's interactive timeline (jupyter_traceview/report/html.py inlines this
 * bundle, jupyter_traceview/static/report.js, and report.css): mounts the timeline view on
 * each `.tvr-timeline` element, with a `LocalModel` holding the timeline's opening state and
 * the in-page owner of offline.ts answering its window requests from the embedded levels.
 *
 * The element's `data-source` names the `<script type="application/json">` holding
 * `{state, levels}`; once the view is mounted the element gets `data-ready="1"` (or
 * `data-error` with the reason), what the tests read.
 */
import type { TimelineModel } from "../timeline/model";
import { LocalModel } from "../timeline/state";
import { TimelineView } from "../timeline/view";
import "../timeline/timeline.css";
import { type LevelsPayload, LevelWindows, decodeLevels, offlineInvoke } from "./offline";

interface Embedded {
  state: TimelineModel;
  levels: LevelsPayload;
}

async function mount(host: HTMLElement): Promise<void> {
  const source = document.getElementById(host.dataset.source ?? "");
  if (!source?.textContent) throw new Error(`the timeline's data (#${host.dataset.source ?? ""}) is missing`);
  const embedded = JSON.parse(source.textContent) as Embedded;
  const levels = await decodeLevels(embedded.levels);
  const windows = new LevelWindows(embedded.levels, levels);
  const model = new LocalModel<TimelineModel>(embedded.state);
  new TimelineView(model, host, offlineInvoke(windows));
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
