import { addMilliseconds } from 'date-fns';
import type { Cursor } from '../platforms/types.js';

/**
 * Where an incremental read of an entity starts: its high-water mark minus the lookback (the content hashes make
 * the overlap free); from the beginning when the entity was never read to the end.
 */
export function readFrom(highWater: Cursor | undefined, lookbackMs: number): Cursor | undefined {
  if (!highWater) return undefined;
  return { updatedAt: addMilliseconds(new Date(highWater.updatedAt), -lookbackMs).toISOString(), id: '' };
}
