import type { Redis } from 'ioredis';
import { z } from 'zod';
import { contactRecordSchema, invoiceRecordSchema } from '../platforms/records.js';
import { decodeDay, decodeUuid, encodeDay, formatUuid, hexInto, uuidPart } from './compact.js';
import { getRecords, packedKey, packedMap, scanRecords } from './packed.js';
import { readVarint, type Segments } from './packed-codec.js';
import { decodeIdSegment, type RecordState } from './record-state.js';
import { stateScript } from './script.js';
import { stateKey } from './keys.js';
import { parseValue, StateCorruptError } from './stored.js';

/**
 * The record mirror: what later work reads of the last canonical contacts and invoices seen, per tenant: the
 * second segment of each packed record (src/state/packed.ts). Durable state, not a cache: a miss is not filled
 * from the platform on demand, and the sync and the calls depend on what it holds (a full run refills it). The
 * mirror versions before packed records kept (one HASH per entity, `<base>:cache:{<t>}:<entity>`) is packed by
 * migrate-keys (src/state/old-hashes.ts; its JSON values kept as `J` segments) and never read here.
 * Serves what the service cannot answer cheaply: an invoice's balance after a payment changes (the invoice is
 * pushed again from here, so it keeps every field of the push), and the selection of overdue invoices for call
 * campaigns (a contact's names, phone, deleted flag and uuid: nothing else of a contact is read).
 *
 * Values (README decision "lean state values"): cells in a fixed order (`pack` below), absent values null and
 * trailing ones left off, the uuid as 16 bytes or shared with the id map, dates as day numbers, `updatedAt` as
 * milliseconds. A JSON array or object (what versions before wrote) is read too; such an entry is rewritten in
 * the packed form the next time it is put.
 */
export const mirroredContactSchema = contactRecordSchema
  .pick({ id: true, name: true, nameAr: true, firstName: true, lastName: true, phoneNumber: true, deleted: true })
  .extend({ uuid: z.string().optional() });
// safeExtend, not an intersection (.and): one object with the record's refinement, parsed ~5x faster (every
// mirrored invoice read, e.g. each invoice a payment page refreshes), the same value out.
export const mirroredInvoiceSchema = invoiceRecordSchema.safeExtend({ uuid: z.string().optional(), pushedOutstanding: z.number().optional() });

export type MirroredContact = z.infer<typeof mirroredContactSchema>;
export type MirroredInvoice = z.infer<typeof mirroredInvoiceSchema>;

const schemas = { contacts: mirroredContactSchema, invoices: mirroredInvoiceSchema } as const;
type Mirrored = { contacts: MirroredContact; invoices: MirroredInvoice };
type Entity = keyof Mirrored;

type Cell = string | number | null;
const cellsSchema = z.array(z.union([z.string(), z.number(), z.null()]));
const STATUSES = ['DRAFT', 'AUTHORISED', 'PAID', 'VOIDED'] as const;
const TEXTS = ['currencyCode', 'reference', 'notes', 'description', 'purchaseOrder'] as const;

/**
 * The cells as a packed mirror segment (src/state/packed-codec.ts): `C`, then per cell `varint(code) bytes`, trailing
 * nulls left off. Code 0 is null; otherwise code - 1 = 8 * (bytes) + kind (CELL). Cell 0 is the uuid part.
 */
const CELL = {
  text: 0,
  /** A number as its decimal text (what no shorter kind holds exactly). */
  numberText: 1,
  /** A safe integer, zigzag varint. */
  integer: 2,
  /** A number with at most two decimals (an amount), its hundredths as a zigzag varint. */
  hundredths: 3,
  /** Text of ASCII and the Arabic block U+0600-U+067F only, one byte a character (Arabic at 0x80-0xFF). */
  arabic: 4,
  /** A canonical lower-case GUID (a Xero contact id) as its 16 bytes. */
  guid: 5,
} as const;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const zigzag = (n: number): number => (n >= 0 ? 2 * n : -2 * n - 1);
const unzigzag = (z: number): number => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);

/**
 * A segment written byte by byte into one scratch buffer (grown as needed), copied out once at the end: a
 * mirror put packs every record a sync pushes, and a buffer per cell (and per varint) was most of its cost.
 */
class SegmentWriter {
  #buf = Buffer.allocUnsafe(512);
  #n = 0;

  reset(): void {
    this.#n = 0;
  }

  #room(k: number): void {
    if (this.#n + k <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(2 * this.#buf.length, this.#n + k));
    this.#buf.copy(next, 0, 0, this.#n);
    this.#buf = next;
  }

  byte(b: number): void {
    this.#room(1);
    this.#buf[this.#n] = b;
    this.#n += 1;
  }

  varint(n: number): void {
    while (n >= 128) {
      this.byte(128 + (n % 128));
      n = Math.floor(n / 128);
    }
    this.byte(n);
  }

  bytes(b: Buffer): void {
    this.#room(b.length);
    b.copy(this.#buf, this.#n);
    this.#n += b.length;
  }

  /** `s` in UTF-8 (its `byteLength` known). */
  text(s: string, byteLength: number): void {
    this.#room(byteLength);
    this.#n += this.#buf.write(s, this.#n, byteLength, 'utf8');
  }

  /** A canonical GUID's 16 bytes. */
  guid(s: string): void {
    this.#room(16);
    hexInto(s, this.#buf, this.#n);
    this.#n += 16;
  }

  /** Arabic text, one byte a character (arabicKind said it fits). */
  arabic(s: string): void {
    this.#room(s.length);
    for (let i = 0; i < s.length; i += 1) {
      const c = s.charCodeAt(i);
      this.#buf[this.#n + i] = c < 0x80 ? c : c - 0x600 + 0x80;
    }
    this.#n += s.length;
  }

  out(): Buffer {
    const b = Buffer.allocUnsafe(this.#n);
    this.#buf.copy(b, 0, 0, this.#n);
    return b;
  }
}

/** Digits of a non-negative integer in `base` (128: a varint's bytes; 10: its decimal text's characters). */
const digitsIn = (n: number, base: number): number => {
  let d = 1;
  while (n >= base) {
    n = Math.floor(n / base);
    d += 1;
  }
  return d;
};
const varintLength = (n: number): number => digitsIn(n, 128);
const digits = (n: number): number => digitsIn(n, 10);

/** Below this, a number with at most two decimals prints as those decimals (doubles there are far closer than 0.01). */
const PLAIN_BELOW = 1e12;

/**
 * `String(n).length` for an integer or a number of hundredths `m` (n = m / 100) of magnitude below PLAIN_BELOW,
 * counted without making the string (a number's text was most of a mirror put's cost); undefined otherwise.
 */
export function numberTextLength(n: number, m: number): number | undefined {
  if (!(Math.abs(n) < PLAIN_BELOW) || Object.is(n, -0)) return undefined;
  const sign = n < 0 ? 1 : 0;
  const a = Math.abs(m);
  if (Number.isInteger(n)) return sign + digits(Math.abs(n));
  const cents = a % 100;
  return sign + digits(Math.floor(a / 100)) + (cents % 10 === 0 ? 2 : 3);
}

/** A number's shortest exact form, written as a cell: a zigzag varint (integer or hundredths) when shorter than its text. */
function numberCell(w: SegmentWriter, n: number): void {
  // The varint form that holds n exactly (integer or hundredths), if any; the text otherwise or when shorter.
  let kind: number = CELL.integer;
  let m: number | undefined;
  if (Number.isSafeInteger(n)) m = n;
  else {
    const h = Math.round(n * 100);
    if (h / 100 === n && Number.isSafeInteger(h)) {
      kind = CELL.hundredths;
      m = h;
    }
  }
  if (m !== undefined) {
    const z = zigzag(m);
    const textLength = numberTextLength(n, m) ?? String(n).length;
    if (varintLength(z) < textLength) {
      w.varint(8 * varintLength(z) + kind + 1);
      w.varint(z);
      return;
    }
  }
  const text = String(n);
  w.varint(8 * text.length + CELL.numberText + 1);
  w.text(text, text.length);
}

/** Whether a text fits one byte a character: nothing outside ASCII and U+0600-U+067F, and some Arabic in it. */
function isArabicText(s: string): boolean {
  let arabic = false;
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c >= 0x600 && c < 0x680) arabic = true;
    else return false;
  }
  return arabic;
}

function fromArabicBytes(b: Buffer): string {
  let out = '';
  for (const c of b) out += String.fromCharCode(c < 0x80 ? c : c - 0x80 + 0x600);
  return out;
}

const writer = new SegmentWriter();

function pack(uuid: string | undefined, cells: Cell[]): Buffer {
  let end = cells.length;
  while (end > 0 && cells[end - 1] === null) end -= 1;
  const w = writer;
  w.reset();
  w.byte(0x43); // C
  if (uuid === undefined) w.varint(0);
  else {
    const part = uuidPart(uuid);
    w.varint(8 * part.length + CELL.text + 1);
    w.bytes(part);
  }
  for (let i = 0; i < end; i += 1) {
    const c = cells[i] as Cell;
    if (c === null) w.varint(0);
    else if (typeof c === 'number') numberCell(w, c);
    else if (GUID.test(c)) {
      w.varint(8 * 16 + CELL.guid + 1);
      w.guid(c);
    } else if (isArabicText(c)) {
      w.varint(8 * c.length + CELL.arabic + 1);
      w.arabic(c);
    } else {
      const len = Buffer.byteLength(c, 'utf8');
      w.varint(8 * len + CELL.text + 1);
      w.text(c, len);
    }
  }
  return w.out();
}

/** A `C` segment's cells (cell 0: the uuid part's bytes, or null). */
function unpackCells(seg: Buffer, key: string, id: string): (Cell | Buffer)[] {
  const out: (Cell | Buffer)[] = [];
  let i = 1;
  while (i < seg.length) {
    const r = readVarint(seg, i);
    if (!r) throw new StateCorruptError(key, id, 'bad mirror cell');
    const [code, at] = r;
    if (code === 0) {
      out.push(null);
      i = at;
      continue;
    }
    const n = Math.floor((code - 1) / 8);
    const kind = (code - 1) % 8;
    if (at + n > seg.length) throw new StateCorruptError(key, id, 'bad mirror cell');
    const bytes = seg.subarray(at, at + n);
    i = at + n;
    if (out.length === 0) {
      out.push(bytes);
      continue;
    }
    if (kind === CELL.text) out.push(bytes.toString('utf8'));
    else if (kind === CELL.numberText) out.push(Number(bytes.toString('latin1')));
    else if (kind === CELL.arabic) out.push(fromArabicBytes(bytes));
    else if (kind === CELL.guid && bytes.length === 16) out.push(formatUuid(bytes));
    else if (kind === CELL.integer || kind === CELL.hundredths) {
      const v = readVarint(bytes, 0);
      if (!v || v[1] !== bytes.length) throw new StateCorruptError(key, id, 'bad mirror number');
      const m = unzigzag(v[0]);
      out.push(kind === CELL.integer ? m : m / 100);
    } else throw new StateCorruptError(key, id, 'bad mirror cell kind');
  }
  return out;
}

const opt = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** [uuid, name, deleted, phoneNumber, nameAr, firstName, lastName] */
function packContact(c: MirroredContact): Buffer {
  return pack(c.uuid, [c.name, c.deleted ? 1 : 0, opt(c.phoneNumber), opt(c.nameAr), opt(c.firstName), opt(c.lastName)]);
}

/** [uuid, contactId, status, deleted, number, date, dueDate, total, updatedAt ms, outstandingAmount, pushedOutstanding, currencyCode, reference, notes, description, purchaseOrder] */
function packInvoice(i: MirroredInvoice): Buffer {
  const cells: Cell[] = [
    i.contactId,
    STATUSES.indexOf(i.status),
    i.deleted ? 1 : 0,
    i.number,
    encodeDay(i.date),
    encodeDay(i.dueDate),
    i.total,
    Date.parse(i.updatedAt),
    opt(i.outstandingAmount),
    // Left off when it equals the platform's outstanding amount: readers take pushed ?? outstanding ?? total.
    i.pushedOutstanding === undefined || i.pushedOutstanding === i.outstandingAmount ? null : i.pushedOutstanding,
  ];
  for (const f of TEXTS) cells.push(opt(i[f]));
  return pack(i.uuid, cells);
}

/** The object a compact array stands for (not yet checked: the entity's schema does that). */
function unpack(entity: Entity, id: string, cells: Cell[]): Record<string, unknown> {
  const at = (n: number): Cell | undefined => cells[n] ?? undefined;
  const out: Record<string, unknown> = { id };
  const set = (field: string, v: unknown): void => {
    if (v !== undefined && v !== null) out[field] = v;
  };
  const uuid = at(0);
  if (typeof uuid === 'string') out['uuid'] = decodeUuid(uuid);
  if (entity === 'contacts') {
    ['name', 'deleted', 'phoneNumber', 'nameAr', 'firstName', 'lastName'].forEach((f, n) => set(f, f === 'deleted' ? at(n + 1) === 1 : at(n + 1)));
    return out;
  }
  set('contactId', at(1));
  const status = at(2);
  set('status', typeof status === 'number' ? STATUSES[status] : undefined);
  out['deleted'] = at(3) === 1;
  set('number', at(4));
  for (const [field, n] of [['date', 5], ['dueDate', 6]] as const) {
    const day = at(n);
    set(field, typeof day === 'number' ? decodeDay(day) : undefined);
  }
  set('total', at(7));
  const ms = at(8);
  set('updatedAt', typeof ms === 'number' ? new Date(ms).toISOString() : undefined);
  set('outstandingAmount', at(9));
  set('pushedOutstanding', at(10));
  TEXTS.forEach((f, n) => set(f, at(11 + n)));
  return out;
}

const PUT_MANY = stateScript('state/lua/record-mirror-put-many');

export class RecordMirror {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The packed map the mirror's cells live in (src/state/packed.ts). */
  private key(tenant: string, entity: Entity): string {
    return packedKey(this.prefix, tenant, entity);
  }

  /**
   * The mirror as versions before packed records kept it: never read here (migrate-keys packs it), named so a
   * tenant's `clear` deletes one a partial upgrade left.
   */
  private oldKey(tenant: string, entity: Entity): string {
    return stateKey(this.prefix, 'mirror', tenant, entity);
  }

  /** One script: the items' cells replace what the mirror held of them (their id map and ledger are kept). */
  async putMany<E extends Entity>(tenant: string, entity: E, items: Mirrored[E][]): Promise<void> {
    if (items.length === 0) return;
    const map = packedMap(this.prefix, tenant, entity);
    const args: (string | Buffer)[] = [map.spec];
    for (const item of items) args.push(item.id, this.segment(entity, item));
    await PUT_MANY.run(this.redis, map.keys, args);
  }

  /**
   * An item's cells as its packed record's mirror segment: what `putMany` writes, for a write that stores it
   * with the record's id-map entry in one script instead (RecordStateStore.setMany's `mirror`).
   */
  segment<E extends Entity>(entity: E, item: Mirrored[E]): Buffer {
    return entity === 'contacts' ? packContact(item as MirroredContact) : packInvoice(item as MirroredInvoice);
  }

  async getMany<E extends Entity>(tenant: string, entity: E, ids: string[]): Promise<Map<string, Mirrored[E]>> {
    return (await this.read(tenant, entity, ids, false)).items;
  }

  /**
   * The mirrored items of `ids` and their id-map entries (RecordStateStore.getMany's), in one read: both are
   * segments of the same packed records.
   */
  async getManyWithState<E extends Entity>(tenant: string, entity: E, ids: string[]): Promise<{ items: Map<string, Mirrored[E]>; states: Map<string, RecordState> }> {
    return this.read(tenant, entity, ids, true);
  }

  private async read<E extends Entity>(tenant: string, entity: E, ids: string[], withStates: boolean): Promise<{ items: Map<string, Mirrored[E]>; states: Map<string, RecordState> }> {
    const items = new Map<string, Mirrored[E]>();
    const states = new Map<string, RecordState>();
    const key = this.key(tenant, entity);
    for (const [id, segs] of await getRecords(this.redis, this.prefix, tenant, entity, ids)) {
      if (withStates && segs[0]) states.set(id, decodeIdSegment(segs[0], key, id));
      if (segs[1]) items.set(id, this.parseSegment(tenant, entity, id, segs));
    }
    return { items, states };
  }

  /** Every mirrored item, in batches: the packed map bucket by bucket, flat memory over large tenants. */
  async *scan<E extends Entity>(tenant: string, entity: E, count = 500): AsyncGenerator<Mirrored[E][]> {
    for await (const records of scanRecords(this.redis, this.prefix, tenant, entity, 2, count)) {
      const batch = records.map(([id, segs]) => this.parseSegment(tenant, entity, id, segs));
      if (batch.length > 0) yield batch;
    }
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(this.key(tenant, 'contacts'), this.key(tenant, 'invoices'), this.oldKey(tenant, 'contacts'), this.oldKey(tenant, 'invoices'));
  }

  /** A packed record's mirror segment: `J` + JSON an older version wrote, or `C` + cells. */
  private parseSegment<E extends Entity>(tenant: string, entity: E, id: string, segs: Segments): Mirrored[E] {
    const key = this.key(tenant, entity);
    const seg = segs[1] as Buffer;
    if (seg[0] === 0x4a) return this.parse(key, entity, id, seg.subarray(1).toString('utf8'));
    if (seg[0] !== 0x43) throw new StateCorruptError(key, id, 'bad mirror segment');
    const cells = unpackCells(seg, key, id);
    const uuidBytes = cells[0];
    let uuid: string | null = null;
    if (Buffer.isBuffer(uuidBytes)) {
      const tag = uuidBytes.subarray(0, 1).toString('latin1');
      const rest = uuidBytes.subarray(1);
      if (tag === '=') {
        uuid = segs[0] ? (decodeIdSegment(segs[0], key, id).uuid ?? null) : null;
        if (uuid === null) throw new StateCorruptError(key, id, 'mirror shares a uuid the id map does not hold');
      } else if (tag === 'B' && rest.length === 16) uuid = formatUuid(rest);
      else if (tag === 'T') uuid = rest.toString('utf8');
      else throw new StateCorruptError(key, id, 'bad mirror uuid');
    }
    const plain = cells.map((c, n) => (n === 0 ? uuid : c)) as Cell[];
    const value = unpack(entity, id, parseValue(cellsSchema, plain, key, id));
    return parseValue(schemas[entity] as unknown as z.ZodType<Mirrored[E]>, value, key, id);
  }

  private parse<E extends Entity>(key: string, entity: E, id: string, raw: string): Mirrored[E] {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new StateCorruptError(key, id, 'not JSON');
    }
    const value = Array.isArray(json) ? unpack(entity, id, parseValue(cellsSchema, json, key, id)) : json;
    return parseValue(schemas[entity] as unknown as z.ZodType<Mirrored[E]>, value, key, id);
  }
}
