/** `demo`: what runs (the command is in ../commands/demo.ts). */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { runDemo } from '../../demo/demo.js';
import { demoSample, writeDemoSample } from '../../demo/sample.js';
import { formatSummary } from '../../demo/summary.js';
import { createLogger } from '../../logger.js';
import { runProgress } from '../progress.js';
import { out, outJson, UsageError } from '../runtime.js';

export async function demo(o: { contacts: string; json?: boolean; writeSample?: string }): Promise<void> {
  const contacts = Number(o.contacts);
  if (!Number.isInteger(contacts) || contacts < 1 || contacts > 100_000) throw new UsageError('--contacts must be a whole number from 1 to 100000');
  if (o.writeSample !== undefined) {
    const folder = resolve(o.writeSample);
    await mkdir(folder, { recursive: true });
    const sample = demoSample({ contacts });
    await writeDemoSample(folder, sample);
    if (o.json) return outJson({ folder, contacts: sample.contacts.length, invoices: sample.invoices.length, payments: sample.payments.length, badLines: sample.bad.length }, 2);
    out(`wrote ${sample.contacts.length} contacts, ${sample.invoices.length} invoices, ${sample.payments.length} payments and ${sample.bad.length} bad lines to ${folder}`);
    return;
  }

  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const say = o.json ? () => undefined : (line: string) => process.stderr.write(`demo: ${line}\n`);
  try {
    const summary = await runDemo({
      redisUrl: process.env['REDIS_URL'] || undefined,
      contacts,
      logger: createLogger({ level: 'warn' }),
      step: say,
      signal: abort.signal,
      ...(o.json ? {} : { progress: (label: string) => runProgress(label) }),
    });
    if (o.json) outJson(summary, 2);
    else for (const line of formatSummary(summary)) out(line);
  } catch (err) {
    if (abort.signal.aborted) {
      process.stderr.write('demo: interrupted; everything it started has been stopped\n');
      process.exitCode = 130;
      return;
    }
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
