/**
 * Reading back what Redis holds: every value goes through a zod schema, and a value that does not fit is a
 * `StateCorruptError` naming the key (and field), never a half-typed object travelling on.
 */
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import { fastCheckOf } from '../zod-fast-check.js';

export class StateCorruptError extends Error {
  readonly code = 'STATE_CORRUPT';
  constructor(
    readonly key: string,
    readonly field: string | undefined,
    problem: string,
  ) {
    super(`corrupt state value at ${key}${field === undefined ? '' : ` field ${JSON.stringify(field)}`}: ${problem}`);
    this.name = 'StateCorruptError';
  }
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? `${i.path.map(String).join('.')}: ` : ''}${i.message}`)
    .join('; ');
}

/** Parses an already-decoded value (one the schema's quick check passes, src/zod-fast-check.ts, as it is). */
export function parseValue<T>(schema: z.ZodType<T>, value: unknown, key: string, field?: string): T {
  if (fastCheckOf(schema)?.(value) === true) return value as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new StateCorruptError(key, field, describe(parsed.error));
  return parsed.data;
}

/** Parses a JSON string held in Redis. */
export function parseJson<T>(schema: z.ZodType<T>, raw: string, key: string, field?: string): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new StateCorruptError(key, field, `not JSON (${JSON.stringify(raw.slice(0, 40))})`);
  }
  return parseValue(schema, value, key, field);
}

/** `[field, value, field, value, ...]` (HSCAN, HGETALL-as-array) to pairs. */
export function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}

/** HGETALL's reply as Redis sends it, `[field, value, ...]` (ioredis' `hgetall` makes an object of it). */
export async function hgetallFlat(client: Redis, key: string): Promise<unknown> {
  return client.call('HGETALL', key);
}

/** HGETALL as field/value pairs (a flat reply, so a field named `__proto__` stays a plain field). */
export async function hgetallPairs(redis: Redis, key: string): Promise<[string, string][]> {
  const flat = await hgetallFlat(redis, key);
  if (!Array.isArray(flat) || !flat.every((v): v is string => typeof v === 'string')) {
    throw new StateCorruptError(key, undefined, 'HGETALL did not return strings');
  }
  return pairs(flat);
}
