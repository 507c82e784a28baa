/**
 * The command line as a new user first meets it: `--help` and usage errors, run as a child process. No Redis:
 * none of these may need one.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import { ENV_KEYS } from '../../src/cli/help.js';
import { envSchema } from '../../src/config/env.js';
import { startTestRedis, testPrefix } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/** A module-resolution hook that writes every module URL the process loads to a file (one a line). */
const RECORDER = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(file, r.url + '\\n');
  return r;
}
`;

function cli(args: string[], options: { env?: Record<string, string>; preload?: string[] } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const preload = (options.preload ?? []).flatMap((p) => ['--import', p]);
    const child = spawn(process.execPath, ['--import', 'tsx', ...preload, CLI, ...args], {
      env: { ...process.env, LOG_LEVEL: 'warn', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the command line at start', () => {
  let dir: string;
  let n = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-cli-start-'));
    await writeFile(join(dir, 'recorder.mjs'), RECORDER);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * The command run with every module it loads written down: ES modules as they resolve, and at exit the
   * CommonJS ones (require's cache: ioredis, and what an ES module imports from a CommonJS package).
   */
  async function loadedBy(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; urls: string[] }> {
    n += 1;
    const loaded = join(dir, `loaded-${n}.txt`);
    await writeFile(loaded, '');
    const register = join(dir, `register-${n}.mjs`);
    await writeFile(
      register,
      [
        "import { appendFileSync } from 'node:fs';",
        "import { createRequire, register } from 'node:module';",
        "import { pathToFileURL } from 'node:url';",
        `const file = ${JSON.stringify(loaded)};`,
        `register(${JSON.stringify(pathToFileURL(join(dir, 'recorder.mjs')).href)}, { data: { file } });`,
        'const cache = createRequire(import.meta.url).cache;',
        "process.on('exit', () => appendFileSync(file, Object.keys(cache).map((f) => pathToFileURL(f).href + '\\n').join('')));",
        '',
      ].join('\n'),
    );
    const r = await cli(args, { preload: [pathToFileURL(register).href], env });
    return { code: r.code, stderr: r.stderr, urls: (await readFile(loaded, 'utf8')).split('\n').filter(Boolean) };
  }
  const packagesOf = (urls: string[]): Set<string> => new Set(urls.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => p !== undefined));

  it('--help loads commander and no Redis, queue, HTTP, validation or logging library (issue 14)', async () => {
    const { code, stderr, urls } = await loadedBy(['--help']);
    expect(code, stderr).toBe(0);
    expect(urls.some((u) => u.includes('/node_modules/commander/'))).toBe(true);
    const packages = [...packagesOf(urls)].filter((p) => p !== 'tsx' && p !== 'get-tsconfig' && p !== 'resolve-pkg-maps' && p !== 'esbuild');
    expect(packages).toEqual(['commander']);
    const ours = urls.filter((u) => u.includes('/src/') && !u.includes('/node_modules/')).map((u) => u.replace(/^.*\/src\//, 'src/'));
    expect(new Set(ours)).toEqual(new Set(['src/cli.ts', 'src/cli/runtime.ts', 'src/cli/help.ts', 'src/cli/wait-options.ts', ...['api', 'calls', 'connect', 'dashboard', 'demo', 'inspect', 'jobs', 'migrate-keys', 'serve', 'sync', 'tenants'].map((c) => `src/cli/commands/${c}.ts`)]));
  });

  it('status loads commander, zod and ioredis of our dependencies, and none of the worker\'s (issue 14)', async () => {
    const redis = await startTestRedis();
    onTestFinished(() => redis.stop());
    const tenants = join(dir, 'tenants.json');
    await writeFile(tenants, tenantsJson([{ id: 'acme', platform: { kind: 'file', path: dir } }, { id: 'globex', platform: { kind: 'file', path: dir } }]));
    const { code, stderr, urls } = await loadedBy(['status'], { REDIS_URL: redis.url, KEY_PREFIX: testPrefix('start'), TENANTS_FILE: tenants, COLLECTIONS_BASE_URL: 'http://127.0.0.1:1/api-service/v1' });
    expect(code, stderr).toBe(0);
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
    const ours = [...packagesOf(urls)].filter((p) => p in pkg.dependencies).sort();
    // Not bullmq, pino, undici, prom-client, nor cron-parser (a tenants file without a cron pattern) or cli-progress.
    expect(ours).toEqual(['commander', 'ioredis', 'zod']);
    // Of our modules: the stores it reads, not the App nor the state a sync writes (id maps, mirror, ledger).
    const modules = urls.filter((u) => u.includes('/src/') && !u.includes('/node_modules/')).map((u) => u.replace(/^.*\/src\//, 'src/'));
    expect(modules).toContain('src/state/runs.ts');
    for (const m of ['src/app.ts', 'src/state/index.ts', 'src/state/record-state.ts', 'src/state/record-mirror.ts', 'src/state/payment-ledger.ts', 'src/platforms/records.ts']) expect(modules).not.toContain(m);
  });
});

describe('usage errors and --version', () => {
  it('exits 2 on an unknown option, an unknown command, a missing required option and no command (issue 12)', async () => {
    const [option, command, required, nothing, subNothing] = await Promise.all([
      cli(['status', '--bogus']),
      cli(['synk', '--tenant', 'acme']),
      cli(['sync']),
      cli([]),
      cli(['calls']),
    ]);
    expect(option.code, option.stderr).toBe(2);
    expect(option.stderr).toContain("unknown option '--bogus'");
    expect(command.code, command.stderr).toBe(2);
    expect(command.stderr).toContain("unknown command 'synk'");
    expect(command.stderr).toContain('(did you mean sync?)');
    expect(required.code, required.stderr).toBe(2);
    expect(required.stderr).toContain("required option '--tenant <id>' not specified");
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/^collections-sync: give a command: worker, .*\n$/);
    expect(subNothing.code).toBe(2);
    expect(subNothing.stderr).toMatch(/^collections-sync: 'calls' needs a command: campaign, one, .*\n$/);
  });

  it('prints the version of package.json with --version and -V, exit 0', async () => {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const [long, short] = await Promise.all([cli(['--version']), cli(['-V'])]);
    for (const r of [long, short]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(pkg.version);
    }
  });
});

describe('--help', () => {
  const leaves = (cmd: Command): Command[] => (cmd.commands.length === 0 ? [cmd] : cmd.commands.flatMap(leaves));
  const helpOf = (cmd: Command): string => {
    let text = '';
    cmd.configureOutput({ writeOut: (s) => (text += s) });
    cmd.outputHelp();
    return text;
  };
  const nameOf = (cmd: Command): string => (cmd.parent?.parent ? `${cmd.parent.name()} ${cmd.name()}` : cmd.name());

  it('marks required options, lists exit codes and the environment read, on every command (issue 16)', () => {
    const program = buildProgram();
    expect([...ENV_KEYS]).toEqual(Object.keys(envSchema.shape));
    const root = helpOf(program);
    expect(root).toContain('Exit codes: 0 success, 1 failure (a run, campaign or job failed; its reason is printed), 2 bad usage or configuration, or a confirmation refused');
    for (const key of ENV_KEYS) expect(root).toContain(key);
    for (const cmd of leaves(program)) {
      const help = helpOf(cmd);
      expect(help, nameOf(cmd)).toContain('Exit codes: 0 success');
      expect(help, nameOf(cmd)).toMatch(/\nEnvironment: \S/);
      const envLine = /\nEnvironment: (.*)/.exec(help)?.[1] ?? '';
      for (const key of envLine.match(/\b[A-Z][A-Z_]{3,}[A-Z]\b/g) ?? []) {
        if (/^(DASHBOARD_(USER|PASSWORD|PORT)|README)$/.test(key)) continue;
        expect(ENV_KEYS as readonly string[], `${nameOf(cmd)} names ${key}`).toContain(key);
      }
      for (const opt of cmd.options.filter((x) => x.mandatory)) expect(opt.description, `${nameOf(cmd)} ${opt.flags}`).toMatch(/\(required\)$/);
    }
    expect(helpOf(leaves(program).find((c) => c.name() === 'sync')!)).toMatch(/--tenant <id> +tenant id from the tenants file \(required\)/);
  });

  it('offers --json on every command that prints a result (issue 16)', () => {
    const servers = new Set(['worker', 'simulator', 'dashboard']);
    const without = leaves(buildProgram())
      .filter((c) => !servers.has(c.name()) && !c.options.some((x) => x.long === '--json'))
      .map(nameOf);
    expect(without).toEqual([]);
  });
});
