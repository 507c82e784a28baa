/**
 * Encryption at rest of platform refresh and access tokens (Xero, QuickBooks): AES-256-GCM with a 32-byte key from the environment
 * (PLATFORM_TOKEN_KEY, base64 or hex). Two subkeys are derived with HKDF: one encrypts, one makes fingerprints
 * (HMAC-SHA256) that let us tell whether the tenants file's refresh token changed without storing the token.
 * Each ciphertext is bound to its connection and purpose (GCM's additional data), so a value copied to another
 * key does not decrypt.
 *
 * A key rotation (decision 0163): given PLATFORM_TOKEN_KEY_PREVIOUS too, the cipher decrypts with either key (the new
 * one first) and encrypts with the new one only; `openedBy` says which key a value needs, and fingerprints are made
 * under both (a fingerprint kept under the old key still names the same token).
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { parseTokenKey, type TokenKeys } from '../../config/token-key.js';

const VERSION = 'v1';
/** GCM's recommended IV length and its full tag: a shortened tag would make forgeries cheaper, so none is taken. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

export { parseTokenKey };

/** One key's subkeys. */
interface Keys {
  enc: Buffer;
  mac: Buffer;
}

function subkeys(key: Buffer): Keys {
  if (key.length !== 32) throw new Error('the token key must be 32 bytes');
  // The labels say xero because Xero came first; they stay, so tokens stored before QuickBooks still decrypt.
  return {
    enc: Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'collections-sync xero token encryption', 32)),
    mac: Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'collections-sync xero token fingerprint', 32)),
  };
}

export class TokenCipher {
  readonly #current: Keys;
  readonly #previous: Keys | undefined;

  /** `previous`: the key `key` replaced (a rotation), read but never written with. */
  constructor(key: Buffer, previous?: Buffer) {
    this.#current = subkeys(key);
    this.#previous = previous === undefined ? undefined : subkeys(previous);
  }

  static fromText(text: string, previous?: string): TokenCipher {
    return new TokenCipher(parseTokenKey(text), previous === undefined ? undefined : parseTokenKey(previous));
  }

  /** The cipher of the environment's keys (PLATFORM_TOKEN_KEY, and PLATFORM_TOKEN_KEY_PREVIOUS in a rotation); undefined without a key. */
  static fromKeys(keys: TokenKeys): TokenCipher | undefined {
    return keys.PLATFORM_TOKEN_KEY === undefined ? undefined : TokenCipher.fromText(keys.PLATFORM_TOKEN_KEY, keys.PLATFORM_TOKEN_KEY_PREVIOUS);
  }

  /** Whether a previous key is read too (a rotation under way). */
  get rotating(): boolean {
    return this.#previous !== undefined;
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts, under the current key. `context` must be given again to decrypt. */
  encrypt(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.enc, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Throws when the value was not made by either key for this context (tampered, or another key). */
  decrypt(box: string, context: string): string {
    return this.open(box, context).plain;
  }

  /** The plain text and whether it needed the previous key; throws as `decrypt`. */
  open(box: string, context: string): { plain: string; previous: boolean } {
    try {
      return { plain: openWith(this.#current.enc, box, context), previous: false };
    } catch (err) {
      if (this.#previous === undefined) throw err;
      return { plain: openWith(this.#previous.enc, box, context), previous: true };
    }
  }

  /** Which key opens `box`: the current, the previous, or none (undefined). */
  openedBy(box: string, context: string): 'current' | 'previous' | undefined {
    try {
      return this.open(box, context).previous ? 'previous' : 'current';
    } catch {
      return undefined;
    }
  }

  /** A keyed fingerprint of a token (current key): equal tokens give equal fingerprints; the token cannot be recovered. */
  fingerprint(plain: string): string {
    return fingerprintWith(this.#current.mac, plain);
  }

  /** The fingerprint the previous key gave the token (a rotation), or undefined. */
  previousFingerprint(plain: string): string | undefined {
    return this.#previous === undefined ? undefined : fingerprintWith(this.#previous.mac, plain);
  }
}

function openWith(enc: Buffer, box: string, context: string): string {
  const parts = box.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new Error('not a token ciphertext of this version');
  const [, ivText, tagText, body] = parts as [string, string, string, string];
  const iv = Buffer.from(ivText, 'base64url');
  const tag = Buffer.from(tagText, 'base64url');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('not a token ciphertext of this version (its IV or tag has the wrong length)');
  const decipher = createDecipheriv('aes-256-gcm', enc, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

function fingerprintWith(mac: Buffer, plain: string): string {
  return createHmac('sha256', mac).update(plain, 'utf8').digest('base64url').slice(0, 32);
}
