import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatDocument, openApiDocument } from '../scripts/openapi-document.js';
import { basic, type TestApp } from './helpers/app.js';
import { describeEachDatabase, useTestApp } from './helpers/each-database.js';
import { expectError } from './helpers/requests.js';

interface SchemaDoc {
  $ref?: string;
  type?: string;
  items?: SchemaDoc;
  properties?: Record<string, SchemaDoc>;
  required?: string[];
  [keyword: string]: unknown;
}
interface ResponseDoc {
  description: string;
  headers?: Record<string, { schema?: SchemaDoc }>;
  content?: Record<string, { schema?: SchemaDoc }>;
}
interface ParameterDoc {
  name: string;
  in: string;
  required?: boolean;
  schema?: SchemaDoc;
}
interface OperationDoc {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: ParameterDoc[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: SchemaDoc }> };
  responses: Record<string, ResponseDoc>;
}
interface OpenApiDoc {
  openapi: string;
  tags: { name: string }[];
  info: { version: string };
  paths: Record<string, Partial<Record<Method, OperationDoc>>>;
  components: { schemas: Record<string, SchemaDoc>; securitySchemes: Record<string, Record<string, unknown>> };
}
type Method = 'get' | 'post' | 'delete';

const DOCUMENT_FILE = new URL('../docs/openapi.json', import.meta.url);
const committedText = readFileSync(DOCUMENT_FILE, 'utf8');
const committed = JSON.parse(committedText) as OpenApiDoc;

const ERROR_REF = '#/components/schemas/error';
const V3_PATHS = [
  '/v3/playlist',
  '/v3/playlist/{playlist-id}',
  '/v3/playlists',
  '/v3/playlists/{playlist-id}',
  '/v3/playlist/{playlist-id}/image',
  '/v3/playlists/{playlist-id}/image',
  '/v3/song',
  '/v3/song/{song-id}',
  '/v3/playlist/import',
  '/v3/playlists/import',
];

function operation(path: string, method: Method): OperationDoc {
  const found = committed.paths[path]?.[method];
  if (found === undefined) throw new Error(`The document has no ${method.toUpperCase()} ${path}`);
  return found;
}

function resolve(schema: SchemaDoc | undefined): SchemaDoc {
  if (schema?.$ref === undefined) return schema ?? {};
  const name = schema.$ref.replace('#/components/schemas/', '');
  const target = committed.components.schemas[name];
  if (target === undefined) throw new Error(`Unresolved ${schema.$ref}`);
  return target;
}

const parameter = (op: OperationDoc, name: string): ParameterDoc => {
  const found = op.parameters?.find((p) => p.name === name);
  if (found === undefined) throw new Error(`No parameter ${name} in ${op.operationId ?? '?'}`);
  return found;
};

const jsonSchemaOf = (response: ResponseDoc | undefined): SchemaDoc | undefined =>
  response?.content?.['application/json']?.schema;

const v3Operations = (): [string, Method, OperationDoc][] =>
  Object.entries(committed.paths)
    .filter(([path]) => path.startsWith('/v3/'))
    .flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]): [string, Method, OperationDoc] => [path, method as Method, op]),
    );

describe('docs/openapi.json', () => {
  it('is what the code describes (otherwise run `npm run openapi`)', async () => {
    const fromCode = formatDocument(await openApiDocument());
    expect(fromCode, 'docs/openapi.json is out of date: run `npm run openapi`').toBe(committedText);
  });

  it('is OpenAPI 3.1 for API version 1.4.0', () => {
    expect(committed.openapi).toMatch(/^3\.1\.\d+$/);
    expect(committed.info.version).toBe('1.4.0');
  });

  it('has the paths of the API and the operationIds of musicapi.yaml on the singular ones', () => {
    expect(Object.keys(committed.paths)).toEqual(expect.arrayContaining(V3_PATHS));
    expect(operation('/v3/playlist', 'get').operationId).toBe('getplaylists');
    expect(operation('/v3/playlist', 'post').operationId).toBe('postplaylist');
    expect(operation('/v3/playlist/{playlist-id}', 'get').operationId).toBe('getspecplaylist');
    expect(operation('/v3/playlist/{playlist-id}', 'delete').operationId).toBe('deleteplaylist');
    expect(operation('/v3/playlist/{playlist-id}/image', 'get').operationId).toBe('getimage');
    for (const method of ['get', 'delete'] as const) {
      const id = parameter(operation('/v3/playlist/{playlist-id}', method), 'playlist-id');
      expect(id).toMatchObject({ in: 'path', required: true });
    }
    expect(Object.keys(committed.components.schemas)).toEqual(
      expect.arrayContaining(['newPlaylist', 'playlistwithsongs', 'song', 'error']),
    );
  });

  it('states the limits as schema bounds', () => {
    for (const path of ['/v3/playlist', '/v3/playlists']) {
      const body = resolve(operation(path, 'post').requestBody?.content['application/json']?.schema);
      expect(body.required).toEqual(expect.arrayContaining(['name', 'songIds']));
      expect(body.properties?.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      expect(body.properties?.songIds).toMatchObject({ type: 'array', maxItems: 1000 });
      expect(body.properties?.songIds?.items).toMatchObject({ type: 'integer', minimum: 1 });
    }
    for (const path of ['/v3/playlist', '/v3/playlists', '/v3/song']) {
      const list = operation(path, 'get');
      expect(parameter(list, 'limit')).toMatchObject({ in: 'query', required: false });
      expect(parameter(list, 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
      expect(parameter(list, 'offset')).toMatchObject({ in: 'query', required: false });
      expect(parameter(list, 'offset').schema).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
      expect(parameter(list, 'search')).toMatchObject({ in: 'query', required: false });
      expect(parameter(list, 'search').schema).toMatchObject({ type: 'string', maxLength: 200 });
    }
    expect(parameter(operation('/v3/song/{song-id}', 'get'), 'song-id').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
    });
    expect(parameter(operation('/v3/playlist/{playlist-id}', 'get'), 'playlist-id').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
    });
  });

  it('documents 401 with WWW-Authenticate and the error body, and both schemes, on every /v3 operation', () => {
    const operations = v3Operations();
    expect(operations.length).toBeGreaterThanOrEqual(10);
    for (const [path, method, op] of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      const unauthorized = op.responses['401'];
      expect(unauthorized, where).toBeDefined();
      expect(Object.keys(unauthorized?.headers ?? {}), where).toContain('WWW-Authenticate');
      expect(jsonSchemaOf(unauthorized), where).toEqual({ $ref: ERROR_REF });
      expect(op.security, where).toEqual(expect.arrayContaining([{ basauth: [] }, { security: [] }]));
    }
    expect(committed.components.securitySchemes.basauth).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(committed.components.securitySchemes.security).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'security',
    });
  });

  it('documents the paging headers on lists, Location and the create failures, and 404/410 on one playlist', () => {
    for (const path of ['/v3/playlist', '/v3/playlists', '/v3/song']) {
      const headers = Object.keys(operation(path, 'get').responses['200']?.headers ?? {});
      expect(headers, path).toEqual(expect.arrayContaining(['X-Total-Count', 'Link']));
    }
    for (const path of ['/v3/playlist', '/v3/playlists']) {
      const create = operation(path, 'post');
      // The specification's own `curl -d` sends a form body; text/plain is read the same way.
      const bodies = create.requestBody?.content ?? {};
      expect(Object.keys(bodies).sort(), path).toEqual([
        'application/json',
        'application/x-www-form-urlencoded',
        'text/plain',
      ]);
      expect(bodies['text/plain']?.schema, path).toMatchObject({
        type: 'string',
        contentMediaType: 'application/json',
        contentSchema: { $ref: '#/components/schemas/newPlaylist' },
      });
      expect(Object.keys(create.responses['200']?.headers ?? {}), path).toContain('Location');
      expect(resolve(jsonSchemaOf(create.responses['200'])).title).toBe('playlistwithsongs');
      for (const status of ['400', '409', '413', '415', '422']) {
        expect(jsonSchemaOf(create.responses[status]), `${path} ${status}`).toEqual({ $ref: ERROR_REF });
      }
      for (const method of ['get', 'delete'] as const) {
        const one = operation(`${path}/{playlist-id}`, method);
        for (const status of ['400', '404', '410']) {
          expect(jsonSchemaOf(one.responses[status]), `${method} ${path} ${status}`).toEqual({ $ref: ERROR_REF });
        }
      }
    }
    expect(operation('/v3/playlist/{playlist-id}', 'delete').responses['200']?.content).toBeUndefined();
  });

  it('gives every operation a one-line summary, an alias one naming its singular operation', () => {
    const operations = Object.entries(committed.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ path, method, op })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(13);
    for (const { path, method, op } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(op.summary, where).toMatch(/^\S[^\n]{4,60}$/);
      if (!path.startsWith('/v3/playlists')) continue;
      expect(op.tags, where).toEqual(['Aliases']);
      const singular = `${method.toUpperCase()} ${path.replace('/v3/playlists', '/v3/playlist')}`;
      expect(op.summary, where).toBe(`Alias of ${singular}`);
      expect(committed.paths[singular.split(' ')[1]!]?.[method as Method], singular).toBeDefined();
    }
    const singularSummaries = operations.filter((o) => !o.path.startsWith('/v3/playlists')).map((o) => o.op.summary);
    expect(new Set(singularSummaries).size).toBe(singularSummaries.length);
    // The aliases come last, so that the page lists every operation once before them.
    expect(committed.tags.map((tag) => tag.name).at(-1)).toBe('Aliases');
  });

  it('documents the playlist files: the export media types and ?format=, the import operation and its report', () => {
    const files = ['application/json', 'application/jspf+json', 'application/vnd.apple.mpegurl'];
    files.push('application/xspf+xml', 'audio/mpegurl', 'audio/x-mpegurl');
    for (const path of ['/v3/playlist', '/v3/playlists']) {
      const one = operation(`${path}/{playlist-id}`, 'get');
      expect(Object.keys(one.responses['200']?.content ?? {}).sort(), path).toEqual(files);
      expect(Object.keys(one.responses['200']?.headers ?? {}), path).toContain('Content-Disposition');
      expect(jsonSchemaOf(one.responses['406']), path).toEqual({ $ref: ERROR_REF });
      expect(parameter(one, 'format')).toMatchObject({ in: 'query', required: false });
      const upload = operation(`${path}/import`, 'post');
      expect(Object.keys(upload.requestBody?.content ?? {})).toEqual(
        expect.arrayContaining(['application/xspf+xml', 'application/jspf+json', 'audio/mpegurl', 'text/plain']),
      );
      expect(resolve(jsonSchemaOf(upload.responses['200'])).title).toBe('importedPlaylist');
      expect(Object.keys(upload.responses['200']?.headers ?? {})).toContain('Location');
      for (const status of ['400', '401', '409', '413', '415', '422']) {
        expect(jsonSchemaOf(upload.responses[status]), `${path} ${status}`).toEqual({ $ref: ERROR_REF });
      }
      expect(parameter(upload, 'unmatched').schema).toMatchObject({ default: 'skip' });
    }
    expect(committed.components.schemas.importedPlaylist?.required).toEqual(['playlist', 'unmatched']);
  });

  it('documents the cover in PNG, JPEG and SVG, its validators, its size bounds and every failure', () => {
    for (const path of ['/v3/playlist/{playlist-id}/image', '/v3/playlists/{playlist-id}/image']) {
      const cover = operation(path, 'get');
      const ok = cover.responses['200']!;
      expect(Object.keys(ok.content ?? {}).sort(), path).toEqual(['image/jpeg', 'image/png', 'image/svg+xml']);
      expect(Object.keys(ok.headers ?? {}), path).toEqual(expect.arrayContaining(['ETag', 'Cache-Control', 'Vary']));
      expect(cover.responses['304']?.content, path).toBeUndefined();
      for (const status of ['400', '401', '404', '410', '503']) {
        expect(jsonSchemaOf(cover.responses[status]), `${path} ${status}`).toEqual({ $ref: ERROR_REF });
      }
      expect(parameter(cover, 'size')).toMatchObject({
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 64, maximum: 1200, default: 600 },
      });
    }
  });
});

/** Validators for the documented schemas: the whole document is registered, so `#/components/...` refs resolve. */
function documentValidator(document: OpenApiDoc): (pointer: string[]) => ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  // Annotations in the schemas, and the fields of the OpenAPI object that holds them, are not JSON Schema keywords.
  ajv.addVocabulary(['example', 'x-message']);
  ajv.addVocabulary(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'tags']);
  ajv.addVocabulary(['security', 'externalDocs']);
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

const validatorFor = documentValidator(committed);
const responseSchema = (path: string, method: Method, status: string, mediaType: string): string[] => [
  ...['paths', path, method, 'responses', status],
  ...['content', mediaType, 'schema'],
];

type InjectRequest = Omit<InjectOptions, 'method' | 'url'> & { url: string };

// Headers whose presence on an answer the document must announce for that status.
const API_HEADERS = ['location', 'x-total-count', 'link', 'www-authenticate', 'retry-after', 'etag'];

/** Sends a request and checks the answer against the operation the document gives for `method` and `path`. */
async function conforming(
  app: TestApp,
  method: Method,
  path: string,
  request: InjectRequest,
): Promise<LightMyRequestResponse> {
  const op = operation(path, method);
  const response = await app.app.inject({ ...request, method: method.toUpperCase() as 'GET' | 'POST' | 'DELETE' });
  const status = String(response.statusCode);
  const where = `${method.toUpperCase()} ${request.url} answered ${status}: ${response.body}`;
  expect(Object.keys(op.responses), where).toContain(status);
  const documented = op.responses[status]!;

  const documentedHeaders = Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase());
  for (const header of API_HEADERS) {
    if (response.headers[header] !== undefined) expect(documentedHeaders, `${where} (${header})`).toContain(header);
  }

  if (documented.content === undefined) {
    expect(response.body, where).toBe('');
    return response;
  }
  const mediaType = String(response.headers['content-type']).split(';')[0]!.trim();
  expect(Object.keys(documented.content), where).toContain(mediaType);
  if (mediaType === 'application/json') {
    const validate = validatorFor(responseSchema(path, method, status, mediaType));
    const body: unknown = response.json();
    expect(validate(body), `${where}\n${JSON.stringify(validate.errors)}`).toBe(true);
  }
  return response;
}

describe('the document validator', () => {
  it('refuses bodies the documented schemas do not allow', () => {
    const playlist = validatorFor(['components', 'schemas', 'playlistwithsongs']);
    expect(playlist({ id: 1, name: 'x', songs: [{ id: 1, title: 't', artist: 'a' }] })).toBe(true);
    expect(playlist({ id: 1, name: 'x', songs: [{ id: '1', title: 't', artist: 'a' }] })).toBe(false);
    expect(playlist([{ id: 1, name: 'x', songs: [] }])).toBe(false);
    const error = validatorFor(responseSchema('/v3/playlist/{playlist-id}', 'get', '401', 'application/json'));
    expect(error({ errormsg: 'no', logdata: { entry: 1, date: 2 } })).toBe(true);
    expect(error({ message: 'no' })).toBe(false);
  });
});

describeEachDatabase('answers that match the document (%s)', (t) => {
  let security: string;
  const songIds = [3, 1, 4, 1, 5];

  beforeAll(async () => {
    security = await t.addUser();
  });

  it('create, list, get and delete', async () => {
    const headers = { security };
    const created = await conforming(t, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers,
      payload: { name: 'Road trip', songIds },
    });
    expect(created.statusCode).toBe(200);
    const playlist = created.json<{ id: number; name: string; songs: { id: number }[] }>();
    expect(playlist.name).toBe('Road trip');
    expect(playlist.songs.map((s) => s.id)).toEqual(songIds);
    expect(created.headers.location).toBe(`/v3/playlist/${playlist.id}`);

    const other = await conforming(t, 'post', '/v3/playlists', {
      url: '/v3/playlists',
      headers,
      payload: { name: 'Empty', songIds: [] },
    });
    expect(other.statusCode).toBe(200);

    const page = await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist?limit=1&offset=0', headers });
    expect(page.statusCode).toBe(200);
    expect(page.json()).toEqual([playlist]);
    expect(page.headers['x-total-count']).toBe('2');
    expect(page.headers.link).toContain('rel="next"');

    const defaults = await conforming(t, 'get', '/v3/playlists', { url: '/v3/playlists', headers });
    expect(defaults.statusCode).toBe(200);
    expect(defaults.json<unknown[]>()).toHaveLength(2);

    const found = await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist?search=road', headers });
    expect(found.json()).toEqual([playlist]);

    const one = await conforming(t, 'get', '/v3/playlist/{playlist-id}', {
      url: `/v3/playlist/${playlist.id}`,
      headers,
    });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(playlist);

    const deleted = await conforming(t, 'delete', '/v3/playlist/{playlist-id}', {
      url: `/v3/playlist/${playlist.id}`,
      headers,
    });
    expect(deleted.statusCode).toBe(200);

    for (const method of ['get', 'delete'] as const) {
      const gone = await conforming(t, method, '/v3/playlists/{playlist-id}', {
        url: `/v3/playlists/${playlist.id}`,
        headers,
      });
      expect(gone.statusCode).toBe(410);
    }
  });

  it('playlist files: export in each format, import, and their failures', async () => {
    const headers = { security };
    const one = '/v3/playlist/{playlist-id}';
    const created = await conforming(t, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers,
      payload: { name: 'Files', songIds },
    });
    const url = `/v3/playlist/${created.json<{ id: number }>().id}`;
    const types = ['application/xspf+xml', 'application/jspf+json', 'audio/mpegurl', 'audio/x-mpegurl'];
    for (const accept of [...types, 'application/vnd.apple.mpegurl']) {
      const file = await conforming(t, 'get', one, { url, headers: { ...headers, accept } });
      expect(file.statusCode, accept).toBe(200);
      const etag = String(file.headers.etag);
      const again = await conforming(t, 'get', one, { url, headers: { ...headers, accept, 'if-none-match': etag } });
      expect(again.statusCode).toBe(304);
    }
    for (const format of ['xspf', 'jspf', 'm3u8', 'json']) {
      const file = await conforming(t, 'get', '/v3/playlists/{playlist-id}', {
        url: `/v3/playlists/${created.json<{ id: number }>().id}?format=${format}`,
        headers,
      });
      expect(file.headers['content-disposition']).toBe(`attachment; filename="Files.${format}"`);
    }
    expect((await conforming(t, 'get', one, { url: `${url}?format=wav`, headers })).statusCode).toBe(400);
    const refused = await conforming(t, 'get', one, { url, headers: { ...headers, accept: 'image/png' } });
    expect(refused.statusCode).toBe(406);

    const m3u8 = (await t.app.inject({ method: 'GET', url: `${url}?format=m3u8`, headers })).body;
    const upload = (type: string, payload: string, query = '') => ({
      url: `/v3/playlist/import${query}`,
      headers: { security, 'content-type': type },
      payload,
    });
    const imported = await conforming(t, 'post', '/v3/playlist/import', upload('audio/mpegurl', m3u8));
    expect(imported.statusCode).toBe(200);
    expect(imported.json<{ playlist: { songs: { id: number }[] } }>().playlist.songs.map((s) => s.id)).toEqual(songIds);
    const partly = `${m3u8}#EXTINF:1,Nobody - Nothing\nnowhere.mp3\n`;
    const report = await conforming(t, 'post', '/v3/playlists/import', { ...upload('text/plain', partly) });
    expect(report.json<{ unmatched: unknown[] }>().unmatched).toEqual([
      { position: 6, title: 'Nothing', artist: 'Nobody', identifier: 'nowhere.mp3' },
    ]);
    const status = async (request: InjectRequest) =>
      (await conforming(t, 'post', '/v3/playlist/import', request)).statusCode;
    expect(await status(upload('audio/mpegurl', partly, '?unmatched=fail'))).toBe(422);
    expect(await status(upload('application/xspf+xml', '<!DOCTYPE x><playlist/>'))).toBe(400);
    expect(await status(upload('application/json', '{}'))).toBe(415);
    expect(await status(upload('audio/mpegurl', `#EXTM3U\n#PLAYLIST:${'x'.repeat(70_000)}`))).toBe(413);
    expect(await status({ ...upload('audio/mpegurl', m3u8), headers: { 'content-type': 'audio/mpegurl' } })).toBe(401);
  });

  it('failures', async () => {
    const headers = { security };
    const expectStatus = async (status: number, method: Method, path: string, request: InjectRequest) => {
      const response = await conforming(t, method, path, request);
      expect(response.statusCode, `${method} ${request.url}`).toBe(status);
      return response;
    };

    const anonymous = await expectStatus(401, 'get', '/v3/playlist', { url: '/v3/playlist' });
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm="mixtape"/);
    await expectStatus(401, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers: { authorization: basic('nobody', 'wrong') },
      payload: { name: 'x', songIds: [] },
    });

    await expectStatus(404, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/999999', headers });
    await expectStatus(404, 'delete', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/999999', headers });
    await expectStatus(400, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/abc', headers });
    await expectStatus(400, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/0', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: '/v3/playlist?limit=101', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: '/v3/playlist?offset=-1', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: `/v3/playlist?search=${'a'.repeat(201)}`, headers });

    const post = (payload: object | string) => ({
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
    await expectStatus(400, 'post', '/v3/playlist', post({ name: '', songIds: [] }));
    await expectStatus(400, 'post', '/v3/playlist', post({ name: 'n'.repeat(201), songIds: [] }));
    await expectStatus(400, 'post', '/v3/playlist', post({ name: 'x', songIds: Array<number>(1001).fill(1) }));
    await expectStatus(400, 'post', '/v3/playlist', post({ name: 'x', songIds: [0] }));
    await expectStatus(400, 'post', '/v3/playlist', post({ songIds: [] }));
    await expectStatus(400, 'post', '/v3/playlist', post('{"name":'));
    const unknown = await expectStatus(422, 'post', '/v3/playlist', post({ name: 'x', songIds: [1, 987654] }));
    expect(unknown.json<{ errormsg: string }>().errormsg).toContain('987654');
    await expectStatus(415, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers: { authorization: security, 'content-type': 'text/plain' },
      payload: '{"name":"x","songIds":[]}',
    });
    await expectStatus(413, 'post', '/v3/playlist', post({ name: 'x'.repeat(70_000), songIds: [] }));

    const songs = await expectStatus(200, 'get', '/v3/song', { url: '/v3/song?limit=3&search=', headers });
    expect(songs.json<unknown[]>()).toHaveLength(3);
    await expectStatus(200, 'get', '/v3/song/{song-id}', { url: '/v3/song/1', headers });
    await expectStatus(404, 'get', '/v3/song/{song-id}', { url: '/v3/song/987654', headers });
    await expectStatus(400, 'get', '/v3/song/{song-id}', { url: '/v3/song/-1', headers });

    const image = '/v3/playlist/{playlist-id}/image';
    const mine = await expectStatus(200, 'post', '/v3/playlist', post({ name: 'Cover', songIds: [1, 2] }));
    const coverUrl = `/v3/playlist/${mine.json<{ id: number }>().id}/image`;
    const cover = await expectStatus(200, 'get', image, { url: coverUrl, headers });
    for (const accept of ['image/jpeg', 'image/svg+xml']) {
      await expectStatus(200, 'get', image, { url: coverUrl, headers: { ...headers, accept } });
    }
    const etag = String(cover.headers.etag);
    await expectStatus(304, 'get', image, { url: coverUrl, headers: { ...headers, 'if-none-match': etag } });
    await expectStatus(400, 'get', image, { url: `${coverUrl}?size=63`, headers });
    await expectStatus(401, 'get', image, { url: coverUrl });
    await expectStatus(404, 'get', image, { url: '/v3/playlist/999999/image', headers });

    await expectStatus(200, 'get', '/healthz', { url: '/healthz' });
    await expectStatus(200, 'get', '/readyz', { url: '/readyz' });
    await expectStatus(200, 'get', '/metrics', { url: '/metrics' });
  });
});

describe('answers under configured limits match the document', () => {
  const t = useTestApp('sqlite', { MIXTAPE_PLAYLISTS_PER_USER: '1', MIXTAPE_AUTH_MAX_FAILURES: '1' });

  it('409 on the quota, 429 when throttled, 503 when shutting down', async () => {
    const security = await t.addUser();
    const create = { url: '/v3/playlist', headers: { security }, payload: { name: 'One', songIds: [1] } };
    expect((await conforming(t, 'post', '/v3/playlist', create)).statusCode).toBe(200);
    expect((await conforming(t, 'post', '/v3/playlist', create)).statusCode).toBe(409);
    const upload = {
      url: '/v3/playlist/import',
      headers: { security, 'content-type': 'audio/mpegurl' },
      payload: '#EXTM3U\n#PLAYLIST:Two\nhttp://x/v3/song/1\n',
    };
    expect((await conforming(t, 'post', '/v3/playlist/import', upload)).statusCode).toBe(409);

    const wrong = { url: '/v3/song', headers: { security: basic('nobody', 'x') } };
    expect((await conforming(t, 'get', '/v3/song', wrong)).statusCode).toBe(401);
    const throttled = await conforming(t, 'get', '/v3/song', wrong);
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);

    t.app.markClosing();
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const response = await conforming(t, 'get', path, { url: path });
      expect(response.statusCode, path).toBe(503);
      expect(response.headers['retry-after'], path).toBeDefined();
    }
    expect(
      (await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist', headers: { security } })).statusCode,
    ).toBe(503);
  });
});

describe('served by the app', () => {
  const t = useTestApp('sqlite');

  it('GET /v3/openapi.json answers the committed document', async () => {
    const response = await t.app.inject({ url: '/v3/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual(committed);
  });

  it('/docs is a page whose scripts and stylesheets all come from the app', async () => {
    for (const page of ['/docs', '/docs/']) {
      const response = await t.app.inject({ url: page });
      expect(response.statusCode, page).toBe(200);
      expect(response.headers['content-type'], page).toMatch(/^text\/html/);
      const policy = String(response.headers['content-security-policy']);
      expect(policy, page).toContain("script-src 'self'");
      expect(policy, page).not.toMatch(/https?:|upgrade-insecure-requests/);

      const html = response.body;
      const scripts = [...html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
      const links = [...html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
      const stylesheets = [...html.matchAll(/<link\b[^>]*\brel\s*=\s*["']stylesheet["'][^>]*>/gi)].length;
      expect(scripts.length, page).toBeGreaterThan(0);
      expect(stylesheets, page).toBeGreaterThan(0);
      expect(html, page).not.toMatch(/\b(?:src|href)\s*=\s*["'](?:https?:)?\/\//i);
      expect(html, page).not.toMatch(/@import|url\(\s*["']?(?:https?:)?\/\//i);

      const base = new URL(page, 'http://mixtape.test');
      for (const reference of [...scripts, ...links]) {
        const url = new URL(reference, base);
        expect(url.origin, reference).toBe(base.origin);
        const asset = await t.app.inject({ url: url.pathname + url.search });
        expect(asset.statusCode, url.pathname).toBe(200);
        if (url.pathname.endsWith('.css')) {
          expect(asset.headers['content-type'], url.pathname).toMatch(/^text\/css/);
          expect(asset.body, url.pathname).not.toMatch(/@import|url\(\s*["']?(?:https?:)?\/\//i);
        }
        if (url.pathname.endsWith('.js')) {
          expect(asset.headers['content-type'], url.pathname).toMatch(/javascript/);
        }
      }
    }
    // The page loads the document from /v3/openapi.json, resolved from its start script's own address.
    const scriptPath = '/docs/static/swagger-initializer.js';
    const initializer = await t.app.inject({ url: scriptPath });
    expect(initializer.headers['content-type']).toMatch(/javascript/);
    const relative = /new URL\('([^']+)', here\)/.exec(initializer.body)?.[1];
    expect(relative).toBeDefined();
    expect(new URL(relative!, `http://mixtape.test${scriptPath}`).pathname).toBe('/v3/openapi.json');
    expect(initializer.body).not.toContain('/docs/json');
  });

  it('/docs is titled Mixtape, and its policy allows the blob: images of "Try it out" and no inline code', async () => {
    const page = await t.app.inject({ url: '/docs' });
    expect(page.body).toMatch(/<title>Mixtape API reference<\/title>/);
    expect(page.body).toMatch(/<link rel="icon" type="image\/svg\+xml" href="[^"]*\/theme\/favicon\.svg"/);
    const directives = new Map(
      String(page.headers['content-security-policy'])
        .split(';')
        .map((directive) => directive.trim().split(/\s+/))
        .map(([name, ...sources]) => [name, sources]),
    );
    expect(directives.get('img-src')).toEqual(["'self'", 'data:', 'blob:']);
    expect(directives.get('style-src')).toEqual(["'self'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('script-src-attr')).toEqual(["'none'"]);
    expect(directives.get('default-src')).toEqual(["'self'"]);
    expect(directives.has('upgrade-insecure-requests')).toBe(false);
    // The policy is the page's: the API's own answers carry none.
    const api = await t.app.inject({ url: '/v3/openapi.json' });
    expect(api.headers['content-security-policy']).toBeUndefined();
  });

  it('GET / points at /docs', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const root = await t.app.inject({ method, url: '/' });
      expect(root.statusCode, method).toBe(302);
      expect(root.headers.location, method).toBe('/docs');
    }
    const post = await t.app.inject({ method: 'POST', url: '/', payload: {} });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expectError(post, 405);
  });
});
