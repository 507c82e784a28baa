/**
 * The naive pusher: what a plain script would do with the same data, as the yardstick of a sync run. A plain
 * undici loop with a fixed token and a fixed number of requests in flight: every contact POSTed, then every
 * invoice that is not a draft POSTed to the create-update with its contact's uuid and its payments folded in
 * (each record once; no state, no Redis, no retries). Bodies are built by the same mapper as the worker's.
 * Started with `fork`; arguments in NAIVE_* variables; sends one `{ requests, ms, cpuMs, records }` message (its CPU
 * time over the run).
 */
import { Agent, request } from 'undici';
import { FileAdapter } from '../src/platforms/file/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../src/platforms/records.js';
import type { Entity } from '../src/glossary.js';
import { decideContact, decideInvoice } from '../src/mapping/index.js';

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`naive pusher: ${name} is not set`);
  return v;
};

async function readAll<E extends Entity>(adapter: FileAdapter, entity: E): Promise<unknown[]> {
  const out: unknown[] = [];
  let pageToken: string | undefined;
  do {
    const page = await adapter.readPage(entity, { pageSize: 500, ...(pageToken === undefined ? {} : { pageToken }) });
    out.push(...page.records);
    pageToken = page.nextPageToken;
  } while (pageToken !== undefined);
  return out;
}

async function main(): Promise<void> {
  const baseUrl = env('NAIVE_BASE_URL');
  const token = env('NAIVE_TOKEN');
  const concurrency = Number(env('NAIVE_CONCURRENCY'));
  const adapter = new FileAdapter({ folder: env('NAIVE_FOLDER') });
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000 });
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const contacts = (await readAll(adapter, 'contacts')) as ContactRecord[];
  const invoices = (await readAll(adapter, 'invoices')) as InvoiceRecord[];
  const payments = (await readAll(adapter, 'payments')) as PaymentRecord[];
  const paid = new Map<string, number>();
  for (const p of payments) if (!p.deleted) paid.set(p.invoiceId, (paid.get(p.invoiceId) ?? 0) + p.amount);

  let requests = 0;
  const post = async (path: string, body: unknown): Promise<{ uuid: string }> => {
    requests += 1;
    const res = await request(`${baseUrl}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`POST ${path}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as { uuid: string };
  };

  const uuids = new Map<string, Promise<string>>();
  const tasks: (() => Promise<void>)[] = [];
  for (const c of contacts) {
    const d = decideContact(c, undefined);
    if (d.kind !== 'create') continue;
    let resolve!: (uuid: string) => void;
    uuids.set(c.id, new Promise<string>((r) => (resolve = r)));
    tasks.push(async () => resolve((await post('/contact', d.body)).uuid));
  }
  for (const inv of invoices) {
    const contact = uuids.get(inv.contactId);
    if (contact === undefined || inv.status === 'DRAFT') continue;
    tasks.push(async () => {
      const d = decideInvoice(inv, { contactUuid: await contact, paymentsTotal: paid.get(inv.id) });
      if (d.kind === 'create') await post('/invoice/create-update', d.body);
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await agent.close();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  process.send?.({ requests, ms, cpuMs, records: contacts.length + invoices.length + payments.length }, () => process.exit(0));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
