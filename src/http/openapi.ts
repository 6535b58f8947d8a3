import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { registerDocsPage } from './docs-page.js';
import { ALIAS_TAG } from './responses.js';

/**
 * The API's own version (semantic versioning); 1.2.0 added the song catalog, 1.3.0 editing, 1.4.0 history, 1.5.0
 * sharing, 1.6.0 entries and merged edits, 1.7.0 smart playlists, 1.8.0 live changes, 1.9.0 long playlists (pages of
 * entries, answers in brief, who added each entry), 1.10.0 folders (each user's own order of their playlists), 1.11.0 app tokens (a credential per app, instead of
 * the password).
 */
export const API_VERSION = '1.11.0';

const DESCRIPTION = `Mixtape manages song playlists over HTTP with JSON bodies.

Every endpoint under \`/v3\` but this document (\`/v3/openapi.json\`) needs a Basic credential (RFC 7617, UTF-8):
in the \`security\` header, as the specification says (the word \`Basic\` may be left out there), or in the
standard \`Authorization\` header; or an app token (1.11.0, \`POST /v3/token\`) as \`Authorization: Bearer mixtape_…\` (or
\`security: Bearer mixtape_…\`), which acts as its user within its scope: a \`read\` token reads, a \`write\` one also
changes, neither makes nor lists tokens (403 with \`WWW-Authenticate: Bearer error="insufficient_scope"\`). Every failure answers with one body:
\`{"errormsg": "...", "logdata": {"entry": N, "date": T}}\`, where \`entry\` finds the error in the server log.
A method a path does not have answers 405 with \`Allow\`; an unknown path answers 404. A request that does not arrive
in time answers 408, a malformed one 400 (431 for headers over 16 KB), and a connection over the service's caps on
open connections 503 with \`Retry-After\`, each with the same body, before any operation is chosen.
A JSON body sent as \`text/plain\` or \`application/x-www-form-urlencoded\` (as \`curl -d\` does) is read as JSON when
the credential is in the \`security\` header, and answers 415 with \`Authorization\` (browsers send those types from
any site); the operations list only the body types a client should send.
The plural paths (\`/v3/playlists...\`, \`/v3/songs...\`) are aliases of the singular ones: they are listed last, under
${ALIAS_TAG}, which the reference page at \`/docs\` shows folded.

With \`MIXTAPE_CORS_ORIGINS\` set, pages from those origins may call the API: a preflight (\`OPTIONS\` with \`Origin\`
and \`Access-Control-Request-Method\`) answers 204 for every method here, and the headers in these answers (\`ETag\`,
\`Location\`, \`X-Total-Count\`, \`Link\`, \`Retry-After\`...) are readable from script. Any other \`OPTIONS\`
answers 405 with \`Allow\`, CORS or not.`;

/** Turns route parameters into the names of the original description: `playlistId` → `playlist-id`. */
const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** A route's URL as the document writes it: `/v3/playlist/:playlistId` → `/v3/playlist/{playlist-id}`. */
export const documentedPath = (url: string): string =>
  url.replace(/:(\w+)/g, (_match, name: string) => `{${kebab(name)}}`);

type OpenApiDocument = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> };
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema?: { default?: unknown };
}

/**
 * Path parameters get the names of the original description, and a query parameter with a default is optional:
 * the route schemas list it as required only so that validation fills the default in.
 */
function renameParameters(document: OpenApiDocument): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const parameters = (operation as { parameters?: Parameter[] }).parameters ?? [];
      for (const parameter of parameters) {
        if (parameter.in === 'path') parameter.name = kebab(parameter.name);
        if (parameter.in === 'query' && parameter.schema?.default !== undefined) parameter.required = false;
      }
    }
    paths[path.replace(/\{(\w+)\}/g, (_m, name: string) => `{${kebab(name)}}`)] = item;
  }
  return { ...document, paths };
}

/** Body types read as JSON for `curl -d` (see the description), which the document does not offer to clients. */
const UNLISTED_BODY_TYPES = ['text/plain', 'application/x-www-form-urlencoded'];

/** JSON request bodies list only the JSON types a client should send, whatever types a route's schema checks. */
function listedBodies(document: OpenApiDocument): OpenApiDocument {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item) as { requestBody?: { content?: Record<string, unknown> } }[]) {
      const content = operation.requestBody?.content;
      if (content === undefined || !('application/json' in content || 'application/merge-patch+json' in content))
        continue;
      operation.requestBody!.content = Object.fromEntries(
        Object.entries(content).filter(([type]) => !UNLISTED_BODY_TYPES.includes(type)),
      );
    }
  }
  return document;
}

/**
 * A member whose route schema is loose (`x-documented-as`: any object, read in full by its service, which names the
 * first problem rather than every branch of a union) is shown as the named schema it must match, so that generated
 * clients type it: `{"$ref": "#/components/schemas/smartRules"}` with the member's description.
 */
function documentedAs(document: OpenApiDocument): OpenApiDocument {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const record = node as Record<string, unknown>;
    const named = record['x-documented-as'];
    if (typeof named === 'string') {
      const description = record.description;
      return { $ref: `#/components/schemas/${named}`, ...(typeof description === 'string' ? { description } : {}) };
    }
    return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, visit(value)]));
  };
  return visit(document) as OpenApiDocument;
}

/** The OpenAPI 3.1 document, built from the route schemas, at `/v3/openapi.json`, and its reference page at `/docs`. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Mixtape',
        version: API_VERSION,
        description: DESCRIPTION,
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/', description: 'This server' }],
      tags: [
        { name: 'Your Library', description: 'Get, create and delete your playlists' },
        { name: 'History', description: "Your playlists' versions, diffs, restore and undo, and what changed since" },
        {
          name: 'Sharing',
          description: 'Share a playlist with other users (viewers, editors) and with anyone by a link',
        },
        {
          name: 'Folders',
          description: 'File the playlists you may read in folders of your own, in an order of your own (1.10.0)',
        },
        {
          name: 'App tokens',
          description: 'A credential for each app, instead of your password: made, listed and revoked by you (1.11.0)',
        },
        { name: 'Catalog', description: 'Find the songs to put in a playlist' },
        { name: 'Operations', description: 'Health, readiness and metrics for operators' },
        { name: ALIAS_TAG, description: 'Plural paths, as in the getting-started examples: the same operations' },
      ],
      components: {
        securitySchemes: {
          basauth: { type: 'http', scheme: 'basic', description: 'Basic credential in the Authorization header.' },
          security: {
            type: 'apiKey',
            in: 'header',
            name: 'security',
            description:
              'The same Basic credential in the `security` header: `Basic base64(user:password)`; or an app token, `Bearer mixtape_…`.',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An app token (1.11.0, `POST /v3/token`) in the Authorization header: `Bearer mixtape_…`. A `read` token reads (and opens the stream of changes), a `write` token also changes; neither makes or lists tokens.',
          },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transformObject: (documentObject) =>
      documentedAs(
        listedBodies(renameParameters((documentObject as { openapiObject: OpenApiDocument }).openapiObject)),
      ) as never,
  });
  await registerDocsPage(app);
  app.get('/v3/openapi.json', { schema: { hide: true } }, () => app.swagger());
}
