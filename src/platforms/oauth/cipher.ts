/**
 * Encryption at rest of platform refresh and access tokens (Xero, QuickBooks): AES-256-GCM with a 32-byte key from the environment
 * (PLATFORM_TOKEN_KEY, base64 or hex). Two subkeys are derived with HKDF: one encrypts, one makes fingerprints
 * (HMAC-SHA256) that let us tell whether the tenants file's refresh token changed without storing the token.
 * Each ciphertext is bound to its connection and purpose (GCM's additional data), so a value copied to another
 * key does not decrypt.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { parseTokenKey } from '../../config/token-key.js';

const VERSION = 'v1';
/** GCM's recommended IV length and its full tag: a shortened tag would make forgeries cheaper, so none is taken. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

export { parseTokenKey };

export class TokenCipher {
  readonly #enc: Buffer;
  readonly #mac: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the token key must be 32 bytes');
    // The labels say xero because Xero came first; they stay, so tokens stored before QuickBooks still decrypt.
    this.#enc = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'collections-sync xero token encryption', 32));
    this.#mac = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'collections-sync xero token fingerprint', 32));
  }

  static fromText(text: string): TokenCipher {
    return new TokenCipher(parseTokenKey(text));
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts. `context` must be given again to decrypt. */
  encrypt(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#enc, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Throws when the value was not made by this key for this context (tampered, or another key). */
  decrypt(box: string, context: string): string {
    const parts = box.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION) throw new Error('not a token ciphertext of this version');
    const [, ivText, tagText, body] = parts as [string, string, string, string];
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('not a token ciphertext of this version (its IV or tag has the wrong length)');
    const decipher = createDecipheriv('aes-256-gcm', this.#enc, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** A keyed fingerprint of a token: equal tokens give equal fingerprints; the token cannot be recovered. */
  fingerprint(plain: string): string {
    return createHmac('sha256', this.#mac).update(plain, 'utf8').digest('base64url').slice(0, 32);
  }
}
