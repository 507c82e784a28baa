import { describe, expect, it } from 'vitest';
import { ago, humanDuration } from '../../src/cli/actions/status.js';

describe('durations for people in status (issue 28)', () => {
  it('says seconds, minutes, hours and days, not a count of seconds', () => {
    expect(humanDuration(0)).toBe('0 s');
    expect(humanDuration(45_000)).toBe('45 s');
    expect(humanDuration(1_487_000)).toBe('24 min');
    expect(humanDuration(3 * 3_600_000 + 5 * 60_000)).toBe('3 h 5 min');
    expect(humanDuration(2 * 3_600_000)).toBe('2 h');
    expect(humanDuration(52 * 3_600_000)).toBe('2 days 4 h');
  });
  it('says ago or in, with the time in UTC', () => {
    const now = Date.parse('2026-11-27T10:27:00Z');
    expect(ago(now - 25 * 60_000, now)).toBe('25 min ago (2026-11-27 10:02 UTC)');
    expect(ago(now + 4 * 60_000, now)).toBe('in 4 min (2026-11-27 10:31 UTC)');
    expect(ago(undefined, now)).toBe('-');
  });
});
