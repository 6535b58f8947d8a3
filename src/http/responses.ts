import { Type, type TSchema } from '@sinclair/typebox';

/** Response documentation and serialization helpers shared by every feature's routes. */

/** The tag of the plural paths, listed last and folded on `/docs` so that the list of operations reads once. */
export const ALIAS_TAG = 'Aliases';

type HeaderDoc = Record<string, { type: 'string' | 'integer'; description: string }>;

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ type, description });

export const HEADERS = {
  cacheControl: { 'Cache-Control': header('`no-store`: answers for one user are never cached on the way.') },
  vary: { Vary: header('`security, Authorization`: the answer depends on the credential.') },
  retryAfter: { 'Retry-After': header('Seconds to wait before trying again.', 'integer') },
  wwwAuthenticate: {
    'WWW-Authenticate': header(
      '`Basic realm="mixtape", charset="UTF-8"`; with an app token (1.11.0), `Bearer error="invalid_token"` (401) or `Bearer error="insufficient_scope"` (403).',
    ),
  },
} satisfies Record<string, HeaderDoc>;

const PRIVATE_JSON: HeaderDoc = { ...HEADERS.cacheControl, ...HEADERS.vary };

/** The media type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** `Cache-Control` of answers that may be kept by the caller's own cache if revalidated with their ETag. */
export const REVALIDATE = 'private, no-cache';

/** The headers of a JSON answer a client may keep and revalidate. */
export function revalidatedHeaders(etag: string): HeaderDoc {
  return {
    ETag: header(etag),
    'Cache-Control': header(
      `\`${REVALIDATE}\`: only the caller's own cache may keep it, and it asks again (with \`If-None-Match\`) before using it.`,
    ),
    ...HEADERS.vary,
  };
}

/** A JSON answer a client may keep and revalidate, with its schema. */
export function revalidatedJson(description: string, schema: TSchema, etag: string, headers: HeaderDoc = {}) {
  return {
    description,
    headers: { ...revalidatedHeaders(etag), ...headers },
    content: { 'application/json': { schema } },
  };
}

/** 304 to a matching `If-None-Match`. */
export function notModified(description: string, etag: string, headers: HeaderDoc = {}) {
  return { description, headers: { ...revalidatedHeaders(etag), ...headers }, type: 'null' };
}

/** The `If-None-Match` request header, for the OpenAPI description (Fastify validates it as any header). */
export const IF_NONE_MATCH_HEADER = {
  'if-none-match': {
    type: 'string',
    description: 'ETags from earlier answers: when one matches, the answer is 304 with no body.',
  },
} as const;

/** A JSON response with its schema and the headers it carries. */
export function json(description: string, schema: TSchema, headers: HeaderDoc = {}) {
  return { description, headers: { ...PRIVATE_JSON, ...headers }, content: { 'application/json': { schema } } };
}

/** A response with no body. */
export function empty(description: string, headers: HeaderDoc = {}) {
  return { description, headers: { ...PRIVATE_JSON, ...headers }, type: 'null' };
}

const errorRef = Type.Ref('error');

export function error(description: string, headers: HeaderDoc = {}) {
  return { description, headers, content: { 'application/json': { schema: errorRef } } };
}

/** The failures every authenticated operation can answer with. */
export const AUTHENTICATED_ERRORS = {
  401: error(
    'The credential is missing, malformed or wrong, or the app token is malformed, unknown, revoked or expired.',
    HEADERS.wwwAuthenticate,
  ),
  429: error(
    'Too many failed sign-in attempts, too many sign-ins from one address at once, or the configured rate limit is reached.',
    HEADERS.retryAfter,
  ),
  500: error('An unexpected fault; `logdata.entry` finds it in the server log.'),
  503: error(
    'The database cannot answer now, too many sign-ins or large requests are being served, or the service is shutting down.',
    HEADERS.retryAfter,
  ),
};

/** The errors of a list that can search: those of every authenticated call, and a search's own bounds. */
export const SEARCHING_ERRORS = {
  ...AUTHENTICATED_ERRORS,
  429: error(
    'Too many failed sign-in attempts, the configured rate limit is reached, or a search of yours is already running (searches run one at a time per user).',
    HEADERS.retryAfter,
  ),
  503: error(
    'The database cannot answer now, the service is busy or shutting down, or the search read for longer than its time limit (`MIXTAPE_SEARCH_TIMEOUT_MS`) and was stopped.',
    HEADERS.retryAfter,
  ),
};

export const BAD_REQUEST = error('A bad parameter, id or body: `errormsg` names the field and the rule.');
export const NOT_FOUND = error(
  "No such playlist for this user (another user's playlist, not shared with them, answers the same).",
);
export const GONE = error("The playlist was deleted (the caller's, or one shared with the caller).");
export const FORBIDDEN = error(
  'The playlist is shared with the caller, whose role does not allow this: a viewer reads, an editor also edits, only the owner deletes it or manages its members and links.',
);

/** The 415 of an operation that takes a JSON body (see body-parsers.ts). */
export const UNSUPPORTED_JSON_BODY = error(
  'The body is not JSON (`text/plain` and form bodies are read as JSON only with the `security` header), or it is compressed (a `Content-Encoding` other than `identity`).',
  { 'Accept-Encoding': header('`identity`, when the body was compressed.') },
);

/**
 * Either credential header: `Authorization: Basic …` (as generated clients send it) or `security`; or an app token
 * (1.11.0), `Authorization: Bearer …` (or `security: Bearer …`).
 */
export const SECURITY: { [scheme: string]: string[] }[] = [{ basauth: [] }, { security: [] }, { bearer: [] }];

/** The password only, never an app token: the operations that make and list tokens. */
export const PASSWORD_SECURITY: { [scheme: string]: string[] }[] = [{ basauth: [] }, { security: [] }];
