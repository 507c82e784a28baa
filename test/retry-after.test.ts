/**
 * One Retry-After parser: the collections client (a 429 from the service) and the platforms (a 429 from Xero or
 * QuickBooks, through the access's `throttled`) read the same header values the same way.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimitedError } from '../src/collections/errors.js';
import { errorFromResponse } from '../src/collections/responses.js';
import { oauthAccess } from '../src/platforms/oauth/access.js';
import type { PlatformAuth } from '../src/platforms/oauth/oauth.js';
import type { LimitScope, PlatformRateLimiter } from '../src/platforms/oauth/rate-limiter.js';
import { parseRetryAfter } from '../src/retry.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');

/** Header value -> ms (undefined: unreadable, so each user falls back to its own default). */
const CASES: [string, number | undefined][] = [
  ['1', 1_000],
  ['1.5', 1_500],
  [' 2 ', 2_000],
  ['0', 0],
  ['0.0001', 1], // rounded up to the ms: never sooner than asked
  ['Fri, 27 Nov 2026 12:00:30 GMT', 30_000],
  ['Fri, 27 Nov 2026 11:59:00 GMT', 0], // a date in the past: now
  ['soon', undefined],
  ['-1', 0], // Date.parse reads it as a date (year -1), long past: as both parsers before it did
  ['', undefined],
];

/** The collections client's reading: the retryAfterMs of the RateLimitedError for a 429. */
function collectionsReads(value: string): number | undefined {
  const err = errorFromResponse('GET /contact', { status: 429, headers: { 'retry-after': value }, text: '' }, true, NOW);
  expect(err).toBeInstanceOf(RateLimitedError);
  return (err as RateLimitedError).retryAfterMs;
}

const DEFAULT_MS = 123_456;

/** The platforms' reading: how long the access blocks every process after a 429 (DEFAULT_MS: unreadable). */
async function platformReads(value: string): Promise<number | undefined> {
  const blocked: number[] = [];
  const limiter = { block: async (_scope: LimitScope, ms: number) => void blocked.push(ms) } as unknown as PlatformRateLimiter;
  const access = oauthAccess({ name: 'xero', connection: 'org', auth: {} as PlatformAuth, limiter, throttleDefaultMs: () => DEFAULT_MS });
  const err = await access.throttled(value, 'minute');
  expect(blocked).toEqual([err.retryAfterMs]);
  return err.retryAfterMs === DEFAULT_MS ? undefined : err.retryAfterMs;
}

beforeEach(() => {
  vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Retry-After', () => {
  it.each(CASES)('%j is %j ms for the parser, the collections client and the platforms alike', async (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
    expect(collectionsReads(value)).toBe(ms);
    expect(await platformReads(value)).toBe(ms);
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['2.5', '9'], NOW)).toBe(2_500);
  });
});
