/**
 * An explicit call list (CSV or JSON) to targets, every row checked before anything is sent.
 *
 * CSV (`.csv` or `.tsv`; comma, semicolon, tab or pipe, given or detected: see csv.ts): a header row, then one
 * number per row. Columns: `number` (or `numberToCall`, `phone`, `phoneNumber`), optional `firstName`, `lastName`,
 * `name`, `tag.<key>` (prompt tags) and `meta.<key>` (metadata). Empty cells are left out. Rows are numbered as
 * lines of the file (the header is line 1). A file whose end cannot be read (a quote never closed) gives no
 * targets at all.
 * JSON: an array of objects with `number` (or its aliases), optional `firstName`, `lastName`, `name`,
 * `promptTags` (string values only) and `metadata` (any values). Rows are numbered from 1.
 * `name` becomes the `customerName` tag unless one is given. Every row's metadata also gets `tenant`,
 * `campaignId` and `number` (E.164: how a webhook's `requestMetadata` names the call; reserved: a row may not set them).
 */
import { isMissing, reportedIssues } from '../zod-issues.js';
import { z } from 'zod';
import { bulkCallContactSchema } from '../collections/schemas.js';
import { readCsv, type Delimiter } from './csv.js';
import { normalisePhone } from './phone.js';
import type { Target } from './types.js';

export interface RowError {
  row: number;
  reason: string;
}

export interface ParsedList {
  targets: Target[];
  errors: RowError[];
  rows: number;
  /** What `RowError.row` counts: lines of a CSV file, rows of a JSON array. */
  unit: 'line' | 'row';
}

export interface ListContext {
  tenant: string;
  campaignId: string;
  region: string;
}

const NUMBER_KEYS = ['number', 'numberToCall', 'phone', 'phoneNumber'] as const;
const RESERVED_META = ['tenant', 'campaignId', 'number'] as const;
const s255 = z.string().trim().min(1).max(255);

const rowSchema = z.strictObject({
  number: z.string().trim().min(1, 'required'),
  firstName: s255.optional(),
  lastName: s255.optional(),
  name: s255.optional(),
  promptTags: z.record(z.string(), z.string({ error: 'prompt tags take string values only (write numbers in quotes)' })).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
type Row = z.infer<typeof rowSchema>;

export function listFormatOf(path: string): 'csv' | 'json' | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.csv') || lower.endsWith('.tsv')) return 'csv';
  if (lower.endsWith('.json')) return 'json';
  return undefined;
}

/** Renames the number aliases to `number`; two of them at once is an error. */
function withNumber(raw: Record<string, unknown>): { row: Record<string, unknown> } | { error: string } {
  const present = NUMBER_KEYS.filter((k) => raw[k] !== undefined);
  if (present.length > 1) return { error: `give one of ${present.join(', ')}, not several` };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) out[(NUMBER_KEYS as readonly string[]).includes(k) ? 'number' : k] = v;
  return { row: out };
}

function describe(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((i) => {
      const at = i.path.join('.') || '(row)';
      if (i.code === 'unrecognized_keys') return `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}`;
      return `${at}: ${isMissing(i) ? 'required' : i.message}`;
    })
    .join('; ');
}

function toTarget(row: Row, ctx: ListContext): { target: Target } | { error: string } {
  const phone = normalisePhone(row.number, ctx.region);
  if (!phone.ok) return { error: phone.reason };
  const reserved = RESERVED_META.filter((k) => row.metadata?.[k] !== undefined);
  if (reserved.length > 0) return { error: `metadata.${reserved.join(', metadata.')} is set by the campaign` };
  const promptTags = { ...(row.name !== undefined ? { customerName: row.name } : {}), ...row.promptTags };
  const contact = {
    numberToCall: phone.e164,
    ...(row.firstName !== undefined ? { firstName: row.firstName } : {}),
    ...(row.lastName !== undefined ? { lastName: row.lastName } : {}),
    ...(Object.keys(promptTags).length > 0 ? { promptTags } : {}),
    metadata: { ...row.metadata, tenant: ctx.tenant, campaignId: ctx.campaignId, number: phone.e164 },
  };
  const checked = bulkCallContactSchema.safeParse(contact);
  if (!checked.success) return { error: describe(reportedIssues(bulkCallContactSchema, contact)) };
  const label = row.name ?? ([row.firstName, row.lastName].filter(Boolean).join(' ') || phone.e164);
  return { target: { number: phone.e164, label, contact: checked.data } };
}

interface ReadRows {
  rows: { row: number; raw: Record<string, unknown> }[];
  errors: RowError[];
  /** The file could not be read to its end: nothing of it is called. */
  broken?: boolean;
}

function csvRows(text: string, delimiter: Delimiter | undefined): ReadRows {
  const read = readCsv(text, delimiter === undefined ? {} : { delimiter });
  const header = read.records[0];
  const unreadHeader = read.problems.find((p) => p.line < (header?.line ?? Infinity));
  if (unreadHeader) return { rows: [], errors: [{ row: unreadHeader.line, reason: `the header row cannot be read: ${unreadHeader.reason}` }], broken: true };
  if (!header) return { rows: [], errors: [{ row: 1, reason: 'the file is empty (a header row is needed)' }] };
  const errors: RowError[] = [];
  const columns = header.fields.map((name) => {
    const m = /^(tag|tags|promptTags|meta|metadata)\.(.+)$/.exec(name);
    if (m?.[1] !== undefined && m[2] !== undefined) return { kind: m[1].startsWith('tag') || m[1] === 'promptTags' ? ('tag' as const) : ('meta' as const), key: m[2] };
    return { kind: 'field' as const, key: name };
  });
  const fieldNames = new Set<string>([...NUMBER_KEYS, 'firstName', 'lastName', 'name']);
  const unknown = columns.filter((c) => c.kind === 'field' && !fieldNames.has(c.key)).map((c) => c.key);
  const twice = header.fields.filter((name, i) => header.fields.indexOf(name) !== i);
  if (twice.length > 0) errors.push({ row: header.line, reason: `column${twice.length > 1 ? 's' : ''} ${[...new Set(twice)].join(', ')} given twice` });
  if (unknown.length > 0) errors.push({ row: header.line, reason: `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (use tag.<key> or meta.<key>)` });
  if (!columns.some((c) => c.kind === 'field' && (NUMBER_KEYS as readonly string[]).includes(c.key))) errors.push({ row: header.line, reason: 'no number column (number, numberToCall, phone or phoneNumber)' });
  if (errors.length > 0) return { rows: [], errors };
  const rows = read.records.slice(1).map((rec) => {
    const raw: Record<string, unknown> = {};
    const tags: Record<string, string> = {};
    const meta: Record<string, string> = {};
    if (rec.fields.length > columns.length) raw['(extra cells)'] = rec.fields.slice(columns.length).join(',');
    columns.forEach((c, i) => {
      const v = rec.fields[i];
      if (v === undefined || v === '') return;
      if (c.kind === 'tag') tags[c.key] = v;
      else if (c.kind === 'meta') meta[c.key] = v;
      else raw[c.key] = v;
    });
    if (Object.keys(tags).length > 0) raw['promptTags'] = tags;
    if (Object.keys(meta).length > 0) raw['metadata'] = meta;
    return { row: rec.line, raw };
  });
  return { rows, errors: [...errors, ...read.problems.map((p) => ({ row: p.line, reason: p.reason }))], broken: read.truncated };
}

function jsonRows(text: string): ReadRows {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { rows: [], errors: [{ row: 0, reason: `not valid JSON (${(err as Error).message})` }] };
  }
  if (!Array.isArray(data)) return { rows: [], errors: [{ row: 0, reason: 'the file must hold a JSON array of rows' }] };
  const rows: { row: number; raw: Record<string, unknown> }[] = [];
  const errors: RowError[] = [];
  data.forEach((item: unknown, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) errors.push({ row: i + 1, reason: 'a row must be an object' });
    else rows.push({ row: i + 1, raw: item as Record<string, unknown> });
  });
  return { rows, errors };
}

/** Every row checked; the targets of the good rows, and each bad row with its number and reason. */
export function parseCallList(text: string, format: 'csv' | 'json', ctx: ListContext, options: { delimiter?: Delimiter } = {}): ParsedList {
  const read = format === 'csv' ? csvRows(text, options.delimiter) : jsonRows(text);
  const unit = format === 'csv' ? 'line' : 'row';
  const errors = [...read.errors];
  const targets: Target[] = [];
  const seen = new Map<string, number>();
  for (const { row, raw } of read.rows) {
    if (raw['(extra cells)'] !== undefined) {
      errors.push({ row, reason: 'more cells than header columns' });
      continue;
    }
    const renamed = withNumber(raw);
    if ('error' in renamed) {
      errors.push({ row, reason: renamed.error });
      continue;
    }
    const parsed = rowSchema.safeParse(renamed.row);
    if (!parsed.success) {
      errors.push({ row, reason: describe(reportedIssues(rowSchema, renamed.row)) });
      continue;
    }
    const made = toTarget(parsed.data, ctx);
    if ('error' in made) {
      errors.push({ row, reason: made.error });
      continue;
    }
    const first = seen.get(made.target.number);
    if (first !== undefined) {
      errors.push({ row, reason: `the same number as ${unit} ${first} (${made.target.number})` });
      continue;
    }
    seen.set(made.target.number, row);
    targets.push(made.target);
  }
  if (read.rows.length === 0 && errors.length === 0) errors.push({ row: 0, reason: 'the list has no rows' });
  errors.sort((a, b) => a.row - b.row);
  return { targets: read.broken ? [] : targets, errors, rows: read.rows.length, unit };
}
