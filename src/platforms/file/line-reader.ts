/**
 * Lines of a file from a byte offset, split on raw bytes so every offset is exact and a multi-byte character
 * cut by a chunk boundary is decoded whole. Holds at most one line (capped at `maxLineBytes`) plus one chunk.
 */
import type { FileHandle } from 'node:fs/promises';

export interface RawLine {
  /** 1-based line number in the file. */
  lineNo: number;
  /** The line's bytes without the `\n` (a trailing `\r` is kept); undefined when longer than `maxLineBytes`. */
  bytes: Buffer | undefined;
  /** The line's length in bytes, without the `\n`. */
  length: number;
  /** Byte offset of the line's first byte. */
  start: number;
  /** Byte offset just after the line's `\n` (or the end of the file for a last line without one). */
  end: number;
}

export interface ReadLinesOptions {
  /** Byte offset to start at: 0 or just after a `\n`. */
  start: number;
  /** Lines before `start`, so the first line read is `startLine + 1`. */
  startLine: number;
  /** Read chunk size in bytes. */
  highWaterMark: number;
  /** A longer line is yielded with `bytes: undefined` and its bytes are dropped as they stream past. */
  maxLineBytes: number;
}

const NL = 0x0a;

/** Yields lines until the end of the file or until the caller stops; the stream is destroyed either way. */
export async function* readLines(fh: FileHandle, opts: ReadLinesOptions): AsyncGenerator<RawLine, void, undefined> {
  const stream = fh.createReadStream({ start: opts.start, highWaterMark: opts.highWaterMark, autoClose: false });
  let parts: Buffer[] = [];
  let kept = 0;
  let length = 0;
  let oversize = false;
  let lineStart = opts.start;
  let lineNo = opts.startLine;

  const append = (piece: Buffer): void => {
    length += piece.length;
    if (oversize || piece.length === 0) return;
    if (kept + piece.length > opts.maxLineBytes) {
      oversize = true;
      parts = [];
      kept = 0;
      return;
    }
    parts.push(piece);
    kept += piece.length;
  };
  const take = (end: number): RawLine => {
    const bytes = oversize ? undefined : Buffer.concat(parts, kept);
    const line: RawLine = { lineNo: ++lineNo, bytes, length, start: lineStart, end };
    parts = [];
    kept = 0;
    length = 0;
    oversize = false;
    lineStart = end;
    return line;
  };

  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      while (from < chunk.length) {
        const nl = chunk.indexOf(NL, from);
        if (nl === -1) {
          append(chunk.subarray(from));
          break;
        }
        append(chunk.subarray(from, nl));
        yield take(lineStart + length + 1);
        from = nl + 1;
      }
    }
    if (length > 0) yield take(lineStart + length);
  } finally {
    stream.destroy();
  }
}
