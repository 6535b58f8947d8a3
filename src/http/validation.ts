import { Ajv, type ErrorObject, type SchemaObject, type SchemaValidateFunction, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { emptyJsonBody } from './body-parsers.js';
import { nameProblem } from './name-characters.js';
import { rfc3339Millis } from './times.js';

/**
 * Request validation. Query strings and path parameters arrive as text and are coerced to the schema's
 * types; bodies are JSON and are taken as sent, so `"name": 5` or `"songIds": ["1"]` is a 400.
 */
export function createValidatorCompiler(sharedSchemas: readonly SchemaObject[]): FastifySchemaCompiler<SchemaObject> {
  const common = { useDefaults: true, verbose: true, allErrors: false, strict: true } as const;
  const coercing = withKeywords(new Ajv({ ...common, coerceTypes: 'array', removeAdditional: true }), sharedSchemas);
  const strict = withKeywords(new Ajv({ ...common, coerceTypes: false }), sharedSchemas);
  // Routes share most of their schemas (the plural aliases all of them), so each distinct one is compiled once.
  const compiled = new Map<string, ValidateFunction>();
  return ({ schema, httpPart }) => {
    const body = httpPart === 'body';
    const key = `${String(body)} ${JSON.stringify(schema)}`;
    let validate = compiled.get(key);
    if (validate === undefined) {
      validate = body ? strict.compile(schema) : plainIntegers(coercing.compile(schema), schema);
      compiled.set(key, validate);
    }
    return validate;
  };
}

const PLAIN_INTEGER = /^-?[0-9]+$/;

/** The names of the schema's properties of type `integer`: ids, `limit`, `offset`, `size`. */
function integerProperties(schema: SchemaObject): string[] {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
}

const notAnInteger = (name: string): ErrorObject[] => [
  { keyword: 'type', instancePath: `/${name}`, schemaPath: '', params: { type: 'integer' } },
];

/**
 * Query strings and path parameters are text, and Ajv coerces text with `Number()`, which takes "0x2", "2.0",
 * " 2" and "1e1". An integer here is plain decimal digits, checked on the text before coercion. Coercion also turns
 * "1e400" or 400 nines into Infinity, which Ajv lets through `integer`, `minimum` and `maximum` alike
 * (ajv-validator/ajv#2212); such a value is refused after it.
 */
function plainIntegers(validate: ValidateFunction, schema: SchemaObject): ValidateFunction {
  const integers = integerProperties(schema);
  const checked = ((data: unknown) => {
    const fields = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
    const loose = integers.find((name) =>
      [fields[name]].flat().some((value) => typeof value === 'string' && !PLAIN_INTEGER.test(value)),
    );
    if (loose !== undefined) {
      checked.errors = notAnInteger(loose);
      return false;
    }
    if (!validate(data)) {
      checked.errors = validate.errors;
      return false;
    }
    const infinite = Object.entries(fields).find(([, value]) => typeof value === 'number' && !Number.isFinite(value));
    checked.errors = infinite === undefined ? null : notAnInteger(infinite[0]);
    return infinite === undefined;
  }) as ValidateFunction;
  return checked;
}

function withKeywords(ajv: Ajv, sharedSchemas: readonly SchemaObject[]): Ajv {
  // `x-message` is the sentence a client reads when a `pattern` or a `format` fails.
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  // `x-documented-as`: a member the route lets through loosely and its service reads in full, which the OpenAPI
  // document shows as the named schema it must match (see openapi.ts `documentedAs`).
  ajv.addKeyword({ keyword: 'x-documented-as', schemaType: 'string' });
  // RFC 3339 date-times (a link's expiry), read as every time the API takes is (`rfc3339Millis`): 30 February,
  // 24:00, a leap second or year 10000 in UTC is not one.
  ajv.addFormat('date-time', { type: 'string', validate: (text: string) => rfc3339Millis(text) !== undefined });
  // `x-visible`: a name others see (a playlist's), with a visible character and no bidirectional control; the error's
  // message is `nameProblem`'s.
  ajv.addKeyword({ keyword: 'x-visible', type: 'string', schemaType: 'boolean', errors: true, validate: visibleName });
  for (const schema of sharedSchemas) ajv.addSchema(schema);
  return ajv;
}

const visibleName: SchemaValidateFunction = (wanted: boolean, data: string) => {
  const problem = wanted ? nameProblem(data) : undefined;
  visibleName.errors = problem === undefined ? [] : [{ keyword: 'x-visible', message: problem, params: {} }];
  return problem === undefined;
};

const WHERE: Record<string, string> = {
  body: 'the request body',
  querystring: 'the query string',
  params: 'the path',
  headers: 'the headers',
};

/** Turns the first validation error into one sentence that names the field and the rule. */
export function formatValidationError(errors: ErrorObject[], dataVar: string): Error {
  const error = errors[0];
  if (error === undefined) return new Error(`${WHERE[dataVar] ?? dataVar} is not valid.`);
  // No body at all (and so no Content-Type) reaches validation as null: the JSON parsers refuse a literal null.
  if (dataVar === 'body' && error.instancePath === '' && error.data === null) {
    return new Error(emptyJsonBody(undefined));
  }
  const field = fieldName(error, dataVar);
  const p = error.params as Record<string, unknown>;
  let message: string;
  switch (error.keyword) {
    case 'required':
      message = `${quote(String(p.missingProperty))} is required in ${WHERE[dataVar] ?? dataVar}.`;
      break;
    case 'type':
      message = `${field} must be ${article(String(p.type))}.`;
      break;
    case 'minLength':
      message = `${field} must be at least ${String(p.limit)} character${p.limit === 1 ? '' : 's'} long.`;
      break;
    case 'maxLength':
      message = `${field} must be at most ${String(p.limit)} characters long.`;
      break;
    case 'minimum':
      message = `${field} must be at least ${String(p.limit)}.`;
      break;
    case 'maximum':
      message = `${field} must be at most ${String(p.limit)}.`;
      break;
    case 'minItems':
      message = `${field} must have at least ${String(p.limit)} entries.`;
      break;
    case 'maxItems':
      message = `${field} must have at most ${String(p.limit)} entries.`;
      break;
    case 'enum':
      message = `${field} must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}.`;
      break;
    case 'format':
    case 'pattern': {
      const custom: unknown = error.parentSchema?.['x-message'];
      message = `${field} ${typeof custom === 'string' ? custom : 'has an invalid format'}.`;
      break;
    }
    default:
      message = `${field} ${error.message ?? 'is not valid'}.`;
  }
  return new Error(capitalise(message));
}

function fieldName(error: ErrorObject, dataVar: string): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (path.length === 0) return WHERE[dataVar] ?? dataVar;
  const name = path.reduce(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc === '' ? part : `${acc}.${part}`),
    '',
  );
  if (dataVar === 'querystring') return `the ${quote(name)} query parameter`;
  // Path parameters carry the names of the original description: playlistId is `playlist-id`.
  if (dataVar === 'params') return `the ${quote(name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`))} in the path`;
  return quote(name);
}

function article(type: string): string {
  const names: Record<string, string> = {
    integer: 'an integer',
    number: 'a number',
    string: 'a string',
    array: 'an array',
    object: 'a JSON object',
    boolean: 'true or false',
  };
  return type
    .split(',')
    .map((t) => names[t] ?? t)
    .join(' or ');
}

const quote = (name: string): string => `"${name}"`;
const capitalise = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);
