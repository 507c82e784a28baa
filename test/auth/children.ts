/** Spawning fleet-child.ts processes and reading their JSON lines. */
import { fileURLToPath } from 'node:url';
import { spawnJsonChild, type ChildEvent, type JsonChild } from '../helpers/json-child.js';
import type { ChildConfig, ChildSummary } from './fleet-child.js';

export type { ChildEvent };

const SCRIPT = fileURLToPath(new URL('./fleet-child.ts', import.meta.url));

export interface Child extends JsonChild<ChildSummary> {
  /** Resolves with the summary when the process exits 0; rejects with its error and stderr otherwise. */
  readonly done: Promise<ChildSummary>;
}

export function spawnChild(config: ChildConfig): Child {
  const child = spawnJsonChild<ChildSummary>(SCRIPT, 'AUTH_CHILD_CONFIG', config);
  const done = child.summary();
  done.catch(() => undefined);
  return Object.assign(child, { done });
}
