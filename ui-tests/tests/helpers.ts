// Helpers shared by the Galata tests: run Python in the open notebook, find the widget,
// write artefacts.
import type { IJupyterLabPageFixture } from "@jupyterlab/galata";
import type { Locator } from "@playwright/test";
import { expect } from "@jupyterlab/galata";
import * as fs from "fs";
import * as path from "path";

/** Repository root (ui-tests/..), for benchmarks/synth.py. */
export const REPO = path.resolve(__dirname, "..", "..");
/** Screenshots and measurements of a run (gitignored). */
export const ARTIFACTS = path.resolve(__dirname, "..", "artifacts");

let cells = 0;

/** A fresh notebook; returns nothing, resets the cell counter. */
export async function newNotebook(page: IJupyterLabPageFixture, name: string): Promise<void> {
  await page.notebook.createNew(name);
  cells = 0;
}

/**
 * Append a code cell with `source` (not run yet); returns its index.
 *
 * The source goes into the notebook's model, as pasting it would: Galata's `setCell` types it
 * key by key into CodeMirror, which took up to a minute of the CPU for a long cell (the trace
 * builder of diagnosis.spec.ts) and re-indents what it types. No test here is about typing.
 */
export async function addCell(page: IJupyterLabPageFixture, source: string): Promise<number> {
  const index = cells;
  const added = await page.evaluate(
    ([at, text]) => {
      // The notebook panel in front (Galata's handle on the application, as its own helpers use).
      const galata = (window as unknown as { galata: { app: { shell: { currentWidget: any } } } }).galata;
      const notebook = galata.app.shell.currentWidget?.content;
      const shared = notebook?.model?.sharedModel;
      if (!shared) return false;
      // A new notebook has one empty code cell: the first source goes there.
      if (at < shared.cells.length) shared.cells[at].setSource(text);
      else shared.insertCell(at, { cell_type: "code", source: text });
      notebook.activeCellIndex = at;
      return true;
    },
    [index, source] as const,
  );
  if (!added) throw new Error(`addCell: no notebook is open to add cell ${index} to`);
  // Selected by a click, as after typing: the keys that run it go to the notebook.
  if (!(await page.notebook.selectCells(index))) throw new Error(`addCell: cell ${index} not found`);
  cells += 1;
  return index;
}

/**
 * Append a code cell with `source`, run it (waiting for completion unless `wait` is false)
 * and return its index.
 */
export async function runCell(page: IJupyterLabPageFixture, source: string, wait = true): Promise<number> {
  const index = await addCell(page, source);
  await page.notebook.runCell(index, { inplace: true, wait });
  return index;
}

/** Text output of a cell (stdout and results), joined. */
export async function cellText(page: IJupyterLabPageFixture, index: number): Promise<string> {
  const out = await page.notebook.getCellTextOutput(index);
  return (out ?? []).join("\n");
}

/** The (last) timeline widget on the page. */
export function timeline(page: IJupyterLabPageFixture): Locator {
  return page.locator(".tv-timeline").last();
}

export function writeArtifact(name: string, content: string | Buffer): string {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const p = path.join(ARTIFACTS, name);
  fs.writeFileSync(p, content);
  return p;
}

/** [lo, hi] of the visible range, from the widget's data-range. */
export async function visibleRange(widget: Locator): Promise<[number, number]> {
  const r = (await widget.getAttribute("data-range")) ?? "0,0";
  const [a, b] = r.split(",").map(Number);
  return [a ?? 0, b ?? 0];
}

/** Wait until the widget's data covers its view (no window request in flight) and a frame is drawn. */
export async function settled(widget: Locator): Promise<void> {
  await widget.page().waitForTimeout(50);
  await widget
    .page()
    .waitForFunction((el) => (el as HTMLElement).dataset.loading === "0", await widget.elementHandle(), {
      timeout: 30000,
    });
  await widget.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * The page point at the centre of row `row` (0 = top) of a heatmap of `rows` rows, `frac` of the
 * way along its time axis, inside the plot area the dashboard records on the drawn chart
 * (`data-frame`: left, top, width, height in px of its canvas; js/dashboard/bokeh.ts).
 */
export async function heatmapCell(
  heatmap: Locator,
  row: number,
  frac: number,
  rows: number,
): Promise<[number, number]> {
  await expect(heatmap).toHaveAttribute("data-frame", /^\d+,\d+,\d+,\d+$/, { timeout: 30000 });
  const [left, top, width, height] = ((await heatmap.getAttribute("data-frame")) ?? "")
    .split(",")
    .map(Number);
  const box = (await heatmap.locator("canvas").first().boundingBox())!;
  const rowH = height! / rows;
  return [box.x + left! + frac * width!, box.y + top! + (row + 0.5) * rowH];
}

/** The WCAG contrast of an element's text against its background (see `textContrasts`). */
export interface TextContrast {
  text: string;
  /** Contrast ratio, 1 to 21. */
  ratio: number;
  /** Relative luminance of the background, 0 (black) to 1 (white). */
  bg: number;
}

/**
 * The WCAG contrast of the text of the first 20 elements matching `selector` under `root`,
 * against the first opaque background up their ancestors; a translucent text colour
 * (JupyterLab's `--jp-ui-font-color2` is black or white at 54 %) is blended onto it first.
 */
export async function textContrasts(root: Locator, selector: string): Promise<TextContrast[]> {
  return root.evaluate((r, sel) => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = (c: number[]) => {
      const [R, G, B] = c.slice(0, 3).map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * R! + 0.7152 * G! + 0.0722 * B!;
    };
    const background = (el: Element | null): number[] => {
      for (let e = el; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3]! > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    return [...r.querySelectorAll(sel)]
      .filter((el) => (el.textContent ?? "").trim() !== "")
      .slice(0, 20)
      .map((el) => {
        const back = background(el);
        const fore = rgb(getComputedStyle(el).color);
        const a = fore.length >= 4 ? fore[3]! : 1;
        const blended = [0, 1, 2].map((i) => a * fore[i]! + (1 - a) * back[i]!);
        const fg = lum(blended);
        const bg = lum(back);
        return {
          text: (el.textContent ?? "").trim().slice(0, 30),
          ratio: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05),
          bg,
        };
      });
  }, selector);
}

/** What reads badly in a dark theme: text on a light background, or under 4.5:1 contrast. */
export function darkProblems(where: string, found: TextContrast[]): string[] {
  const out: string[] = [];
  for (const c of found) {
    if (c.bg > 0.2) out.push(`${where}: "${c.text}" on a light background (${c.bg.toFixed(2)})`);
    if (c.ratio < 4.5) out.push(`${where}: "${c.text}" contrast ${c.ratio.toFixed(1)}`);
  }
  return out;
}
