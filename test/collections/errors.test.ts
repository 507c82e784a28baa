/** The error helpers: Retry-After, body scrubbing, JWT expiry, JSON form. */
import { describe, expect, it } from 'vitest';
import { AuthError, CollectionsError, RateLimitedError, ValidationError, errorCode, isCollectionsError, parseRetryAfter, trimBody } from '../../src/collections/errors.js';
import { jwtExpiryMs } from '../../src/collections/token.js';

describe('errors', () => {
  it('parses Retry-After as seconds or an HTTP-date', () => {
    const now = Date.parse('2024-05-01T00:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1_000);
    expect(parseRetryAfter(['2.5'], now)).toBe(2_500);
    expect(parseRetryAfter('Wed, 01 May 2024 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tue, 30 Apr 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('trims long bodies and scrubs tokens', () => {
    expect(trimBody('x'.repeat(600))).toHaveLength(503);
    expect(trimBody('')).toBeUndefined();
    expect(trimBody('{"access_token":"abc","detail":"ok"}')).toBe('{"access_token":"[redacted]","detail":"ok"}');
    expect(trimBody('Authorization: Bearer abc.def')).toBe('Authorization: Bearer [redacted]');
  });

  it('reads exp from a JWT without verifying it', () => {
    const payload = Buffer.from(JSON.stringify({ sub: 'c', exp: 1_700_000_000 })).toString('base64url');
    expect(jwtExpiryMs(`eyJhbGciOiJIUzI1NiJ9.${payload}.sig`)).toBe(1_700_000_000_000);
    expect(jwtExpiryMs('opaque-token')).toBeUndefined();
    const noExp = Buffer.from(JSON.stringify({ sub: 'c' })).toString('base64url');
    expect(jwtExpiryMs(`h.${noExp}.s`)).toBeUndefined();
  });

  it('gives stable codes, retry verdicts and a JSON form', () => {
    const v = new ValidationError({ route: 'POST /contact', detail: [{ loc: ['body', 'name'], msg: 'too long', type: 'string_too_long' }], local: true });
    expect(isCollectionsError(v)).toBe(true);
    expect(errorCode(v)).toBe('COLLECTIONS_REJECTED');
    expect(v.message).toBe('POST /contact refused locally: body.name too long');
    expect(JSON.parse(JSON.stringify(v))).toMatchObject({ code: 'COLLECTIONS_REJECTED', local: true, retryable: false, detail: [{ loc: ['body', 'name'] }] });
    expect(new AuthError({ route: 'GET /contact', reason: 'superseded' })).toMatchObject({ code: 'AUTH_SUPERSEDED', retryable: true });
    expect(new AuthError({ route: 'GET /contact', reason: 'invalid' })).toMatchObject({ code: 'AUTH_INVALID', retryable: false });
    expect(new RateLimitedError({ route: 'GET /contact', retryAfterMs: 1_000 }).retryable).toBe(true);
    const wrapped = new CollectionsError({ code: 'COLLECTIONS_HTTP', retryable: false, message: 'm', route: 'r', cause: Object.assign(new Error('inner'), { code: 'EX' }) });
    expect((JSON.parse(JSON.stringify(wrapped)) as { cause: unknown }).cause).toEqual({ name: 'Error', code: 'EX', message: 'inner' });
    expect(errorCode(new Error('x'))).toBe('UNKNOWN');
  });
});
