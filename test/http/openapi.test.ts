import { readFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { formatDocument, openApiDocument } from '../../scripts/openapi-document.js';
import { useTestApp } from '../helpers/each-database.js';
import {
  committed,
  committedText,
  operation,
  responseSchema,
  validatorFor,
  type Method,
  type OperationDoc,
  type ParameterDoc,
  type ResponseDoc,
  type SchemaDoc,
} from '../helpers/openapi-conformance.js';
import { expectError } from '../helpers/requests.js';

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

  it('is what test/client/mixtape.d.ts was generated from (otherwise run `npm run openapi`)', async () => {
    const generated = readFileSync(new URL('../client/mixtape.d.ts', import.meta.url), 'utf8');
    const fresh = astToString(await openapiTS(committedText));
    expect(generated.replace(/^\/\*\*[\s\S]*?\*\/\s*/, '')).toBe(fresh.replace(/^\/\*\*[\s\S]*?\*\/\s*/, ''));
  });

  it('is OpenAPI 3.1 for API version 1.7.0', () => {
    expect(committed.openapi).toMatch(/^3\.1\.\d+$/);
    expect(committed.info.version).toBe('1.11.0');
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
      // `songIds`, or (1.7.0) `rules` instead: the service requires one of the two.
      expect(body.required).toEqual(['name']);
      // Documented as the named schema, which generated clients type (the route reads it loosely, then in full).
      expect(body.properties?.rules).toMatchObject({ $ref: '#/components/schemas/smartRules' });
      expect(body.properties?.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      expect(body.properties?.songIds).toMatchObject({ type: 'array', maxItems: 10_000 });
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
      // `curl -d` and text/plain bodies are read as JSON with the security header, but are no body type to send.
      expect(Object.keys(create.requestBody?.content ?? {}), path).toEqual(['application/json']);
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
      if (!path.startsWith('/v3/playlists')) {
        expect(op.summary, where).toMatch(/^\S[^\n]{4,60}$/);
        continue;
      }
      // An alias's summary names its singular operation, as long as that path is.
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

  it('lists only the body types a client should send, and 415 on every operation that takes a body', () => {
    const bodyTypes = (path: string, method: Method) => Object.keys(operation(path, method).requestBody?.content ?? {});
    for (const base of ['/v3/playlist', '/v3/playlists']) {
      const one = `${base}/{playlist-id}`;
      expect(bodyTypes(one, 'patch').sort(), base).toEqual([
        'application/json',
        'application/json-patch+json',
        'application/merge-patch+json',
      ]);
      expect(bodyTypes(one, 'put'), base).toEqual(['application/json']);
      expect(bodyTypes(`${one}/songs`, 'post'), base).toEqual(['application/json']);
    }
    for (const [path, item] of Object.entries(committed.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op.requestBody === undefined) continue;
        expect(Object.keys(op.requestBody.content), `${method} ${path}`).not.toContain(
          'application/x-www-form-urlencoded',
        );
        expect(jsonSchemaOf(op.responses['415']), `${method} ${path}`).toEqual({ $ref: ERROR_REF });
      }
    }
  });

  it('describes JSPF as the JSON object it is, and XSPF and M3U8 as text', () => {
    const ok = operation('/v3/playlist/{playlist-id}', 'get').responses['200']!.content!;
    expect(ok['application/jspf+json']?.schema).toMatchObject({
      type: 'object',
      properties: { playlist: { type: 'object', properties: { track: { type: 'array' } } } },
    });
    for (const type of ['application/xspf+xml', 'audio/mpegurl', 'audio/x-mpegurl', 'application/vnd.apple.mpegurl']) {
      expect(ok[type]?.schema, type).toMatchObject({ type: 'string' });
    }
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
