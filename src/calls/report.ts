/**
 * A campaign's account in words, for the command line: what was planned, who was called, who was left out
 * and why, and what needs an operator (unknown outcomes).
 */
import type { CampaignReport, EntryRecord } from './types.js';

const LIST_LIMIT = 50;

function describeSource(r: CampaignReport): string {
  const c = r.campaign;
  if (c.source === 'overdue' && c.criteria) {
    const min = c.criteria.minAmount > 0 ? `, at least ${c.criteria.minAmount} outstanding` : '';
    return `invoices ${c.criteria.overdueDays}+ days overdue${min}${c.criteria.asOf ? ` as of ${c.criteria.asOf}` : ''}`;
  }
  return c.source === 'list' ? 'an explicit list' : 'a single contact';
}

function entryLine(e: EntryRecord): string {
  const who = e.contactId !== undefined ? `${e.label} [${e.contactId}]` : e.label;
  return `    ${e.number}  ${who}${e.reason ? `: ${e.reason}` : ''}`;
}

function section(lines: string[], title: string, items: string[]): void {
  if (items.length === 0) return;
  lines.push(`  ${title}:`);
  lines.push(...items.slice(0, LIST_LIMIT));
  if (items.length > LIST_LIMIT) lines.push(`    … ${items.length - LIST_LIMIT} more (--json lists them all)`);
}

/** Exit code of a finished campaign: 0 all well, 3 some outcomes unknown or failed, 1 the campaign failed. */
export function exitCodeOfReport(r: CampaignReport): number {
  if (r.campaign.status === 'failed') return 1;
  return r.counts.unknown > 0 || r.counts.failed > 0 ? 3 : 0;
}

export function formatReport(r: CampaignReport): string[] {
  const c = r.campaign;
  const lines: string[] = [];
  const preview = c.dryRun ? ' (DRY RUN: nothing reserved, nobody called)' : '';
  lines.push(`campaign ${c.id} of ${c.tenant}, ${describeSource(r)}: ${c.status}${preview}`);
  if (c.error) lines.push(`  error: ${c.error}`);
  if (c.plan) {
    const found = c.plan.invoices !== undefined ? `${c.plan.invoices} invoices of ${c.plan.contacts ?? 0} contacts count; ` : '';
    lines.push(`  ${found}${c.plan.targets} numbers in ${c.plan.requests} request(s); ${c.plan.skipped} left out`);
  }
  const n = r.counts;
  if (c.dryRun) lines.push(`  would call ${n.planned}; in cooldown ${n.cooldown}; left out ${n.skipped}`);
  else {
    lines.push(
      `  called ${n.called}${n.confirmed > 0 ? ` (+${n.confirmed} confirmed)` : ''}, unknown outcome ${n.unknown}, failed ${n.failed}, ` +
        `cooldown ${n.cooldown}, cancelled ${n.cancelled}, released ${n.released}, not yet sent ${n.planned}, left out ${n.skipped}`,
    );
  }
  const by = (state: EntryRecord['state']) => r.entries.filter((e) => e.state === state).map(entryLine);
  section(lines, 'UNKNOWN OUTCOME (never retried): check, then `calls confirm` or `calls release`', by('unknown'));
  section(lines, 'failed (numbers released)', by('failed'));
  section(lines, 'in cooldown (called recently)', by('cooldown'));
  if (c.dryRun) section(lines, 'would call', by('planned'));
  section(
    lines,
    'left out',
    r.skipped.map((s) => `    ${s.who}${s.name !== undefined ? ` (${s.name})` : ''}: ${s.reason}: ${s.detail}`),
  );
  return lines;
}
