/**
 * What the rooms that report zod issues share (the client's local refusals and the simulator's 422s in
 * src/collections, bad records' reasons in src/platforms): zod 4 leaves `issue.input` out unless a parse asks for
 * it (`reportInput`), and without it a value of the wrong type (`"total": "abc"`) cannot be told from a missing
 * one. Asking for it on every parse slows the common, successful parse (about 1.5-4x: zod leaves its fast path),
 * so a failed parse is parsed again, with the inputs, for its report only.
 */
import type { z } from 'zod';

/** The issues of `value` against `schema`, each with its input: call it once a parse has failed. */
export function reportedIssues(schema: z.ZodType, value: unknown): z.core.$ZodIssue[] {
  return schema.safeParse(value, { reportInput: true }).error?.issues ?? [];
}

/** The value is absent (not of the wrong type). Needs an issue from `reportedIssues`. */
export function isMissing(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'invalid_type' && issue.input === undefined;
}
