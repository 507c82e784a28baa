/**
 * Run-webhook settings are checked at load, with every other setting: a secret not in the `whsec_` form, a url
 * without a secret, a plain-http address to another host. The messages name the setting, never the secret.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadEnv } from '../../src/config/env.js';
import { notifyTargetOf, parseTenants } from '../../src/config/tenants.js';
import { newSecret } from './receiver.js';

const errorOf = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

const tenants = (notify: unknown): string =>
  JSON.stringify({ tenants: [{ id: 'acme', collections: { clientId: 'c', clientSecret: 's' }, platform: { kind: 'memory' }, notify }] });

describe('run-webhook settings', () => {
  it('refuses a RUN_WEBHOOK_SECRET that is not whsec_ and base64, naming it and never echoing it', () => {
    for (const bad of ['not-a-webhook-secret-value', 'whsec_short', `whsec_${'!'.repeat(44)}`, `whsec_${Buffer.alloc(8).toString('base64')}`]) {
      const msg = errorOf(() => loadEnv({ RUN_WEBHOOK_URL: 'https://hooks.example.com/runs', RUN_WEBHOOK_SECRET: bad }));
      expect(msg).toMatch(/RUN_WEBHOOK_SECRET: must be whsec_ and the base64 of 24 to 64 random bytes/);
      expect(msg).not.toContain(bad);
    }
  });

  it('refuses RUN_WEBHOOK_URL without RUN_WEBHOOK_SECRET, naming both', () => {
    const msg = errorOf(() => loadEnv({ RUN_WEBHOOK_URL: 'https://hooks.example.com/runs' }));
    expect(msg).toMatch(/RUN_WEBHOOK_URL: is set without RUN_WEBHOOK_SECRET/);
  });

  it('refuses plain http to another host, and takes https or loopback with a good secret', () => {
    const secret = newSecret();
    expect(errorOf(() => loadEnv({ RUN_WEBHOOK_URL: 'http://hooks.example.com/runs', RUN_WEBHOOK_SECRET: secret }))).toMatch(/RUN_WEBHOOK_URL: must be https:\/\//);
    expect(loadEnv({ RUN_WEBHOOK_URL: 'https://hooks.example.com/runs', RUN_WEBHOOK_SECRET: secret }).RUN_WEBHOOK_SECRET).toBe(secret);
    expect(loadEnv({ RUN_WEBHOOK_URL: 'http://127.0.0.1:8080/runs', RUN_WEBHOOK_SECRET: secret }).RUN_WEBHOOK_URL).toBe('http://127.0.0.1:8080/runs');
  });

  it("checks a tenant's notify the same way: a bad secret or address is named with the tenant and field", () => {
    const bad = 'whsec_not base64 at all';
    const msg = errorOf(() => parseTenants(tenants({ url: 'http://hooks.example.com/x', secret: bad }), {}));
    expect(msg).toContain('tenants[0] (acme).notify.secret: must be whsec_');
    expect(msg).toContain('tenants[0] (acme).notify.url: must be https://');
    expect(msg).not.toContain(bad);
    expect(errorOf(() => parseTenants(tenants({ url: 'https://hooks.example.com/x' }), {}))).toContain('tenants[0] (acme).notify.secret');
  });

  it("a tenant's own notify wins over the fleet's; without either there is no receiver", () => {
    const own = newSecret();
    const fleet = newSecret();
    const file = parseTenants(tenants({ url: 'https://own.example.com/x', secret: '${ACME_HOOK_SECRET}' }), { ACME_HOOK_SECRET: own });
    const env = loadEnv({ RUN_WEBHOOK_URL: 'https://fleet.example.com/runs', RUN_WEBHOOK_SECRET: fleet });
    expect(notifyTargetOf(env, file.tenants[0])?.url).toBe('https://own.example.com/x');
    expect(notifyTargetOf(env, file.tenants[0])?.secret.reveal()).toBe(own);
    // a tenant gone (its tenant.deleted) has the fleet's receiver only
    expect(notifyTargetOf(env, undefined)).toMatchObject({ url: 'https://fleet.example.com/runs', guarded: false });
    expect(notifyTargetOf(loadEnv({}), undefined)).toBeUndefined();
    const plain = parseTenants(tenants(undefined), {}).tenants[0]!;
    expect(notifyTargetOf(env, plain)).toMatchObject({ url: 'https://fleet.example.com/runs' });
    expect(notifyTargetOf(loadEnv({}), plain)).toBeUndefined();
  });

  it('refuses ${RUN_WEBHOOK_SECRET} in a tenants file (a setting of the worker itself)', () => {
    const msg = errorOf(() => parseTenants(tenants({ url: 'https://own.example.com/x', secret: '${RUN_WEBHOOK_SECRET}' }), { RUN_WEBHOOK_SECRET: newSecret() }));
    expect(msg).toContain('names a setting of the worker itself');
  });
});
