/**
 * `status`: queues, last runs, cursors, auth state and dead letters, per tenant. Read-only, so it opens the
 * state runtime (src/app-state.ts) and never the App: no BullMQ, no token protocol (issue 14: it starts fast).
 */
import { ENTITIES } from '../../glossary.js';
import { describeCounts } from '../run-counts.js';
import type { DeadLetterCounts } from '../../state/dead-letters.js';
import { openStateRuntime, out, outJson, requireTenant, warn } from '../runtime.js';

/**
 * A duration for people: `45 s`, `25 min`, `3 h 5 min`, `2 days 4 h`. Written here rather than with date-fns, whose
 * formatDistance loads a locale: `status` loads commander, ioredis and zod only (issue 14; docs/decisions/0108).
 */
export function humanDuration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const days = Math.floor(h / 24);
  return h % 24 === 0 ? `${days} days` : `${days} days ${h % 24} h`;
}

/** `25 min ago (2026-11-27 10:02 UTC)`, or `in 4 min (...)` for a time ahead. */
export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (ms === undefined || ms === null) return '-';
  const when = `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `${ms <= now ? `${humanDuration(now - ms)} ago` : `in ${humanDuration(ms - now)}`} (${when})`;
}

/** `3 (contacts 3)`, or `none`. */
function deadLetterLine(d: DeadLetterCounts): string {
  if (d.total === 0) return 'none';
  const parts = Object.entries(d.byEntity).filter(([, n]) => n > 0).map(([e, n]) => `${e} ${n}`);
  return `${d.total} (${parts.join(', ')}): collections-sync dead-letters list --tenant <id>`;
}

export async function status(o: { tenant?: string; json?: boolean }): Promise<void> {
  const { app } = await openStateRuntime();
  try {
    const { stores } = app;
    const tenants = o.tenant ? [requireTenant(app, o.tenant)] : app.tenants();
    const [queues, redisWarning, report] = await Promise.all([
      app.queueCounts(),
      app.redisWarning(),
      Promise.all(
        tenants.map(async (t) => {
          const [cursorList, auth, lastRuns, deadLetters, pendingInvoices, runLock, lastDelivery] = await Promise.all([
            Promise.all(ENTITIES.map(async (e) => [e, (await stores.cursors.get(t.id, e))?.highWater ?? null] as const)),
            app.authStatus(t),
            stores.runs.recent(t.id, 5),
            stores.deadLetters.counts(t.id),
            stores.pending.count(t.id),
            stores.runLock.holder(t.id),
            stores.deliveries.last(t.id),
          ]);
          return { tenant: t.id, platform: t.platform.kind, lastRuns, cursors: Object.fromEntries(cursorList), auth, deadLetters, pendingInvoices, runLock: runLock ?? null, lastDelivery: lastDelivery ?? null };
        }),
      ),
    ]);
    // The eviction warning goes to stderr as well, where the commands that open the App log it at start.
    if (redisWarning !== undefined) warn(`redis: ${redisWarning}`);
    if (o.json) return outJson({ redis: { warning: redisWarning ?? null }, queues, tenants: report }, 2);
    out('queues:');
    for (const [name, c] of Object.entries(queues)) out(`  ${name.padEnd(13)} ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    for (const r of report) {
      out(`\ntenant ${r.tenant} (${r.platform})`);
      const a = r.auth;
      const failure = a.failure ? `FAILED: ${a.failure.reason} (${a.failure.failures} times; next try ${ago(a.failure.nextAttemptAt)}). Fix the client secret in the tenants file; the worker picks it up.` : 'ok';
      out(`  auth: ${failure}; token v${a.version ?? '-'} expires ${ago(a.expiresAt)}${a.gateClosed ? '; GATE CLOSED (rotating)' : ''}`);
      for (const e of ENTITIES) {
        const c = r.cursors[e] ?? null;
        const future = c !== null && Date.parse(c.updatedAt) > Date.now() + 5 * 60_000 ? ' IN THE FUTURE (the next run reads everything and sets it back)' : '';
        out(`  cursor ${e.padEnd(9)} ${c ? `${c.updatedAt} / ${c.id}${future}` : '(none: next run reads everything)'}`);
      }
      out(`  dead letters: ${deadLetterLine(r.deadLetters).replace('<id>', r.tenant)}`);
      out(`  invoices waiting for their contact: ${r.pendingInvoices}`);
      if (r.runLock) out(`  running now: ${r.runLock}`);
      const d = r.lastDelivery;
      if (d) out(`  run webhook: ${d.type} ${d.eventId} ${d.state} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${d.statusCode !== undefined ? ` (status ${d.statusCode})` : d.error ? ` (${d.error})` : ''} ${ago(d.at)}`);
      for (const run of r.lastRuns) {
        out(`  run ${run.runId} ${run.mode} ${run.outcome === 'waiting' ? 'waiting for connection' : (run.outcome ?? running(run))} started ${ago(run.startedAt)}: ${describeCounts(run.counts) || 'nothing to do'}`);
        if (run.outcome === undefined && run.waiting) out(`    waiting on: ${run.waiting}`);
        if (run.stalls) out(`    stalled ${run.stalls.count} time${run.stalls.count === 1 ? '' : 's'} (the last ${ago(run.stalls.at)}): ${run.stalls.reason}`);
      }
    }
    return undefined;
  } finally {
    app.close();
  }
}

/** `running (contacts), last progress 12 min ago (2026-12-02 10:02 UTC)`: a run quiet for long says so before the watchdog acts. */
function running(run: { phase?: string | undefined; progressAt?: number | undefined }): string {
  return `running (${run.phase ?? 'starting'})${run.progressAt === undefined ? '' : `, last progress ${ago(run.progressAt)}`}`;
}
