/**
 * API_KEYS: the keys of the control API (src/api), one entry per key, separated by commas or newlines:
 *
 *   <name>:<key>                         a key for every tenant
 *   <name>:<key>:<tenant>|<tenant>...    a key limited to these tenants (any other is answered as unknown: 404)
 *
 * The name is what logs and metrics show (never the key): letters, digits, `_ . -`, at most 64. A key is at least
 * 32 characters, none of them `:`, `,`, `|` or white space (`openssl rand -base64 32` gives 44), and not predictable
 * (estimatedKeyBits below, at least API_KEY_MIN_BITS). Names and keys are unique. A problem names the entry by its
 * number (and its name once that parsed), never by its key.
 */
import { Secret } from '../secret.js';

export const API_KEY_MIN_CHARS = 32;
/**
 * The least entropy a key may be estimated to have (decision 0171). `openssl rand -hex 16`, the shortest random key
 * allowed, is estimated at 87 bits or more in 2 million draws (119 on average); `openssl rand -base64 32` at 190 or more.
 */
export const API_KEY_MIN_BITS = 80;

/**
 * A key's entropy as estimated here: each character counts log2 of the number of distinct characters in the key,
 * except one that carries on a run of equal steps between neighbouring characters (the third `a` of `aaa`, the `c`
 * of `abc`, the `5` of `135`) or ends three characters already seen earlier in the key (a repeat), which count
 * nothing. A guard against placeholders, repeats and runs, not a proof of randomness: a key from `openssl rand`
 * passes by far, a word or a keyboard walk may pass too.
 */
export function estimatedKeyBits(key: string): number {
  const perChar = Math.log2(Math.max(2, new Set(key).size));
  let counted = 0;
  for (let i = 0; i < key.length; i += 1) {
    const run = i >= 2 && key.charCodeAt(i) - key.charCodeAt(i - 1) === key.charCodeAt(i - 1) - key.charCodeAt(i - 2);
    const repeat = i >= 3 && key.slice(0, i - 1).includes(key.slice(i - 2, i + 1));
    if (!run && !repeat) counted += 1;
  }
  return counted * perChar;
}
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const KEY = /^[^\s:,|]+$/;
const TENANT = /^[a-z][a-z0-9_-]{0,62}$/;

export interface ApiKey {
  /** Shown in logs and metrics. */
  name: string;
  key: Secret;
  /** The tenants the key may see; undefined: every tenant. */
  tenants?: ReadonlySet<string>;
}

/** The entries of API_KEYS, or the problems (one line each, naming the entry, never echoing a key). */
export function parseApiKeys(text: string): { keys: ApiKey[]; problems: string[] } {
  const keys: ApiKey[] = [];
  const problems: string[] = [];
  const entries = text.split(/[,\n]/).map((e) => e.trim()).filter((e) => e !== '');
  entries.forEach((entry, i) => {
    const n = `entry ${i + 1}`;
    const [name = '', key = '', tenants, ...rest] = entry.split(':');
    if (!NAME.test(name)) return void problems.push(`${n}: the name (before the first ":") must be 1-64 letters, digits, _ . - (<name>:<key>[:<tenant>|<tenant>...])`);
    const at = `${n} (${name})`;
    if (rest.length > 0) return void problems.push(`${at}: too many ":" (<name>:<key>[:<tenant>|<tenant>...])`);
    if (key.length < API_KEY_MIN_CHARS || !KEY.test(key)) return void problems.push(`${at}: the key must be at least ${API_KEY_MIN_CHARS} characters, without : , | or spaces (openssl rand -base64 32)`);
    const bits = Math.floor(estimatedKeyBits(key));
    if (bits < API_KEY_MIN_BITS) return void problems.push(`${at}: the key is too predictable (about ${bits} bits estimated, at least ${API_KEY_MIN_BITS}: a run, a repeat or few distinct characters); use a random one (openssl rand -base64 32)`);
    if (keys.some((k) => k.name === name)) return void problems.push(`${at}: the name is used by an earlier entry`);
    if (keys.some((k) => k.key.reveal() === key)) return void problems.push(`${at}: the key is the one of an earlier entry`);
    let only: Set<string> | undefined;
    if (tenants !== undefined) {
      const ids = tenants.split('|').map((t) => t.trim());
      const bad = ids.filter((t) => !TENANT.test(t));
      if (ids.length === 0 || bad.length > 0) return void problems.push(`${at}: tenants after the key are tenant ids separated by | (${bad.length} not a tenant id)`);
      only = new Set(ids);
    }
    keys.push({ name, key: new Secret(key), ...(only ? { tenants: only } : {}) });
  });
  return { keys, problems };
}
