/** `collections-sync api openapi`: the document without Redis or configuration, as docs/openapi.json holds it. */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/index.js';
import { runCli } from '../helpers/cli-child.js';

describe('api openapi', () => {
  it('prints the generated document (no Redis: a closed port), the same as docs/openapi.json', async () => {
    const r = await runCli(['api', 'openapi'], { REDIS_URL: 'redis://127.0.0.1:1', TENANTS_FILE: '/nonexistent/tenants.json' }).done;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(openApiDocument());
    expect(r.stdout).toBe(await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
  });
});
