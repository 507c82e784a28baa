import { spawn } from 'node:child_process';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { DemoSummary } from '../../src/demo/demo.js';
import { demoSample, writeDemoSample } from '../../src/demo/sample.js';
import { formatSummary, whereToLookNext } from '../../src/demo/summary.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => child.kill('SIGKILL'), 80_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);
const listening = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('npm run demo', () => {
  it('runs end to end, its summary agrees with the simulator, and it leaves nothing behind', async () => {
    const { code, stdout, stderr } = await runCli(['demo', '--json'], { ...process.env });
    expect(code, stderr).toBe(0);
    const s = JSON.parse(stdout) as DemoSummary;
    const [full, incremental] = s.runs;
    if (!full || !incremental) throw new Error('two runs expected');

    // Every valid record landed once: what the full run created is what the simulator holds.
    expect(s.sample.contacts).toBe(300);
    expect(full.created).toBe(s.simulator.contacts + s.simulator.invoices);
    expect(s.simulator.contacts).toBe(s.sample.contacts);
    expect(incremental.created).toBe(0);
    expect(incremental.updated).toBe(s.changes.renamed + s.changes.paid);
    expect(s.changes.renamed).toBe(30);
    // Requests and tokens: the worker's own count, the simulator's, and the per-run differences agree.
    expect(s.client.requests).toBe(s.simulator.requests);
    expect(full.requests + incremental.requests).toBe(s.simulator.requests);
    expect(s.simulator.tokensIssued).toBeGreaterThanOrEqual(1);
    expect(s.client.rotations).toBe(s.simulator.tokensIssued);
    expect(full.tokensIssued + incremental.tokensIssued).toBe(s.simulator.tokensIssued);
    expect(s.simulator.supersededInFlight).toBe(0);
    expect(full.writes + incremental.writes).toBe(s.simulator.writesCommitted);
    expect(s.simulator.writesCommitted).toBe(full.created + full.updated + incremental.created + incremental.updated);
    expect(incremental.requests).toBe(incremental.updated); // unchanged records cost nothing
    // Dead letters carry their place and reason; the bad email was dropped, not the contact.
    expect(full.deadLettered).toBe(4);
    expect(full.outcome).toBe('partial');
    const dl = (re: RegExp, reason: RegExp): boolean => s.deadLetters.some((d) => re.test(d.where) && reason.test(d.reason));
    expect(dl(/^contacts\.ndjson:\d+$/, /JSON/i)).toBe(true);
    expect(dl(/C-NO-NAME/, /name/)).toBe(true);
    expect(dl(/INV-ORPHAN-1/, /C-UNKNOWN/)).toBe(true);
    expect(dl(/INV-OVERPAID-1/, /outstandingAmount/)).toBe(true);
    expect(s.flagged).toHaveLength(1);
    expect(s.flagged[0]?.errorDetail).toMatch(/email/);

    // Nothing left: its redis-server is gone, its data folder removed.
    expect(s.redis).toBe(process.env['REDIS_URL'] ? 'given' : 'spawned');
    if (s.redisUrl) expect(await listening(s.redisUrl)).toBe(false);
    expect(await exists(s.dataFolder)).toBe(false);

    // The table people read shows the same numbers.
    const text = formatSummary(s).join('\n');
    expect(text).toMatch(new RegExp(`requests sent\\s+${full.requests}\\s+${incremental.requests}`));
    expect(text).toMatch(new RegExp(`created\\s+${full.created}\\s+0`));
    expect(text).toContain(whereToLookNext().join('\n'));
  });

  it('names in "Where to look next" only README sections that exist, as headings (issue 12)', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const headings = new Set(readme.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => l.replace(/^#+ /, '').trim()));
    const text = whereToLookNext().join('\n');
    const named = new Set([...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!));
    expect(named.size).toBeGreaterThanOrEqual(6);
    expect([...named].filter((n) => !headings.has(n))).toEqual([]);
  });

  it('says how to get Redis when redis-server is missing and REDIS_URL is unset', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: '/nonexistent' };
    delete env['REDIS_URL'];
    const { code, stderr } = await runCli(['demo', '--json'], env);
    expect(code).toBe(1);
    expect(stderr).toContain('apt-get install redis-server');
    expect(stderr).toContain('brew install redis');
    expect(stderr).toContain('REDIS_URL');
  });

  it('writes the sample a file tenant reads, bad lines included (the compose `sample` service)', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'cs-demo-sample-'));
    try {
      const sample = demoSample({ contacts: 40, today: new Date('2026-11-20T00:00:00Z') });
      await writeDemoSample(folder, sample);
      const lines = (await readFile(join(folder, 'contacts.ndjson'), 'utf8')).split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(40 + sample.bad.filter((b) => b.entity === 'contacts').length);
      expect(lines.filter((l) => l.includes('الرياض') || l.includes('جدة') || l.includes('الدمام')).length).toBeGreaterThan(0);
      const invoices = (await readFile(join(folder, 'invoices.ndjson'), 'utf8')).trimEnd().split('\n');
      expect(invoices).toHaveLength(sample.invoices.length + 2);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
