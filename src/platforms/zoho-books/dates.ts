/**
 * Zoho's timestamps: `2026-10-01T08:10:00+0300` (ISO 8601 with an offset written without a colon; Zoho Books writes
 * every `*_time` field so), also read with a colon or `Z`. Dates are `YYYY-MM-DD`, as written.
 */

const STAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?(Z|[+-]\d{2}:?\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A Zoho timestamp as epoch ms; undefined unless it is one (an offset is required: a stamp without one names no instant). */
export function zohoMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = STAMP.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '0', zone = 'Z'] = m;
  const local = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), Number(frac.padEnd(3, '0')));
  const check = new Date(local);
  // A date that rolls over (2026-02-30) or a clock out of range names no instant.
  if (Number.isNaN(local) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || check.getUTCHours() !== Number(h) || check.getUTCMinutes() !== Number(mi)) return undefined;
  if (zone === 'Z') return local;
  const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
  const offset = (Number(z[2]) * 60 + Number(z[3])) * (z[1] === '-' ? -1 : 1);
  return local - offset * 60_000;
}

/** A Zoho timestamp as canonical ISO 8601 UTC; undefined when unreadable. */
export function zohoTimestamp(value: string | undefined): string | undefined {
  const ms = zohoMs(value);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/** A Zoho date (`2026-10-01`); undefined unless it is one. */
export function zohoDate(value: string | undefined): string | undefined {
  return value !== undefined && DATE.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) ? value : undefined;
}

/** An instant as Zoho writes it in a query (`last_modified_time`): UTC, second precision, rounded down, `+0000`. */
export function zohoInstant(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}+0000`;
}
