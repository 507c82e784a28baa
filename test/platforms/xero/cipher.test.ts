/** Xero tokens at rest (issue 17): AES-256-GCM with its full 16-byte tag and a 12-byte IV, nothing shorter taken. */
import { describe, expect, it } from 'vitest';
import { TokenCipher } from '../../../src/platforms/xero/index.js';

const cipher = TokenCipher.fromText('ab'.repeat(32));

/** The box with one of its parts (1 = IV, 2 = tag) replaced. */
function withPart(box: string, index: 1 | 2, change: (part: Buffer) => Buffer): string {
  const parts = box.split('.');
  parts[index] = change(Buffer.from(parts[index]!, 'base64url')).toString('base64url');
  return parts.join('.');
}

describe('token cipher', () => {
  const box = cipher.encrypt('refresh-token-value', 'org-1:refresh');

  it('round-trips with a 12-byte IV and a 16-byte tag, bound to its context', () => {
    expect(cipher.decrypt(box, 'org-1:refresh')).toBe('refresh-token-value');
    const [, iv, tag] = box.split('.');
    expect(Buffer.from(iv!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(tag!, 'base64url')).toHaveLength(16);
    expect(() => cipher.decrypt(box, 'org-2:refresh')).toThrow();
  });

  it('refuses a shortened tag (a 4-byte prefix of the right one decrypted before)', () => {
    for (const bytes of [4, 8, 12, 15]) {
      expect(() => cipher.decrypt(withPart(box, 2, (t) => t.subarray(0, bytes)), 'org-1:refresh')).toThrow(/wrong length/);
    }
  });

  it('refuses an IV of another length', () => {
    expect(() => cipher.decrypt(withPart(box, 1, (iv) => Buffer.concat([iv, Buffer.alloc(4)])), 'org-1:refresh')).toThrow(/wrong length/);
    expect(() => cipher.decrypt(withPart(box, 1, (iv) => iv.subarray(0, 8)), 'org-1:refresh')).toThrow(/wrong length/);
  });
});
