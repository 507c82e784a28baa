/**
 * The content hash of a request body: sha256 over a canonical JSON (object keys sorted at every depth, undefined
 * and functions left out of objects and written as null in arrays, non-finite numbers as null, like JSON), so
 * the same content always hashes the same whatever the key order. Volatile fields (the `uuid` the service gave)
 * are the caller's to leave out. node:crypto is computation, not I/O.
 */
import { createHash } from 'node:crypto';

/** The canonical JSON text of `value`. */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'null';
}

/**
 * First 18 hex characters (72 bits) of the sha256 of the canonical JSON: change detection for one record, where a
 * false "unchanged" needs a change that keeps 72 bits of sha256 (2^-72 per change; docs/decisions/0040 "lean state
 * values"). Versions before lean state kept 32 (the id map reads their hashes by this prefix).
 */
export function contentHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body), 'utf8').digest('hex').slice(0, 18);
}

function write(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      break;
  }
  if (value === null) return 'null';
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === 'function') return write(withJson.toJSON());
  // Built by concatenation (no per-level arrays of parts): this runs for every record of every sync.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) out += (i > 0 ? ',' : '') + (write(value[i]) ?? 'null');
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(obj).sort()) {
    const text = write(obj[key]);
    if (text !== undefined) out += (out.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + text;
  }
  return `${out}}`;
}
