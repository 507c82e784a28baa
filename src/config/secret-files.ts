/**
 * Secret settings from files, the Docker and Kubernetes secrets convention (decision 122): beside a secret setting
 * `X`, the environment may hold `X_FILE`, the path of a file whose content is the value (one trailing newline
 * dropped, as `echo` and editors leave one). Setting both is refused; so is a file that cannot be read or is empty.
 *
 * A schema marks its secret keys once, with `secret(...)`; `secretKeys` derives the set from the schema, so a new
 * secret setting gets its `_FILE` twin by being marked. The tenants file's `${VAR}` placeholders hold secrets by
 * convention: each may come from `VAR_FILE` the same way (`readVariable`).
 *
 * Read at start (and when the tenants file is reloaded), never at import. Problems are returned as lines, each
 * naming the variable and the path, for the caller to report with its other problems in one message.
 */
import { readFileSync } from 'node:fs';
import type { z } from 'zod';

export const FILE_SUFFIX = '_FILE';

const SECRETS = new WeakSet<z.ZodType>();

/** Marks a setting's schema as a secret: it may come from `<KEY>_FILE`. Returns the schema itself. */
export function secret<T extends z.ZodType>(schema: T): T {
  SECRETS.add(schema);
  return schema;
}

/** The keys of a schema's shape marked with `secret(...)`, in the shape's order. */
export function secretKeys(shape: Readonly<Record<string, z.ZodType>>): string[] {
  return Object.entries(shape)
    .filter(([, s]) => SECRETS.has(s))
    .map(([k]) => k);
}

const set = (v: string | undefined): v is string => v !== undefined && v !== '';

/** One trailing newline (`\n` or `\r\n`) dropped; anything before it is the value. */
function withoutTrailingNewline(text: string): string {
  return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
}

/**
 * The value of `name` from `source`, or from the file `source[name_FILE]` names. `problem` (one line, naming the
 * variable and the path, never the value) when both are set, or the file cannot be read or is empty.
 */
export function readVariable(source: NodeJS.ProcessEnv, name: string): { value?: string; problem?: string } {
  const fileVar = `${name}${FILE_SUFFIX}`;
  const path = source[fileVar];
  const direct = source[name];
  if (!set(path)) return set(direct) ? { value: direct } : {};
  if (set(direct)) return { problem: `set ${name} or ${fileVar}, not both` };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { problem: `${fileVar}: cannot read ${path} (${code})` };
  }
  const value = withoutTrailingNewline(text);
  if (value === '') return { problem: `${fileVar}: ${path} is empty` };
  return { value };
}

/**
 * `source` with each of `keys` taken from its `_FILE` twin where that is set (a copy; `source` is not changed).
 * `problems`: one line per key that could not be read, as `  - KEY_FILE: ...`; `failed`: those keys, left unset.
 */
export function readSecretFiles(source: NodeJS.ProcessEnv, keys: readonly string[]): { env: NodeJS.ProcessEnv; problems: string[]; failed: Set<string> } {
  const env: NodeJS.ProcessEnv = { ...source };
  const problems: string[] = [];
  const failed = new Set<string>();
  for (const key of keys) {
    if (!set(source[`${key}${FILE_SUFFIX}`])) continue;
    const { value, problem } = readVariable(source, key);
    if (problem !== undefined) {
      problems.push(`  - ${problem.startsWith(`${key}${FILE_SUFFIX}:`) ? problem : `${key}${FILE_SUFFIX}: ${problem}`}`);
      failed.add(key);
      delete env[key];
    } else env[key] = value;
  }
  return { env, problems, failed };
}
