/**
 * The OpenAPI document passes the two linters an integrator runs on it (decision 0237): Redocly's `recommended`
 * rules (redocly.yaml) and Spectral's `oas` ruleset (.spectral.yaml), with no error and no warning. The committed
 * document is checked, and the one a worker serves (its servers its PUBLIC_URL).
 *
 * The linters are not dev dependencies (about 240 packages between them, for this one test): they are installed once,
 * at the exact versions below, into a folder of the machine's temp directory that later runs reuse, with npm's
 * cache beside it. Bumping a version here installs it anew.
 */
import { execFile } from 'node:child_process';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiApp, documentConfig } from '../../src/api/api.js';

const REDOCLY = '@redocly/cli@2.77.0';
const SPECTRAL = '@stoplight/spectral-cli@6.16.3';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const linters = join(tmpdir(), `collections-sync-oas-linters-${[REDOCLY, SPECTRAL].join('-').replace(/[^A-Za-z0-9.-]+/g, '_')}`);
const bin = (name: string): string => join(linters, 'node_modules', '.bin', name);

/** Runs a linter; its exit code is not the verdict (the JSON is), so a failing run still gives its findings. */
async function lint(cmd: string, args: string[]): Promise<string> {
  try {
    return (await run(cmd, args, { cwd: repo, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    if (e.stdout) return e.stdout;
    throw new Error(`${cmd} failed: ${e.stderr ?? String(err)}`, { cause: err });
  }
}

describe('the OpenAPI document under the linters', () => {
  let folder: string;
  const documents: [string, string][] = [];

  beforeAll(async () => {
    try {
      await access(bin('redocly'));
      await access(bin('spectral'));
    } catch {
      await mkdir(linters, { recursive: true });
      await run('npm', ['install', '--prefix', linters, '--no-audit', '--no-fund', '--no-package-lock', REDOCLY, SPECTRAL], {
        env: { ...process.env, npm_config_cache: join(linters, '.npm-cache') },
        maxBuffer: 32 * 1024 * 1024,
      });
    }
    folder = await mkdtemp(join(tmpdir(), 'cs-oas-'));
    const served = join(folder, 'served.json');
    const doc = apiApp(undefined, () => new Response(null, { status: 401 })).getOpenAPI31Document(documentConfig('https://sync.acme-collections.test'));
    await writeFile(served, JSON.stringify(doc, null, 2));
    documents.push(['docs/openapi.json', join(repo, 'docs/openapi.json')], ['as served with PUBLIC_URL', served]);
  }, 300_000);
  afterAll(async () => {
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('Redocly (recommended): no error, no warning', async () => {
    for (const [name, file] of documents) {
      const out = JSON.parse(await lint(bin('redocly'), ['lint', '--config', join(repo, 'redocly.yaml'), '--format=json', file])) as { totals: Record<string, number>; problems: unknown[] };
      expect(out.problems, name).toEqual([]);
      expect(out.totals, name).toMatchObject({ errors: 0, warnings: 0 });
    }
  }, 120_000);

  it('Spectral (oas): no finding of any severity', async () => {
    for (const [name, file] of documents) {
      const text = await lint(bin('spectral'), ['lint', '--ruleset', join(repo, '.spectral.yaml'), '--format', 'json', '--quiet', file]);
      // --quiet still prints the JSON; an empty result list may be printed as nothing at all.
      const findings = (text.trim() === '' ? [] : JSON.parse(text.slice(text.indexOf('[')))) as { code: string; message: string; path: string[] }[];
      expect(findings.map((f) => `${f.code} ${f.path.join('.')}: ${f.message}`), name).toEqual([]);
    }
  }, 120_000);
});
