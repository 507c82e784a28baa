/** The odoo tenant's config as the tenants file reads it: the key a Secret, the address's rule, the identity. */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseTenants } from '../../../src/config/tenants.js';
import { Secret } from '../../../src/secret.js';
import { publicSettings } from '../../../src/state/tenant-store.js';

const tenant = (id: string, platform: Record<string, unknown>): Record<string, unknown> => ({ id, collections: { clientId: `c-${id}`, clientSecret: `s-${id}-secret` }, platform });
const base = { kind: 'odoo', url: 'https://acme.odoo.com', database: 'acme', username: 'collections-bot', apiKey: '${ODOO_KEY}' };

describe('odoo tenants file entry', () => {
  it('reads the key as a Secret that never prints; protocol auto by default', () => {
    const file = parseTenants(JSON.stringify({ tenants: [tenant('acme', base)] }), { ODOO_KEY: 'k3y-never-printed-0123456789' });
    const p = file.tenants[0]!.platform as Record<string, unknown>;
    expect(p['apiKey']).toBeInstanceOf(Secret);
    expect(p['protocol']).toBe('auto');
    // What the control API shows of a tenant (and seals in Redis for an API tenant): the key's path, never its value.
    const view = publicSettings(file.tenants[0]!);
    expect(view.secrets).toContain('platform.apiKey');
    expect([JSON.stringify(file), inspect(file, { depth: 9 }), String(p['apiKey']), JSON.stringify(view)].join('\n')).not.toContain('k3y-never-printed');
  });

  it('refuses plain http to another host, an unknown protocol, a companyId that is not a positive integer, unknown fields', () => {
    const bad = (over: Record<string, unknown>): string => {
      try {
        parseTenants(JSON.stringify({ tenants: [tenant('acme', { ...base, ...over })] }), { ODOO_KEY: 'k' });
        return 'accepted';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(bad({ url: 'http://acme.example.com' })).toContain('must be https://');
    expect(bad({ protocol: 'xmlrpc' })).toContain('protocol');
    expect(bad({ companyId: 0 })).toContain('companyId');
    expect(bad({ password: 'x' })).toContain('password');
    expect(bad({ url: 'http://127.0.0.1:8069' })).toBe('accepted');
  });

  it('one tenant per database and company: a second tenant of the same company is refused, another company is not', () => {
    const two = (a: Record<string, unknown>, b: Record<string, unknown>): string => {
      try {
        parseTenants(JSON.stringify({ tenants: [tenant('one', { ...base, ...a }), tenant('two', { ...base, ...b })] }), { ODOO_KEY: 'k' });
        return 'accepted';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(two({ companyId: 1 }, { companyId: 1 })).toContain('the same Odoo database and company');
    expect(two({ companyId: 1 }, { companyId: 2 })).toBe('accepted');
    expect(two({ companyId: 1 }, { companyId: 1, database: 'acme-2' })).toBe('accepted');
  });
});
