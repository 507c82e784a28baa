import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli.js';
import { dashboardEnvSchema } from '../../src/cli/actions/dashboard.js';
import { envSchema, loadEnv } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';

const read = (path: string): Promise<string> => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

/** KEY=value lines of a dotenv file, in order (comments and blank lines skipped). */
function dotenv(text: string): [string, string][] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'))
    .map((l) => {
      const i = l.indexOf('=');
      if (i <= 0) throw new Error(`not KEY=value: ${l}`);
      return [l.slice(0, i), l.slice(i + 1)];
    });
}

/**
 * Values of .env.example that differ from the defaults because compose runs the worker in a container, where
 * 127.0.0.1 is the container itself: the service is the simulator's compose service (simulator profile).
 */
const CONTAINER_VALUES: Record<string, string> = {
  COLLECTIONS_BASE_URL: 'http://simulator:4010/api-service/v1',
  COLLECTIONS_AUTH_URL: 'http://simulator:4010',
};

describe('.env.example', () => {
  it('holds values that work inside a container, each saying what to use outside one', async () => {
    const text = await read('.env.example');
    const pairs = dotenv(text);
    const lines = text.split('\n');
    for (const [key, value] of pairs) {
      // Loopback in a URL reaches the container itself, not the service or Redis (compose sets REDIS_URL).
      if (key !== 'REDIS_URL' && /^https?:\/\//.test(value)) expect(value, key).not.toMatch(/\/\/(127\.|localhost|\[::1\])/);
    }
    for (const key of Object.keys(CONTAINER_VALUES)) {
      const at = lines.findIndex((l) => l.startsWith(`${key}=`));
      // The comment above names the default for a run outside a container.
      const comment = lines.slice(Math.max(0, at - 3), at).join(' ');
      expect(comment, key).toContain(String(envSchema.shape[key as keyof typeof envSchema.shape].parse(undefined)));
    }
    // The simulator compose runs answers at those addresses.
    const compose = composeSchema.parse(parseYaml(await read('docker/compose.yaml'), { merge: true }));
    const sim = compose.services['simulator']?.command ?? [];
    expect(new URL(CONTAINER_VALUES['COLLECTIONS_AUTH_URL'] ?? '').port).toBe(sim[sim.indexOf('--port') + 1]);
    expect(compose.services['simulator']).toBeDefined();
  });

  it('names only commands that exist', async () => {
    const text = await read('.env.example');
    const paths = new Set<string>();
    const walk = (cmd: Command, prefix: string[]): void => {
      for (const sub of cmd.commands) {
        const path = [...prefix, sub.name()];
        paths.add(path.join(' '));
        walk(sub, path);
      }
    };
    walk(buildProgram(), []);
    const named = [...text.matchAll(/`(?:collections-sync )?([a-z][a-z-]*(?: [a-z][a-z-]*)?)`/g)].map((m) => m[1] ?? '');
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) expect([...paths], name).toContain(name);
  });

  it("lists every key of the environment schema, in the schema's order, each with its default and a purpose", async () => {
    const text = await read('.env.example');
    const pairs = dotenv(text);
    const schemaKeys = Object.keys(envSchema.shape);
    const appKeys = pairs.map(([k]) => k).filter((k) => schemaKeys.includes(k));
    expect(appKeys).toEqual(schemaKeys);
    // Each value shown is the default, but for the ones a container needs otherwise (CONTAINER_VALUES).
    const loaded = loadEnv(Object.fromEntries(pairs));
    const defaults = loadEnv({});
    for (const key of schemaKeys) {
      const k = key as keyof typeof defaults;
      if (key in CONTAINER_VALUES) expect(loaded[k], key).toBe(CONTAINER_VALUES[key]);
      else expect(loaded[k], key).toEqual(defaults[k]);
    }
    // Each key has a comment line right above it.
    const lines = text.split('\n');
    for (const key of schemaKeys) {
      const at = lines.findIndex((l) => l.startsWith(`${key}=`));
      expect(lines[at - 1]?.startsWith('# '), key).toBe(true);
    }
    // The rest are the dashboard's, which parse with its schema once a password is set.
    const rest = Object.fromEntries(pairs.filter(([k]) => !schemaKeys.includes(k)));
    expect(Object.keys(rest).sort()).toEqual(Object.keys(dashboardEnvSchema.shape).sort());
    expect(dashboardEnvSchema.safeParse({ ...rest, DASHBOARD_PASSWORD: '' }).success).toBe(false);
    expect(dashboardEnvSchema.parse({ ...rest, DASHBOARD_PASSWORD: 'a-long-enough-one' }).DASHBOARD_PORT).toBe(3000);
  });
});

const serviceSchema = z.looseObject({
  image: z.string().optional(),
  ports: z.array(z.string()).optional(),
  command: z.array(z.string()).optional(),
  profiles: z.array(z.string()).optional(),
  volumes: z.array(z.string()).optional(),
  environment: z.record(z.string(), z.string()).optional(),
  stop_grace_period: z.string().optional(),
  init: z.boolean().optional(),
  depends_on: z.record(z.string(), z.looseObject({ condition: z.string(), required: z.boolean().optional() })).optional(),
  healthcheck: z.looseObject({ test: z.array(z.string()).optional(), start_interval: z.string().optional(), disable: z.boolean().optional() }).optional(),
});
const composeSchema = z.looseObject({ services: z.record(z.string(), serviceSchema), volumes: z.record(z.string(), z.unknown()) });

/**
 * Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR-default}` from `vars` (what compose reads from
 * the shell and `--env-file`), then the file parsed.
 */
function composeWith(text: string, vars: Record<string, string>): z.infer<typeof composeSchema> {
  const interpolated = text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}/g, (_m, name: string, op: string | undefined, def: string | undefined) => {
    const v = vars[name];
    if (op === ':-') return v === undefined || v === '' ? (def ?? '') : v;
    if (op === '-') return v ?? def ?? '';
    return v ?? '';
  });
  return composeSchema.parse(parseYaml(interpolated, { merge: true }));
}

/** A short-syntax port mapping `[ip:]host:container[/proto]`: its container port. */
const containerPort = (mapping: string): string => (mapping.split('/')[0] ?? '').split(':').at(-1) ?? '';

describe('docker/compose.yaml', () => {
  it('runs Redis with AOF and noeviction on a volume, the worker by default, the simulator and dashboard by profile', async () => {
    const compose = composeSchema.parse(parseYaml(await read('docker/compose.yaml'), { merge: true }));
    const { redis, worker, simulator, sample, dashboard } = compose.services;
    expect(redis?.command?.join(' ')).toMatch(/--appendonly yes --appendfsync everysec --maxmemory-policy noeviction/);
    expect(redis?.volumes).toContain('redis-data:/data');
    expect(worker?.profiles).toBeUndefined();
    expect(worker?.command).toEqual(['worker', '--ops-host', '0.0.0.0']);
    expect(worker?.environment?.['TENANTS_FILE']).toBe('/config/tenants.json');
    // The grace period covers the worker's own shutdown deadline.
    const graceS = Number(/^(\d+)s$/.exec(worker?.stop_grace_period ?? '')?.[1]);
    expect(graceS * 1000).toBeGreaterThan(loadEnv({}).SHUTDOWN_TIMEOUT_MS);
    expect(simulator?.profiles).toEqual(['simulator']);
    expect(simulator?.command?.slice(0, 3)).toEqual(['simulator', '--host', '0.0.0.0']);
    expect(sample?.command).toEqual(['demo', '--write-sample', '/sample']);
    expect(dashboard?.profiles).toEqual(['dashboard']);
    expect(dashboard?.command?.[0]).toBe('dashboard');
    // Every app service runs the one image, with an init as PID 1 (signals forwarded, children reaped).
    for (const s of [worker, simulator, sample, dashboard]) expect(s?.image).toBe(worker?.image);
    for (const s of [worker, simulator, sample, dashboard]) expect(s?.init).toBe(true);
    // Redis is a fixed release, not a floating tag.
    expect(redis?.image).toMatch(/^redis:7\.\d+\.\d+(-bookworm)?(@sha256:[0-9a-f]{64})?$/);
  });

  it('starts the worker of the simulator profile after the sample is written and the simulator is healthy', async () => {
    const compose = composeSchema.parse(parseYaml(await read('docker/compose.yaml'), { merge: true }));
    const { worker, simulator, sample } = compose.services;
    expect(worker?.depends_on).toEqual({
      redis: { condition: 'service_healthy' },
      // Not required: without the profile these services are disabled and the worker starts alone.
      sample: { condition: 'service_completed_successfully', required: false },
      simulator: { condition: 'service_healthy', required: false },
    });
    expect(sample?.profiles).toEqual(['simulator']);
    expect(sample?.healthcheck?.disable).toBe(true);
    expect(simulator?.healthcheck?.test?.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    expect(simulator?.healthcheck?.test?.[3]).toContain(`:${simulator?.command?.[simulator.command.indexOf('--port') + 1] ?? '?'}/`);
  });

  it("publishes the worker's public server on WEBHOOK_PORT when it is set, and every replica can start", async () => {
    const text = await read('docker/compose.yaml');
    const published = composeWith(text, { WEBHOOK_PORT: '9443' }).services['worker']?.ports ?? [];
    expect(published.map(containerPort)).toContain('9443');
    const webhook = published.find((p) => containerPort(p) === '9443') ?? '';
    // Behind TLS on this host: loopback; a range of host ports, so `--scale worker=3` starts three.
    expect(webhook).toMatch(/^127\.0\.0\.1:\d+-\d+:9443$/);
    // The ops port stays published; unset, the file is still valid (nothing answers on the webhook mapping).
    expect(published.map(containerPort)).toContain(String(loadEnv({}).OPS_PORT));
    for (const p of composeWith(text, {}).services['worker']?.ports ?? []) expect(p).toMatch(/^127\.0\.0\.1:\d+-\d+:\d+$/);
    // The usage line passes .env to compose itself, so the port it publishes is the port the worker reads.
    expect(text).toMatch(/docker compose --env-file \.env -f docker\/compose\.yaml/);
  });

  it("checks the worker's health on readiness (/readyz: Redis reachable, workers running), not /healthz", async () => {
    const { worker } = composeWith(await read('docker/compose.yaml'), {}).services;
    const test = worker?.healthcheck?.test ?? [];
    expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    expect(test[3]).toMatch(/process\.env\.OPS_PORT\|\|9464\)\+'\/readyz'/);
    expect(test[3]).not.toContain('/healthz');
    expect(worker?.healthcheck?.start_interval).toBeDefined();
  });

  it("ships a tenants example that works with the simulator profile's client and sample folder", async () => {
    const compose = composeSchema.parse(parseYaml(await read('docker/compose.yaml'), { merge: true }));
    const clients = compose.services['simulator']?.command?.at(-1) ?? '';
    const tenants = parseTenants(await read('docker/tenants/simulator.example.json'), {});
    const t = tenants.tenants[0];
    expect(`${t?.collections.clientId}:${t?.collections.clientSecret.reveal()}`).toBe(clients);
    // The simulator's address comes from .env (COLLECTIONS_BASE_URL, COLLECTIONS_AUTH_URL): a tenant's own must be
    // https:// or loopback, and compose's network is neither.
    expect(t?.collections.baseUrl).toBeUndefined();
    expect(t?.collections.authUrl).toBeUndefined();
    const example = Object.fromEntries(dotenv(await read('.env.example')));
    expect([example['COLLECTIONS_BASE_URL'], example['COLLECTIONS_AUTH_URL']]).toEqual(['http://simulator:4010/api-service/v1', 'http://simulator:4010']);
    expect(t?.platform).toEqual({ kind: 'file', path: '/sample' });
    expect(compose.services['worker']?.volumes).toContain('sample:/sample:ro');
  });
});
