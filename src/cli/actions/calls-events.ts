/**
 * `calls events --tenant ID`: the call webhook events kept for a tenant (newest first), with what the worker made
 * of each (settled, unmatched, unchanged, or not yet worked). The command is in ../commands/calls.ts.
 */
import { findRequestMetadata } from '../../webhooks/events.js';
import { out, outJson, requireTenant, UsageError, withRuntime } from '../runtime.js';

export async function events(o: { tenant: string; limit: string; json?: boolean }): Promise<void> {
  const limit = Number(o.limit);
  if (!/^\d+$/.test(o.limit.trim()) || limit < 1 || limit > 100_000) throw new UsageError(`--limit must be a whole number from 1 to 100000 (got "${o.limit}")`);
  return withRuntime(async ({ app }) => {
    const tenant = requireTenant(app, o.tenant);
    const list = await app.webhookEvents.list(tenant.id, limit);
    if (o.json) return outJson({ tenant: tenant.id, events: list });
    if (list.length === 0) return out(`no webhook events kept for ${tenant.id}`);
    out(`webhook events of ${tenant.id}, newest first (${list.length}):`);
    for (const e of list) {
      const meta = findRequestMetadata(e.body);
      const names = meta ? ['campaignId', 'number', 'contactUuid'].flatMap((k) => (typeof meta[k] === 'string' ? [`${k}=${meta[k]}`] : [])).join(' ') : 'no requestMetadata';
      const outcome = e.outcome === undefined ? 'not yet worked' : `${e.outcome}${e.detail ? ` (${e.detail})` : ''}`;
      out(`  ${new Date(e.receivedAt).toISOString()}  ${e.id}  ${outcome}  ${names}`);
    }
    return undefined;
  });
}
