/**
 * Search patterns in the widget (pure, unit-tested). The kernel matches patterns with RE2 in
 * linear time (jupyter_traceview/views/timeline/pattern.py); the widget refuses, with a
 * message, what the kernel would refuse, before sending it: a pattern longer than
 * `MAX_PATTERN_CHARS`.
 */

/** The longest pattern the kernel accepts (MAX_PATTERN_CHARS in pattern.py). */
export const MAX_PATTERN_CHARS = 1000;

/** Why `pattern` cannot be searched, or null when it can. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_CHARS) {
    return `pattern too long (${pattern.length.toLocaleString("en-US")} characters; at most ${MAX_PATTERN_CHARS.toLocaleString("en-US")})`;
  }
  return null;
}
