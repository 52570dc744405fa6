// Bundle every anywidget front end in js/ into jupyter_traceview/static/ as ES modules.
//   node js/build.mjs            production build (minified), what `pip install .` runs
//   node js/build.mjs --dev      unminified with inline source maps
//   node js/build.mjs --dev --watch
// esbuild does not type-check: `jlpm typecheck` (tsc --noEmit) does.
import * as esbuild from "esbuild";

const dev = process.argv.includes("--dev");
const watch = process.argv.includes("--watch");

/** One entry per widget: <name> -> jupyter_traceview/static/<name>.js (+ <name>.css). */
const entryPoints = {
  timeline: "js/timeline/index.ts",
  dashboard: "js/dashboard/index.ts",
  // The HTML report's offline timeline (inlined into the report by jupyter_traceview/report/html.py).
  report: "js/report/index.ts",
};

const options = {
  entryPoints,
  outdir: "jupyter_traceview/static",
  bundle: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: !dev,
  sourcemap: dev ? "inline" : false,
  legalComments: "none",
  logLevel: "info",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
