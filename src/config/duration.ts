import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Parses `250ms`, `30s`, `15m`, `2h`, `1d` (or a sum such as `1h30m`) into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(trimmed); m !== null; m = re.exec(trimmed)) {
    const unit = m[2] as keyof typeof UNIT_MS;
    total += Number(m[1]) * UNIT_MS[unit];
    consumed = re.lastIndex;
  }
  if (consumed !== trimmed.length || total <= 0) return undefined;
  return Math.round(total);
}

/** A zod string such as `15m` turned into milliseconds. */
export const durationMs = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `not a duration: expected forms like 30s, 15m, 2h, 1d` });
    return z.NEVER;
  }
  return ms;
});
