/**
 * Field checks shared by the mappers, with the service's own rules (src/collections/schemas.ts): strings 1-255
 * after trimming, email as `contactCreateSchema` checks it. An empty (or all-space) string counts as absent.
 */
import { contactCreateSchema, STRING_MAX } from '../collections/schemas.js';

/** A field left out of a request (or cut to fit, with `cut`) because the service would refuse it, and why. */
export interface DroppedField {
  /** The record's field, as a path: `email`, `persons[2].email`, or `persons[2]` for a whole person. */
  field: string;
  reason: string;
  /** Sent cut to the limit (free text) rather than left out. */
  cut?: true;
}

export type FieldCheck = { kind: 'absent' } | { kind: 'ok'; value: string } | { kind: 'bad'; reason: string };

const ABSENT: FieldCheck = { kind: 'absent' };

/**
 * A 1-255 string after trimming. The value sent is the trimmed one. `str255`'s rule (1 to STRING_MAX UTF-16 units)
 * by its length, without a zod parse per field of every record.
 */
export function checkString(value: string | undefined): FieldCheck {
  const trimmed = value?.trim() ?? '';
  if (trimmed === '') return ABSENT;
  if (trimmed.length > STRING_MAX) return { kind: 'bad', reason: `${trimmed.length} characters, the limit is 255` };
  return { kind: 'ok', value: trimmed };
}

const emailCheck = contactCreateSchema.shape.email;

/** An email address, by the same zod check the contact request schema applies. */
export function checkEmail(value: string | undefined): FieldCheck {
  const trimmed = value?.trim() ?? '';
  if (trimmed === '') return ABSENT;
  const parsed = emailCheck.safeParse(trimmed);
  if (!parsed.success) return { kind: 'bad', reason: 'not a valid email address' };
  return { kind: 'ok', value: trimmed };
}

/**
 * Trimmed text cut to `max` characters, the last one an ellipsis: whole characters only (never half of a
 * surrogate pair), trailing space left out. Lengths count UTF-16 units, as the request schemas do.
 */
export function cutText(value: string, max = STRING_MAX): string {
  let out = '';
  for (const ch of value.trim()) {
    if (out.length + ch.length > max - 1) break;
    out += ch;
  }
  return `${out.trimEnd()}…`;
}

/** A free-text field with no length rule: trimmed, absent when empty. */
export function optionalText(value: string | undefined): string | undefined {
  const trimmed = value?.trim() ?? '';
  return trimmed === '' ? undefined : trimmed;
}

/**
 * Runs `check` on an optional field: puts the value in `into[key]` when good, notes it in `dropped` when bad,
 * leaves it out when absent.
 */
export function takeOptional(
  into: Record<string, unknown>,
  key: string,
  check: FieldCheck,
  path: string,
  dropped: DroppedField[],
): void {
  if (check.kind === 'ok') into[key] = check.value;
  else if (check.kind === 'bad') dropped.push({ field: path, reason: check.reason });
}

/**
 * `body` with `null` for each of `keys` it lacks: what an update sends so that the service clears a field the
 * record no longer has (the service answers unset fields as null).
 */
export function withNulls<T extends object>(body: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const key of keys) if (out[key] === undefined) out[key] = null;
  return out as T;
}
