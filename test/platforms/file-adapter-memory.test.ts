import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileAdapter, writeNdjson } from '../../src/platforms/file/index.js';
import { contact, tempDir } from './fixtures.js';

// A behavioural bound, not a timing: paging through a ~100 MB file must keep the process's memory flat
// (one page, one read chunk and one line at a time), far below the file's size.
describe('file adapter: memory stays flat', () => {
  let dir: { path: string; remove: () => Promise<void> };
  const lines = 220_000;
  const padding = 'p'.repeat(360);

  beforeAll(async () => {
    dir = await tempDir();
    await writeNdjson(join(dir.path, 'contacts.ndjson'), (function* () {
      for (let i = 0; i < lines; i++) yield contact(i, { nameAr: 'شركة الاختبار', street: padding });
    })(), { batchLines: 1024 });
  });
  afterAll(async () => {
    await dir.remove();
  });

  it('pages through a ~100 MB file with rss growing by far less than the file size', async () => {
    const { size } = await stat(join(dir.path, 'contacts.ndjson'));
    expect(size).toBeGreaterThan(95 * 1024 * 1024);
    const adapter = new FileAdapter({ folder: dir.path });

    // Warm up (module code, JIT, decoder), then measure from here.
    let page = await adapter.readPage('contacts', {});
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    let count = page.records.length;
    let pages = 1;
    while (page.nextPageToken !== undefined) {
      page = await adapter.readPage('contacts', { pageToken: page.nextPageToken });
      count += page.records.length;
      pages++;
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    const growth = peak - baseline;
    console.info(`file ${(size / 2 ** 20).toFixed(1)} MiB, ${pages} pages, rss growth ${(growth / 2 ** 20).toFixed(1)} MiB`);
    expect(count).toBe(lines);
    expect(growth).toBeLessThan(size / 4);
  });
});
