import { join } from 'node:path';
import { writeNdjson } from '../../src/platforms/file/index.js';
import type { SampleData } from '../../src/sample/generate.js';

/** Writes sample data as a `file` platform's folder: contacts.ndjson, invoices.ndjson, payments.ndjson. */
export async function writeSampleFolder(folder: string, data: SampleData): Promise<void> {
  await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
  await writeNdjson(join(folder, 'invoices.ndjson'), data.invoices);
  await writeNdjson(join(folder, 'payments.ndjson'), data.payments);
}
