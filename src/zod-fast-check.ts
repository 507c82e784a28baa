/**
 * A quick yes/no check compiled from a zod schema, for the service's answers and the request bodies on the hot
 * path (issue 14: zod's parse of every answer was ~5% of a sync's CPU, the check of every body sent ~5% more). The
 * schema stays the spec: the check is derived from its definition, not written beside it, and only for the kinds
 * whose meaning is plain (string with length checks and the formats zod checks by a pattern alone: guid, email,
 * ISO date, regex; number, safe integer and bounds, boolean, enum, unknown, optional, nullable, array, records of
 * string keys, and objects: a loose one keeps unknown keys as they are, and a stripping or strict one passes only
 * a value without unknown keys, which zod would give back unchanged). `true` means zod would accept the value and
 * give back an equal one, so the value itself can be used; `false` means nothing, and the caller parses with zod,
 * which refuses the value with issues naming the field. A default passes a value given (zod's default is only for
 * none), a date-time format is a pattern like the others, and an object's refinements are called as zod calls
 * them (so platform records pass too: ~3% of a sync's CPU was zod's parse of every record read). A schema with
 * anything else (transforms, other formats, checks it does not know) compiles to no check at all, and is always
 * parsed with zod.
 */
import type { z } from 'zod';

export type FastCheck = (value: unknown) => boolean;

/** What the check reads of zod's definitions (zod v4's `_zod.def`). */
interface Def {
  type: string;
  keyType?: Schema;
  valueType?: Schema;
  checks?: { _zod: { def: CheckDef } }[];
  format?: string;
  pattern?: RegExp;
  innerType?: Schema;
  element?: Schema;
  shape?: Record<string, Schema>;
  catchall?: Schema;
  entries?: Record<string, unknown>;
}
interface CheckDef {
  check: string;
  type?: string;
  fn?: unknown;
  when?: unknown;
  minimum?: number;
  maximum?: number;
  value?: number;
  inclusive?: boolean;
  format?: string;
  pattern?: RegExp;
}
interface Schema {
  _zod: { def: Def };
}

const compiled = new WeakMap<object, FastCheck | null>();

/** The schema's quick check, or undefined when the schema uses something the check does not cover. */
export function fastCheckOf(schema: z.ZodType): FastCheck | undefined {
  let c = compiled.get(schema);
  if (c === undefined) {
    c = compile(schema) ?? null;
    compiled.set(schema, c);
  }
  return c ?? undefined;
}

function compile(schema: Schema): FastCheck | undefined {
  const def = schema._zod.def;
  switch (def.type) {
    case 'unknown':
    case 'any':
      return () => true;
    case 'boolean':
      return def.checks?.length ? undefined : (v) => typeof v === 'boolean';
    case 'string':
      return stringCheck(def);
    case 'number':
      return numberCheck(def);
    case 'enum': {
      if (def.checks?.length || def.entries === undefined) return undefined;
      const values = new Set(Object.values(def.entries));
      return (v) => values.has(v);
    }
    case 'optional': {
      const inner = def.innerType && compile(def.innerType);
      return inner && ((v) => v === undefined || inner(v));
    }
    case 'nullable': {
      const inner = def.innerType && compile(def.innerType);
      return inner && ((v) => v === null || inner(v));
    }
    case 'default': {
      // No value: zod gives the default, not the value; so only a value given passes (then zod checks the inner).
      const inner = def.innerType && compile(def.innerType);
      return inner && ((v) => v !== undefined && inner(v));
    }
    case 'array': {
      const element = def.element && compile(def.element);
      if (!element || def.checks?.length) return undefined;
      return (v) => {
        if (!Array.isArray(v)) return false;
        for (const e of v) if (!element(e)) return false;
        return true;
      };
    }
    case 'object':
      return objectCheck(def);
    case 'record':
      return recordCheck(def);
    default:
      return undefined;
  }
}

/** String formats zod checks by their pattern alone (zod v4's $ZodGUID, $ZodEmail, $ZodISODate; a regex check). */
const PATTERN_FORMATS: ReadonlySet<string> = new Set(['guid', 'email', 'date', 'datetime', 'regex']);

function stringCheck(def: Def): FastCheck | undefined {
  let min = 0;
  let max = Infinity;
  const patterns: RegExp[] = [];
  // A format schema (z.guid(), z.email(), ...) carries its format on its own definition.
  if (def.format !== undefined) {
    if (!PATTERN_FORMATS.has(def.format) || !(def.pattern instanceof RegExp)) return undefined;
    patterns.push(def.pattern);
  }
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    if (d.check === 'min_length' && d.minimum !== undefined) min = Math.max(min, d.minimum);
    else if (d.check === 'max_length' && d.maximum !== undefined) max = Math.min(max, d.maximum);
    else if (d.check === 'string_format' && d.pattern instanceof RegExp && d.format !== undefined && PATTERN_FORMATS.has(d.format)) patterns.push(d.pattern);
    else return undefined;
  }
  return (v) => {
    if (typeof v !== 'string' || v.length < min || v.length > max) return false;
    for (const p of patterns) {
      p.lastIndex = 0;
      if (!p.test(v)) return false;
    }
    return true;
  };
}

function numberCheck(def: Def): FastCheck | undefined {
  const tests: ((n: number) => boolean)[] = [];
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    const bound = d.value;
    if (d.check === 'number_format' && d.format === 'safeint') tests.push(Number.isSafeInteger);
    else if (d.check === 'greater_than' && bound !== undefined) tests.push(d.inclusive ? (n) => n >= bound : (n) => n > bound);
    else if (d.check === 'less_than' && bound !== undefined) tests.push(d.inclusive ? (n) => n <= bound : (n) => n < bound);
    else return undefined;
  }
  return (v) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) return false;
    for (const t of tests) if (!t(v)) return false;
    return true;
  };
}

/**
 * An object of Object's own prototype (or none), as JSON.parse and object literals make: what zod copies field by
 * field into an equal one (a Map, a Date or a class instance would come back as a plain object of its own keys).
 */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Whether zod's copy of the object keeps all of its keys: zod copies string keys only, and never `__proto__`
 * (JSON.parse makes it an own key); an object with either is left to zod.
 */
function copied(o: object): boolean {
  return !Object.hasOwn(o, '__proto__') && Object.getOwnPropertySymbols(o).length === 0;
}

/**
 * A loose object (catchall unknown) keeps unknown keys as they are; a stripping one (no catchall) would drop them
 * and a strict one (catchall never) refuses them, so for those two a value with an unknown key is left to zod.
 */
function objectCheck(def: Def): FastCheck | undefined {
  const refinements = refinementsOf(def);
  if (refinements === undefined) return undefined;
  const shaped = shapeCheck(def);
  if (!shaped || refinements.length === 0) return shaped;
  return (v) => {
    if (!shaped(v)) return false;
    for (const fn of refinements) {
      try {
        if (fn(v) !== true) return false;
      } catch {
        return false;
      }
    }
    return true;
  };
}

/**
 * A schema's refinements (`.refine(fn)`: a check zod runs by calling `fn` with the value, which passes when `fn`
 * answers truthy) as functions, or undefined when it has any other check. A value the quick check reaches has no
 * earlier issue, so zod calls each of them (none has a `when`); only a plain `true` passes here (a promise,
 * another truthy value or a throw leave the value to zod).
 */
function refinementsOf(def: Def): ((v: unknown) => unknown)[] | undefined {
  const out: ((v: unknown) => unknown)[] = [];
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    if (d.check !== 'custom' || d.type !== 'custom' || typeof d.fn !== 'function' || d.when !== undefined) return undefined;
    out.push(d.fn as (v: unknown) => unknown);
  }
  return out;
}

function shapeCheck(def: Def): FastCheck | undefined {
  if (def.shape === undefined) return undefined;
  const catchall = def.catchall?._zod.def.type;
  if (catchall !== undefined && catchall !== 'unknown' && catchall !== 'never') return undefined;
  const fields: [string, FastCheck][] = [];
  for (const [key, s] of Object.entries(def.shape)) {
    const c = compile(s);
    if (!c) return undefined;
    fields.push([key, c]);
  }
  if (catchall === 'unknown') {
    return (v) => {
      if (!isPlainObject(v)) return false;
      for (const [key, c] of fields) if (!c(v[key])) return false;
      return copied(v);
    };
  }
  // Stripping or strict: every key of the value must be one of the shape's (else zod drops or refuses it), so the
  // check walks the value's keys (a request body has a few of the schema's many optional fields), then the fields
  // that refuse an absent value.
  const byKey = new Map(fields);
  const required = fields.filter(([, c]) => !c(undefined));
  return (v) => {
    if (!isPlainObject(v)) return false;
    for (const key in v) {
      const c = byKey.get(key);
      if (c === undefined || !c(v[key])) return false;
    }
    for (const [key, c] of required) if (!c(v[key])) return false;
    return copied(v);
  };
}

/**
 * Records of plain string keys: zod builds a new object of the value's own enumerable string keys (no symbols, no
 * `__proto__`) from a plain object; the check passes only such a value whose entries pass.
 */
function recordCheck(def: Def): FastCheck | undefined {
  const keyDef = def.keyType?._zod.def;
  if (def.checks?.length || keyDef?.type !== 'string' || keyDef.checks?.length || keyDef.format !== undefined) return undefined;
  const value = def.valueType && compile(def.valueType);
  if (!value) return undefined;
  return (v) => {
    if (!isPlainObject(v) || !copied(v)) return false;
    for (const key of Object.keys(v)) if (!value(v[key])) return false;
    return true;
  };
}
