/**
 * A small RFC 4180 reader: quoted fields (with "" for a quote and line breaks inside quotes), CRLF or LF,
 * a leading BOM dropped, comma or semicolon as the delimiter (taken from the header line). Each record keeps
 * the line it starts on, for error messages.
 */

export interface CsvRecord {
  line: number;
  fields: string[];
}

export class CsvError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'CsvError';
  }
}

function delimiterOf(text: string): ',' | ';' {
  const end = text.search(/\r?\n/);
  const header = end === -1 ? text : text.slice(0, end);
  return header.includes(';') && !header.includes(',') ? ';' : ',';
}

export function parseCsv(input: string): CsvRecord[] {
  const text = input.startsWith('\uFEFF') ? input.slice(1) : input;
  const delimiter = delimiterOf(text);
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let start = 1;
  let quoted = false;
  let wasQuoted = false;
  const endField = (): void => {
    fields.push(wasQuoted ? field : field.trim());
    field = '';
    wasQuoted = false;
  };
  const endRecord = (): void => {
    endField();
    if (!(fields.length === 1 && fields[0] === '')) records.push({ line: start, fields });
    fields = [];
  };
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 1;
        } else quoted = false;
      } else {
        if (ch === '\n') line += 1;
        field += ch;
      }
      continue;
    }
    if (ch === '"' && field.trim() === '') {
      quoted = true;
      wasQuoted = true;
      field = '';
    } else if (ch === delimiter) endField();
    else if (ch === '\r' && text[i + 1] === '\n') continue;
    else if (ch === '\n' || ch === '\r') {
      endRecord();
      line += 1;
      start = line;
    } else field += ch;
  }
  if (quoted) throw new CsvError(start, 'a quoted field is not closed');
  if (field !== '' || fields.length > 0) endRecord();
  return records;
}
