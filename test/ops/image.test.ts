/**
 * The image without a Docker engine: docker/Dockerfile performed in a temporary folder (test/ops/image-build.ts:
 * production dependencies only with the Dockerfile's own `npm ci` flags, `dist/` built by the project's tsc from
 * what the build stage copies, `bin/`, package.json), then the image's command run from that folder as the image's
 * non-root user: the compose `sample` step, the worker against a Redis and the simulator, one sync and `status`.
 * A second build of the same Dockerfile, with a runtime dependency moved to devDependencies, must fail to start.
 */
import { spawn } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { freePort, testPrefix, useTestRedis } from '../helpers/redis.js';
import { parseDockerfile, type Dockerfile } from './dockerfile.js';
import { parseExposition, sumOf } from './exposition.js';
import { performDockerfile, UnmirroredStep, type ImageSpec, type Owner } from './image-build.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** The node user of the official Node.js images. */
const NODE_USER: Owner = { uid: 1000, gid: 1000 };
const AS_ROOT = process.getuid?.() === 0;
const CLIENT = { clientId: 'demo', clientSecret: 'demo-secret' };
/** The runtime dependency the broken build moves to devDependencies (imported by the CLI at start). */
const MOVED = 'prom-client';

interface Manifest {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Packages imported by name in the compiled code (dist/**.js) that the folder's node_modules does not hold. */
async function missingImports(app: string): Promise<string[]> {
  const files = (await readdir(join(app, 'dist'), { recursive: true })).filter((f) => f.endsWith('.js'));
  const wanted = new Set<string>();
  for (const f of files) {
    const code = await readFile(join(app, 'dist', f), 'utf8');
    // tsc writes each import and re-export on a line of its own; dynamic imports anywhere.
    const statics = code.matchAll(/^\s*(?:import|export)\s+(?:[^'";]*?\s*from\s*)?['"]([^'"]+)['"]/gm);
    const dynamics = code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g);
    for (const m of [...statics, ...dynamics]) {
      const spec = m[1] ?? '';
      if (spec.startsWith('.') || spec.startsWith('/')) continue;
      if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
      wanted.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec));
    }
  }
  const missing: string[] = [];
  for (const name of [...wanted].sort()) {
    if (!(await stat(join(app, 'node_modules', name, 'package.json')).catch(() => undefined))) missing.push(name);
  }
  return missing;
}

describe('the image, performed from docker/Dockerfile in a temporary folder', () => {
  let dir: string;
  let dockerfileText: string;
  let dockerfile: Dockerfile;
  let image: ImageSpec;
  let broken: ImageSpec;
  let manifest: Manifest;
  const redis = useTestRedis();
  let sim: Simulator;
  let env: Record<string, string>;

  /** A path of the image (`/config/tenants.json`) in its folder. */
  const at = (spec: ImageSpec, path: string): string => join(spec.root, path);
  /** The image's ENTRYPOINT with these arguments, from its WORKDIR, as its user (uid 1000 when the test is root). */
  const start = (spec: ImageSpec, args: string[], extra: Record<string, string> = {}) => {
    const [node, ...entry] = spec.entrypoint;
    expect(node).toBe('node');
    return spawn(process.execPath, [...entry, ...args], {
      cwd: spec.workdir,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...spec.env, ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(AS_ROOT ? NODE_USER : {}),
    });
  };
  const runIn = (spec: ImageSpec, args: string[], extra: Record<string, string> = {}): Promise<Ran> =>
    new Promise((resolve, reject) => {
      const child = start(spec, args, extra);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, stdout, stderr }));
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-image-'));
    // mkdtemp makes the folder private to its owner; the image's user must reach what the image holds.
    await chmod(dir, 0o755);
    dockerfileText = await readFile(join(REPO, 'docker/Dockerfile'), 'utf8');
    dockerfile = parseDockerfile(dockerfileText);
    manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as Manifest;

    // The broken build's context: the same files, with one runtime dependency declared for development only.
    const context = join(dir, 'broken-context');
    await mkdir(context);
    const moved: Manifest = { ...manifest, dependencies: { ...manifest.dependencies }, devDependencies: { ...manifest.devDependencies, [MOVED]: manifest.dependencies[MOVED] ?? '' } };
    delete moved.dependencies[MOVED];
    await writeFile(join(context, 'package.json'), JSON.stringify(moved, null, 2));
    await cp(join(REPO, 'package-lock.json'), join(context, 'package-lock.json'));
    await cp(join(REPO, 'bin'), join(context, 'bin'), { recursive: true });

    const good = performDockerfile({ dockerfile, context: REPO, into: join(dir, 'image'), owner: NODE_USER, repository: REPO });
    const bad = performDockerfile({ dockerfile, context, into: join(dir, 'broken'), owner: NODE_USER, repository: REPO, reuse: { build: good.stage('build') } });
    [image, broken, sim] = await Promise.all([good.image, bad.image, startSimulator({ clients: [CLIENT] })]);
    env = {
      REDIS_URL: redis.url,
      KEY_PREFIX: testPrefix('image'),
      COLLECTIONS_BASE_URL: sim.baseUrl,
      COLLECTIONS_AUTH_URL: sim.authUrl,
      TENANTS_FILE: at(image, image.env['TENANTS_FILE'] ?? '/config/tenants.json'),
      OPS_PORT: String(await freePort()),
    };
  }, 600_000);

  afterAll(async () => {
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds the compiled code, bin/ and production dependencies only, on a pinned base image', async () => {
    const base = dockerfile.args['NODE_IMAGE'] ?? '';
    expect(base).toMatch(/^node:22\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
    for (const stage of dockerfile.stages) expect(stage.base, stage.name).toBe(base);
    expect(image.user).toBe('node');
    expect(image.entrypoint).toEqual(['node', 'bin/collections-sync.js']);
    expect(image.cmd[0]).toBe('worker');
    expect((await readdir(image.workdir)).sort()).toEqual(['bin', 'dist', 'node_modules', 'package.json']);
    expect((await readdir(join(image.workdir, 'dist'))).sort()).toEqual(['jobs', 'src']);
    const modules = await readdir(join(image.workdir, 'node_modules'));
    for (const name of Object.keys(manifest.dependencies)) expect(modules, name).toContain(name.split('/')[0]);
    // Development tools and optional add-ons stay out (--omit=dev --omit=optional).
    for (const name of ['typescript', 'vitest', 'tsx', 'eslint', 'pino-pretty', 'testcontainers', 'msgpackr-extract']) expect(modules, name).not.toContain(name);
    // Every package the compiled code imports by name is there; in the broken build, the moved one is not.
    expect(await missingImports(image.workdir)).toEqual([]);
    expect(await missingImports(broken.workdir)).toEqual([MOVED]);
  });

  it(`runs the worker as the image's user: the sample written, one sync of a file tenant, status, metrics, a clean stop`, async () => {
    // compose's `sample` service: the image writes the bundled sample into /sample (a folder its user owns).
    const sample = await runIn(image, ['demo', '--write-sample', at(image, '/sample'), '--contacts', '40']);
    expect(sample.code, sample.stderr).toBe(0);
    expect(sample.stdout).toMatch(/^wrote 40 contacts, \d+ invoices, \d+ payments and \d+ bad lines to /);
    await writeFile(env['TENANTS_FILE'] ?? '', JSON.stringify({ tenants: [{ id: 'demo', collections: CLIENT, platform: { kind: 'file', path: at(image, '/sample') } }] }));

    // LOG_FORMAT=pretty: the image has no pino-pretty, so JSON lines, and the first one says why.
    const worker = start(image, image.cmd, { LOG_FORMAT: 'pretty' });
    const lines: Record<string, unknown>[] = [];
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    const seen = new Promise<void>((resolve, reject) => {
      worker.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const parts = stderr.split('\n');
        stderr = parts.pop() ?? '';
        for (const part of parts) {
          try {
            lines.push(JSON.parse(part) as Record<string, unknown>);
          } catch {
            lines.push({ unparsed: part });
          }
        }
        if (lines.some((l) => l['msg'] === 'worker started')) resolve();
      });
      void exited.then((code) => reject(new Error(`the worker exited ${String(code)} before it started: ${JSON.stringify(lines)}${stderr}`)));
    });
    try {
      await seen;
      expect(lines[0]?.['msg']).toMatch(/^LOG_FORMAT=pretty needs the pino-pretty package.*writing JSON lines instead$/);
      if (AS_ROOT) {
        // The test runs as root: the worker does not. Its real uid, from the kernel.
        const status = await readFile(`/proc/${String(worker.pid)}/status`, 'utf8');
        expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(NODE_USER.uid));
      } else {
        expect(process.getuid?.()).not.toBe(0);
      }

      // The bundled sample has bad lines on purpose: the run is partial (exit 3). The worker's schedules have run
      // the new tenant already (its first reconcile pass starts at once), so this run finds the good ones in place.
      const sync = await runIn(image, ['sync', '--tenant', 'demo', '--full', '--wait', '--json']);
      expect(sync.code, sync.stderr).toBe(3);
      const run = JSON.parse(sync.stdout) as { runId: string; outcome: string; counts: Record<string, number> };
      expect(run.outcome).toBe('partial');
      expect(run.counts['contacts.badRecords']).toBe(2);
      // The 40 good contacts are in the service; the 2 bad lines are extra lines of the file.
      expect(sim.data(CLIENT.clientId).contacts).toHaveLength(40);

      const status = await runIn(image, ['status', '--tenant', 'demo', '--json']);
      expect(status.code, status.stderr).toBe(0);
      type Status = { tenants: { tenant: string; lastRuns: { runId: string; outcome?: string; counts: Record<string, number> }[]; auth: { hasToken: boolean } }[] };
      const tenant = (JSON.parse(status.stdout) as Status).tenants[0];
      expect(tenant).toMatchObject({ tenant: 'demo', auth: { hasToken: true } });
      // A scheduled pass may have started since (it is then first, without an outcome): the run waited on is told.
      expect(tenant?.lastRuns.find((r) => r.runId === run.runId)?.outcome).toBe('partial');
      expect(status.stdout).not.toContain(CLIENT.clientSecret);

      const scraped = await fetch(`http://127.0.0.1:${env['OPS_PORT'] ?? ''}/metrics`);
      const f = parseExposition(await scraped.text());
      expect(sumOf(f, 'collections_sync_build_info', { version: manifest.version, node: process.version })).toBe(1);
      expect(f.has('process_cpu_user_seconds_total')).toBe(true);
      expect(f.has('nodejs_eventloop_lag_seconds')).toBe(true);
      // Every run's bad records, as status tells them, in snake_case on /metrics.
      const runs = tenant?.lastRuns ?? [];
      expect(runs.length).toBeLessThan(5);
      const bad = runs.reduce((n, r) => n + (r.counts['contacts.badRecords'] ?? 0), 0);
      expect(bad).toBeGreaterThanOrEqual(2);
      expect(sumOf(f, 'collections_sync_records_total', { tenant: 'demo', entity: 'contacts', outcome: 'bad_records' })).toBe(bad);
    } finally {
      worker.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(lines.at(-1)?.['msg']).toBe('stopped');
  });

  it('refuses a Dockerfile with a step it does not mirror, before performing anything', async () => {
    const drifted: [string, string, string][] = [
      ['RUN npm run build', 'RUN npm run build && apt-get install -y tini', 'RUN apt-get install -y tini'],
      ['COPY bin ./bin', 'COPY --chown=node:node bin ./bin', 'COPY --chown=node:node bin ./bin'],
      ['USER node', 'VOLUME /sample\nUSER node', 'VOLUME'],
    ];
    for (const [from, to, named] of drifted) {
      expect(dockerfileText).toContain(from);
      const into = join(dir, 'never');
      const attempt = () => performDockerfile({ dockerfile: parseDockerfile(dockerfileText.replace(from, to)), context: REPO, into, owner: NODE_USER, repository: REPO });
      expect(attempt).toThrow(UnmirroredStep);
      expect(attempt).toThrow(`${named} is not mirrored by test/ops/image-build.ts`);
      expect(await stat(into).catch(() => undefined)).toBeUndefined();
    }
  });

  it('does not start when a package the code imports is only a devDependency', async () => {
    const r = await runIn(broken, broken.cmd);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`Cannot find package '${MOVED}'`);
  });
});
