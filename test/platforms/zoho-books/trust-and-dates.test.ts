/** Pure parts: which servers are Zoho's data centres, the callback's check, and Zoho's timestamps. */
import { describe, expect, it } from 'vitest';
import { zohoBooksConfig, zohoBooksOAuth, trusted, zohoInstant, zohoMs, limitOf } from '../../../src/platforms/zoho-books/index.js';

const config = zohoBooksConfig.parse({ kind: 'zoho-books', clientId: '1000.X', clientSecret: 's' });
const check = (query: string) => zohoBooksOAuth.callback!(config, new URL(`https://sync.example/oauth/callback?code=c&state=s&${query}`));

describe('zoho-books trust', () => {
  it("trusts exactly Zoho's accounts servers and API domains, of one data centre", () => {
    expect(trusted(config, 'https://accounts.zoho.eu', 'accounts')).toEqual({ url: 'https://accounts.zoho.eu', dataCentre: 'eu' });
    expect(trusted(config, 'https://accounts.zohocloud.ca/', 'accounts')?.dataCentre).toBe('ca');
    for (const bad of ['https://accounts.zoho.eu.evil.example', 'http://accounts.zoho.eu', 'https://accounts.zoho.eu/x', 'https://u:p@accounts.zoho.eu', 'https://accounts.zoho.eu?x=1', 'javascript:alert(1)', 'https://evil.example']) {
      expect(trusted(config, bad, 'accounts')).toBeUndefined();
    }
    expect(trusted(config, 'https://www.zohoapis.eu', 'api', 'eu')?.url).toBe('https://www.zohoapis.eu');
    expect(trusted(config, 'https://www.zohoapis.com', 'api', 'eu')).toBeUndefined();
  });

  it('the callback: the data centre named is where the code goes; a foreign one, or a location that disagrees, is refused', () => {
    expect(check('location=eu&accounts-server=https%3A%2F%2Faccounts.zoho.eu')).toEqual({ kind: 'ok', tokenUrl: 'https://accounts.zoho.eu/oauth/v2/token', extra: { 'accounts-server': 'https://accounts.zoho.eu', location: 'eu' } });
    expect(check('location=us&accounts-server=https%3A%2F%2Faccounts.zoho.eu')).toMatchObject({ kind: 'refuse', reason: 'untrusted_accounts_server' });
    expect(check('location=eu&accounts-server=https%3A%2F%2Fevil.example')).toMatchObject({ kind: 'refuse', reason: 'untrusted_accounts_server' });
    expect(check('')).toMatchObject({ kind: 'ok', tokenUrl: 'https://accounts.zoho.com/oauth/v2/token' });
  });

  it('with accountsUrl overridden only its origin is trusted', () => {
    const proxy = zohoBooksConfig.parse({ kind: 'zoho-books', clientId: '1000.X', clientSecret: 's', accountsUrl: 'http://127.0.0.1:9000/dc/com' });
    expect(trusted(proxy, 'http://127.0.0.1:9000/dc/eu', 'accounts')).toEqual({ url: 'http://127.0.0.1:9000/dc/eu' });
    expect(trusted(proxy, 'http://127.0.0.1:9001/dc/eu', 'accounts')).toBeUndefined();
    expect(trusted(proxy, 'https://accounts.zoho.eu', 'accounts')).toBeUndefined();
  });
});

describe('zoho-books dates and limits', () => {
  it("reads Zoho's offsets without a colon, with one, and Z; refuses stamps without an offset or impossible ones", () => {
    expect(new Date(zohoMs('2026-10-01T08:10:00+0300')!).toISOString()).toBe('2026-10-01T05:10:00.000Z');
    expect(new Date(zohoMs('2026-10-01T08:10:00-0530')!).toISOString()).toBe('2026-10-01T13:40:00.000Z');
    expect(zohoMs('2026-10-01T08:10:00+03:00')).toBe(zohoMs('2026-10-01T08:10:00+0300'));
    expect(zohoMs('2026-10-01T05:10:00Z')).toBe(zohoMs('2026-10-01T08:10:00+0300'));
    for (const bad of ['2026-10-01T08:10:00', '2026-02-30T08:10:00+0300', '2026-10-01 08:10:00+0300', '']) expect(zohoMs(bad)).toBeUndefined();
    expect(zohoInstant(Date.parse('2026-10-01T05:10:00.900Z'))).toBe('2026-10-01T05:10:00+0000');
  });

  it('a 429 names its limit by code and message', () => {
    expect(limitOf({ code: 45, message: 'You have made too many requests per minute.' })).toBe('minute');
    expect(limitOf({ code: 1070, message: 'x' })).toBe('concurrent');
    expect(limitOf({ code: 44, message: 'You have reached the maximum number of API calls allowed for the day' })).toBe('day');
    expect(limitOf(undefined)).toBe('minute');
  });
});
