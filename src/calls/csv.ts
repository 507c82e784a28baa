/**
 * CSV call lists, read with csv-parse (RFC 4180: quoted cells, `""` for a quote, line breaks inside quotes, a
 * leading BOM). Line endings may be LF, CRLF or CR alone: they are made LF first, so csv-parse's line count is the
 * file's (it counts a CRLF inside quotes as two lines otherwise). The delimiter is given, or taken from the header
 * line: the most frequent of `, ; tab |` outside quotes (comma when there is none).
 *
 * A row that does not parse (text after a closing quote, a quote inside an unquoted cell) is reported with its
 * line and reading goes on at the next line. A quote that never closes would swallow the rest of the file into one
 * cell: the read stops there and says so (`truncated`). Unquoted cells are trimmed; quoted cells are kept as
 * written. Lines that are empty or blank are skipped.
 */
import { CsvError as ParseError, parse } from 'csv-parse/sync';

export const DELIMITERS = { ',': 'comma', ';': 'semicolon', '\t': 'tab', '|': 'pipe' } as const;
export type Delimiter = keyof typeof DELIMITERS;

export interface CsvRecord {
  /** The line the record starts on (1 = the first line of the file). */
  line: number;
  fields: string[];
}

export interface CsvProblem {
  line: number;
  reason: string;
}

export interface CsvRead {
  records: CsvRecord[];
  problems: CsvProblem[];
  delimiter: Delimiter;
  /** A quote never closed: nothing after its line was read. */
  truncated: boolean;
}

/** `,` `;` `|`, a tab, or its name (`comma`, `semicolon`, `tab`, `pipe`; `\t` as typed on a command line). */
export function parseDelimiter(value: string): Delimiter | undefined {
  const v = value === '\\t' ? '\t' : value.toLowerCase();
  if (v in DELIMITERS) return v as Delimiter;
  return (Object.keys(DELIMITERS) as Delimiter[]).find((d) => DELIMITERS[d] === v);
}

/** The most frequent delimiter outside quotes on the first non-blank line; comma when the line has none. */
export function detectDelimiter(text: string): Delimiter {
  const header = text.split('\n').find((l) => l.trim() !== '') ?? '';
  const counts = new Map<Delimiter, number>();
  let quoted = false;
  for (const ch of header) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch in DELIMITERS) counts.set(ch as Delimiter, (counts.get(ch as Delimiter) ?? 0) + 1);
  }
  let best: Delimiter = ',';
  for (const [d, n] of counts) if (n > (counts.get(best) ?? 0)) best = d;
  return best;
}

function reasonOf(err: ParseError): string {
  switch (err.code) {
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'text after the closing quote of a cell (quote the whole cell; write a quote inside it as "")';
    case 'INVALID_OPENING_QUOTE':
      return 'a quote inside a cell that does not start with one (quote the whole cell; write a quote inside it as "")';
    default:
      return err.message;
  }
}

const newlines = (s: string): number => s.split('\n').length - 1;

/** Rows that do not parse before the reader gives up on the file (it is not the CSV it claims to be). */
const MAX_PROBLEMS = 200;

export function readCsv(input: string, options: { delimiter?: Delimiter } = {}): CsvRead {
  const text = (input.startsWith('\uFEFF') ? input.slice(1) : input).replace(/\r\n?/g, '\n');
  const delimiter = options.delimiter ?? detectDelimiter(text);
  const lines = text.split('\n');
  /** Where each line starts in `text`. */
  const offsets: number[] = [];
  for (let i = 0, at = 0; i < lines.length; at += (lines[i]?.length ?? 0) + 1, i += 1) offsets.push(at);
  const records: CsvRecord[] = [];
  const problems: CsvProblem[] = [];
  const stop = (line: number, reason: string): CsvRead => {
    problems.push({ line, reason });
    return { records, problems, delimiter, truncated: true };
  };
  // After a row that does not parse, reading starts again on the next line: `from` is that line (1-based).
  for (let from = 1; from <= lines.length; ) {
    const before = from - 1;
    let lastEnd = before;
    try {
      parse(text.slice(offsets[before]), {
        delimiter,
        relax_column_count: true,
        skip_empty_lines: true,
        trim: true,
        on_record: (fields: string[], info) => {
          lastEnd = before + info.lines;
          if (fields.some((f) => f !== '')) records.push({ line: lastEnd - fields.reduce((n, f) => n + newlines(f), 0), fields });
          return null;
        },
      });
      break;
    } catch (err) {
      if (!(err instanceof ParseError)) throw err;
      if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
        // The record starts on the first non-blank line after the last one read.
        let start = lastEnd + 1;
        while (start < lines.length && lines[start - 1]?.trim() === '') start += 1;
        return stop(start, 'a quoted cell is not closed: nothing from here to the end of the file was read');
      }
      // Every csv-parse error carries `lines`; without it there is no place to go on from.
      if (typeof err.lines !== 'number') return stop(from, reasonOf(err));
      const line = before + err.lines;
      problems.push({ line, reason: reasonOf(err) });
      if (problems.length >= MAX_PROBLEMS) return stop(line + 1, `${MAX_PROBLEMS} lines could not be read; the rest of the file was not (is it CSV?)`);
      from = line + 1;
    }
  }
  return { records, problems, delimiter, truncated: false };
}
