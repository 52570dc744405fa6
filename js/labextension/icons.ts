/** The Traces icon: rank lanes of a timeline (themed through JupyterLab's icon classes). */
import { LabIcon } from "@jupyterlab/ui-components";

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="2" y="4" width="9" height="3" rx="1"/>
    <rect x="13" y="4" width="5" height="3" rx="1"/>
    <rect x="5" y="10.5" width="6" height="3" rx="1"/>
    <rect x="12" y="10.5" width="10" height="3" rx="1"/>
    <rect x="2" y="17" width="4" height="3" rx="1"/>
    <rect x="8" y="17" width="12" height="3" rx="1"/>
  </g>
</svg>`;

export const tracesIcon = new LabIcon({ name: "jupyter_traceview:traces", svgstr: svg });
