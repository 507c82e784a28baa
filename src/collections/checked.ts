/**
 * Request bodies checked once (issue 14). The mapper checks every body it builds against the service's request
 * schema (its safety net: a body the service would refuse is dead-lettered before it is sent); the client checks
 * every body it sends. A body that passed the mapper's check is frozen (deeply: nothing can change it after) and
 * remembered with its schema, and the client does not check it a second time. Any other body, or one checked
 * against another schema, is checked by the client as before.
 */
import type { z } from 'zod';
import { fastCheckOf } from '../zod-fast-check.js';

const checkedBy = new WeakMap<object, z.ZodType>();

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

/** `value` is zod's output of `schema`: frozen and remembered as checked by it. Returns it. */
export function markChecked<T>(schema: z.ZodType, value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  deepFreeze(value);
  checkedBy.set(value, schema);
  return value;
}

/**
 * `value` itself, frozen and marked checked, when the schema's quick check (src/zod-fast-check.ts) passes it: zod would
 * accept it and give back an equal value. Undefined otherwise: then parse with zod (it names what is wrong).
 */
export function quickChecked<S extends z.ZodType>(schema: S, value: unknown): z.output<S> | undefined {
  if (fastCheckOf(schema)?.(value) !== true) return undefined;
  return markChecked(schema, value as z.output<S>);
}

/** Whether `value` is a body `markChecked` recorded for this very schema. */
export function wasChecked(schema: z.ZodType, value: unknown): boolean {
  return typeof value === 'object' && value !== null && checkedBy.get(value) === schema;
}
