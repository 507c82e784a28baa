/**
 * Calendar dates as the service and the platforms write them (YYYY-MM-DD), and the day arithmetic on them, in one
 * place on date-fns. A date-only string is a calendar day, not an instant: both sides of a difference are read the
 * same way, so time zones and daylight saving cannot move the count.
 */
import { differenceInCalendarDays, parseISO } from 'date-fns';

/** Whole days from `from` to `to` (both YYYY-MM-DD); negative when `to` is earlier, NaN when either is no date. */
export function daysBetween(from: string, to: string): number {
  return differenceInCalendarDays(parseISO(to), parseISO(from));
}

/** The UTC calendar day of an instant (default now), as YYYY-MM-DD. */
export function todayUtc(nowMs: number = Date.now()): string {
  return new Date(nowMs).toISOString().slice(0, 10);
}
