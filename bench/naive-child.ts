/**
 * The naive pusher: what a plain script would do with the same data, as the yardstick of a sync run. A plain
 * undici loop with a fixed token and a fixed number of requests in flight: every contact POSTed, then every
 * invoice that is not a draft POSTed to the create-update with its contact's uuid and its payments folded in
 * (each record once; no state, no Redis, no retries). Bodies are built by the same mapper as the worker's.
 * Started with `fork`; arguments in NAIVE_* variables. NAIVE_FOLDER and NAIVE_TOKEN are one pass; NAIVE_FOLDER_2 and
 * NAIVE_TOKEN_2, when set, a second pass over other data in the same process after the first (the worker is measured
 * so too: a fresh process, then a warm one). Sends a message `{ pass: { requests, ms, cpuMs, records } }` as each pass
 * ends (its own time and CPU time), then exits.
 */
import { Agent, request } from 'undici';
import type * as File from '../src/platforms/file/index.js';
import type { FileAdapter } from '../src/platforms/file/index.js';
import type * as Mapping from '../src/mapping/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../src/platforms/records.js';
import type { Entity } from '../src/glossary.js';
import { shipped } from './shipped.js';

// The program as built, like the worker's (bench/shipped.ts): the same mapper and file reader, compiled the same way.
const { FileAdapter: FileReader } = await shipped<typeof File>('src/platforms/file/index.js');
const { decideContact, decideInvoice } = await shipped<typeof Mapping>('src/mapping/index.js');

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

interface Pass {
  requests: number;
  ms: number;
  cpuMs: number;
  records: number;
}

async function main(): Promise<void> {
  const baseUrl = env('NAIVE_BASE_URL');
  const concurrency = Number(env('NAIVE_CONCURRENCY'));
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000 });
  const passes: [string, string][] = [[env('NAIVE_FOLDER'), env('NAIVE_TOKEN')]];
  if (process.env['NAIVE_FOLDER_2'] !== undefined) passes.push([env('NAIVE_FOLDER_2'), env('NAIVE_TOKEN_2')]);
  for (const [folder, token] of passes) {
    const done = await pass(baseUrl, concurrency, agent, folder, token);
    await new Promise<void>((resolve, reject) => process.send?.({ pass: done }, (err: Error | null) => (err ? reject(err) : resolve())));
  }
  await agent.close();
  process.exit(0);
}

/** One pass over a folder's records with one token. */
async function pass(baseUrl: string, concurrency: number, agent: Agent, folder: string, token: string): Promise<Pass> {
  const adapter = new FileReader({ folder });
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
  return { requests, ms, cpuMs: (cpu.user + cpu.system) / 1000, records: contacts.length + invoices.length + payments.length };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
