import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadEnv } from '../../src/config/env.js';
import { parseDuration } from '../../src/config/duration.js';
import { checkTenantsNeeds, parseTenants, type TenantsFile } from '../../src/config/tenants.js';
import type { QuickBooksConfig as QuickBooksTenant } from '../../src/platforms/quickbooks/config.js';

const good = {
  tenants: [
    {
      id: 'acme',
      collections: { clientId: 'acme-client', clientSecret: '${ACME_SECRET}' },
      platform: { kind: 'file', path: './data/acme' },
      schedule: { every: '15m' },
    },
  ],
};

describe('environment', () => {
  it('has working defaults and reports every bad key at once', () => {
    const env = loadEnv({});
    expect(env.COLLECTIONS_BASE_URL).toMatch(/\/api-service\/v1$/);
    expect(env.TOKEN_REFRESH_MARGIN).toBe(0.2);
    let error: unknown;
    try {
      loadEnv({ COLLECTIONS_BASE_URL: 'http://x.example/api', SYNC_CONCURRENCY: '0', LOG_LEVEL: 'loud' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const msg = (error as Error).message;
    expect(msg).toMatch(/COLLECTIONS_BASE_URL: must end with \/api-service\/v1/);
    expect(msg).toMatch(/SYNC_CONCURRENCY/);
    expect(msg).toMatch(/LOG_LEVEL/);
  });

  it('takes LOG_FORMAT json, json-iso or pretty, and names it when it is anything else', () => {
    expect(loadEnv({}).LOG_FORMAT).toBe('json');
    expect(loadEnv({ LOG_FORMAT: 'json-iso' }).LOG_FORMAT).toBe('json-iso');
    expect(() => loadEnv({ LOG_FORMAT: 'ecs' })).toThrow(/LOG_FORMAT: must be one of json, json-iso, pretty/);
  });

  it('still reads LOG_PRETTY=true as LOG_FORMAT=pretty, with a deprecation warning, and refuses a contradiction', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      expect(loadEnv({ LOG_PRETTY: 'true' }).LOG_FORMAT).toBe('pretty');
      expect(loadEnv({ LOG_PRETTY: 'false' }).LOG_FORMAT).toBe('json');
      expect(loadEnv({ LOG_PRETTY: 'true', LOG_FORMAT: 'pretty' }).LOG_FORMAT).toBe('pretty');
      expect(() => loadEnv({ LOG_PRETTY: 'true', LOG_FORMAT: 'json-iso', SYNC_CONCURRENCY: '0' })).toThrow(
        /SYNC_CONCURRENCY[\s\S]*LOG_PRETTY: true contradicts LOG_FORMAT=json-iso \(drop LOG_PRETTY, it is deprecated\)/,
      );
      expect(() => loadEnv({ LOG_PRETTY: 'maybe' })).toThrow(/LOG_PRETTY: must be true or false/);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => [w.name, (w as Error & { code?: string }).code, w.message])).toEqual(
      Array(5).fill(['DeprecationWarning', 'CS_LOG_PRETTY', 'LOG_PRETTY is deprecated: use LOG_FORMAT=pretty (or leave both unset for JSON lines)']),
    );
    expect(loadEnv({}).LOG_FORMAT).toBe('json');
  });
});

describe('tenants file', () => {
  it('substitutes ${VAR} and keeps the secret out of every printed form', () => {
    const file = parseTenants(JSON.stringify(good), { ACME_SECRET: 's3cr3t-value' });
    const t = file.tenants[0]!;
    expect(t.collections.clientSecret.reveal()).toBe('s3cr3t-value');
    expect(t.schedule.every).toBe(15 * 60_000);
    expect(t.schedule.reconcileEvery).toBe(86_400_000);
    for (const printed of [JSON.stringify(file), inspect(file, { depth: 10 }), String(t.collections.clientSecret)]) {
      expect(printed).not.toContain('s3cr3t-value');
    }
  });

  it('names the tenant and the field of every problem, in one message, without secret values', () => {
    const bad = {
      tenants: [
        { ...good.tenants[0], schedule: { every: '5 minutes' } },
        { id: 'Bad:Id', collections: { clientId: '', clientSecret: 'plain-secret-value' }, platform: { kind: 'ftp' } },
        { ...good.tenants[0], collections: { clientId: 'x', clientSecret: '${MISSING_VAR}', baseUrl: 'http://svc.example/v2' } },
      ],
    };
    let msg = '';
    try {
      parseTenants(JSON.stringify(bad), { ACME_SECRET: 'x' }, 'tenants.json');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      msg = (err as Error).message;
    }
    expect(msg).toContain('tenants.json is invalid');
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.schedule\.every: not a duration/);
    expect(msg).toMatch(/tenants\[1\] \(Bad:Id\)\.id/);
    expect(msg).toMatch(/tenants\[1\] \(Bad:Id\)\.collections\.clientId/);
    expect(msg).toMatch(/tenants\[1\] \(Bad:Id\)\.platform/);
    expect(msg).toMatch(/tenants\[2\] \(acme\)\.collections\.clientSecret: environment variable MISSING_VAR is not set/);
    expect(msg).toMatch(/tenants\[2\] \(acme\)\.collections\.baseUrl: must end with \/api-service\/v1/);
    expect(msg).toMatch(/tenants\[2\] \(acme\)\.id: duplicate tenant id/);
    expect(msg).not.toContain('plain-secret-value');
  });

  it('refuses a file that is not JSON with a clear message', () => {
    expect(() => parseTenants('{ "tenants": [', {}, 'tenants.json')).toThrow(/tenants\.json: not valid JSON/);
  });
});

describe('tenants file: schedules', () => {
  const withSchedule = (schedule: Record<string, string>[]) =>
    JSON.stringify({
      tenants: schedule.map((sch, i) => ({ ...good.tenants[0], id: `t${i}`, collections: { clientId: `c${i}`, clientSecret: 'x' }, schedule: sch })),
    });

  it('names the tenant and the field of a time zone or cron pattern BullMQ could not schedule', () => {
    const text = withSchedule([
      { cron: '0 */6 * * *', tz: 'Asia/Riyadh' },
      { cron: '0 */6 * * *', tz: 'Asia/Riyad' },
      { cron: '61 * * * *' },
      { cron: '0 0 31 2 *', tz: 'UTC' },
      { cron: 'every six hours' },
    ]);
    let message = '';
    try {
      parseTenants(text, {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/tenants\[1\] \(t1\)\.schedule\.tz: not a time zone/);
    expect(message).toMatch(/tenants\[2\] \(t2\)\.schedule\.cron: not a cron pattern BullMQ can schedule/);
    expect(message).toMatch(/tenants\[3\] \(t3\)\.schedule\.cron: not a cron pattern/);
    expect(message).toMatch(/tenants\[4\] \(t4\)\.schedule\.cron: not a cron pattern/);
    expect(message).not.toMatch(/\(t0\)/);
    expect(message).not.toMatch(/CronDate/);
  });

  it('takes good cron patterns with or without a time zone, and six fields with seconds', () => {
    const file = parseTenants(withSchedule([{ cron: '0 3 * * *', tz: 'Asia/Riyadh' }, { cron: '*/30 * * * * *' }, { every: '15m' }]), {});
    expect(file.tenants.map((t) => t.schedule.cron)).toEqual(['0 3 * * *', '*/30 * * * * *', undefined]);
  });
});

describe('durations', () => {
  it('parses the forms a tenants file uses', () => {
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('15')).toBeUndefined();
    expect(parseDuration('0s')).toBeUndefined();
  });
});

describe('PLATFORM_TOKEN_KEY', () => {
  it('is checked at load when set: a malformed key is named with the rule, never printed', () => {
    expect(() => loadEnv({ PLATFORM_TOKEN_KEY: 'too-short-secret' })).toThrow(/PLATFORM_TOKEN_KEY: must be 32 random bytes/);
    expect(() => loadEnv({ PLATFORM_TOKEN_KEY: 'too-short-secret' })).not.toThrow(/too-short-secret/);
    expect(loadEnv({ PLATFORM_TOKEN_KEY: 'ab'.repeat(32) }).PLATFORM_TOKEN_KEY).toBe('ab'.repeat(32));
  });
});

describe('clear messages for odd input', () => {
  it('a deeply nested tenants file is refused with its depth and line, not a stack overflow', () => {
    const deep = `{"tenants":[{"id":"acme","calls":${'['.repeat(20_000)}${']'.repeat(20_000)}}]}`;
    expect(() => parseTenants(deep, {})).toThrow(ConfigError);
    expect(() => parseTenants(deep, {})).toThrow(/nested deeper than 32 levels of objects and arrays \(line 1\)/);
    // Brackets inside strings do not count.
    const text = JSON.stringify({ ...good, tenants: [{ ...good.tenants[0], collections: { clientId: '[[[['.repeat(20), clientSecret: 'x' } }] });
    expect(parseTenants(text, {}).tenants[0]?.collections.clientId).toBe('[[[['.repeat(20));
  });

  it('an unset DASHBOARD_PASSWORD gets the hint, not a type error', async () => {
    const { dashboardEnvSchema } = await import('../../src/cli/actions/dashboard.js');
    const unset = dashboardEnvSchema.safeParse({});
    expect(unset.success).toBe(false);
    expect(unset.error?.issues.map((i) => i.message)).toEqual(['set DASHBOARD_PASSWORD (at least 12 characters): the dashboard never runs without a password']);
  });
});

describe('tenants file: identities', () => {
  const tenant = (id: string, collections: Record<string, string>, platform: Record<string, unknown> = { kind: 'memory' }) => ({ id, collections, platform });
  const xero = (org: string, clientId = 'app') => ({ kind: 'xero', clientId, clientSecret: 's', refreshToken: 'r', xeroTenantId: org });

  it('refuses two tenants with one client id and two secrets at one auth address, naming both and no secret', () => {
    const text = JSON.stringify({
      tenants: [
        tenant('a', { clientId: 'shared', clientSecret: 'right-secret' }),
        tenant('b', { clientId: 'shared', clientSecret: 'wrong-secret' }),
        tenant('c', { clientId: 'shared', clientSecret: 'right-secret' }),
        tenant('d', { clientId: 'shared', clientSecret: 'other-place', authUrl: 'https://auth.other.example' }),
      ],
    });
    let message = '';
    try {
      parseTenants(text, {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/tenants\[1\] \(b\)\.collections\.clientSecret: differs from tenants\[0\] \(a\)'s for the same clientId "shared"/);
    expect(message).not.toMatch(/\(c\)|\(d\)/);
    expect(message).not.toMatch(/right-secret|wrong-secret/);
  });

  it('refuses two tenants on one Xero organisation, and takes one organisation per tenant', () => {
    const text = (orgB: string) =>
      JSON.stringify({
        tenants: [tenant('a', { clientId: 'ca', clientSecret: 's' }, xero('org-1')), tenant('b', { clientId: 'cb', clientSecret: 's' }, xero(orgB, 'other-app'))],
      });
    expect(() => parseTenants(text('org-1'), {})).toThrow(/tenants\[1\] \(b\)\.platform\.xeroTenantId: the same Xero organisation as tenants\[0\] \(a\)/);
    expect(parseTenants(text('org-2'), {}).tenants).toHaveLength(2);
  });
});

describe('tenants file: quickbooks', () => {
  const qbo = (id: string, platform: Record<string, unknown> = {}) => ({
    id,
    collections: { clientId: `c-${id}`, clientSecret: 's' },
    platform: { kind: 'quickbooks', clientId: 'qbo-app', clientSecret: '${QBO_SECRET}', refreshToken: '${QBO_REFRESH}', realmId: '9130346988751236', environment: 'production', ...platform },
  });
  const env = { QBO_SECRET: 'app-secret-value', QBO_REFRESH: 'refresh-token-value', QBO_VERIFIER: 'verifier-value' };
  const message = (text: string, vars: NodeJS.ProcessEnv = env): string => {
    try {
      parseTenants(text, vars, 'tenants.json');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return '';
  };

  it('fills in the API address per environment and Intuit token address, and keeps every secret out of print', () => {
    const file = parseTenants(
      JSON.stringify({ tenants: [qbo('live', { webhookVerifierToken: '${QBO_VERIFIER}' }), qbo('test', { environment: 'sandbox', realmId: '4620816365172392420' })] }),
      env,
    );
    const [live, test] = file.tenants.map((t) => t.platform);
    if (live?.kind !== 'quickbooks' || test?.kind !== 'quickbooks') throw new Error('expected quickbooks tenants');
    const typed: QuickBooksTenant = live;
    expect(typed.apiUrl).toBe('https://quickbooks.api.intuit.com');
    expect(test.apiUrl).toBe('https://sandbox-quickbooks.api.intuit.com');
    expect(live.tokenUrl).toBe('https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer');
    expect(live.refreshToken?.reveal()).toBe('refresh-token-value');
    expect(live.webhookVerifierToken?.reveal()).toBe('verifier-value');
    expect(test.webhookVerifierToken).toBeUndefined();
    const printed = `${JSON.stringify(file)} ${inspect(file, { depth: 10 })}`;
    expect(printed).not.toMatch(/app-secret-value|refresh-token-value|verifier-value/);
  });

  it('takes apiUrl and tokenUrl when given (a double, a proxy), trailing slash dropped', () => {
    const file = parseTenants(JSON.stringify({ tenants: [qbo('a', { apiUrl: 'http://127.0.0.1:9/', tokenUrl: 'http://127.0.0.1:9/token' })] }), env);
    expect(file.tenants[0]?.platform).toMatchObject({ apiUrl: 'http://127.0.0.1:9', tokenUrl: 'http://127.0.0.1:9/token' });
  });

  it('names the tenant and field of every bad key, and no secret', () => {
    const text = JSON.stringify({
      tenants: [
        qbo('a', { environment: 'staging' }),
        qbo('b', { realmId: 'abc', realmID: '1' }),
        qbo('c', { refreshToken: '${NOT_SET}', apiUrl: 'ftp://x' }),
        qbo('d', { clientSecret: undefined, webhookVerifierToken: '' }),
      ],
    });
    const msg = message(text);
    expect(msg).toContain('tenants.json is invalid');
    expect(msg).toMatch(/tenants\[0\] \(a\)\.platform\.environment/);
    expect(msg).toMatch(/tenants\[1\] \(b\)\.platform\.realmId: the company id Intuit calls realmId: digits only/);
    expect(msg).toMatch(/tenants\[1\] \(b\)\.platform.*realmID/);
    expect(msg).toMatch(/tenants\[2\] \(c\)\.platform\.refreshToken: environment variable NOT_SET is not set/);
    expect(msg).toMatch(/tenants\[2\] \(c\)\.platform\.apiUrl/);
    expect(msg).toMatch(/tenants\[3\] \(d\)\.platform\.clientSecret/);
    expect(msg).toMatch(/tenants\[3\] \(d\)\.platform\.webhookVerifierToken: must not be empty/);
    expect(msg).not.toMatch(/app-secret-value|refresh-token-value/);
  });

  it('refuses two tenants on one company (realmId), and one app id with two secrets, naming both tenants and no secret', () => {
    const twoOnOne = JSON.stringify({ tenants: [qbo('a'), qbo('b')] });
    expect(message(twoOnOne)).toMatch(/tenants\[1\] \(b\)\.platform\.realmId: the same QuickBooks company \(realmId\) as tenants\[0\] \(a\)/);
    const twoSecrets = JSON.stringify({ tenants: [qbo('a'), qbo('b', { realmId: '2', clientSecret: 'other-secret-value' }), qbo('c', { realmId: '3' })] });
    const msg = message(twoSecrets);
    expect(msg).toMatch(/tenants\[1\] \(b\)\.platform\.clientSecret: differs from tenants\[0\] \(a\)'s for the same quickbooks clientId "qbo-app"/);
    expect(msg).not.toMatch(/\(c\)/);
    expect(msg).not.toMatch(/app-secret-value|other-secret-value/);
    // One realm id under Xero and QuickBooks is no clash; one app per company is fine.
    const ok = JSON.stringify({
      tenants: [qbo('a'), qbo('b', { realmId: '2' }), { ...qbo('x'), platform: { kind: 'xero', clientId: 'qbo-app', clientSecret: 'x', refreshToken: 'r', xeroTenantId: '9130346988751236' } }],
    });
    expect(parseTenants(ok, env).tenants).toHaveLength(3);
  });

  it('needs PLATFORM_TOKEN_KEY, named per tenant', () => {
    const file = parseTenants(JSON.stringify({ tenants: [qbo('a')] }), env);
    expect(() => checkTenantsNeeds(file, {})).toThrow(/tenants\[0\] \(a\)\.platform: a quickbooks tenant needs PLATFORM_TOKEN_KEY/);
    expect(() => checkTenantsNeeds(file, { PLATFORM_TOKEN_KEY: 'ab'.repeat(32) })).not.toThrow();
  });
});

describe('tenants file: one xero app, one secret', () => {
  it('refuses a xero client id with two secrets at one token address', () => {
    const xero = (id: string, org: string, clientSecret: string, tokenUrl?: string) => ({
      id,
      collections: { clientId: `c-${id}`, clientSecret: 's' },
      platform: { kind: 'xero', clientId: 'app', clientSecret, refreshToken: 'r', xeroTenantId: org, ...(tokenUrl ? { tokenUrl } : {}) },
    });
    const text = JSON.stringify({ tenants: [xero('a', 'o1', 'right'), xero('b', 'o2', 'wrong'), xero('c', 'o3', 'elsewhere', 'http://127.0.0.1:9/token')] });
    expect(() => parseTenants(text, {})).toThrow(/tenants\[1\] \(b\)\.platform\.clientSecret: differs from tenants\[0\] \(a\)'s for the same xero clientId "app"/);
    expect(() => parseTenants(text, {})).not.toThrow(/\(c\)/);
  });
});

describe('tenants file: what it may read and where it may send (issue 28 item 5)', () => {
  const tenant = (over: Record<string, unknown>) => ({
    id: 'acme',
    collections: { clientId: 'acme-client', clientSecret: 'x' },
    platform: { kind: 'file', path: './data/acme' },
    ...over,
  });
  const file = (...tenants: Record<string, unknown>[]) => JSON.stringify({ tenants });
  const problem = (text: string, env: NodeJS.ProcessEnv = {}): string => {
    try {
      parseTenants(text, env, 'tenants.json');
    } catch (err) {
      return (err as Error).message;
    }
    return '';
  };

  it("refuses ${VAR} naming the worker's own settings, naming tenant and field, and never reads them", () => {
    const env = { PLATFORM_TOKEN_KEY: 'k'.repeat(44), REDIS_PASSWORD: 'redis-pass', DASHBOARD_PASSWORD: 'dash-pass-123', TOKEN_FINGERPRINT_KEY: 'fp-key-0123456789', COLLECTIONS_CLIENT_SECRET: 'cs', REDIS_URL_FILE: '/run/secrets/r', ACME_SECRET: 'fine' };
    const msg = problem(
      file(
        tenant({ collections: { clientId: 'a', clientSecret: '${PLATFORM_TOKEN_KEY}' } }),
        tenant({ id: 'beta', collections: { clientId: 'b', clientSecret: 'pre-${REDIS_PASSWORD}' }, calls: { webhookSecret: '${DASHBOARD_PASSWORD}' } }),
        tenant({ id: 'gamma', collections: { clientId: 'g', clientSecret: '${TOKEN_FINGERPRINT_KEY}' }, platform: { kind: 'file', path: '${REDIS_URL_FILE}' } }),
        tenant({ id: 'delta', collections: { clientId: 'd', clientSecret: '${COLLECTIONS_CLIENT_SECRET}' } }),
        tenant({ id: 'epsilon', collections: { clientId: 'e', clientSecret: '${ACME_SECRET}' } }),
      ),
      env,
    );
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.collections\.clientSecret: \$\{PLATFORM_TOKEN_KEY\} names a setting of the worker itself/);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.collections\.clientSecret: \$\{REDIS_PASSWORD\} names a setting/);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.calls\.webhookSecret: \$\{DASHBOARD_PASSWORD\} names a setting/);
    expect(msg).toMatch(/tenants\[2\] \(gamma\)\.collections\.clientSecret: \$\{TOKEN_FINGERPRINT_KEY\} names a setting/);
    expect(msg).toMatch(/tenants\[2\] \(gamma\)\.platform\.path: \$\{REDIS_URL_FILE\} names a setting/);
    expect(msg).toMatch(/tenants\[3\] \(delta\)\.collections\.clientSecret: \$\{COLLECTIONS_CLIENT_SECRET\} names a setting/);
    expect(msg).not.toMatch(/epsilon/);
    for (const value of Object.values(env)) expect(msg).not.toContain(value);
  });

  it('refuses platform addresses that are not https://, except to this machine', () => {
    const xero = (apiUrl: string, tokenUrl: string) => ({ kind: 'xero', clientId: 'x', clientSecret: 's', refreshToken: 'r', xeroTenantId: 'org', apiUrl, tokenUrl });
    const qbo = (apiUrl: string, tokenUrl: string) => ({ kind: 'quickbooks', clientId: 'q', clientSecret: 's', refreshToken: 'r', realmId: '1', environment: 'sandbox', apiUrl, tokenUrl });
    const msg = problem(
      file(
        tenant({ platform: xero('http://api.example.com/api.xro/2.0', 'http://identity.example.com/token') }),
        tenant({ id: 'beta', collections: { clientId: 'b', clientSecret: 'x' }, platform: qbo('http://10.0.0.8', 'http://evil.example/token') }),
      ),
    );
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.platform\.apiUrl: must be https:\/\//);
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.platform\.tokenUrl: must be https:\/\//);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.platform\.apiUrl: must be https:\/\//);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.platform\.tokenUrl: must be https:\/\//);
    const local = parseTenants(
      file(
        tenant({ platform: xero('http://127.0.0.1:4011/api.xro/2.0', 'http://localhost:4011/token') }),
        tenant({ id: 'beta', collections: { clientId: 'b', clientSecret: 'x' }, platform: qbo('http://[::1]:4012', 'https://oauth.example.com/token') }),
      ),
      {},
    );
    expect(local.tenants).toHaveLength(2);
  });

  it("refuses a tenant's collections addresses (baseUrl, authUrl: they get its client secret) that are not https://, except to this machine", () => {
    const collections = (baseUrl: string, authUrl: string) => ({ clientId: 'a', clientSecret: '${ACME_SECRET}', baseUrl, authUrl });
    const msg = problem(
      file(
        tenant({ collections: collections('http://attacker.example/api-service/v1', 'http://attacker.example') }),
        tenant({ id: 'beta', collections: collections('http://10.0.0.5:4010/api-service/v1', 'http://simulator:4010') }),
      ),
      { ACME_SECRET: 'the-secret-value' },
    );
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.collections\.baseUrl: must be https:\/\/ \(http:\/\/ only to 127\.0\.0\.0\/8, ::1 or localhost\)/);
    expect(msg).toMatch(/tenants\[0\] \(acme\)\.collections\.authUrl: must be https:\/\//);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.collections\.baseUrl: must be https:\/\//);
    expect(msg).toMatch(/tenants\[1\] \(beta\)\.collections\.authUrl: must be https:\/\//);
    expect(msg).not.toContain('the-secret-value');
    const fine = parseTenants(
      file(
        tenant({ collections: collections('https://svc.example.com/api-service/v1', 'https://auth.example.com') }),
        tenant({ id: 'beta', collections: { ...collections('http://127.0.0.1:4010/api-service/v1', 'http://localhost:4010'), clientId: 'b' } }),
        tenant({ id: 'gamma', collections: { ...collections('http://[::1]:4010/api-service/v1', 'http://127.0.0.2:4010'), clientId: 'g' } }),
      ),
      { ACME_SECRET: 'the-secret-value' },
    );
    expect(fine.tenants.map((t) => t.collections.authUrl)).toEqual(['https://auth.example.com', 'http://localhost:4010', 'http://127.0.0.2:4010']);
  });

  it('names the line and column of a JSON error', () => {
    const text = '{\n  "tenants": [\n    { "id": "acme" "collections": {} }\n  ]\n}';
    const msg = problem(text);
    expect(msg).toMatch(/tenants\.json: not valid JSON \(.* at line 3, column 20\)/);
    expect(msg).not.toMatch(/position/);
    expect(problem('{ "tenants": [')).toMatch(/at line 1, column 15\)/);
  });
});

describe('tenants file: FILE_PLATFORM_ROOT (issue 36, finding 8c)', () => {
  const fileTenants = (...paths: string[]) =>
    parseTenants(JSON.stringify({ tenants: paths.map((path, i) => ({ id: `t${i}`, collections: { clientId: `c${i}`, clientSecret: 's' }, platform: { kind: 'file', path } })) }), {});
  const problem = (file: TenantsFile, root: string | undefined): string => {
    try {
      checkTenantsNeeds(file, root === undefined ? {} : { FILE_PLATFORM_ROOT: root });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return '';
  };

  it("refuses a file tenant's folder outside the root (after .. and symbolic links), naming tenant and field; unset, any folder as before", async () => {
    const base = await mkdtemp(join(tmpdir(), 'cs-file-root-'));
    try {
      const root = join(base, 'data');
      await mkdir(join(root, 'acme'), { recursive: true });
      await mkdir(join(base, 'elsewhere'));
      await symlink(join(base, 'elsewhere'), join(root, 'escape'));
      await symlink('/etc', join(root, 'etc-link'));
      const inside = fileTenants(join(root, 'acme'), join(root, 'not-made-yet'), join(root, 'acme', '..', 'acme'), `${root}/`);
      expect(problem(inside, root)).toBe('');
      const outside = fileTenants('/etc', join(root, '..', 'elsewhere'), join(root, 'escape'), join(root, 'etc-link', 'ssh'), join(root, 'acme'), join(`${root}-sibling`, 'x'));
      const msg = problem(outside, root);
      expect(msg).toMatch(/^the tenants file does not fit the settings:\n {2}- tenants\[0\] \(t0\)\.platform\.path: \/etc is outside FILE_PLATFORM_ROOT/);
      for (const i of [0, 1, 2, 3, 5]) expect(msg).toMatch(new RegExp(`tenants\\[${i}\\] \\(t${i}\\)\\.platform\\.path: .* is outside FILE_PLATFORM_ROOT`));
      expect(msg).not.toMatch(/tenants\[4\]/);
      // A relative folder is taken from the working directory, as the adapter opens it.
      expect(problem(fileTenants('./data/acme'), root)).toMatch(/tenants\[0\] \(t0\)\.platform\.path: \.\/data\/acme is outside/);
      // Unset: every folder, as before.
      expect(problem(outside, undefined)).toBe('');
      // A root that does not exist is named.
      expect(problem(inside, join(base, 'no-such-root'))).toMatch(/FILE_PLATFORM_ROOT=.*no-such-root does not exist/);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
