import { describe, expect, it } from 'vitest';
import { canonicalJson, contentHash, mapContact } from '../../src/mapping/index.js';
import { contactRecordSchema } from '../../src/platforms/records.js';

describe('contentHash', () => {
  it('is 32 hex characters and ignores key order at every depth', () => {
    const a = { name: 'Acme', nested: { x: 1, y: [1, { b: 2, a: 1 }] }, list: ['z', 'a'] };
    const b = { list: ['z', 'a'], nested: { y: [1, { a: 1, b: 2 }], x: 1 }, name: 'Acme' };
    expect(contentHash(a)).toMatch(/^[0-9a-f]{18}$/);
    expect(contentHash(a)).toBe(contentHash(b));
    expect(canonicalJson(b)).toBe('{"list":["z","a"],"name":"Acme","nested":{"x":1,"y":[1,{"a":1,"b":2}]}}');
  });

  it('drops undefined fields, so an absent field and an undefined one hash the same', () => {
    expect(contentHash({ a: 1, b: undefined })).toBe(contentHash({ a: 1 }));
    expect(canonicalJson([1, undefined])).toBe('[1,null]');
  });

  it('changes with any value, array order, type or nesting', () => {
    const base = contentHash({ name: 'Acme', total: 100, tags: ['a', 'b'], flag: true });
    const variants = [
      { name: 'Acme ', total: 100, tags: ['a', 'b'], flag: true },
      { name: 'Acme', total: 100.01, tags: ['a', 'b'], flag: true },
      { name: 'Acme', total: '100', tags: ['a', 'b'], flag: true },
      { name: 'Acme', total: 100, tags: ['b', 'a'], flag: true },
      { name: 'Acme', total: 100, tags: ['a', 'b'], flag: false },
      { name: 'Acme', total: 100, tags: ['a', 'b'], flag: true, extra: null },
      { name: 'Acme', total: 100, tags: [['a', 'b']], flag: true },
    ];
    const hashes = variants.map((v) => contentHash(v));
    expect(hashes).not.toContain(base);
    expect(new Set(hashes).size).toBe(variants.length);
  });

  it('gives an unchanged record the same hash, and a changed one a new hash, through the mapper', () => {
    const parse = (o: object) => contactRecordSchema.parse({ id: 'C-1', updatedAt: '2026-01-01T00:00:00Z', name: 'Acme', ...o });
    const hashOf = (o: object): string => {
      const m = mapContact(parse(o));
      if (m.kind !== 'push') throw new Error(m.reason);
      return contentHash(m.body);
    };
    // A newer updatedAt alone (nothing the service sees) costs nothing.
    expect(hashOf({ city: 'Riyadh', email: 'a@b.example' })).toBe(hashOf({ email: 'a@b.example', city: 'Riyadh', updatedAt: '2026-06-01T00:00:00Z' }));
    expect(hashOf({ city: 'Riyadh' })).not.toBe(hashOf({ city: 'Jeddah' }));
    expect(hashOf({})).not.toBe(hashOf({ deleted: true }));
  });
});
