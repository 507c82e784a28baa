import { describe, expect, it } from 'vitest';
import { decodeDay, decodeHash, decodeUuid, encodeDay, encodeHash, encodeUuid } from '../../src/state/compact.js';

describe('compact state values', () => {
  it('stores a uuid in 22 characters and reads it back, and reads the 36-character form as is', () => {
    const uuid = '3f1c2a4e-8b7d-4c61-9a0e-5d2f6b8c9e01';
    expect(encodeUuid(uuid)).toHaveLength(22);
    expect(decodeUuid(encodeUuid(uuid))).toBe(uuid);
    expect(decodeUuid(uuid)).toBe(uuid);
    // Not a canonical lower-case uuid: kept as given, never changed on the way back.
    expect(decodeUuid(encodeUuid(uuid.toUpperCase()))).toBe(uuid.toUpperCase());
    expect(() => encodeUuid('A'.repeat(22))).toThrow(/reads as a compact uuid/);
  });

  it('stores a content hash in 12 characters; a 32-hex hash of older versions reads as its first 9 bytes', () => {
    const hash = 'b5190fc73a4fe2056b';
    expect(encodeHash(hash)).toHaveLength(12);
    expect(decodeHash(encodeHash(hash))).toBe(hash);
    expect(decodeHash('b5190fc73a4fe2056b0f28a7b2d88894')).toBe(hash);
    expect(decodeHash(encodeHash('b5190fc73a4fe2056b0f28a7b2d88894'))).toBe(hash);
  });

  it('stores a date as its day number', () => {
    for (const d of ['1970-01-01', '2026-02-28', '2028-02-29', '2099-12-31']) expect(decodeDay(encodeDay(d))).toBe(d);
    expect(() => encodeDay('someday')).toThrow(/not a date/);
  });
});
