// A recording stand-in for CanvasRenderingContext2D: enough of it for the drawing helpers.
import type { Ctx } from "../timeline/draw";

export interface Call {
  op: string;
  args: unknown[];
  fillStyle: string;
  strokeStyle: string;
}

export class MockCtx {
  fillStyle = "#000";
  strokeStyle = "#000";
  lineWidth = 1;
  font = "10px sans-serif";
  textBaseline: CanvasTextBaseline = "alphabetic";
  textAlign: CanvasTextAlign = "start";
  globalAlpha = 1;
  calls: Call[] = [];

  private rec(op: string, args: unknown[]): void {
    this.calls.push({ op, args, fillStyle: this.fillStyle, strokeStyle: this.strokeStyle });
  }
  fillRect(...a: number[]): void {
    this.rec("fillRect", a);
  }
  strokeRect(...a: number[]): void {
    this.rec("strokeRect", a);
  }
  beginPath(): void {
    this.rec("beginPath", []);
  }
  closePath(): void {
    this.rec("closePath", []);
  }
  rect(...a: number[]): void {
    this.rec("rect", a);
  }
  fill(): void {
    this.rec("fill", []);
  }
  stroke(): void {
    this.rec("stroke", []);
  }
  moveTo(...a: number[]): void {
    this.rec("moveTo", a);
  }
  lineTo(...a: number[]): void {
    this.rec("lineTo", a);
  }
  bezierCurveTo(...a: number[]): void {
    this.rec("bezierCurveTo", a);
  }
  fillText(text: string, x: number, y: number, maxWidth?: number): void {
    this.rec("fillText", [text, x, y, maxWidth]);
  }
  measureText(text: string): TextMetrics {
    return { width: text.length * 6 } as TextMetrics;
  }
  save(): void {
    this.rec("save", []);
  }
  restore(): void {
    this.rec("restore", []);
  }
  clip(): void {
    this.rec("clip", []);
  }
  setLineDash(a: number[]): void {
    this.rec("setLineDash", [a]);
  }

  count(op: string): number {
    return this.calls.filter((c) => c.op === op).length;
  }
  of(op: string): Call[] {
    return this.calls.filter((c) => c.op === op);
  }
}

export function asCtx(m: MockCtx): Ctx {
  return m;
}
