/**
 * Writes records as NDJSON (one JSON object per line, `\n`-terminated), streaming: backpressure is honoured and
 * only a batch of lines is held at a time. Used for the demo's sample data and the tests.
 */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface WriteNdjsonOptions {
  /** Append instead of replacing the file. */
  append?: boolean;
  /** Lines joined into one write. Default 256. */
  batchLines?: number;
}

/** Writes every record of `records` to `path`; resolves with the number of lines written once the file is flushed. */
export async function writeNdjson(
  path: string,
  records: Iterable<object> | AsyncIterable<object>,
  options: WriteNdjsonOptions = {},
): Promise<number> {
  const batchLines = Math.max(1, options.batchLines ?? 256);
  let count = 0;
  async function* lines(): AsyncGenerator<string> {
    let batch = '';
    let inBatch = 0;
    for await (const record of records) {
      const json = JSON.stringify(record);
      if (typeof json !== 'string') throw new TypeError(`writeNdjson: record ${count + 1} is not JSON-serialisable`);
      batch += `${json}\n`;
      count++;
      if (++inBatch >= batchLines) {
        yield batch;
        batch = '';
        inBatch = 0;
      }
    }
    if (batch !== '') yield batch;
  }
  await pipeline(Readable.from(lines()), createWriteStream(path, { flags: options.append ? 'a' : 'w' }));
  return count;
}
