import type { z } from 'zod';

/** One line per zod issue: `  - <where>: <message>`. Never includes the offending value. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], where: (path: PropertyKey[]) => string): string {
  return issues.map((issue) => `  - ${where(issue.path) || '(root)'}: ${issue.message}`).join('\n');
}
