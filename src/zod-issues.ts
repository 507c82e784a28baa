/**
 * What the rooms that report zod issues share (the client's local refusals and the simulator's 422s in
 * src/collections, bad records' reasons in src/platforms): zod 4 leaves `issue.input` out unless a parse asks for
 * it, and without it a value of the wrong type (`"total": "abc"`) cannot be told from a missing one.
 */
import type { z } from 'zod';

/** Parse options of every check whose issues are reported. */
export const REPORT_INPUT = { reportInput: true } as const;

/** The value is absent (not of the wrong type). Needs an issue from a parse with `REPORT_INPUT`. */
export function isMissing(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'invalid_type' && issue.input === undefined;
}
