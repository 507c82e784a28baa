/** The demo's closing report for people: the table of the two runs, the dead letters, and where to look next. */
import type { DemoSummary } from './demo.js';

const ROWS: [string, (r: DemoSummary['runs'][number]) => number][] = [
  ['created', (r) => r.created],
  ['updated', (r) => r.updated],
  ['skipped (unchanged)', (r) => r.skipped],
  ['dead-lettered', (r) => r.deadLettered],
  ['requests sent', (r) => r.requests],
  ['tokens issued', (r) => r.tokensIssued],
];

function table(summary: DemoSummary): string[] {
  const heads = summary.runs.map((r) => (r.mode === 'full' ? 'full sync' : 'incremental'));
  const labelWidth = Math.max(...ROWS.map(([l]) => l.length), 'records'.length) + 2;
  const widths = heads.map((h) => Math.max(h.length, 8) + 2);
  const row = (label: string, cells: string[]): string =>
    `  ${label.padEnd(labelWidth)}${cells.map((c, i) => c.padStart(widths[i] ?? 10)).join('')}`;
  const lines = [row('', heads), row('', heads.map((h) => '-'.repeat(h.length)))];
  for (const [label, get] of ROWS) lines.push(row(label, summary.runs.map((r) => String(get(r)))));
  lines.push(row('outcome', summary.runs.map((r) => r.outcome)));
  lines.push(row('seconds', summary.runs.map((r) => r.seconds.toFixed(1))));
  return lines;
}

export function formatSummary(summary: DemoSummary): string[] {
  const s = summary;
  const lines: string[] = [''];
  lines.push(
    `Sample: ${s.sample.contacts} Saudi B2B customers, ${s.sample.invoices} invoices, ${s.sample.payments} payments, ${s.sample.badLines} bad lines; ` +
      `then ${s.changes.renamed} customers renamed and ${s.changes.paid} invoices paid.`,
  );
  lines.push('');
  lines.push(...table(s));
  lines.push('');
  lines.push(
    `Cross-check: the worker counted ${s.client.requests} requests and ${s.client.rotations} token rotation(s); the simulator answered ` +
      `${s.simulator.requests} requests, issued ${s.simulator.tokensIssued} token(s), committed ${s.simulator.writesCommitted} writes, ` +
      `and holds ${s.simulator.contacts} contacts and ${s.simulator.invoices} invoices. Requests cut off by a rotation: ${s.simulator.supersededInFlight}.`,
  );
  if (s.deadLetters.length > 0) {
    lines.push('');
    lines.push('Dead letters (where: reason):');
    for (const d of s.deadLetters) lines.push(`  ${d.entity} ${d.where}: ${d.reason}`);
  }
  if (s.flagged.length > 0) {
    lines.push('');
    lines.push('Pushed without a bad optional field (hasErrors, errorDetail):');
    for (const f of s.flagged.slice(0, 10)) lines.push(`  ${f.id}: ${f.errorDetail}`);
  }
  lines.push('');
  lines.push(...whereToLookNext());
  lines.push(`Done in ${s.seconds.toFixed(1)} s; everything the demo started has stopped.`);
  return lines;
}

/** The summary's pointers. Every README "…" it names is a heading of the README (a test holds it). */
export function whereToLookNext(): string[] {
  return [
    'Where to look next:',
    '  README: "Quick start", "Configuration", "Tenants file", "The command line", "Operations", "Troubleshooting".',
    '  Your own data: write a tenants file (README "Tenants file"), run `collections-sync worker`, then',
    '    `collections-sync sync --tenant <id> --full --wait` (docs/trying-by-hand.md).',
    '  What the worker did: `collections-sync status` and `collections-sync dead-letters list --tenant <id>`.',
    '  From your own app: the control API and signed run webhooks (README "Driving it from your app").',
    '  Metrics and health of a running worker: http://127.0.0.1:9464/metrics, /healthz, /readyz (OPS_PORT).',
    '  The stack in containers, no credentials needed: `docker compose -f docker/compose.yaml --profile simulator up` (README "Operations").',
  ];
}
