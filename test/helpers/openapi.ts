/**
 * The control API's OpenAPI document in tests: `validateDocument` checks it is OpenAPI 3.1 (the official schema,
 * @seriousme/openapi-schema-validator), and `ApiClient` sends a request and checks its answer against the document:
 * the status is one the document gives for that path template and method, the content type one of its, and the
 * body valid under its schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses). An answer for a path or method the
 * document does not have (the one 401, 404, 405) must be a Problem.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives as the module object under ESM interop.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => void;

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: unknown }> }> }>>;
  components: { schemas: Record<string, unknown> };
};

/**
 * The headers of ours an answer may carry only where the document declares them (standard ones, Content-Type,
 * Cache-Control, Connection, Allow, are HTTP's own). Request-Id must be on every answer.
 */
export const DECLARED_HEADERS = ['request-id', 'retry-after', 'www-authenticate', 'idempotent-replayed', 'etag', 'location'] as const;

export async function validateDocument(doc: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const v = new Validator();
  return v.validate(doc as Record<string, unknown>);
}

/** `#/components/...` refs made absolute (`doc#/components/...`), so a schema compiled alone resolves them. */
function absolute(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(absolute);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `doc${v}` : absolute(v)]));
}

export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class ApiClient {
  readonly #doc: Doc;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly #templates: { template: string; pattern: RegExp }[];
  /** Every answer checked: `METHOD template status`. */
  readonly checked: string[] = [];

  constructor(
    doc: unknown,
    readonly base: string,
  ) {
    this.#doc = doc as Doc;
    addFormats(this.#ajv);
    this.#ajv.addSchema({ $id: 'doc', components: absolute(this.#doc.components) as object });
    this.#templates = Object.keys(this.#doc.paths).map((template) => ({ template, pattern: new RegExp(`^${template.replace(/\./g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
  }

  /** Sends `method path` (a JSON body when given) with these headers; the answer is checked against the document. */
  async call<T = Record<string, unknown>>(method: string, path: string, o: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...(o.key !== undefined ? { authorization: `Bearer ${o.key}` } : {}), ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers };
    const res = await fetch(`${this.base}${path}`, { method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : o.raw !== undefined ? { body: o.raw } : {}) });
    const text = await res.text();
    const body = (text === '' ? undefined : JSON.parse(text)) as T;
    this.check(method, path, res.status, res.headers.get('content-type') ?? '', body, res.headers);
    return { status: res.status, headers: res.headers, body, text };
  }

  /** Throws unless the answer is one the document describes: status, content type, body and (given) headers. */
  check(method: string, path: string, status: number, contentType: string, body: unknown, headers?: Headers): void {
    const pathOnly = path.split('?')[0] ?? path;
    const template = this.#templates.find((t) => t.pattern.test(pathOnly))?.template;
    const operation = template === undefined ? undefined : this.#doc.paths[template]?.[method.toLowerCase()];
    const type = contentType.split(';')[0]?.trim() ?? '';
    let schemaRef: string;
    if (operation === undefined) {
      if (type !== 'application/problem+json') throw new Error(`${method} ${path} (no such operation in the document): ${status} answered ${type}, not a problem`);
      schemaRef = 'doc#/components/schemas/Problem';
    } else {
      const response = operation.responses[String(status)];
      if (response === undefined) throw new Error(`${method} ${template}: status ${status} is not in the document (it has ${Object.keys(operation.responses).join(', ')})`);
      if (headers !== undefined) {
        const declared = new Set(Object.keys(response.headers ?? {}).map((h) => h.toLowerCase()));
        if (headers.get('request-id') === null) throw new Error(`${method} ${template} ${status}: no Request-Id`);
        for (const h of DECLARED_HEADERS) if (headers.has(h) && !declared.has(h)) throw new Error(`${method} ${template} ${status}: header ${h} is answered but not declared (declared: ${[...declared].join(', ')})`);
        this.checked.push(`${method} ${template} ${status} headers`);
      }
      if (response.content === undefined) {
        // A response the document gives no content (204): it must have none.
        if (body !== undefined || type !== '') throw new Error(`${method} ${template} ${status}: the document gives no content, the answer has ${type || 'a body'}`);
        this.checked.push(`${method} ${template} ${status}`);
        return;
      }
      if (response.content?.[type] === undefined) throw new Error(`${method} ${template} ${status}: content type ${type} is not in the document (it has ${Object.keys(response.content ?? {}).join(', ')})`);
      const key = `${method} ${template} ${status} ${type}`;
      let validate = this.#compiled.get(key);
      if (!validate) {
        validate = this.#ajv.compile(absolute(response.content[type].schema) as object);
        this.#compiled.set(key, validate);
      }
      if (!validate(body)) throw new Error(`${key}: the body does not match the document: ${this.#ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
      this.checked.push(`${method} ${template} ${status}`);
      return;
    }
    if (headers !== undefined && headers.get('request-id') === null) throw new Error(`${method} ${path} ${status}: no Request-Id`);
    const validate = this.#ajv.getSchema(schemaRef) ?? this.#ajv.compile({ $ref: schemaRef });
    if (!validate(body)) throw new Error(`${method} ${path} ${status}: not a Problem: ${this.#ajv.errorsText(validate.errors)}`);
    this.checked.push(`${method} ${path} ${status}`);
  }
}
