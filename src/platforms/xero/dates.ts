/**
 * Xero's date formats: the .NET JSON form `/Date(1539993600000+0000)/` (milliseconds since the epoch, with an
 * optional offset naming the local zone), and ISO 8601 strings with or without an offset (`2018-10-20T00:00:00`,
 * `2019-02-21T16:29:47.96-08:00`). A string without an offset is UTC (Xero's `...UTC` fields and date strings).
 */

const MS_DATE = /^\/Date\((-?\d{1,15})([+-])?(\d{2})?(\d{2})?\)\/$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** A parsed Xero instant: epoch milliseconds and the offset (minutes east of UTC) it was written in. */
export interface XeroInstant {
  ms: number;
  offsetMinutes: number;
  /** The calendar date as written (local to the offset), `YYYY-MM-DD`. */
  localDate: string;
}

function offsetOf(sign: string | undefined, hh: string | undefined, mm: string | undefined): number {
  if (sign === undefined || hh === undefined) return 0;
  const minutes = Number(hh) * 60 + Number(mm ?? '0');
  return sign === '-' ? -minutes : minutes;
}

function isoDateOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Parses any of Xero's date forms; undefined when the value is not one of them or names no real instant. */
export function parseXeroDate(value: unknown): XeroInstant | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const ms = MS_DATE.exec(text);
  if (ms) {
    const epoch = Number(ms[1]);
    if (!Number.isSafeInteger(epoch) || Number.isNaN(new Date(epoch).getTime())) return undefined;
    const offsetMinutes = offsetOf(ms[2], ms[3], ms[4]);
    return { ms: epoch, offsetMinutes, localDate: isoDateOf(epoch + offsetMinutes * 60_000) };
  }
  const iso = ISO.exec(text);
  if (!iso) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = iso;
  const fields = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const;
  const local = Date.UTC(fields[0], fields[1] - 1, fields[2], fields[3], fields[4], fields[5], Number(frac.padEnd(3, '0').slice(0, 3)));
  const check = new Date(local);
  // Reject dates that roll over (2019-02-30) or out-of-range clock fields.
  if (
    Number.isNaN(local) ||
    check.getUTCFullYear() !== fields[0] ||
    check.getUTCMonth() !== fields[1] - 1 ||
    check.getUTCDate() !== fields[2] ||
    check.getUTCHours() !== fields[3] ||
    check.getUTCMinutes() !== fields[4]
  ) {
    return undefined;
  }
  let offsetMinutes = 0;
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const m = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
    if (!m) return undefined;
    offsetMinutes = offsetOf(m[1], m[2], m[3]);
  }
  return { ms: local - offsetMinutes * 60_000, offsetMinutes, localDate: `${y}-${mo}-${d}` };
}

/** A Xero timestamp as canonical ISO 8601 UTC (`2018-11-02T16:31:30.160Z`); undefined when unreadable. */
export function xeroTimestamp(value: unknown): string | undefined {
  const instant = parseXeroDate(value);
  return instant === undefined ? undefined : new Date(instant.ms).toISOString();
}

/** A Xero date as `YYYY-MM-DD`, the calendar date as written in its own zone; undefined when unreadable. */
export function xeroDate(value: unknown): string | undefined {
  return parseXeroDate(value)?.localDate;
}

/** The `If-Modified-Since` value for an ISO instant: UTC, second precision, rounded down (never later). */
export function ifModifiedSince(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}
