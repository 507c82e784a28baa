/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), written to its specification: a
 * character-level tokenizer for sample lines (label-value escapes, +Inf/-Inf/NaN, optional timestamps), HELP and
 * TYPE lines, families resolved by type (histogram `_bucket`/`_sum`/`_count`, summary `_sum`/`_count`), and the
 * format's rules: one TYPE per family and before its samples, each family's lines in one group, no duplicate series,
 * no reserved `__` label names; histograms with ascending `le` ending in +Inf, cumulative counts, `_count` equal to
 * the +Inf bucket. Any breach throws with the line number.
 *
 * Why not a package: parse-prometheus-text-format merges the series of a labelled histogram into one and drops
 * their labels, `_sum` and `_count`, and accepts `garbage line here` as a sample; promotel's parser skips lines it
 * cannot read. The first is still used as an independent cross-check of counters and gauges.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const NAME_START = /[a-zA-Z_:]/;
const NAME_CHAR = /[a-zA-Z0-9_:]/;
const LABEL_START = /[a-zA-Z_]/;
const LABEL_CHAR = /[a-zA-Z0-9_]/;
const TYPES: readonly MetricType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];

/** A float as Go's strconv.ParseFloat reads it (the format's definition): its special values in any case. */
function parseFloatStrict(text: string, line: number, what: string): number {
  const special = /^([+-]?)(inf|infinity)$/i.exec(text);
  if (special) return special[1] === '-' ? -Infinity : Infinity;
  // prom-client writes NaN as `Nan`, which Prometheus (ParseFloat) reads.
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new ExpositionError(line, `${what} "${text}" is not a float`);
  return Number(text);
}

/** One sample line, tokenized character by character. */
export function parseSampleLine(text: string, line: number): Sample {
  let i = 0;
  const fail = (msg: string): never => {
    throw new ExpositionError(line, `${msg} at column ${i + 1} in: ${text}`);
  };
  const readName = (start: RegExp, rest: RegExp, what: string): string => {
    const from = i;
    if (!start.test(text[i] ?? '')) fail(`expected a ${what}`);
    i += 1;
    while (i < text.length && rest.test(text[i] ?? '')) i += 1;
    return text.slice(from, i);
  };
  const name = readName(NAME_START, NAME_CHAR, 'metric name');
  const labels: Record<string, string> = {};
  if (text[i] === '{') {
    i += 1;
    for (;;) {
      if (text[i] === '}') {
        i += 1;
        break;
      }
      const label = readName(LABEL_START, LABEL_CHAR, 'label name');
      if (label.startsWith('__')) fail(`label name "${label}" is reserved`);
      if (Object.hasOwn(labels, label)) fail(`label "${label}" repeated`);
      if (text[i] !== '=') fail('expected "="');
      i += 1;
      if (text[i] !== '"') fail('expected an opening quote');
      i += 1;
      let value = '';
      for (;;) {
        const c = text[i];
        if (c === undefined) fail('unterminated label value');
        if (c === '"') break;
        if (c === '\\') {
          const e = text[i + 1];
          if (e === '\\') value += '\\';
          else if (e === '"') value += '"';
          else if (e === 'n') value += '\n';
          else fail(`invalid escape "\\${e ?? ''}"`);
          i += 2;
          continue;
        }
        value += c;
        i += 1;
      }
      i += 1;
      labels[label] = value;
      if (text[i] === ',') {
        i += 1;
        continue;
      }
      if (text[i] !== '}') fail('expected "," or "}"');
    }
  }
  if (text[i] !== ' ' && text[i] !== '\t') fail('expected a blank before the value');
  const rest = text.slice(i).trim().split(/[ \t]+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') fail('expected a value and at most a timestamp');
  const sample: Sample = { name, labels, value: parseFloatStrict(rest[0] ?? '', line, 'value') };
  if (rest[1] !== undefined) {
    if (!/^-?\d+$/.test(rest[1])) fail(`timestamp "${rest[1]}" is not an integer`);
    sample.timestamp = Number(rest[1]);
  }
  return sample;
}

function unescapeHelp(text: string, line: number): string {
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = text[i + 1];
    if (e === '\\') out += '\\';
    else if (e === 'n') out += '\n';
    else throw new ExpositionError(line, `invalid escape in HELP: \\${e ?? ''}`);
    i += 1;
  }
  return out;
}

/** The family a sample belongs to, given the TYPEs declared so far. */
function familyOf(sample: string, types: Map<string, MetricType>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sample.endsWith(suffix)) continue;
    const base = sample.slice(0, -suffix.length);
    const t = types.get(base);
    if (t === 'histogram' || (t === 'summary' && suffix !== '_bucket')) return base;
  }
  return sample;
}

function seriesKey(s: Sample, without?: string): string {
  return `${s.name}{${Object.keys(s.labels)
    .filter((k) => k !== without)
    .sort()
    .map((k) => `${k}=${JSON.stringify(s.labels[k])}`)
    .join(',')}}`;
}

function checkHistogram(f: Family, line: number): void {
  const groups = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const rest = { ...s, name: f.name };
    const key = seriesKey(rest, 'le');
    const g = groups.get(key) ?? { buckets: [] };
    groups.set(key, g);
    if (s.name === `${f.name}_bucket`) {
      const le = s.labels['le'];
      if (le === undefined) throw new ExpositionError(line, `${f.name}: a bucket without "le"`);
      g.buckets.push([parseFloatStrict(le, line, 'le'), s.value]);
    } else if (s.name === `${f.name}_sum`) g.sum = s.value;
    else if (s.name === `${f.name}_count`) g.count = s.value;
    else throw new ExpositionError(line, `${f.name}: unexpected sample ${s.name} in a histogram`);
  }
  for (const [key, g] of groups) {
    if (g.buckets.length === 0 || g.sum === undefined || g.count === undefined) throw new ExpositionError(line, `${key}: histogram needs buckets, _sum and _count`);
    for (let i = 1; i < g.buckets.length; i += 1) {
      const [le, n] = g.buckets[i]!;
      const [prevLe, prevN] = g.buckets[i - 1]!;
      if (!(le > prevLe)) throw new ExpositionError(line, `${key}: "le" not ascending`);
      if (n < prevN) throw new ExpositionError(line, `${key}: bucket counts not cumulative`);
    }
    const last = g.buckets[g.buckets.length - 1]!;
    if (last[0] !== Infinity) throw new ExpositionError(line, `${key}: the last bucket is not +Inf`);
    if (last[1] !== g.count) throw new ExpositionError(line, `${key}: _count ${g.count} differs from the +Inf bucket ${last[1]}`);
  }
}

/** Parses a whole exposition; families by name, in order of appearance. */
export function parseExposition(text: string): Map<string, Family> {
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError(text.split('\n').length, 'the exposition must end with a line feed');
  const families = new Map<string, Family>();
  const types = new Map<string, MetricType>();
  const helps = new Map<string, string>();
  const closed = new Set<string>();
  const series = new Set<string>();
  let current: Family | undefined;
  const lines = text.split('\n');
  lines.pop();
  const family = (name: string, line: number): Family => {
    if (current?.name === name) return current;
    if (closed.has(name) || families.has(name)) throw new ExpositionError(line, `family ${name} is not in one group`);
    if (current) closed.add(current.name);
    const help = helps.get(name);
    current = { name, type: types.get(name) ?? 'untyped', ...(help !== undefined ? { help } : {}), samples: [] };
    families.set(name, current);
    return current;
  };
  lines.forEach((raw, index) => {
    const line = index + 1;
    const text = raw.trim();
    if (text === '') return;
    if (text.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(text);
      if (!m) return; // a plain comment
      const [, kind, name = '', rest = ''] = m;
      if (!NAME_START.test(name[0] ?? '') || ![...name].every((c) => NAME_CHAR.test(c))) throw new ExpositionError(line, `bad metric name "${name}"`);
      if (families.has(name)) throw new ExpositionError(line, `${kind} for ${name} after its samples`);
      if (kind === 'TYPE') {
        if (types.has(name)) throw new ExpositionError(line, `second TYPE for ${name}`);
        if (!(TYPES as readonly string[]).includes(rest)) throw new ExpositionError(line, `unknown type "${rest}"`);
        types.set(name, rest as MetricType);
      } else {
        if (helps.has(name)) throw new ExpositionError(line, `second HELP for ${name}`);
        helps.set(name, unescapeHelp(rest, line));
      }
      return;
    }
    const sample = parseSampleLine(text, line);
    const key = seriesKey(sample);
    if (series.has(key)) throw new ExpositionError(line, `duplicate series ${key}`);
    series.add(key);
    family(familyOf(sample.name, types), line).samples.push(sample);
  });
  // Families declared by TYPE or HELP without samples (a labelled metric never set) are part of the exposition too.
  for (const name of new Set([...types.keys(), ...helps.keys()])) {
    if (families.has(name)) continue;
    const help = helps.get(name);
    families.set(name, { name, type: types.get(name) ?? 'untyped', ...(help !== undefined ? { help } : {}), samples: [] });
  }
  for (const f of families.values()) {
    if (f.type === 'histogram') checkHistogram(f, lines.length);
    if (f.type === 'counter') for (const s of f.samples) if (!(s.value >= 0)) throw new ExpositionError(lines.length, `counter ${s.name} is ${s.value}`);
  }
  return families;
}

/** The sum of a family's samples named `sampleName` whose labels include `labels` (0 when none). */
export function sumOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}, sampleName = name): number {
  const f = families.get(name);
  if (!f) return 0;
  return f.samples
    .filter((s) => s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}
