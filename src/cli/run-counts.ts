/**
 * A run's counts in words, and the records it has dealt with: for `status` and `sync --wait`. A module of its own,
 * apart from the progress bar's, so `status` does not load cli-progress (issue 14: the CLI starts fast).
 */
const DONE_KEYS = ['created', 'updated', 'skipped', 'deadLettered', 'badRecords', 'pending', 'unlinked'];

/** Records a run has dealt with so far (the bar's position). */
export function recordsDone(counts: Record<string, number>): number {
  return DONE_KEYS.reduce((n, k) => n + (counts[k] ?? 0), 0);
}

export function describeCounts(counts: Record<string, number>): string {
  const keys = ['created', 'updated', 'skipped', 'adopted', 'deadLettered', 'badRecords', 'pending', 'unlinked'];
  return keys
    .filter((k) => (counts[k] ?? 0) > 0)
    .map((k) => `${k} ${counts[k]}`)
    .join(', ');
}
