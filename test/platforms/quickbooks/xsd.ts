/**
 * The element and attribute names of Intuit's schema types (test/fixtures/quickbooks/*.xsd), with those of the
 * types they extend: what an entity of that type may carry. A small reader for these files' regular layout
 * (named top-level complexTypes, `xs:extension base=`, `xs:element name=`, `xs:attribute name=`), not a
 * general XSD parser.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const FILES = ['Finance.xsd', 'IntuitBaseTypes.xsd', 'IntuitNamesTypes.xsd', 'IntuitRestServiceDef.xsd'];
const folder = fileURLToPath(new URL('../../fixtures/quickbooks/', import.meta.url));

interface XsdType {
  base?: string;
  names: string[];
}

let types: Map<string, XsdType> | undefined;

function load(): Map<string, XsdType> {
  if (types) return types;
  types = new Map();
  for (const file of FILES) {
    const text = readFileSync(folder + file, 'utf8');
    for (const chunk of text.split(/<xs:complexType name="/).slice(1)) {
      const name = /^([A-Za-z0-9_]+)"/.exec(chunk)?.[1];
      if (name === undefined) continue;
      const body = chunk.slice(0, chunk.indexOf('</xs:complexType>'));
      const base = /<xs:extension base="([A-Za-z0-9_:]+)"/.exec(body)?.[1]?.replace(/^.*:/, '');
      const names = [...body.matchAll(/<xs:(?:element|attribute) name="([A-Za-z0-9_]+)"/g)].map((m) => m[1]!);
      types.set(name, base === undefined ? { names } : { base, names });
    }
  }
  return types;
}

/** Every name an entity of `type` may carry (its own and its bases'). Throws for a type the schemas lack. */
export function xsdFields(type: string): Set<string> {
  const all = load();
  const out = new Set<string>();
  let t: string | undefined = type;
  if (!all.has(type)) throw new Error(`xsd: no complexType ${type}`);
  while (t !== undefined) {
    const found = all.get(t);
    if (!found) break;
    for (const n of found.names) out.add(n);
    t = found.base;
  }
  return out;
}

/** The values of a simpleType enumeration (FaultTypeEnum). */
export function xsdEnum(type: string): string[] {
  for (const file of FILES) {
    const text = readFileSync(folder + file, 'utf8');
    const at = text.indexOf(`<xs:simpleType name="${type}"`);
    if (at < 0) continue;
    const body = text.slice(at, text.indexOf('</xs:simpleType>', at));
    return [...body.matchAll(/<xs:enumeration value="([^"]+)"/g)].map((m) => m[1]!);
  }
  throw new Error(`xsd: no simpleType ${type}`);
}
