/**
 * `X_FILE` for every secret setting (the Docker and Kubernetes secrets convention): the value is read from the
 * file at start, one trailing newline dropped; X and X_FILE both set is refused; an unreadable file is named, with
 * its variable, on one line.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadEnv, SECRET_ENV_KEYS } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';

const KEY = 'ab'.repeat(32);
const FINGERPRINT = 'a-fingerprint-key-of-32-characters';

/** The thrown error's message (the test fails when nothing is thrown). */
function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

/** The message's line naming `name`. */
const lineOf = (message: string, name: string): string => message.split('\n').find((l) => l.includes(name)) ?? '';

describe('secret settings from files (X_FILE)', () => {
  let dir: string;
  const at = (name: string): string => join(dir, name);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-secret-files-'));
    await writeFile(at('token-key'), `${KEY}\n`);
    await writeFile(at('fingerprint'), `${FINGERPRINT}\r\n`);
    await writeFile(at('redis-url'), 'redis://:s3cret@redis.internal:6380');
    await writeFile(at('two-newlines'), `${FINGERPRINT}\n\n`);
    await writeFile(at('empty'), '');
    await writeFile(at('dashboard'), 'a-dashboard-password\n');
    await writeFile(at('acme'), 'acme-secret-from-a-file\n');
    await writeFile(at('unreadable'), 'x');
    await chmod(at('unreadable'), 0o000);
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reads every secret of the environment schema from its file, one trailing newline dropped', () => {
    const env = loadEnv({
      PLATFORM_TOKEN_KEY_FILE: at('token-key'),
      TOKEN_FINGERPRINT_KEY_FILE: at('fingerprint'),
      REDIS_URL_FILE: at('redis-url'),
    });
    expect(env.PLATFORM_TOKEN_KEY).toBe(KEY);
    expect(env.TOKEN_FINGERPRINT_KEY).toBe(FINGERPRINT);
    expect(env.REDIS_URL).toBe('redis://:s3cret@redis.internal:6380');
    // Only one newline goes: the second is part of the value (and the schema sees it).
    expect(loadEnv({ TOKEN_FINGERPRINT_KEY_FILE: at('two-newlines') }).TOKEN_FINGERPRINT_KEY).toBe(`${FINGERPRINT}\n`);
    // An empty X beside X_FILE counts as unset (a copied .env.example has `PLATFORM_TOKEN_KEY=`).
    expect(loadEnv({ PLATFORM_TOKEN_KEY: '', PLATFORM_TOKEN_KEY_FILE: at('token-key') }).PLATFORM_TOKEN_KEY).toBe(KEY);
  });

  it('applies to secrets only (marked once in the schema): a _FILE twin of a plain setting is not read', () => {
    expect(SECRET_ENV_KEYS).toEqual(['REDIS_URL', 'REDIS_CLUSTER_NODES', 'TOKEN_FINGERPRINT_KEY', 'PLATFORM_TOKEN_KEY', 'PLATFORM_TOKEN_KEY_PREVIOUS', 'API_KEYS', 'RUN_WEBHOOK_SECRET']);
    expect(loadEnv({ LOG_LEVEL_FILE: at('token-key') }).LOG_LEVEL).toBe('info');
  });

  it('refuses X and X_FILE both set, naming both', () => {
    const message = messageOf(() => loadEnv({ PLATFORM_TOKEN_KEY: KEY, PLATFORM_TOKEN_KEY_FILE: at('token-key') }));
    expect(lineOf(message, 'PLATFORM_TOKEN_KEY_FILE')).toMatch(/PLATFORM_TOKEN_KEY\b.*PLATFORM_TOKEN_KEY_FILE|PLATFORM_TOKEN_KEY_FILE.*PLATFORM_TOKEN_KEY\b/);
    expect(lineOf(message, 'PLATFORM_TOKEN_KEY_FILE')).toMatch(/not both/);
    expect(message).not.toContain(KEY);
  });

  it('names the variable and the path, on one line, when the file cannot be read; with every other bad key', () => {
    const missing = at('no-such-file');
    const message = messageOf(() => loadEnv({ PLATFORM_TOKEN_KEY_FILE: missing, LOG_LEVEL: 'loud' }));
    const line = lineOf(message, 'PLATFORM_TOKEN_KEY_FILE');
    expect(line).toContain(missing);
    expect(line).toMatch(/ENOENT/);
    expect(message).toMatch(/LOG_LEVEL/);
    // The unread secret is not reported a second time as malformed.
    expect(message.split('\n').filter((l) => l.includes('PLATFORM_TOKEN_KEY'))).toHaveLength(1);
    if (process.getuid?.() !== 0) expect(lineOf(messageOf(() => loadEnv({ REDIS_URL_FILE: at('unreadable') })), 'REDIS_URL_FILE')).toContain(at('unreadable'));
    expect(lineOf(messageOf(() => loadEnv({ REDIS_URL_FILE: dir })), 'REDIS_URL_FILE')).toContain(dir);
  });

  it('refuses an empty secret file, naming it', () => {
    const line = lineOf(messageOf(() => loadEnv({ PLATFORM_TOKEN_KEY_FILE: at('empty') })), 'PLATFORM_TOKEN_KEY_FILE');
    expect(line).toContain(at('empty'));
    expect(line).toMatch(/empty/);
  });

  it("reads the dashboard's password from DASHBOARD_PASSWORD_FILE, under the same rules", async () => {
    const { dashboardSettings } = await import('../../src/cli/actions/dashboard.js');
    expect(dashboardSettings({ DASHBOARD_PASSWORD_FILE: at('dashboard') }).DASHBOARD_PASSWORD).toBe('a-dashboard-password');
    expect(() => dashboardSettings({ DASHBOARD_PASSWORD: 'another-password', DASHBOARD_PASSWORD_FILE: at('dashboard') })).toThrow(/DASHBOARD_PASSWORD_FILE.*not both|not both.*DASHBOARD_PASSWORD_FILE/);
    expect(() => dashboardSettings({ DASHBOARD_PASSWORD_FILE: at('no-such-file') })).toThrow(new RegExp(`DASHBOARD_PASSWORD_FILE.*${at('no-such-file').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  });

  it("reads a tenants file's ${VAR} from VAR_FILE (a client secret kept in a secret file)", () => {
    const text = JSON.stringify({
      tenants: [{ id: 'acme', collections: { clientId: 'acme-client', clientSecret: '${ACME_SECRET}' }, platform: { kind: 'file', path: './data/acme' } }],
    });
    expect(parseTenants(text, { ACME_SECRET_FILE: at('acme') }).tenants[0]?.collections.clientSecret.reveal()).toBe('acme-secret-from-a-file');
    const both = messageOf(() => parseTenants(text, { ACME_SECRET: 'x', ACME_SECRET_FILE: at('acme') }));
    expect(lineOf(both, 'ACME_SECRET_FILE')).toMatch(/tenants\[0\] \(acme\)\.collections\.clientSecret: .*not both/);
    const unreadable = messageOf(() => parseTenants(text, { ACME_SECRET_FILE: at('no-such-file') }));
    expect(lineOf(unreadable, 'ACME_SECRET_FILE')).toContain(at('no-such-file'));
    expect(unreadable).not.toMatch(/ACME_SECRET is not set/);
  });
});
