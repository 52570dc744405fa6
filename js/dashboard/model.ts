/**
 * Synced traits of `Dashboard` in jupyter_traceview/widgets/dashboard.py (same snake_case
 * names): what the anywidget host reads. Everything else comes through commands.
 */
import type { DashboardPayload } from "./protocol";

export interface DashboardModel {
  _payload: DashboardPayload;
  tab: string;
  expanded: boolean;
  /** "IPY_MODEL_<id>" of the Timeline child widget once the timeline is opened, else null. */
  timeline: string | null;
}
