/** Spawning child.ts processes and reading their JSON lines. */
import { fileURLToPath } from 'node:url';
import { spawnJsonChild, type JsonChild } from '../../helpers/json-child.js';
import type { XeroChildConfig, XeroChildSummary } from './child.js';

const SCRIPT = fileURLToPath(new URL('./child.ts', import.meta.url));

export type XeroChild = JsonChild<XeroChildSummary>;

export function spawnXeroChild(config: XeroChildConfig): XeroChild {
  return spawnJsonChild<XeroChildSummary>(SCRIPT, 'XERO_CHILD_CONFIG', config);
}
