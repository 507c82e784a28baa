/**
 * The `file` adapter: canonical records from `<folder>/<entity>.ndjson` (record-format.md), read as a stream from
 * the byte offset in the page token. At most one page (plus one read chunk and one line) is in memory, whatever
 * the file's size. Listings are in export order (`ordered: false`).
 */
import { constants } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { isUnder } from './root.js';
import type { Entity } from '../../glossary.js';
import { checkRecord, rawCursor, rawId, type RecordOf } from '../records.js';
import { compareCursor, PlatformError, type BadRecord, type Cursor, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import { readLines } from './line-reader.js';
import { decodeFileToken, encodeFileToken, type FilePosition } from './page-token.js';

export interface FileAdapterOptions {
  /** The folder holding `contacts.ndjson`, `invoices.ndjson`, `payments.ndjson` (each optional). */
  folder: string;
  /**
   * FILE_PLATFORM_ROOT: a file is opened only when its real path (every symbolic link followed) is under this
   * folder's, checked as each page is read: a link placed after the tenants file was loaded takes nothing out of it.
   */
  root?: string;
  /** Read chunk size in bytes. Default 64 KiB. */
  highWaterMark?: number;
  /** A longer line is a bad record (and is never held in memory). Default 1 MiB. */
  maxLineBytes?: number;
  /** Lines read per page at most, counting blank and skipped ones, so a page filtered down by `since` still
   * ends in bounded time. Default max(20 x pageSize, 10,000). */
  maxLinesPerPage?: number;
  logger?: Logger;
}

export const DEFAULT_PAGE_SIZE = 500;
export const MAX_PAGE_SIZE = 5_000;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const CR = 0x0d;

export function fileNameOf(entity: Entity): string {
  return `${entity}.ndjson`;
}

export class FileAdapter implements PlatformAdapter {
  readonly kind = 'file';
  private readonly folder: string;
  private readonly root: string | undefined;
  private readonly highWaterMark: number;
  private readonly maxLineBytes: number;
  private readonly maxLinesPerPage: number | undefined;
  private readonly logger: Logger | undefined;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

  constructor(options: FileAdapterOptions) {
    this.folder = options.folder;
    this.root = options.root;
    this.highWaterMark = options.highWaterMark ?? 64 * 1024;
    this.maxLineBytes = options.maxLineBytes ?? 1024 * 1024;
    this.maxLinesPerPage = options.maxLinesPerPage;
    this.logger = options.logger;
  }

  /**
   * One page: lines from the token's offset until `pageSize` lines gave a good or a bad record, the line budget
   * is spent, or the file ends. Records before `since` (also bad ones whose id and updatedAt are readable, which
   * an earlier run reported) are skipped silently.
   */
  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const pageSize = Math.min(Math.max(1, Math.floor(req.pageSize ?? DEFAULT_PAGE_SIZE)), MAX_PAGE_SIZE);
    const maxLines = this.maxLinesPerPage ?? Math.max(20 * pageSize, 10_000);
    const from: FilePosition = req.pageToken === undefined ? { offset: 0, line: 0 } : decodeFileToken(req.pageToken);
    const name = fileNameOf(entity);
    const page: Page<E> = { records: [], bad: [], ordered: false };

    const fh = await this.openOrNone(join(this.folder, name), name);
    if (fh === undefined) return page;
    try {
      const { size } = await fh.stat();
      if (from.offset >= size) return page;
      await this.checkLineStart(fh, from.offset, name);

      let at = from;
      let lines = 0;
      for await (const line of readLines(fh, { start: from.offset, startLine: from.line, highWaterMark: this.highWaterMark, maxLineBytes: this.maxLineBytes })) {
        at = { offset: line.end, line: line.lineNo };
        lines++;
        const place = `${name}:${line.lineNo}`;
        const outcome = line.bytes === undefined
          ? { bad: `line is ${line.length} bytes, longer than the limit of ${this.maxLineBytes}` }
          : this.parseLine(entity, line.bytes, line.start === 0, req.since);
        if (outcome !== undefined) {
          if ('record' in outcome) page.records.push(outcome.record);
          else page.bad.push(badRecord(entity, place, outcome.bad, outcome.platformId));
        }
        if (page.records.length + page.bad.length >= pageSize || lines >= maxLines) break;
        if (lines % 256 === 0) req.signal?.throwIfAborted();
      }
      if (at.offset < size) page.nextPageToken = encodeFileToken(at);
      this.logger?.debug({ entity, file: name, fromLine: from.line + 1, toLine: at.line, records: page.records.length, bad: page.bad.length, last: page.nextPageToken === undefined }, 'file page read');
      return page;
    } finally {
      await fh.close();
    }
  }

  /** One line's outcome: a record, a bad record, or undefined (blank, or before `since`). */
  private parseLine<E extends Entity>(
    entity: E,
    bytes: Buffer,
    firstInFile: boolean,
    since: Cursor | undefined,
  ): { record: RecordOf[E] } | { bad: string; platformId?: string } | undefined {
    let body = bytes;
    if (firstInFile && body.subarray(0, 3).equals(BOM)) body = body.subarray(3);
    if (body.length > 0 && body[body.length - 1] === CR) body = body.subarray(0, body.length - 1);
    let text: string;
    try {
      text = this.decoder.decode(body);
    } catch {
      return { bad: 'invalid UTF-8' };
    }
    if (text.trim() === '') return undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return { bad: `invalid JSON: ${(err as Error).message}` };
    }
    if (since !== undefined) {
      const cursor = rawCursor(raw);
      if (cursor !== undefined && compareCursor(cursor, since) < 0) return undefined;
    }
    const checked = checkRecord(entity, raw);
    if (checked.ok) return { record: checked.record };
    const platformId = checked.platformId ?? rawId(raw);
    return platformId === undefined ? { bad: checked.reason } : { bad: checked.reason, platformId };
  }

  private async openOrNone(path: string, name: string): Promise<FileHandle | undefined> {
    try {
      if (this.root === undefined) return await open(path, 'r');
      // The file's real path, checked against the root's, then opened as it is (a link swapped in after the check
      // is not followed: O_NOFOLLOW on the last part).
      const root = await realpath(this.root).catch((err: unknown) => {
        throw new PlatformError('PLATFORM_UNAVAILABLE', `file adapter: FILE_PLATFORM_ROOT cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, false, { cause: err });
      });
      const real = await realpath(path);
      if (!isUnder(root, real)) {
        throw new PlatformError('PLATFORM_UNAVAILABLE', `file adapter: ${name} is outside FILE_PLATFORM_ROOT (the folder or the file is a symbolic link out of it); fix the folder`, false);
      }
      return await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new PlatformError('PLATFORM_UNAVAILABLE', `file adapter: cannot open ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, false, { cause: err });
    }
  }

  /** A token's offset must follow a `\n`; anything else means the file was replaced since the token was issued. */
  private async checkLineStart(fh: FileHandle, offset: number, name: string): Promise<void> {
    if (offset === 0) return;
    const one = Buffer.alloc(1);
    const { bytesRead } = await fh.read(one, 0, 1, offset - 1);
    if (bytesRead !== 1 || one[0] !== 0x0a) {
      throw new PlatformError('PLATFORM_BAD_RESPONSE', `file adapter: ${name} changed since the page token was issued (offset ${offset} is not a line start); restart the listing`, false);
    }
  }

  async close(): Promise<void> {
    // Files are opened and closed per page: nothing is held between pages.
  }
}

function badRecord(entity: Entity, place: string, reason: string, platformId: string | undefined): BadRecord {
  return platformId === undefined ? { entity, place, reason } : { entity, place, reason, platformId };
}
