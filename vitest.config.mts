// TypeScript unit tests of the front end's pure helpers (js/tests/*.test.ts), run in node.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["js/tests/**/*.test.ts"],
    environment: "node",
  },
});
