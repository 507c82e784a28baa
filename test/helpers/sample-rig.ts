/**
 * The set-up most sync tests share: a test Redis, a temp folder holding sample data for file tenants, and a rig
 * (simulator + worker) over them, torn down after the file. Registers its own beforeAll/afterAll; read the parts
 * inside tests (they exist once beforeAll has run).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { useTestRedis, type TestRedis } from './redis.js';
import { startRig, type Rig } from './rig.js';
import { writeSampleFolder } from './sample-folder.js';

export interface SampleRig {
  readonly redis: TestRedis;
  readonly rig: Rig;
  /** The sample folder every tenant reads (write it again with writeSampleFolder after changing `data`). */
  readonly folder: string;
  readonly data: SampleData;
}

export function useSampleRig(options: {
  /** Sample size and seed (the dates are fixed: today 2026-11-20, records updated 2026-11-01). */
  contacts: number;
  seed: number;
  /** File tenants over the one folder (default: acme). */
  tenants?: string[];
  env?: Record<string, string>;
  logLevel?: string;
  /** Write the sample before the rig starts (default true; false leaves the folder empty). */
  writeSample?: boolean;
}): SampleRig {
  const redis = useTestRedis();
  const parts: Partial<{ -readonly [K in keyof Omit<SampleRig, 'redis'>]: SampleRig[K] }> = {};
  beforeAll(async () => {
    parts.folder = await mkdtemp(join(tmpdir(), 'cs-sample-'));
    parts.data = sampleData({ contacts: options.contacts, seed: options.seed, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    if (options.writeSample !== false) await writeSampleFolder(parts.folder, parts.data);
    const folder = parts.folder;
    parts.rig = await startRig({
      redisUrl: redis.url,
      tenants: (options.tenants ?? ['acme']).map((id) => ({ id, platform: { kind: 'file', path: folder } })),
      ...(options.env ? { env: options.env } : {}),
      ...(options.logLevel ? { logLevel: options.logLevel } : {}),
    });
  });
  afterAll(async () => {
    await parts.rig?.close();
    if (parts.folder) await rm(parts.folder, { recursive: true, force: true });
  });
  const get = <K extends keyof typeof parts>(k: K): SampleRig[K] => {
    const v = parts[k];
    if (v === undefined) throw new Error(`useSampleRig: ${k} is read before beforeAll ran`);
    return v;
  };
  return {
    redis,
    get rig() {
      return get('rig');
    },
    get folder() {
      return get('folder');
    },
    get data() {
      return get('data');
    },
  };
}
