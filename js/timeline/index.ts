/**
 * anywidget entry of `tv.Timeline` (jupyter_traceview/widgets/timeline.py): bundled by
 * js/build.mjs into jupyter_traceview/static/timeline.js (+ timeline.css).
 */
import type { RenderProps } from "@anywidget/types";
import type { TimelineModel } from "./messages";
import type { Invoke } from "./state";
import { TimelineView } from "./view";
import "./timeline.css";

function render({ model, el, experimental }: RenderProps<TimelineModel>): () => void {
  const view = new TimelineView(model, el, experimental.invoke as Invoke);
  return () => {
    view.dispose();
  };
}

export default { render };
