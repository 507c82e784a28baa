/**
 * Field checks shared by the mappers, with the service's own rules (src/collections/schemas.ts): strings 1-255
 * after trimming, email as `contactCreateSchema` checks it. An empty (or all-space) string counts as absent.
 */
import { contactCreateSchema, str255 } from '../collections/schemas.js';

/** A field left out of a request because the service would refuse it, and why. */
export interface DroppedField {
  /** The record's field, as a path: `email`, `persons[2].email`, or `persons[2]` for a whole person. */
  field: string;
  reason: string;
}

export type FieldCheck = { kind: 'absent' } | { kind: 'ok'; value: string } | { kind: 'bad'; reason: string };

const ABSENT: FieldCheck = { kind: 'absent' };

/** A 1-255 string after trimming. The value sent is the trimmed one. */
export function checkString(value: string | undefined): FieldCheck {
  const trimmed = value?.trim() ?? '';
  if (trimmed === '') return ABSENT;
  if (!str255.safeParse(trimmed).success) return { kind: 'bad', reason: `${trimmed.length} characters, the limit is 255` };
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
