/**
 * The demo's data: the bundled Saudi B2B sample (src/sample/generate.ts) as a `file` tenant's folder, with a few
 * deliberately bad lines so the demo shows dead letters with their place and reason, and the changes made
 * between the full and the incremental sync.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entity } from '../glossary.js';
import { fileNameOf } from '../platforms/file/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../platforms/records.js';
import { sampleData, type SampleData } from '../sample/generate.js';

/** A line that is not a good record, where it goes, and what the sync makes of it. */
export interface BadLine {
  entity: Entity;
  /** Index in the file's records before which the line is written. */
  before: number;
  line: string;
  /** What the demo expects to see (printed beside the dead letter). */
  expect: string;
}

export interface DemoSample extends SampleData {
  bad: BadLine[];
}

const stamp = (d: Date): string => d.toISOString();

/** The sample with its bad lines. `updatedAt` is the base stamp of every record. */
export function demoSample(options: { contacts: number; seed?: number; today?: Date; updatedAt?: Date }): DemoSample {
  const today = options.today ?? new Date();
  const updatedAt = options.updatedAt ?? new Date(today.getTime() - 86_400_000);
  const data = sampleData({ contacts: options.contacts, seed: options.seed ?? 20_26, today, updatedAt, idPrefix: '' });
  // Older than every good record, so an incremental sync reads them again only when they carry no stamp.
  const at = stamp(new Date(updatedAt.getTime() - 86_400_000));
  const mid = (n: number): number => Math.max(0, Math.floor(n / 2));
  // A contact whose email the service would refuse: pushed without it, flagged (hasErrors), not dead-lettered.
  const withBadEmail = data.contacts[Math.min(3, data.contacts.length - 1)];
  if (withBadEmail) withBadEmail.email = 'accounts-at-example.sa';
  const day = today.toISOString().slice(0, 10);
  const bad: BadLine[] = [
    {
      entity: 'contacts',
      before: mid(data.contacts.length),
      line: '{"id": "C-TRUNCATED", "name": "Broken Export Co", "updatedAt": ',
      expect: 'not JSON: dead-lettered by its file and line',
    },
    {
      entity: 'contacts',
      before: data.contacts.length,
      line: JSON.stringify({ id: 'C-NO-NAME', updatedAt: at, deleted: false, nameAr: 'شركة بلا اسم' }),
      expect: 'no name: dead-lettered with the broken rule',
    },
    {
      entity: 'invoices',
      before: mid(data.invoices.length),
      line: JSON.stringify({
        id: 'INV-ORPHAN-1', contactId: 'C-UNKNOWN', updatedAt: at, status: 'AUTHORISED', deleted: false,
        number: 'INV-ORPHAN-1', date: day, dueDate: day, total: 1500, outstandingAmount: 1500, currencyCode: 'SAR',
      }),
      expect: 'its contact is in no file: dead-lettered once it has waited (the demo waits 0 s)',
    },
    {
      entity: 'invoices',
      before: data.invoices.length,
      line: JSON.stringify({
        id: 'INV-OVERPAID-1', contactId: data.contacts[0]?.id ?? 'C000001', updatedAt: at, status: 'AUTHORISED', deleted: false,
        number: 'INV-OVERPAID-1', date: day, dueDate: day, total: 100, outstandingAmount: 250, currencyCode: 'SAR',
      }),
      expect: 'outstanding above total: dead-lettered with the broken rule',
    },
  ];
  return { ...data, bad };
}

function linesOf(records: readonly object[], bad: readonly BadLine[]): string {
  const out: string[] = [];
  records.forEach((r, i) => {
    for (const b of bad) if (b.before === i) out.push(b.line);
    out.push(JSON.stringify(r));
  });
  for (const b of bad) if (b.before >= records.length) out.push(b.line);
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** Writes `contacts.ndjson`, `invoices.ndjson`, `payments.ndjson` (replacing them) into `folder`. */
export async function writeDemoSample(folder: string, sample: DemoSample): Promise<void> {
  const files: [Entity, readonly object[]][] = [
    ['contacts', sample.contacts],
    ['invoices', sample.invoices],
    ['payments', sample.payments],
  ];
  for (const [entity, records] of files) {
    await writeFile(join(folder, fileNameOf(entity)), linesOf(records, sample.bad.filter((b) => b.entity === entity)), 'utf8');
  }
}

export interface DemoChanges {
  renamed: ContactRecord[];
  paid: InvoiceRecord[];
  payments: PaymentRecord[];
}

/**
 * What happens between the two syncs: every tenth contact is renamed (English and Arabic), every sixth open
 * invoice is paid in full (a payment record, the invoice PAID with nothing outstanding). Stamps are `at` onwards.
 */
export function changeSample(sample: DemoSample, at: Date): DemoChanges {
  let tick = at.getTime();
  const next = (): string => new Date((tick += 1)).toISOString();
  const renamed = sample.contacts.filter((_, i) => i % 10 === 0);
  for (const c of renamed) {
    c.name = c.name.replace(/ (\d+)$/, ' Co. $1');
    if (c.nameAr !== undefined) c.nameAr = c.nameAr.replace(/ (\d+)$/, ' المحدودة $1');
    c.updatedAt = next();
  }
  const open = sample.invoices.filter((inv) => inv.status === 'AUTHORISED' && (inv.outstandingAmount ?? inv.total) > 0);
  const paid = open.filter((_, i) => i % 6 === 0);
  const payments: PaymentRecord[] = [];
  const day = at.toISOString().slice(0, 10);
  for (const inv of paid) {
    const amount = inv.outstandingAmount ?? inv.total;
    payments.push({ id: `${inv.id}-PAY-DEMO`, invoiceId: inv.id, updatedAt: next(), amount, date: day, reference: `DEMO-${inv.number}`, deleted: false });
    inv.status = 'PAID';
    inv.outstandingAmount = 0;
    inv.updatedAt = next();
  }
  sample.payments.push(...payments);
  return { renamed, paid, payments };
}
