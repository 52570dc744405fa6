/**
 * Colours from the palette the kernel sends (jupyter_traceview/views/colors.json): kinds by code,
 * names by palette index, in the light or dark variant.
 */
import type { Palette } from "./messages";

export class Colors {
  readonly kinds: string[];
  readonly names: string[];
  readonly highlight: string;
  readonly selection: string;
  readonly flow: string;
  /** Text colour readable on each kind colour / name colour. */
  readonly kindText: string[];
  readonly nameText: string[];
  private readonly codeOf: Map<string, number>;

  constructor(
    readonly palette: Palette,
    readonly dark: boolean,
  ) {
    const v = dark ? "dark" : "light";
    this.kinds = palette.kinds.map((k) => k[v]);
    this.names = palette.names[v];
    this.highlight = palette.highlight[v];
    this.selection = palette.selection[v];
    this.flow = palette.flow[v];
    this.kindText = this.kinds.map(textOn);
    this.nameText = this.names.map(textOn);
    this.codeOf = new Map(palette.kinds.map((k, i) => [k.key, i]));
  }

  /** Colour of kind code `code` (grey for unknown codes). */
  kind(code: number): string {
    return this.kinds[code] ?? "#888888";
  }

  /** Colour of name-palette index `index`. */
  name(index: number): string {
    return this.names[index % Math.max(this.names.length, 1)] ?? "#888888";
  }

  /** Code of a kind key ("compute", ...), -1 if unknown. */
  code(key: string): number {
    return this.codeOf.get(key) ?? -1;
  }

  label(key: string): string {
    const i = this.code(key);
    return i >= 0 ? this.palette.kinds[i]!.label : key;
  }
}

/** [r, g, b] (0-255) of a #rrggbb / #rgb / rgb()/rgba() colour; null if not parsable. */
export function parseColor(c: string): [number, number, number] | null {
  const s = c.trim();
  let m = /^#([0-9a-f]{6})$/i.exec(s);
  if (m) {
    const n = parseInt(m[1]!, 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }
  m = /^#([0-9a-f]{3})$/i.exec(s);
  if (m) {
    const h = m[1]!;
    return [parseInt(h[0]! + h[0]!, 16), parseInt(h[1]! + h[1]!, 16), parseInt(h[2]! + h[2]!, 16)];
  }
  m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)$/i.exec(s);
  if (m) {
    if (m[4] !== undefined && parseFloat(m[4]) === 0) return null; // fully transparent
    return [Number(m[1]), Number(m[2]), Number(m[3])];
  }
  return null;
}

/** Relative luminance (0 black .. 1 white) of an sRGB colour. */
export function luminance(rgb: [number, number, number]): number {
  const lin = rgb.map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * lin[0]! + 0.7152 * lin[1]! + 0.0722 * lin[2]!;
}

/** Black or white, whichever reads better on `bg`. */
export function textOn(bg: string): string {
  const rgb = parseColor(bg);
  if (!rgb) return "#000000";
  return luminance(rgb) > 0.35 ? "#111111" : "#ffffff";
}

/** `color` with opacity `alpha` as rgba(). */
export function withAlpha(color: string, alpha: number): string {
  const rgb = parseColor(color);
  if (!rgb) return color;
  return `rgba(${rgb[0]}, ${rgb[1]}, ${rgb[2]}, ${alpha})`;
}
