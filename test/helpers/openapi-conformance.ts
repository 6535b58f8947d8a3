import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';

/** The committed OpenAPI document, and a check of real answers against it (status, headers, media type, schema). */

export interface SchemaDoc {
  $ref?: string;
  type?: string;
  items?: SchemaDoc;
  properties?: Record<string, SchemaDoc>;
  required?: string[];
  [keyword: string]: unknown;
}
export interface ResponseDoc {
  description: string;
  headers?: Record<string, { description?: string; schema?: SchemaDoc }>;
  content?: Record<string, { schema?: SchemaDoc }>;
}
export interface ParameterDoc {
  name: string;
  in: string;
  required?: boolean;
  schema?: SchemaDoc;
}
export interface OperationDoc {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: ParameterDoc[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: SchemaDoc }> };
  responses: Record<string, ResponseDoc>;
}
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export interface OpenApiDoc {
  openapi: string;
  tags: { name: string }[];
  info: { version: string };
  paths: Record<string, Partial<Record<Method, OperationDoc>>>;
  components: { schemas: Record<string, SchemaDoc>; securitySchemes: Record<string, Record<string, unknown>> };
}

export const committedText = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
export const committed = JSON.parse(committedText) as OpenApiDoc;

export function operation(path: string, method: Method): OperationDoc {
  const found = committed.paths[path]?.[method];
  if (found === undefined) throw new Error(`The document has no ${method.toUpperCase()} ${path}`);
  return found;
}

/** Every operation of the document, as `METHOD path`. */
export const documentedOperations = (): string[] =>
  Object.entries(committed.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );

/** Validators for the documented schemas: the whole document is registered, so `#/components/...` refs resolve. */
function documentValidator(document: OpenApiDoc): (pointer: string[]) => ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  // Annotations in the schemas, and the fields of the OpenAPI object that holds them, are not JSON Schema keywords.
  ajv.addVocabulary(['example', 'x-message', 'x-visible']);
  ajv.addVocabulary(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'tags']);
  ajv.addVocabulary(['security', 'externalDocs']);
  ajv.addFormat('binary', true);
  // RFC 3339 date-times (a link's expiry, a smart playlist's `added` rules), as the service checks them.
  ajvFormats.default(ajv, { mode: 'full', formats: ['date-time'] });
  ajv.addSchema({ ...document, $id: 'urn:mixtape:openapi' });
  const cache = new Map<string, ValidateFunction>();
  return (pointer) => {
    const fragment = pointer.map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1')));
    const ref = `urn:mixtape:openapi#/${fragment.join('/')}`;
    let validate = cache.get(ref);
    if (validate === undefined) {
      validate = ajv.compile({ $ref: ref });
      cache.set(ref, validate);
    }
    return validate;
  };
}

export const validatorFor = documentValidator(committed);
export const responseSchema = (path: string, method: Method, status: string, mediaType: string): string[] => [
  ...['paths', path, method, 'responses', status],
  ...['content', mediaType, 'schema'],
];

export type InjectRequest = Omit<InjectOptions, 'method' | 'url'> & { url: string };

// Headers whose presence on an answer the document must announce for that status.
const API_HEADERS = ['location', 'x-total-count', 'link', 'www-authenticate', 'retry-after', 'etag', 'accept-patch'];

/** Every `METHOD path status` answered so far through `conforming`. */
export const seen = new Set<string>();

const isJson = (mediaType: string) => mediaType === 'application/json' || mediaType.endsWith('+json');
const BINARY = /^image\//;

/** The names a documented `Vary` gives in its leading code span: "`security, Authorization`: …". */
const documentedVary = (description: string | undefined): string[] =>
  (/^`([^`]*)`/.exec(description ?? '')?.[1] ?? '').split(',').map((name) => name.trim().toLowerCase());

/**
 * Sends a request and checks the answer against the operation the document gives for `method` and `path`: its
 * status is listed, every API header it carries is documented for that status, `Vary` names what the document says
 * (compression's `Accept-Encoding` aside), its media type is listed and its body valid against that schema (a text or
 * binary body against a `string` one).
 */
export async function conforming(
  app: TestApp,
  method: Method,
  path: string,
  request: InjectRequest,
): Promise<LightMyRequestResponse> {
  const op = operation(path, method);
  const response = await app.app.inject({ ...request, method: method.toUpperCase() as 'GET' });
  const status = String(response.statusCode);
  const where = `${method.toUpperCase()} ${request.url} answered ${status}: ${response.body.slice(0, 300)}`;
  expect(Object.keys(op.responses), where).toContain(status);
  seen.add(`${method.toUpperCase()} ${path} ${status}`);
  const documented = op.responses[status]!;

  const documentedHeaders = Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase());
  for (const header of API_HEADERS) {
    if (response.headers[header] !== undefined) expect(documentedHeaders, `${where} (${header})`).toContain(header);
  }
  const vary = Object.entries(documented.headers ?? {}).find(([name]) => name.toLowerCase() === 'vary')?.[1];
  if (vary !== undefined) {
    const sent = (response.headers.vary ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== '' && name !== 'accept-encoding');
    expect(sent.sort(), `${where} (Vary)`).toEqual(documentedVary(vary.description).sort());
  }

  if (documented.content === undefined) {
    expect(response.body, where).toBe('');
    return response;
  }
  const mediaType = String(response.headers['content-type']).split(';')[0]!.trim();
  expect(Object.keys(documented.content), where).toContain(mediaType);
  const validate = validatorFor(responseSchema(path, method, status, mediaType));
  const body: unknown = isJson(mediaType) ? response.json() : BINARY.test(mediaType) ? '(binary)' : response.body;
  expect(validate(body), `${where}\n${JSON.stringify(validate.errors)}`).toBe(true);
  return response;
}
