/**
 * The codec of packed records, the TypeScript side of their format (the Lua side: src/state/lua/includes/packed-codec.lua;
 * the store: src/state/packed.ts).
 *
 * Packed records (README decision "lean state values"): everything the state keeps of one record (its id-map
 * entry, its record-mirror cells, its payment-ledger entry) is ONE value, and the values of a (tenant, entity) live
 * in one Redis HASH, `<base>:rec:{<tenant>}:<entity>`, packed in buckets: a field is a bucket number, its value
 * the bucket's records (`varint(len) id varint(len) value`, repeated: lengths, never delimiters, so any byte may
 * be data; a canonical lower-case GUID id as 0xFF and its 16 bytes). A meta field `m` holds `n0 split records ids mirror ledger` (linear hashing: a record's bucket is
 * djb2(id) mod n0, or mod 2*n0 below the split pointer; when records exceed LOAD per bucket, the split pointer's
 * bucket is split in two, one bucket at a time, so growth is incremental and memory linear). Redis's per-field
 * cost (about 60 bytes) is paid once per bucket, not three times per record.
 *
 * A record value is up to three segments, each `varint(len + 1) bytes` (0: absent):
 *   1. id map: `flags varint(uuidLen) uuid hash`; flags bit 1: the uuid is its 16 raw bytes, bit 2: the hash is
 *      its 9 raw bytes; otherwise the text as given (or as an older version wrote it).
 *   2. mirror: `J` + the JSON an older version wrote, or `C` + cells, each `varint(code) bytes`: 0 null, else
 *      code - 1 = 8 * bytes + kind (text, a number as text, an integer or an amount's hundredths as a varint,
 *      Arabic text one byte a character: src/state/record-mirror.ts). Cell 0 (the uuid) is text: `B` + 16 bytes,
 *      `T` + text, or `=`: the id map's uuid (most records: the uuid is stored once).
 *   3. ledger: a payment's `deleted|amount|invoiceId`; an invoice's payment ids, each `varint(len) id` (ids as
 *      bucket keys: a GUID in 17 bytes).
 *
 * Upgrade: the keys versions before this one wrote (`ids`, `cache`, `ledger` hashes) are read when an id is not
 * in the packed map, and a write of such an id moves all of its old entries into its packed value and deletes
 * them from the old hashes in the same script: an entry is always in exactly one place.
 */
import { StateCorruptError } from './stored.js';

/**
 * Records per bucket (average) before a bucket splits: buckets of a few hundred bytes (Lua walks a bucket to the
 * record it wants, and writes all of it again when one record changes). 8, not the 24 of before: Redis's CPU per
 * synced record about 25-30% lower for about 2.7 bytes a record more (one bucket field per 8 records instead of
 * 24). A map written with a larger load splits to this one as it is written (at most 64 splits a script call).
 * The Lua reads it as `--@define LOAD` (src/state/lua/includes/packed-map.lua), from the state room's defines.
 */
export const LOAD = 8;

/** A length or count as packed records write it: 7 bits a byte, low first, the high bit set on all but the last. */
export function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 128) {
    bytes.push(128 + (n % 128));
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** An id as packed records keep it in a bucket or a ledger segment (0xFF + 16 bytes: a GUID), as text. */
export function idOf(bytes: Buffer): string {
  if (bytes.length === 17 && bytes[0] === 0xff) {
    const hex = bytes.subarray(1).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  return bytes.toString('utf8');
}

/** Reads a varint at `at`: [value, next offset], or undefined past the end. */
export function readVarint(buf: Buffer, at: number): [number, number] | undefined {
  let n = 0;
  let m = 1;
  for (let i = at; i < buf.length; i += 1) {
    const b = buf[i] as number;
    if (b < 128) return [n + b * m, i + 1];
    n += (b - 128) * m;
    m *= 128;
  }
  return undefined;
}

export type Segments = [Buffer | undefined, Buffer | undefined, Buffer | undefined];

/** A record value's three segments (throws StateCorruptError naming key and id). */
export function segmentsOf(value: Buffer, key: string, id: string): Segments {
  const out: Segments = [undefined, undefined, undefined];
  let i = 0;
  for (let k = 0; k < 3 && i < value.length; k += 1) {
    const r = readVarint(value, i);
    if (!r || r[1] + r[0] - 1 > value.length) throw new StateCorruptError(key, id, 'bad packed record');
    const [l, next] = r;
    if (l > 0) out[k] = value.subarray(next, next + l - 1);
    i = next + Math.max(l - 1, 0);
  }
  if (i < value.length) throw new StateCorruptError(key, id, 'bad packed record');
  return out;
}
