/**
 * Theme: the colours and fonts of the page around the widget, from JupyterLab's CSS
 * variables, VS Code's, or the computed style (Notebook 7 uses JupyterLab's variables).
 */
import { luminance, parseColor } from "./colors";

export interface Theme {
  dark: boolean;
  background: string;
  /** Background of the label gutter and axis band. */
  panel: string;
  foreground: string;
  muted: string;
  border: string;
  grid: string;
  accent: string;
  font: string;
  monoFont: string;
}

function cssVar(style: CSSStyleDeclaration, names: string[]): string {
  for (const n of names) {
    const v = style.getPropertyValue(n).trim();
    if (v) return v;
  }
  return "";
}

/** The first non-transparent background colour of `el` or its ancestors. */
function effectiveBackground(el: HTMLElement): string {
  let node: HTMLElement | null = el;
  while (node) {
    const bg = getComputedStyle(node).backgroundColor;
    if (bg && parseColor(bg)) return bg;
    node = node.parentElement;
  }
  return "";
}

/** Is the colour dark (luminance below the middle grey)? */
export function isDark(color: string): boolean {
  const rgb = parseColor(color);
  return rgb ? luminance(rgb) < 0.2 : false;
}

export function readTheme(el: HTMLElement): Theme {
  const style = getComputedStyle(el);
  const bodyDark =
    document.body.dataset.jpThemeLight === "false" || document.body.classList.contains("vscode-dark");
  const background =
    cssVar(style, [
      "--jp-layout-color0",
      "--vscode-notebook-outputContainerBackgroundColor",
      "--vscode-editor-background",
    ]) ||
    effectiveBackground(el) ||
    (bodyDark ? "#111111" : "#ffffff");
  const dark = parseColor(background) ? isDark(background) : bodyDark;
  return {
    dark,
    background,
    panel: cssVar(style, ["--jp-layout-color1", "--vscode-sideBar-background"]) || background,
    foreground:
      cssVar(style, ["--jp-ui-font-color0", "--vscode-foreground"]) || (dark ? "#e6e6e6" : "#1a1a1a"),
    muted:
      cssVar(style, ["--jp-ui-font-color2", "--vscode-descriptionForeground"]) ||
      (dark ? "#9a9a9a" : "#666666"),
    border: cssVar(style, ["--jp-border-color1", "--vscode-panel-border"]) || (dark ? "#444444" : "#cccccc"),
    grid: cssVar(style, ["--jp-border-color3", "--jp-border-color2"]) || (dark ? "#2c2c2c" : "#eeeeee"),
    accent: cssVar(style, ["--jp-brand-color1", "--vscode-focusBorder"]) || "#1976d2",
    font: cssVar(style, ["--jp-ui-font-family", "--vscode-font-family"]) || "system-ui, sans-serif",
    monoFont: cssVar(style, ["--jp-code-font-family", "--vscode-editor-font-family"]) || "monospace",
  };
}
