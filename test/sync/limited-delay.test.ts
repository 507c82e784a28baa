/**
 * A run stopped by a platform's per-minute limit comes back when the whole minute is free, not when the limiter's
 * oldest call leaves the window (which frees one call and stops the run again a few calls later, throwing away the
 * page it was reading: the zoho bench's first sync never ended so). Other limits keep the platform's own wait.
 */
import { describe, expect, it } from 'vitest';
import { limitedDelayMs } from '../../jobs/sync/processor.js';

describe('the wait of a run stopped by a platform limit', () => {
  it('is a whole minute at least for a per-minute limit (the connection\'s or the app\'s)', () => {
    expect(limitedDelayMs('minute', 3_400)).toBe(60_000);
    expect(limitedDelayMs('app', 56_600)).toBe(60_000);
    expect(limitedDelayMs('minute', 90_000)).toBe(90_000);
  });

  it("is the platform's own for a daily or concurrency limit", () => {
    expect(limitedDelayMs('day', 2_000)).toBe(2_000);
    expect(limitedDelayMs('concurrent', 1_000)).toBe(1_000);
  });
});
