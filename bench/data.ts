/**
 * Benchmark data sets: file tenants written as NDJSON, streaming from the deterministic sample generator
 * (a 50x data set never sits in memory), and "a tenth changed" rewrites of them.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeNdjson } from '../src/platforms/file/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../src/platforms/records.js';
import { generateSample, type SampleOptions } from '../src/sample/generate.js';

export const TODAY = new Date('2026-11-20T00:00:00Z');
export const UPDATED_AT = new Date('2026-11-01T00:00:00Z');
/** Changed records are stamped from here (after every stamp of the first export). */
const CHANGED_AT = new Date('2026-11-15T00:00:00Z').getTime();

export interface DataSet {
  folder: string;
  contacts: number;
  invoices: number;
  payments: number;
  /** Invoices the service receives (drafts are not pushed). */
  pushableInvoices: number;
  records: number;
}

export interface DataSpec {
  contacts: number;
  seed: number;
  idPrefix: string;
}

function sampleOptions(spec: DataSpec): SampleOptions {
  return { contacts: spec.contacts, seed: spec.seed, idPrefix: spec.idPrefix, today: TODAY, updatedAt: UPDATED_AT };
}

function* each<T>(spec: DataSpec, pick: (g: { contact: ContactRecord; invoices: InvoiceRecord[]; payments: PaymentRecord[] }, i: number) => Iterable<T>): Generator<T> {
  let i = 0;
  for (const g of generateSample(sampleOptions(spec))) yield* pick(g, i++);
}

/**
 * Writes a tenant's three files into `folder`. With `changeTenth`, a tenth of the contacts are renamed and
 * a tenth of the authorised invoices get a new due date, all with later `updatedAt` stamps.
 */
export async function writeDataSet(folder: string, spec: DataSpec, options: { changeTenth?: boolean } = {}): Promise<DataSet & { changed: number }> {
  await mkdir(folder, { recursive: true });
  const change = options.changeTenth ?? false;
  let changed = 0;
  let pushableInvoices = 0;
  let invoiceIndex = 0;
  const contacts = await writeNdjson(
    join(folder, 'contacts.ndjson'),
    each(spec, (g, i) => {
      if (change && i % 10 === 0) {
        changed += 1;
        return [{ ...g.contact, name: `${g.contact.name} (renamed)`, updatedAt: new Date(CHANGED_AT + i).toISOString() }];
      }
      return [g.contact];
    }),
  );
  const invoices = await writeNdjson(
    join(folder, 'invoices.ndjson'),
    each(spec, (g) =>
      g.invoices.map((inv) => {
        const n = invoiceIndex++;
        if (inv.status !== 'DRAFT') pushableInvoices += 1;
        if (change && n % 10 === 3 && inv.status === 'AUTHORISED') {
          changed += 1;
          return { ...inv, dueDate: '2026-12-31', updatedAt: new Date(CHANGED_AT + n).toISOString() };
        }
        return inv;
      }),
    ),
  );
  const payments = await writeNdjson(join(folder, 'payments.ndjson'), each(spec, (g) => g.payments));
  return { folder, contacts, invoices, payments, pushableInvoices, records: contacts + invoices + payments, changed };
}
