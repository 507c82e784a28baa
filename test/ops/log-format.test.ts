/**
 * LOG_FORMAT: pino's JSON lines (default), the same with ISO-8601 times and level names, or pino-pretty for a
 * terminal. Redaction holds in every format. (Without pino-pretty installed, `pretty` falls back to JSON lines:
 * test/ops/image.test.ts runs the production install, which has no pino-pretty.)
 */
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { LogFormat } from '../../src/config/env.js';

function capture(format: LogFormat | undefined): { lines: () => Record<string, unknown>[]; logger: ReturnType<typeof createLogger> } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = createLogger({ level: 'info', ...(format ? { format } : {}), destination });
  return { logger, lines: () => chunks.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('LOG_FORMAT', () => {
  it('json (the default) writes epoch-millisecond times and numeric levels', () => {
    const { logger, lines } = capture(undefined);
    logger.warn({ tenant: 'acme', clientSecret: 'hunter2-secret' }, 'hello');
    const [line] = lines();
    expect(line).toMatchObject({ level: 40, msg: 'hello', tenant: 'acme', clientSecret: '[redacted]', pid: process.pid });
    expect(typeof line?.['time']).toBe('number');
  });

  it('json-iso writes ISO-8601 times and level names, and still redacts', () => {
    const { logger, lines } = capture('json-iso');
    const before = Date.now();
    logger.error({ headers: { authorization: 'Bearer abc.def' } }, 'boom');
    logger.child({ tenant: 'acme' }).info('child line');
    const [first, second] = lines();
    expect(first).toMatchObject({ level: 'error', msg: 'boom', headers: { authorization: '[redacted]' } });
    expect(first?.['time']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(String(first?.['time']))).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(second).toMatchObject({ level: 'info', tenant: 'acme', msg: 'child line' });
  });

  it('pretty writes human lines to stderr where pino-pretty is installed (a development install)', async () => {
    const logger = fileURLToPath(new URL('../../src/logger.ts', import.meta.url));
    const script = `const { createLogger } = await import(${JSON.stringify(logger)}); createLogger({ level: 'info', format: 'pretty' }).info({ clientSecret: 'hunter2-secret', tenant: 'acme' }, 'pretty hello');`;
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.once('error', reject);
      child.once('exit', (c) => resolve({ code: c, stderr: err }));
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(/INFO.*pretty hello/);
    expect(stderr).toContain('tenant: "acme"');
    expect(stderr).toContain('[redacted]');
    expect(stderr).not.toContain('hunter2-secret');
    expect(stderr).not.toMatch(/^\{/m);
  });
});
