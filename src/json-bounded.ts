/**
 * JSON from outside (a webhook body, the tenants file), parsed within a nesting bound and with a readable place for
 * an error. The depth is counted over the text without recursion before JSON.parse runs, so a body nested thousands
 * deep gets an answer (400, or a config error naming the line) instead of a stack overflow further on (zod, the
 * event's id, JSON.stringify are recursive).
 */

/** The line and column (1-based) of `offset` in `text`. */
export function lineColumnAt(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(Math.max(0, offset), text.length);
  for (let i = 0; i < end; i += 1) {
    if (text.charCodeAt(i) === 10) {
      line += 1;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/** The offset where the text first nests objects or arrays deeper than `max`, or undefined. */
export function tooDeepAt(text: string, max: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i += 1;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth += 1;
      if (depth > max) return i;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth -= 1;
  }
  return undefined;
}

export type BoundedJson = { ok: true; value: unknown } | { ok: false; why: 'too_deep' | 'invalid'; line: number; column: number; message: string };

/**
 * Parses `text` if it nests at most `maxDepth` deep. A failure names its line and column (V8's "at position N" is
 * replaced; a message without a position, such as "Unexpected end of JSON input", is placed at the end).
 */
export function parseJsonBounded(text: string, maxDepth: number): BoundedJson {
  const deep = tooDeepAt(text, maxDepth);
  if (deep !== undefined) {
    const at = lineColumnAt(text, deep);
    return { ok: false, why: 'too_deep', ...at, message: `nested deeper than ${maxDepth} levels of objects and arrays (line ${at.line}, column ${at.column})` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    const raw = (err as Error).message;
    const position = /\bat position (\d+)/.exec(raw)?.[1];
    const at = lineColumnAt(text, position === undefined ? text.length : Number(position));
    const what = raw.replace(/\s*\(line \d+ column \d+\)/, '').replace(/\s*in JSON at position \d+/, '').replace(/\s*at position \d+/, '').trim();
    return { ok: false, why: 'invalid', ...at, message: `${what} at line ${at.line}, column ${at.column}` };
  }
}
