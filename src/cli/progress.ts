/** A progress bar for `--wait` on a terminal; plain lines otherwise (CI, pipes). */
import cliProgress from 'cli-progress';
import type { RunRecord } from '../state/index.js';

export interface RunProgress {
  update(run: RunRecord): void;
  stop(): void;
}

export function runProgress(label: string): RunProgress {
  if (!process.stderr.isTTY) {
    let last = 0;
    return {
      update(run) {
        if (Date.now() - last < 2_000) return;
        last = Date.now();
        process.stderr.write(`${label}: ${run.phase ?? 'starting'} ${describeCounts(run.counts)}\n`);
      },
      stop: () => undefined,
    };
  }
  const bar = new cliProgress.SingleBar(
    { format: `${label} {phase} |{bar}| {value} records  {detail}`, stream: process.stderr, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(1, 0, { phase: 'starting', detail: '' });
  return {
    update(run) {
      const done = ['created', 'updated', 'skipped', 'deadLettered', 'badRecords', 'pending', 'unlinked'].reduce((n, k) => n + (run.counts[k] ?? 0), 0);
      bar.setTotal(Math.max(done + 1, bar.getTotal()));
      bar.update(done, { phase: (run.phase ?? 'starting').padEnd(9), detail: describeCounts(run.counts) });
    },
    stop: () => bar.stop(),
  };
}

export function describeCounts(counts: Record<string, number>): string {
  const keys = ['created', 'updated', 'skipped', 'adopted', 'deadLettered', 'badRecords', 'pending', 'unlinked'];
  return keys
    .filter((k) => (counts[k] ?? 0) > 0)
    .map((k) => `${k} ${counts[k]}`)
    .join(', ');
}
