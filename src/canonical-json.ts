/**
 * JSON with object keys in order, so two values equal as data are equal as text (comparisons, not storage). A value
 * JSON has no text for (undefined, a function) is `null`, in an object as in an array. Written as loops, without
 * the arrays a map and a join make: a start of 40,000 tenants digests 120,000 schedulers with it.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i === 0 ? '' : ',') + canonicalJson(v[i]);
    return `${s}]`;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  // Objects made in one place usually have their keys in order already: sorted only when they are not.
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let s = '{';
  for (let i = 0; i < keys.length; i++) s += `${i === 0 ? '' : ','}${JSON.stringify(keys[i])}:${canonicalJson(o[keys[i]!])}`;
  return `${s}}`;
}
