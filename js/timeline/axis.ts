/**
 * Time axis: tick positions and labels in sensible units (ns, us, ms, s), relative to
 * the trace's origin (pure functions, unit-tested). Numbers elsewhere: js/format.ts.
 */

export interface Unit {
  name: "ns" | "us" | "ms" | "s";
  scale: number;
}

const UNITS: Unit[] = [
  { name: "s", scale: 1e9 },
  { name: "ms", scale: 1e6 },
  { name: "us", scale: 1e3 },
  { name: "ns", scale: 1 },
];

export interface Ticks {
  /** Distance between ticks, ns (1, 2 or 5 times a power of ten). */
  step: number;
  /** Tick times, ns. */
  values: number[];
  /** Labels, one per tick. */
  labels: string[];
  /** When labels are offsets from a base (deep zoom), the base's label; else "". */
  base: string;
}

/** A "nice" step (1, 2, 5 x 10^k ns, at least 1 ns) of at least `raw` ns. */
export function niceStep(raw: number): number {
  if (!(raw > 1)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** The unit labels use for a tick step: the largest at most ten steps (200 us -> ms: 15.2 ms). */
export function unitForStep(step: number): Unit {
  for (const u of UNITS) if (u.scale <= step * 10) return u;
  return UNITS[UNITS.length - 1]!;
}

function decimalsFor(step: number, unit: Unit): number {
  const v = step / unit.scale;
  return v >= 1 ? 0 : Math.min(9, Math.ceil(-Math.log10(v) - 1e-9));
}

function fmt(value: number, unit: Unit, decimals: number): string {
  return `${(value / unit.scale).toFixed(decimals)} ${unit.name}`;
}

/** Ticks over `[lo, hi)` for a plot `width` px wide, about `spacing` px apart. */
export function ticks(lo: number, hi: number, width: number, spacing = 90): Ticks {
  const span = Math.max(hi - lo, 1);
  const n = Math.max(1, Math.floor(width / spacing));
  const step = niceStep(span / n);
  const unit = unitForStep(step);
  const decimals = decimalsFor(step, unit);
  const first = Math.ceil(lo / step) * step;
  const values: number[] = [];
  for (let t = first; t < hi && values.length < 1000; t += step) values.push(t);
  // Deep zoom far from the origin: print offsets from a round base instead of long numbers.
  const magnitude = Math.max(Math.abs(lo), Math.abs(hi));
  let base = "";
  let labels: string[];
  if (magnitude / step > 1e5) {
    const b = Math.floor(lo / (step * 1000)) * step * 1000;
    const baseUnit = UNITS.find((u) => u.scale <= Math.abs(b)) ?? UNITS[UNITS.length - 1]!;
    base = fmt(b, baseUnit, decimalsFor(step * 1000, baseUnit));
    labels = values.map((t) => `+${fmt(t - b, unit, decimals)}`);
  } else {
    labels = values.map((t) => fmt(t, unit, decimals));
  }
  return { step, values, labels, base };
}

/**
 * The caption of the axis band over the label gutter: the longest of its wordings that fits
 * in `maxWidth` px (`measure` gives a text's width), so that it never runs into the first
 * tick labels; "" when not even the span fits.
 */
export function axisCaption(shown: string, maxWidth: number, measure: (text: string) => number): string {
  const wordings = [
    `time since the trace origin · ${shown} shown`,
    `since the origin · ${shown} shown`,
    `${shown} shown`,
    shown,
  ];
  return wordings.find((w) => measure(w) <= maxWidth) ?? "";
}
