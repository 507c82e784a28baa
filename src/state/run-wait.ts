/**
 * Waiting for the run that serves a request (CLI `--wait`, the demo, tests). A request may join a queued
 * job or wait behind a running one, so it is served by the first run of its mode that started after it.
 */
import type { RunRecord, RunStore } from './runs.js';
import { sleep } from '../sleep.js';

export interface WaitOptions {
  mode: RunRecord['mode'];
  requestedAt: number;
  timeoutMs?: number;
  pollMs?: number;
  signal?: AbortSignal;
  onProgress?: (run: RunRecord) => void;
}

export class RunWaitTimeout extends Error {
  readonly code = 'RUN_WAIT_TIMEOUT';
}

export async function waitForRun(runs: RunStore, tenant: string, options: WaitOptions): Promise<RunRecord> {
  const deadline = Date.now() + (options.timeoutMs ?? 24 * 3600_000);
  const pollMs = options.pollMs ?? 200;
  // The run may have started a little before `requestedAt` was taken on another clock; allow 50 ms.
  const served = (r: RunRecord): boolean => r.mode === options.mode && r.startedAt >= options.requestedAt - 50;
  for (;;) {
    options.signal?.throwIfAborted();
    const recent = await runs.recent(tenant, 10);
    const mine = recent.filter(served).sort((a, b) => a.startedAt - b.startedAt)[0];
    if (mine) {
      if (mine.outcome !== undefined) return mine;
      options.onProgress?.(mine);
    }
    if (Date.now() > deadline) throw new RunWaitTimeout(`no ${options.mode} run of ${tenant} finished within the wait`);
    await sleep(pollMs, options.signal);
  }
}
