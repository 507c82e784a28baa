/**
 * Compact forms of what the state stores per record (README decision "lean state values"): a uuid as the
 * base64url of its 16 bytes (22 characters, not 36), a content hash as the base64url of its 9 bytes (12, not 18
 * hex), a date as its day number since 1970-01-01. Every decoder also reads the form written before (a 36-character
 * uuid, a 32-hex hash of the old 16-byte content hash: its first 9 bytes are the new hash), so state written by an
 * older version is read as is, without a migration.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const B64_22 = /^[A-Za-z0-9_-]{22}$/;
const B64_12 = /^[A-Za-z0-9_-]{12}$/;
const HEX_18 = /^[0-9a-f]{18}$/;
/** The content hash of versions before lean state: 16 bytes in hex; its first 9 bytes are today's hash. */
const HEX_32 = /^[0-9a-f]{32}$/;

/** A canonical lower-case uuid as 22 base64url characters; any other string is kept as it is. */
export function encodeUuid(uuid: string): string {
  if (UUID.test(uuid)) return Buffer.from(uuid.replace(/-/g, ''), 'hex').toString('base64url');
  if (B64_22.test(uuid)) throw new Error(`uuid ${JSON.stringify(uuid)} cannot be stored: it reads as a compact uuid`);
  return uuid;
}

export function decodeUuid(stored: string): string {
  if (!B64_22.test(stored)) return stored;
  const hex = Buffer.from(stored, 'base64url').toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A content hash (18 hex, or the 32 hex of older versions, cut to its first 9 bytes) as 12 base64url characters. */
export function encodeHash(hash: string): string {
  if (HEX_18.test(hash) || HEX_32.test(hash)) return Buffer.from(hash.slice(0, 18), 'hex').toString('base64url');
  if (B64_12.test(hash)) throw new Error(`hash ${JSON.stringify(hash)} cannot be stored: it reads as a compact hash`);
  return hash;
}

/** The stored hash as `contentHash` gives it (18 hex): compact, or the 32 hex written before lean state. */
export function decodeHash(stored: string): string {
  if (B64_12.test(stored)) return Buffer.from(stored, 'base64url').toString('hex');
  if (HEX_32.test(stored)) return stored.slice(0, 18);
  return stored;
}

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` as days since 1970-01-01. */
export function encodeDay(date: string): number {
  const ms = Date.parse(`${date}T00:00:00Z`);
  if (!Number.isFinite(ms)) throw new Error(`not a date: ${JSON.stringify(date)}`);
  return ms / DAY_MS;
}

export function decodeDay(days: number): string {
  return new Date(days * DAY_MS).toISOString().slice(0, 10);
}

/**
 * A uuid as packed records keep it (src/state/packed-codec.ts): `B` + its 16 bytes when canonical, else `T` + the text
 * as given (a text that reads as a compact uuid is refused, as encodeUuid does). Written straight from the hex
 * digits into one buffer: this runs for every record a sync writes.
 */
export function uuidPart(uuid: string): Buffer {
  if (UUID.test(uuid)) {
    const out = Buffer.allocUnsafe(17);
    out[0] = 0x42; // B
    hexInto(uuid, out, 1);
    return out;
  }
  encodeUuid(uuid); // throws for a text that reads as a compact uuid
  return textPart(uuid);
}

/** A content hash as packed records keep it: `B` + its 9 bytes (18 or 32 hex), else `T` + the text. */
export function hashPart(hash: string): Buffer {
  if (HEX_18.test(hash) || HEX_32.test(hash)) {
    const out = Buffer.allocUnsafe(10);
    out[0] = 0x42; // B
    hexInto(hash.length === 18 ? hash : hash.slice(0, 18), out, 1);
    return out;
  }
  encodeHash(hash); // throws for a text that reads as a compact hash
  return textPart(hash);
}

function textPart(text: string): Buffer {
  const out = Buffer.allocUnsafe(1 + Buffer.byteLength(text));
  out[0] = 0x54; // T
  out.write(text, 1, 'utf8');
  return out;
}

/** Lower-case hex digits of `text` (dashes skipped), already checked, as bytes into `out` from `at`. */
export function hexInto(text: string, out: Buffer, at: number): void {
  let j = at;
  let hi = -1;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x2d) continue; // -
    const v = c <= 0x39 ? c - 0x30 : c - 0x57; // 0-9, a-f
    if (hi < 0) hi = v;
    else {
      out[j] = hi * 16 + v;
      j += 1;
      hi = -1;
    }
  }
}

/** 16 raw bytes as a canonical uuid. */
export function formatUuid(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
