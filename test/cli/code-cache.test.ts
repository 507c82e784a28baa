/**
 * The code cache of the status bundle (decision 76): a script runs the same with its cache, without one, and with
 * one that is damaged, of another script or refused by V8, and a cache is written only where it can be. Each load
 * is a process of its own, as a CLI start is (V8 keeps compiled scripts within a process).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const LOADER = new URL('../../src/cli/code-cache.ts', import.meta.url).href;

/** A script with enough functions that V8 has bytecode to cache, and one exported value. */
const scriptText = (value: string): string =>
  [
    "'use strict';",
    ...Array.from({ length: 40 }, (_, i) => `function f${String(i)}(x) { return x.map((y) => y * ${String(i + 1)}).reduce((a, b) => a + b, 0); }`),
    `const total = [${Array.from({ length: 40 }, (_, i) => `f${String(i)}([1, 2, 3])`).join(', ')}].reduce((a, b) => a + b, 0);`,
    `module.exports = { value: ${JSON.stringify(value)}, total, file: __filename, main: async (argv) => argv.length };`,
    '',
  ].join('\n');

interface Load {
  cache: string;
  kind: string | null;
  value: string;
  total: number;
  file: string;
  saved: boolean;
  code: number;
}

function load(file: string, cacheFile?: string, kind?: 'warm-up' | 'run'): Promise<Load> {
  const code = [
    `const m = await import(${JSON.stringify(LOADER)});`,
    `const s = m.loadCachedScript(${JSON.stringify(file)}${cacheFile === undefined ? '' : `, ${JSON.stringify(cacheFile)}`});`,
    'const code = await s.exports.main(["a", "b"]);',
    `process.stdout.write(JSON.stringify({ cache: s.cache, kind: s.cacheKind ?? null, value: s.exports.value, total: s.exports.total, file: s.exports.file, saved: s.save(${kind === undefined ? '' : JSON.stringify(kind)}), code }));`,
  ].join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (exit, signal) => (exit === 0 ? resolve(JSON.parse(stdout) as Load) : reject(new Error(`exit ${String(exit ?? signal)}: ${stderr}`))));
  });
}

describe('a script with a code cache', () => {
  let dir: string;
  let n = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-code-cache-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const freshScript = async (value = 'one'): Promise<string> => {
    n += 1;
    const file = join(dir, `script-${String(n)}.cjs`);
    await writeFile(file, scriptText(value));
    return file;
  };
  const expected = { value: 'one', total: 4920, code: 2 };

  it('writes its cache on the first start and uses it on the next', async () => {
    const file = await freshScript();
    const first = await load(file);
    expect(first).toMatchObject({ cache: 'absent', saved: true, file, ...expected });
    const second = await load(file);
    expect(second).toMatchObject({ cache: 'used', kind: 'run', saved: false, ...expected });
    // The cache's own content: a header, then V8's data.
    const raw = await readFile(`${file}.cache`);
    expect(raw.subarray(0, 8).toString('latin1')).toBe('csv8c2r\0');
  });

  it("uses the build's warm-up cache, and replaces it with the first real run's", async () => {
    const file = await freshScript();
    expect(await load(file, undefined, 'warm-up')).toMatchObject({ cache: 'absent', saved: true, ...expected });
    expect(await load(file, undefined, 'warm-up')).toMatchObject({ cache: 'used', kind: 'warm-up', saved: false });
    expect(await load(file)).toMatchObject({ cache: 'used', kind: 'warm-up', saved: true, ...expected });
    expect(await load(file)).toMatchObject({ cache: 'used', kind: 'run', saved: false, ...expected });
    expect(await load(file, undefined, 'warm-up')).toMatchObject({ cache: 'used', kind: 'run', saved: false });
  });

  it('does not give V8 a damaged cache (V8 would crash on it): runs from the text and writes a good one', async () => {
    const file = await freshScript();
    await load(file);
    const raw = await readFile(`${file}.cache`);
    for (let i = Math.floor(raw.length / 2); i < Math.floor(raw.length / 2) + 64; i += 1) raw[i] = raw[i]! ^ 0x5a;
    await writeFile(`${file}.cache`, raw);
    expect(await load(file)).toMatchObject({ cache: 'invalid', saved: true, ...expected });
    expect(await load(file)).toMatchObject({ cache: 'used', ...expected });
    await writeFile(`${file}.cache`, raw.subarray(0, 20));
    expect(await load(file)).toMatchObject({ cache: 'invalid', saved: true, ...expected });
  });

  it('does not use the cache of another text of the same length (V8 compares lengths only)', async () => {
    const file = await freshScript('one');
    await load(file);
    await writeFile(file, scriptText('two'));
    expect(await load(file)).toMatchObject({ cache: 'invalid', saved: true, value: 'two' });
    expect(await load(file)).toMatchObject({ cache: 'used', value: 'two' });
  });

  it('runs from the text when V8 refuses the cache, and writes one it accepts', async () => {
    const file = await freshScript();
    const source = await readFile(file);
    // V8's data for another script (another length), with a header that matches this one: only V8 can refuse it.
    const data = new Script('(function () { return 1; })').createCachedData();
    const magic = Buffer.from('csv8c2r\0', 'latin1');
    const digest = createHash('sha256').update(source).update(magic).update(data).digest();
    await writeFile(`${file}.cache`, Buffer.concat([magic, digest, data]));
    expect(await load(file)).toMatchObject({ cache: 'rejected', saved: true, ...expected });
    expect(await load(file)).toMatchObject({ cache: 'used', ...expected });
  });

  it('runs without a cache where none can be written', async () => {
    const file = await freshScript();
    const nowhere = join(dir, 'missing-folder', 'script.cache');
    expect(await load(file, nowhere)).toMatchObject({ cache: 'absent', saved: false, ...expected });
    expect(await load(file, nowhere)).toMatchObject({ cache: 'absent', saved: false, ...expected });
  });
});
