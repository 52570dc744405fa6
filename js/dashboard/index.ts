/**
 * anywidget entry of `tv.Dashboard` (jupyter_traceview/widgets/dashboard.py): bundled by
 * js/build.mjs into jupyter_traceview/static/dashboard.js (+ dashboard.css).
 *
 * `WidgetSource` implements the host-agnostic `DashboardSource` with anywidget commands;
 * the views (view.ts, ../timeline/view.ts) know nothing of anywidget.
 */
import type { AnyModel, Experimental, RenderProps } from "@anywidget/types";
import type { TimelineModel } from "../timeline/messages";
import type { InvokeOptions, StateModel } from "../timeline/state";
import type { DashboardModel } from "./model";
import type {
  DashboardPayload,
  DashboardSource,
  DashboardState,
  ProgressReport,
  TimelineAnswer,
} from "./protocol";
import { DashboardView, renderCard } from "./view";
import "../timeline/timeline.css";
import "./dashboard.css";

/** Commands answered by the kernel (Dashboard's @command methods), progress as custom messages. */
export class WidgetSource implements DashboardSource {
  constructor(
    private readonly model: AnyModel<DashboardModel>,
    private readonly call: Experimental["invoke"],
  ) {}

  payload(): Promise<DashboardPayload> {
    return Promise.resolve(this.model.get("_payload"));
  }

  async invoke(
    command: string,
    msg: unknown,
    buffers?: DataView[],
    options?: InvokeOptions,
  ): Promise<{ msg: unknown; buffers: DataView[] }> {
    const [m, b] = await this.call<unknown>(command, msg, { buffers, signal: options?.signal });
    return { msg: m, buffers: b };
  }

  /** The Timeline child widget's model: Python sees the timeline's range and selection. */
  async timelineModel(answer: TimelineAnswer): Promise<StateModel<TimelineModel>> {
    const id = answer.model_id;
    if (!id) throw new Error("the kernel did not say which widget holds the timeline");
    // The child's comm opens just before the answer arrives; give the manager a moment.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.model.widget_manager.get_model<TimelineModel>(id);
      } catch (err) {
        if (attempt >= 40) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  onProgress(callback: (report: ProgressReport) => void): () => void {
    const handler = (msg: unknown) => {
      if (msg && typeof msg === "object" && (msg as { type?: unknown }).type === "progress")
        callback(msg as ProgressReport);
    };
    this.model.on("msg:custom", handler);
    return () => this.model.off("msg:custom", handler);
  }
}

function render({ model, el, experimental }: RenderProps<DashboardModel>): () => void {
  const source = new WidgetSource(model, experimental.invoke);
  const payload = model.get("_payload");
  const state = model as unknown as StateModel<DashboardState>;
  let view: DashboardView | null = null;
  let card: (() => void) | null = null;
  const update = () => {
    if (model.get("expanded")) {
      card?.();
      card = null;
      view ??= new DashboardView(el, source, payload, { state });
    } else {
      view?.dispose();
      view = null;
      card ??= renderCard(el, payload, () => {
        model.set("expanded", true);
        model.save_changes();
        update();
      });
    }
  };
  model.on("change:expanded", update);
  update();
  return () => {
    model.off("change:expanded", update);
    view?.dispose();
    card?.();
  };
}

export default { render };
