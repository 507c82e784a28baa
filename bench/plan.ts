/** The benchmark's command line and the sizes of each section in quick and full mode. */
import type { CliConfig } from './sections/cli.js';
import type { ConsoleConfig } from './sections/console.js';
import type { ClusterConfig } from './sections/cluster.js';
import type { AdoptConfig } from './sections/adopt.js';
import type { FairnessConfig } from './sections/fairness.js';
import type { FlakyConfig } from './sections/flaky.js';
import type { MemoryConfig } from './sections/memory.js';
import type { NaiveConfig } from './sections/naive.js';
import type { RedisBytesConfig } from './sections/redis-bytes.js';
import type { ScaleOutConfig } from './sections/scale-out.js';
import type { SoakConfig } from './sections/soak.js';
import type { SyncConfig } from './sections/sync.js';
import type { TenantsConfig } from './sections/tenants.js';
import type { TokenConfig } from './sections/tokens.js';
import type { OdooBenchConfig } from './sections/odoo.js';
import type { ZohoConfig } from './sections/zoho.js';

export const SECTIONS = ['sync', 'naive', 'adopt', 'scaleOut', 'tokens', 'memory', 'fairness', 'redisBytes', 'cluster', 'cli', 'flaky', 'shedding', 'zoho', 'odoo', 'tenants', 'console', 'soak'] as const;
/** Sections run only when named in --only (they take long: the soak an hour). */
export const OPT_IN: readonly SectionName[] = ['soak'];
export type SectionName = (typeof SECTIONS)[number];

export interface Args {
  quick: boolean;
  only: SectionName[] | undefined;
}

export function parseArgs(argv: string[]): Args {
  let quick = false;
  let only: SectionName[] | undefined;
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i];
    if (a === '--quick') quick = true;
    else if (a === '--only' || a?.startsWith('--only=')) {
      const list = a === '--only' ? argv[++i] : a.slice('--only='.length);
      only = (list ?? '').split(',').map((s) => {
        const name = SECTIONS.find((x) => x.toLowerCase() === s.trim().toLowerCase());
        if (!name) throw new Error(`--only: unknown section "${s}" (sections: ${SECTIONS.join(', ')})`);
        return name;
      });
    } else if (a === '--help' || a === '-h') {
      process.stderr.write(`usage: npm run bench [-- --quick] [-- --only ${SECTIONS.join(',')}] (${OPT_IN.join(', ')}: only when named)\n`);
      process.exit(0);
    } else throw new Error(`unknown argument "${a}" (try --help)`);
  }
  return { quick, only };
}

export interface Plan {
  /** What the mode takes on this machine (2 cores), stated up front. */
  expected: string;
  sync: SyncConfig;
  naive: NaiveConfig;
  adopt: AdoptConfig;
  scaleOut: ScaleOutConfig;
  tokens: TokenConfig;
  memory: MemoryConfig;
  fairness: FairnessConfig;
  redisBytes: RedisBytesConfig;
  cluster: ClusterConfig;
  cli: CliConfig;
  flaky: FlakyConfig;
  shedding: FlakyConfig;
  zoho: ZohoConfig;
  odoo: OdooBenchConfig;
  tenants: TenantsConfig;
  console: ConsoleConfig;
  soak: SoakConfig;
}

/** A tenth of the requests fail: 5% 5xx (half 500, half 503), 3% reset before processing, 2% committed then dropped. */
const FLAKY_FAULTS: FlakyConfig['faults'] = { error5xxRate: 0.05, resetRate: 0.03, dropAfterCommitRate: 0.02 };
/** A service shedding load as a gateway under pressure does: 3% of the requests answered 429 with `Retry-After: 1`. */
const SHEDDING_FAULTS: FlakyConfig['faults'] = { rate429: 0.03, retryAfterS: 1 };

/** A 300-customer Zoho Books organisation; 10 customers and 20 invoices changed before the incremental. */
const ZOHO: Omit<ZohoConfig, 'limitScale'> = { customers: 300, changedCustomers: 10, changedInvoices: 20, latencyMs: 20, syncConcurrency: 16, runTimeoutMs: 900_000 };

/** A 240-customer Odoo database (company 1 of two); 10 customers and 20 invoices changed before the incremental. */
const ODOO: OdooBenchConfig = { customers: 240, changedCustomers: 10, changedInvoices: 20, pageSize: 500, syncConcurrency: 16, runTimeoutMs: 300_000 };
/** Six tenants, three workers, an hour (BENCH_SOAK_MIN): a kill -9 every 2 min, a change every 20 s, faults on, tokens of 2 min. */
const SOAK: SoakConfig = { minutes: 60, tenants: 6, contacts: 100, workers: 3, latencyMs: 5, killEveryS: 120, changeEveryS: 20, sampleEveryS: 30, tokenLifetimeS: 120, every: '15s', reconcileEvery: '5m' };
/** Small file tenants (4 contacts: about 17 records each), the service at 5 ms (issue 40). */
const TENANTS: Omit<TenantsConfig, 'sizes' | 'firstSyncsTimeoutS' | 'fleets'> = { contacts: 4, latencyMs: 5, idleS: 10, firstRuns: 20, moreRuns: 150 };

export function plan(quick: boolean): Plan {
  if (quick) {
    return {
      expected: 'about 2 minutes',
      sync: { latencyMs: 20, concurrencies: [4, 16, 32], contactsPerSlot: 40, reference: 16 },
      naive: { concurrency: 32, latenciesMs: [20, 0], contacts: 1_280, rounds: 1 },
      adopt: { latencyMs: 20, serviceContacts: 5_000, contacts: 40, syncConcurrency: 16 },
      scaleOut: { latencyMs: 50, processes: [1, 2, 4], tenants: 8, contactsPerTenant: 60, syncConcurrency: 4, jobsPerProcess: 2 },
      tokens: { concurrency: 16, latenciesMs: [0, 20], armMs: 2_000, rounds: 2, lifetimeMs: 4_000, sustainedMs: 12_000 },
      memory: { smallContacts: 100, factor: 50, syncConcurrency: 16, concurrent: { tenants: 16, contacts: 100, workerConcurrency: [8, 16] } },
      fairness: { latencyMs: 20, largeContacts: 1_000, smallContacts: 20, syncConcurrency: 8 },
      // about 50,000 records (4.75 a contact)
      redisBytes: { contacts: 10_500, factor: 1, syncConcurrency: 16 },
      cluster: {
        latencyMs: 20, syncConcurrency: 16, contacts: 640, rounds: 2,
        scaleOut: { latencyMs: 50, processes: [1, 4], tenants: 8, contactsPerTenant: 60, syncConcurrency: 4, jobsPerProcess: 2 },
      },
      cli: { runs: 9, contactsPerTenant: 40 },
      // about 2,800 records a run
      flaky: { latencyMs: 10, contacts: 630, rounds: 2, faults: FLAKY_FAULTS },
      shedding: { name: 'shedding', latencyMs: 10, contacts: 630, rounds: 2, faults: SHEDDING_FAULTS },
      zoho: { ...ZOHO, limitScale: 10 },
      odoo: ODOO,
      tenants: { ...TENANTS, sizes: [250, 1_000], firstSyncsTimeoutS: 600, fleets: [{ tenants: 1_000, workers: 2, site: 'single' }] },
      console: { deadLetters: 10_000, others: 200, warmup: 5, requests: 30, laterPage: 20 },
      soak: { ...SOAK, minutes: 5, sampleEveryS: 10 },
    };
  }
  return {
    expected: 'about 5-6 minutes',
    sync: { latencyMs: 20, concurrencies: [4, 16, 32, 64], contactsPerSlot: 100, reference: 16 },
    naive: { concurrency: 32, latenciesMs: [20, 0], contacts: 3_200, rounds: 3 },
    adopt: { latencyMs: 20, serviceContacts: 20_000, contacts: 40, syncConcurrency: 16 },
    scaleOut: { latencyMs: 50, processes: [1, 2, 4], tenants: 8, contactsPerTenant: 200, syncConcurrency: 4, jobsPerProcess: 2 },
    tokens: { concurrency: 16, latenciesMs: [0, 20], armMs: 5_000, rounds: 3, lifetimeMs: 4_000, sustainedMs: 40_000 },
    memory: { smallContacts: 400, factor: 50, syncConcurrency: 16, concurrent: { tenants: 16, contacts: 1_000, workerConcurrency: [8, 16] } },
    fairness: { latencyMs: 20, largeContacts: 4_000, smallContacts: 20, syncConcurrency: 8 },
    // about 50,000 and 500,000 records
    redisBytes: { contacts: 10_500, factor: 10, syncConcurrency: 16 },
    cluster: {
      latencyMs: 20, syncConcurrency: 16, contacts: 1_600, rounds: 3,
      scaleOut: { latencyMs: 50, processes: [1, 4], tenants: 8, contactsPerTenant: 200, syncConcurrency: 4, jobsPerProcess: 2 },
    },
    cli: { runs: 21, contactsPerTenant: 40 },
    // about 9,000 records a run
    flaky: { latencyMs: 10, contacts: 2_030, rounds: 3, faults: FLAKY_FAULTS },
    shedding: { name: 'shedding', latencyMs: 10, contacts: 2_030, rounds: 3, faults: SHEDDING_FAULTS },
    zoho: { ...ZOHO, limitScale: 1, runTimeoutMs: 480_000 },
    odoo: ODOO,
    // 40,000 on four workers, on one Redis and on the Cluster: about 40 more minutes on 2 cores.
    tenants: { ...TENANTS, sizes: [1_000, 5_000, 10_000, 20_000], firstSyncsTimeoutS: 900, fleets: [{ tenants: 40_000, workers: 4, site: 'single' }, { tenants: 40_000, workers: 4, site: 'cluster' }] },
    console: { deadLetters: 10_000, others: 1_000, warmup: 5, requests: 30, laterPage: 20 },
    soak: SOAK,
  };
}
