/**
 * A quick yes/no check compiled from a zod schema, for the service's answers on the hot path (issue 14: zod's
 * parse of every answer was ~5% of a sync's CPU). The schema stays the spec: the check is derived from its
 * definition, not written beside it, and only for the kinds whose meaning is plain (string with length and
 * pattern checks, number, safe integer and bounds, boolean, enum, unknown, optional, nullable, array, and loose
 * objects, which keep unknown keys as they are). `true` means zod would accept the value and give back an equal
 * one, so the value itself can be used; `false` means nothing, and the caller parses with zod, which refuses the
 * value with issues naming the field. A schema with anything else (transforms, defaults, stripping objects,
 * refinements) compiles to no check at all, and is always parsed with zod.
 */
import type { z } from 'zod';

export type FastCheck = (value: unknown) => boolean;

/** What the check reads of zod's definitions (zod v4's `_zod.def`). */
interface Def {
  type: string;
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
    default:
      return undefined;
  }
}

function stringCheck(def: Def): FastCheck | undefined {
  let min = 0;
  let max = Infinity;
  const patterns: RegExp[] = [];
  // A format schema (z.guid(), z.email(), ...) carries its format on its own definition.
  if (def.format !== undefined) {
    if (def.format !== 'guid' || !(def.pattern instanceof RegExp)) return undefined;
    patterns.push(def.pattern);
  }
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    if (d.check === 'min_length' && d.minimum !== undefined) min = Math.max(min, d.minimum);
    else if (d.check === 'max_length' && d.maximum !== undefined) max = Math.min(max, d.maximum);
    else if (d.check === 'string_format' && d.pattern instanceof RegExp && (d.format === 'guid' || d.format === 'regex')) patterns.push(d.pattern);
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

/** Loose objects only: a stripping object's answer is not the value given, a strict one refuses unknown keys. */
function objectCheck(def: Def): FastCheck | undefined {
  if (def.checks?.length || def.shape === undefined || def.catchall?._zod.def.type !== 'unknown') return undefined;
  const fields: [string, FastCheck][] = [];
  for (const [key, s] of Object.entries(def.shape)) {
    const c = compile(s);
    if (!c) return undefined;
    fields.push([key, c]);
  }
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const o = v as Record<string, unknown>;
    for (const [key, c] of fields) if (!c(o[key])) return false;
    return true;
  };
}
