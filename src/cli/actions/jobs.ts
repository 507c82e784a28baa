/** `jobs contract`: what runs (the command is in ../commands/jobs.ts). Configuration only: no Redis, no tenants file. */
import { loadEnv } from '../../config/env.js';
import { jobContract, type OutsideJob } from '../../queues/contract.js';
import { out, outJson } from '../runtime.js';

export async function contract(o: { json?: boolean }): Promise<void> {
  const c = jobContract(loadEnv().KEY_PREFIX);
  if (o.json) return outJson(c, 2);
  out(`Jobs that code outside collections-sync may add, for KEY_PREFIX ${c.keyPrefix} (the JSON Schemas: --json):`);
  for (const q of c.queues) {
    out('');
    out(`queue ${q.queue}, BullMQ prefix "${q.prefix}" (BullMQ's prefix option; a job under any other prefix waits forever)`);
    for (const job of q.jobs) printJob(job);
  }
  return undefined;
}

function printJob(job: OutsideJob): void {
  out(`  job name   ${job.name}: ${job.about}`);
  out('  data       a JSON object with these fields and no others:');
  const schema = job.dataSchema as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const required = new Set(schema.required ?? []);
  const width = Math.max(...Object.keys(schema.properties ?? {}).map((k) => k.length));
  for (const [field, p] of Object.entries(schema.properties ?? {})) {
    out(`    ${field.padEnd(width)}  ${required.has(field) ? 'required' : 'optional'}, ${typeOf(p)}${typeof p['description'] === 'string' ? `: ${p['description']}` : ''}`);
  }
  out(`  example    ${JSON.stringify(job.example)}`);
  if (job.deduplication) {
    out(`  dedupe     deduplication id ${job.deduplication.id}, keepLastIfActive true`);
    out(`             (${job.deduplication.escaping}); the example's: ${job.deduplication.exampleId}`);
  }
  out(`  options    ${JSON.stringify(job.options)}`);
  out(`             (what the CLI's own jobs get; without options: no retries, and the worker keeps completed jobs ${keep(job.withoutOptions.removeOnComplete)}, failed ones ${keep(job.withoutOptions.removeOnFail)})`);
  out(`  refused    failed for good at once, the reason in the job's failedReason: ${job.refused.join('; ')}`);
}

function typeOf(p: Record<string, unknown>): string {
  if (Array.isArray(p['enum'])) return `one of ${p['enum'].map((v) => JSON.stringify(v)).join(', ')}`;
  const bounds = [typeof p['minimum'] === 'number' ? `>= ${p['minimum']}` : '', typeof p['maximum'] === 'number' ? `<= ${p['maximum']}` : ''].filter(Boolean).join(' and ');
  const format = typeof p['format'] === 'string' ? ` (${p['format'] === 'date' ? 'a date, YYYY-MM-DD' : p['format']})` : typeof p['pattern'] === 'string' ? ` matching ${p['pattern']}` : '';
  return `${typeof p['type'] === 'string' ? p['type'] : 'any'}${format}${bounds ? ` ${bounds}` : ''}`;
}

function keep(k: { count?: number; age?: number } | undefined): string {
  if (!k) return 'forever';
  const parts = [k.count === undefined ? '' : `the newest ${k.count}`, k.age === undefined ? '' : `for ${k.age % 86_400 === 0 ? `${k.age / 86_400} days` : `${k.age} s`}`];
  return parts.filter(Boolean).join(', ');
}
