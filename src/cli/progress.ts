/** A progress bar for `--wait` on a terminal; plain lines otherwise (CI, pipes). */
import cliProgress from 'cli-progress';
import type { RunRecord } from '../state/index.js';
import { describeCounts, recordsDone } from './run-counts.js';

export interface RunProgress {
  update(run: RunRecord): void;
  stop(): void;
}

/**
 * `estimate`: the records the tenant's last finished run dealt with; the bar's total until this run passes it
 * (a first run has none, and its bar grows with the work found).
 */
export function runProgress(label: string, estimate = 0): RunProgress {
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
  bar.start(Math.max(1, estimate), 0, { phase: 'starting', detail: '' });
  return {
    update(run) {
      const done = recordsDone(run.counts);
      bar.setTotal(Math.max(run.outcome === undefined ? done + 1 : done, estimate, 1));
      bar.update(done, { phase: (run.phase ?? 'starting').padEnd(9), detail: describeCounts(run.counts) });
    },
    stop: () => bar.stop(),
  };
}
