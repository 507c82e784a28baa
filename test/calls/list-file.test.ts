/**
 * Explicit call lists: CSV (read with csv-parse) and JSON. Every rejected row is named with its line and reason,
 * nothing is silently rewritten, line numbers are the file's whatever its line endings.
 */
import { describe, expect, it } from 'vitest';
import { detectDelimiter, parseCallList, parseDelimiter, readCsv } from '../../src/calls/index.js';

const listCtx = { tenant: 'acme', campaignId: 'cmp-list', region: 'SA' };
const numbersOf = (r: ReturnType<typeof parseCallList>): string[] => r.targets.map((t) => t.number);

describe('explicit lists', () => {
  it('reads CSV with quotes, tags and metadata, and reports bad rows by line', () => {
    const csv = [
      'number,firstName,name,tag.amountDue,meta.ref',
      '0501234567,Sara,"Gulf Date Farms, Ltd",500 SAR,A-1',
      '12345,Noura,Bad Number,,',
      '"+966 55 123 4567",,"Quote ""Co""",,',
      '050-123-4567,Dup,,,',
      '0561234567,Too,Many,Cells,x,y',
    ].join('\r\n');
    const r = parseCallList(csv, 'csv', listCtx);
    expect(r.rows).toBe(5);
    expect(r.unit).toBe('line');
    expect(r.targets.map((t) => t.contact)).toEqual([
      { numberToCall: '+966501234567', firstName: 'Sara', promptTags: { customerName: 'Gulf Date Farms, Ltd', amountDue: '500 SAR' }, metadata: { ref: 'A-1', tenant: 'acme', campaignId: 'cmp-list', number: '+966501234567' } },
      { numberToCall: '+966551234567', promptTags: { customerName: 'Quote "Co"' }, metadata: { tenant: 'acme', campaignId: 'cmp-list', number: '+966551234567' } },
    ]);
    expect(r.errors).toEqual([
      { row: 3, reason: expect.stringContaining('not a valid number') as unknown },
      { row: 5, reason: 'the same number as line 2 (+966501234567)' },
      { row: 6, reason: 'more cells than header columns' },
    ]);
  });

  it('reads JSON rows and refuses non-string tags, unknown fields and reserved metadata', () => {
    const json = JSON.stringify([
      { numberToCall: '0501234567', promptTags: { invoiceNumbers: 'INV-9' }, metadata: { batch: 7 } },
      { number: '0551234567', promptTags: { amountDue: 500 } },
      { phone: '0561234567', colour: 'red' },
      { number: '0571234567', metadata: { tenant: 'other' } },
      'not an object',
      { firstName: 'NoNumber' },
    ]);
    const r = parseCallList(json, 'json', listCtx);
    expect(r.unit).toBe('row');
    expect(r.targets).toHaveLength(1);
    expect(r.targets[0]?.contact.metadata).toEqual({ batch: 7, tenant: 'acme', campaignId: 'cmp-list', number: '+966501234567' });
    expect(r.errors.map((e) => e.row)).toEqual([2, 3, 4, 5, 6]);
    expect(r.errors[0]?.reason).toContain('string values only');
    expect(r.errors[1]?.reason).toContain('unknown field colour');
    expect(r.errors[2]?.reason).toContain('metadata.tenant');
    expect(r.errors[4]?.reason).toContain('number: required');
  });

  it('refuses a CSV without a number column, with a column given twice, or with an unreadable header', () => {
    expect(parseCallList('name,email\nA,a@x.sa', 'csv', listCtx).errors[0]?.reason).toContain('unknown column email');
    expect(parseCallList('number,name,name\n0501234567,A,B', 'csv', listCtx).errors).toEqual([{ row: 1, reason: 'column name given twice' }]);
    const header = parseCallList('num"ber\n0501234567\n', 'csv', listCtx);
    expect(header.targets).toEqual([]);
    expect(header.errors).toEqual([{ row: 1, reason: expect.stringContaining('the header row cannot be read: a quote inside a cell') as unknown }]);
  });

  it('rejects a quoted cell followed by garbage, naming its line, and reads on at the next line', () => {
    // The hand-written reader turned `"+96650"x` into `+96650x` and went on as if nothing had happened.
    const csv = 'number,name\n"+966501234567"x,Garbage After Quote\n0551234567,Next Row\n05"61234567,Stray Quote\n0571234567,Last\n';
    const r = parseCallList(csv, 'csv', listCtx);
    expect(numbersOf(r)).toEqual(['+966551234567', '+966571234567']);
    expect(r.errors).toEqual([
      { row: 2, reason: 'text after the closing quote of a cell (quote the whole cell; write a quote inside it as "")' },
      { row: 4, reason: 'a quote inside a cell that does not start with one (quote the whole cell; write a quote inside it as "")' },
    ]);
    expect(r.targets.some((t) => t.label === 'Garbage After Quote')).toBe(false);
  });

  it('reads tab-separated, semicolon and pipe files by their header, or by the delimiter given', () => {
    const tsv = 'number\tname\ttag.note\n0501234567\tAl Noor, Trading\ta; b\n0551234567\t\t\n';
    const r = parseCallList(tsv, 'csv', listCtx);
    expect(r.errors).toEqual([]);
    expect(r.targets.map((t) => [t.number, t.label, t.contact.promptTags])).toEqual([
      ['+966501234567', 'Al Noor, Trading', { customerName: 'Al Noor, Trading', note: 'a; b' }],
      ['+966551234567', '+966551234567', undefined],
    ]);
    const semi = parseCallList('number;name\n0501234567;"Gulf; Date"\n', 'csv', listCtx);
    expect(semi.targets.map((t) => t.label)).toEqual(['Gulf; Date']);
    expect(numbersOf(parseCallList('number|name\n0501234567|A|\n', 'csv', listCtx))).toEqual([]);
    expect(numbersOf(parseCallList('number|name\n0501234567|A\n', 'csv', listCtx))).toEqual(['+966501234567']);
    // A comma inside a quoted header cell is not a delimiter; more semicolons than commas wins.
    expect(detectDelimiter('"number,x";name;tag.a\n')).toBe(';');
    expect(detectDelimiter('number\n')).toBe(',');
    // Given explicitly, the delimiter wins over the header: this semicolon file is then one unknown column.
    const forced = parseCallList('number;name\n0501234567;A\n', 'csv', listCtx, { delimiter: ',' });
    expect(forced.errors[0]?.reason).toContain('unknown column number;name');
    expect(['tab', '\\t', '\t', 'TAB', ';', 'semicolon', '|', 'pipe', ',', 'comma'].map(parseDelimiter)).toEqual(['\t', '\t', '\t', '\t', ';', ';', '|', '|', ',', ',']);
    expect(parseDelimiter(':')).toBeUndefined();
  });

  it('numbers lines exactly with CR-only, CRLF and LF endings, line breaks inside quotes and blank lines', () => {
    const rows = ['number,name', '0501234567,One', '"0551234567","Two\n(second line)"', '', '   ', '12345,Bad', '0561234567,Three'];
    const expected = [
      { row: 7, reason: expect.stringContaining('not a valid number') as unknown },
      { row: 9, reason: 'the same number as line 2 (+966501234567)' },
    ];
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = [...rows.map((r) => r.replace('\n', eol)), '0501234567,Dup'].join(eol);
      const r = parseCallList(text, 'csv', listCtx);
      expect(r.errors, JSON.stringify(eol)).toEqual(expected);
      expect(numbersOf(r), JSON.stringify(eol)).toEqual(['+966501234567', '+966551234567', '+966561234567']);
      expect(readCsv(text).records.map((x) => x.line), JSON.stringify(eol)).toEqual([1, 2, 3, 7, 8, 9]);
    }
  });

  it('drops a leading BOM, also before a semicolon header', () => {
    const r = parseCallList('\uFEFFnumber;name\r\n0501234567;Sara\r\n', 'csv', listCtx);
    expect(r.errors).toEqual([]);
    expect(r.targets.map((t) => [t.number, t.label])).toEqual([['+966501234567', 'Sara']]);
  });

  it('calls nothing from a file whose quote never closes, and says from which line nothing was read', () => {
    const r = parseCallList('number,name\n0501234567,Good\n\n"0551234567,Open\n0561234567,Swallowed\n', 'csv', listCtx);
    expect(r.targets).toEqual([]);
    expect(r.errors).toEqual([{ row: 4, reason: 'a quoted cell is not closed: nothing from here to the end of the file was read' }]);
  });

  it('gives up on a file of unreadable lines after 200 of them, and calls nothing of it', () => {
    const text = ['number', '0501234567', ...Array.from({ length: 300 }, (_, i) => `"05${String(i).padStart(8, '0')}"x`)].join('\n');
    const r = parseCallList(text, 'csv', listCtx);
    expect(r.targets).toEqual([]);
    expect(r.errors).toHaveLength(201);
    expect(r.errors.at(-1)).toEqual({ row: 203, reason: '200 lines could not be read; the rest of the file was not (is it CSV?)' });
  });

  it('a file with no rows, or only bad ones, gives no targets', () => {
    expect(parseCallList('number,name\n', 'csv', listCtx)).toMatchObject({ targets: [], errors: [{ row: 0, reason: 'the list has no rows' }] });
    expect(parseCallList('', 'csv', listCtx)).toMatchObject({ targets: [], errors: [{ row: 1, reason: expect.stringContaining('the file is empty') as unknown }] });
    const bad = parseCallList('number\n12345\n"0501234567"x\n', 'csv', listCtx);
    expect(bad.targets).toEqual([]);
    expect(bad.errors.map((e) => e.row)).toEqual([2, 3]);
  });
});
