/**
 * PLATFORM_TOKEN_KEY's form (32 bytes as 64 hex digits or as base64 / base64url), read here so a bad key is
 * refused at load with every other setting; src/platforms/oauth/cipher.ts derives its subkeys from the result.
 */
export const TOKEN_KEY_RULE = 'must be 32 random bytes written as 64 hex digits or 44 base64 characters (e.g. `openssl rand -base64 32`)';

/** Parses a 32-byte key; throws a message naming the rule (never the value). */
export function parseTokenKey(text: string): Buffer {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(t)) {
    const key = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === 32) return key;
  }
  throw new Error(`PLATFORM_TOKEN_KEY ${TOKEN_KEY_RULE}`);
}

/** Whether `text` is a key parseTokenKey takes. */
export function isTokenKey(text: string): boolean {
  try {
    parseTokenKey(text);
    return true;
  } catch {
    return false;
  }
}

/** The platform token keys of the environment: the one that writes, and the previous one still read (a rotation). */
export interface TokenKeys {
  PLATFORM_TOKEN_KEY?: string | undefined;
  PLATFORM_TOKEN_KEY_PREVIOUS?: string | undefined;
}
