/**
 * API_KEYS (src/config/api-keys.ts): its entries, the problems named by entry number and never by key, the
 * `_FILE` twin, and the key check of the API (constant-time, every key compared).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { digestKeys, keyOf, maySee } from '../../src/api/keys.js';
import { API_KEY_MIN_BITS, estimatedKeyBits, parseApiKeys } from '../../src/config/api-keys.js';
import { ConfigError, loadEnv } from '../../src/config/env.js';

const K1 = 'k1-Qm9uIGFwcMOpdGl0IMOgIHRvdXMgbGVzIHRlc3Rz';
const K2 = 'k2-TGUgY2hpZW4gZXN0IGJpZW4gbm91cnJpIGNlIHNvaXI';

describe('API_KEYS', () => {
  it('reads entries separated by commas or newlines, each a name, a key and optionally its tenants', () => {
    const { keys, problems } = parseApiKeys(` app:${K1} ,\nacme-portal:${K2}:acme|beta\n\n`);
    expect(problems).toEqual([]);
    expect(keys.map((k) => [k.name, k.key.reveal(), k.tenants === undefined ? undefined : [...k.tenants]])).toEqual([
      ['app', K1, undefined],
      ['acme-portal', K2, ['acme', 'beta']],
    ]);
    expect(maySee(keys[1]!, 'acme')).toBe(true);
    expect(maySee(keys[1]!, 'gamma')).toBe(false);
    expect(maySee(keys[0]!, 'gamma')).toBe(true);
    expect(String(keys[0]!.key)).toBe('[redacted]');
  });

  it('names each bad entry by its number (and name), never echoing a key', () => {
    const short = 'short-secret-key';
    const { problems } = parseApiKeys([`first:${K1}`, `bad name:${K2}`, `ok:${short}`, `first:${K2}`, `again:${K1}`, `t:${K2}x:Acme`, `x:${K2}y:a:b`].join(','));
    expect(problems.map((p) => p.split(':')[0])).toEqual(['entry 2', 'entry 3 (ok)', 'entry 4 (first)', 'entry 5 (again)', 'entry 6 (t)', 'entry 7 (x)']);
    expect(problems[1]).toMatch(/at least 32 characters/);
    expect(problems[2]).toMatch(/name is used/);
    expect(problems[3]).toMatch(/key is the one of an earlier entry/);
    for (const p of problems) for (const secret of [K1, K2, short]) expect(p).not.toContain(secret);
  });

  it('refuses a key with little entropy (one letter, a short repeat, a run such as abcd or 0123), naming the entry and never the key', () => {
    const weak = ['a'.repeat(32), 'ab'.repeat(20), '0123456789abcdef'.repeat(2), 'abcdefghijklmnopqrstuvwxyzABCDEFGH', 'passwordpasswordpasswordpassword', `key-${'0123456789'.repeat(4)}`];
    const { keys, problems } = parseApiKeys(weak.map((k, i) => `weak${i}:${k}`).join(','));
    expect(keys).toEqual([]);
    expect(problems).toHaveLength(weak.length);
    problems.forEach((p, i) => {
      expect(p).toMatch(new RegExp(`^entry ${i + 1} \\(weak${i}\\): the key is too predictable \\(about \\d+ bits estimated, at least ${API_KEY_MIN_BITS}:`));
      expect(p).not.toContain(weak[i]);
    });
    // What `openssl rand` gives passes: 32 bytes in base64 (the docs' advice), 16 in hex (the shortest allowed), a UUID.
    for (let i = 0; i < 200; i += 1) {
      for (const key of [randomBytes(32).toString('base64'), randomBytes(16).toString('hex'), randomUUID()]) {
        expect(estimatedKeyBits(key), key.length === 32 ? 'hex' : String(key.length)).toBeGreaterThanOrEqual(API_KEY_MIN_BITS);
      }
    }
    expect(parseApiKeys(`app:${K1},portal:${K2}`).problems).toEqual([]);
  });

  it('stops the load naming API_KEYS, and may come from API_KEYS_FILE', async () => {
    let message = '';
    try {
      loadEnv({ API_KEYS: `app:${K1},app2:tooshort-secret` });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/API_KEYS: entry 2 \(app2\): the key must be at least 32 characters/);
    expect(message).not.toContain('tooshort-secret');
    expect(message).not.toContain(K1);
    const dir = await mkdtemp(join(tmpdir(), 'cs-api-keys-'));
    try {
      await writeFile(join(dir, 'keys'), `app:${K1}\nportal:${K2}:acme\n`);
      const env = loadEnv({ API_KEYS_FILE: join(dir, 'keys') });
      expect(parseApiKeys(env.API_KEYS ?? '').keys.map((k) => k.name)).toEqual(['app', 'portal']);
      expect(env.API_RATE_PER_MIN).toBe(600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('finds the key of a Bearer token among them, and none for anything else', () => {
    const keys = digestKeys(parseApiKeys(`app:${K1},portal:${K2}:acme`).keys);
    expect(keyOf(keys, `Bearer ${K2}`)?.name).toBe('portal');
    expect(keyOf(keys, `bearer  ${K1} `)?.name).toBe('app');
    for (const h of [undefined, '', 'Bearer', `Basic ${K1}`, `Bearer ${K1}x`, `Bearer ${K1.slice(1)}`, `${K1}`]) expect(keyOf(keys, h), String(h)).toBeUndefined();
  });
});
