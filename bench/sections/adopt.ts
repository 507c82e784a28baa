/**
 * Adoption: a tenant's first sync onto a service that already holds many contacts (a customer moving onto the
 * worker, or an `id-map rebuild`). The run reads the whole GET /contact listing (100 a page) before it pushes
 * anything; its cost is the run's time less the same run onto an empty service (same data, same process), against
 * the ideal: the first page, then the other pages as many at once as the run's pool holds, one latency each.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import { assertSucceeded, clientIdOf, deploy, runMs, type Bench } from '../harness.js';

export interface AdoptConfig {
  latencyMs: number;
  /** Contacts already in the service (the platform's among them). */
  serviceContacts: number;
  /** The platform's contacts (with their invoices and payments). */
  contacts: number;
  syncConcurrency: number;
}

export interface AdoptResult {
  config: AdoptConfig;
  pages: number;
  records: number;
  /** The first sync onto the empty service, and onto the one holding `serviceContacts`. */
  emptyMs: number;
  seededMs: number;
  /** seededMs - emptyMs: what reading the listing cost the run. */
  listingMs: number;
  /** The listing's extra pages, `syncConcurrency` at a time, one latency each. */
  idealMs: number;
  /** idealMs / listingMs (1.0 ideal). */
  ratio: number;
}

const PAGE = 100;
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

export async function runAdoptSection(bench: Bench, cfg: AdoptConfig): Promise<AdoptResult> {
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  const folder = join(bench.root, 'adopt');
  const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 11, idPrefix: 'A' });
  const ids = (await readFile(join(folder, 'contacts.ndjson'), 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (JSON.parse(l) as { id: string }).id);
  // The platform's contacts are spread over the listing, among contacts of nobody's.
  const every = Math.max(1, Math.floor(cfg.serviceContacts / ids.length));
  let next = 0;
  for (let i = 0; i < cfg.serviceContacts; i += 1) {
    const ext = i % every === 0 && next < ids.length ? ids[next++] : undefined;
    bench.sim.seedContact(clientIdOf('adopt-seeded'), { name: `Existing ${i}`, ...(ext ? { extPlatformId: ext } : {}) });
  }
  const d = await deploy(
    bench,
    'adopt',
    ['adopt-warm', 'adopt-empty', 'adopt-seeded'].map((id) => ({ id, folder })),
    1,
    { SYNC_CONCURRENCY: String(cfg.syncConcurrency), TENANT_INFLIGHT_LIMIT: String(cfg.syncConcurrency) },
  );
  try {
    // A first run warms the process (JIT, connections), so neither measured run is its first.
    assertSucceeded(await d.sync('adopt-warm', 'full'), 'adopt-warm');
    const empty = await d.sync('adopt-empty', 'full');
    assertSucceeded(empty, 'adopt-empty');
    const seeded = await d.sync('adopt-seeded', 'full');
    assertSucceeded(seeded, 'adopt-seeded');
    const adopted = seeded.counts['contacts.adopted'] ?? 0;
    if (adopted !== ids.length) throw new Error(`adopt-seeded: ${adopted} contacts adopted, ${ids.length} expected`);
    const pages = Math.ceil(cfg.serviceContacts / PAGE);
    const emptyMs = runMs(empty);
    const seededMs = runMs(seeded);
    const listingMs = Math.max(1, seededMs - emptyMs);
    const idealMs = Math.ceil((pages - 1) / cfg.syncConcurrency) * cfg.latencyMs;
    const result: AdoptResult = { config: cfg, pages, records: data.records, emptyMs, seededMs, listingMs, idealMs, ratio: round(idealMs / listingMs) };
    bench.log(
      `  ${cfg.serviceContacts} service contacts (${pages} pages), ${data.records} records, c=${cfg.syncConcurrency}, ${cfg.latencyMs} ms: first sync ${seededMs} ms, onto an empty service ${emptyMs} ms; the listing ${listingMs} ms (ideal ${idealMs} ms)`,
    );
    return result;
  } finally {
    await d.close();
  }
}
