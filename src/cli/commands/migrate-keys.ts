/**
 * `migrate-keys`: moves the Redis keys of the layout before issue 13 to today's (a hash tag per tenant, client,
 * connection and campaign; src/redis/migrate-keys.ts). A dry run unless --yes; idempotent; resumable after a kill.
 */
import type { Command } from 'commander';
import { openRuntime, out, UsageError } from '../runtime.js';

export function registerMigrateKeys(program: Command): void {
  program
    .command('migrate-keys')
    .description("move Redis keys of the old layout (`<KEY_PREFIX>:<kind>:<owner>...`, every key in one slot) to today's (`<base>:<kind>:{<owner>}...`, a hash tag per tenant), and pack old id maps, mirrors and ledgers into packed records; a dry run unless --yes")
    .option('--yes', 'move the keys (without it: only say what would move)')
    .option('--limit <n>', 'move at most n keys, then stop (run again to go on)')
    .option('--json', 'machine-readable output')
    .action(async (o: { yes?: boolean; limit?: string; json?: boolean }) => {
      const limit = o.limit === undefined ? undefined : Number(o.limit);
      if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new UsageError('--limit must be a positive whole number');
      const { migrateKeys } = await import('../../redis/migrate-keys.js');
      const { QUEUES } = await import('../../queues/names.js');
      const rt = await openRuntime('producer');
      try {
        const tenants = rt.app.tenants().map((t) => t.id);
        const moved = await migrateKeys(rt.app.redis, { prefix: rt.env.KEY_PREFIX, tenants, apply: o.yes === true, queues: Object.values(QUEUES), ...(limit !== undefined ? { limit } : {}) });
        // Then each tenant's records into packed records (docs/decisions/0040): entries of the old id map, mirror
        // and ledger hashes. Only here: the worker reads packed records alone and does not start while an old
        // hash is left (docs/decisions/0180). Not after a stop at --limit.
        const { packOldEntries } = await import('../../state/old-hashes.js');
        let entries = 0;
        if (!moved.stopped) for (const t of tenants) entries += await packOldEntries(rt.app.redis, rt.env.KEY_PREFIX, t, moved.applied);
        const report = { ...moved, ...(moved.applied ? { entriesPacked: entries } : { entriesToPack: entries }) };
        if (o.json) return out(JSON.stringify(report, null, 2));
        const others = Object.entries(report.otherTenants);
        if (report.applied) out(`moved ${report.moved} keys; ${report.already} were already moved; packed ${entries} entries of old id maps, mirrors and ledgers into packed records`);
        else out(`would move ${report.wouldMove} keys (${report.already} already moved) and pack ${entries} entries of old id maps, mirrors and ledgers (besides those in keys to move); add --yes to move them`);
        for (const [owner, n] of Object.entries(report.byOwner)) out(`  ${owner}: ${n}`);
        if (report.shortLived > 0) out(`left to expire: ${report.shortLived} short-lived keys (locks, rate limits, token protocol)`);
        if (others.length > 0) out(`left in place, not in the tenants file: ${others.map(([t, n]) => `${t} (${n})`).join(', ')}`);
        if (report.stopped) out(`stopped after --limit ${limit ?? ''}: run again to go on`);
        const queued = Object.entries(report.oldQueueJobs);
        if (queued.length > 0) {
          out(`old queues still hold jobs (not moved): ${queued.map(([q, j]) => `${q} ${j.waiting} waiting, ${j.delayed} delayed, ${j.active} active`).join('; ')}`);
          out('  let the old version drain them before the upgrade, or request those runs again after it (collections-sync sync --tenant <id> --full)');
        }
        return undefined;
      } finally {
        await rt.close();
      }
    });
}
