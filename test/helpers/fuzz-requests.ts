import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { basic } from './app.js';

/**
 * The requests test/http/fuzz.test.ts sends: lists of tricky values, and fast-check arbitraries for methods, paths, query
 * strings, bodies, playlist files and credentials, put together into whole requests.
 */

export type Method = 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH' | 'HEAD' | 'OPTIONS';
export type Headers = Record<string, string | string[]>;

export interface FuzzRequest {
  readonly method: Method;
  readonly url: string;
  readonly headers: Headers;
  readonly body: string | Buffer | undefined;
  readonly remoteAddress: string;
}

const utf8Percent = (text: string): string =>
  [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** encodeURIComponent, or the bytes of the UTF-8 replacement when the text has a lone surrogate. */
export const encode = (text: string): string => {
  try {
    return encodeURIComponent(text);
  } catch {
    return utf8Percent(text);
  }
};

export const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

// ---------------------------------------------------------------------------------------------- paths

export const TRICKY_IDS = [
  '',
  '.',
  '..',
  '0',
  '-1',
  '-0',
  '+1',
  ' 1',
  '1 ',
  '1.0',
  '1.5',
  '1e3',
  '1e400',
  '0x10',
  '0b1',
  '010',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'prototype',
  '9007199254740991',
  '9007199254740992',
  '18446744073709551616',
  '2147483648',
  '4294967296',
  '１',
  '١٢٣',
  '½',
  '%',
  '%%',
  '%zz',
  '%0',
  '%00',
  '%2F',
  '%2f..%2f',
  '%2e%2e',
  '%C0%AF',
  '%E2%82',
  '%ED%A0%80',
  '%FF%FE',
  '%F0%9F%8E%B5',
  '%25',
  '%20',
  '1%00',
  '1%0A',
  '1;2',
  '1,2',
  '1&2',
  '*',
  ':playlistId',
];

const idish: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 80 }).map(String) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }).map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
  { weight: 3, arbitrary: fc.constantFrom(...TRICKY_IDS) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map(encode) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map(encode) },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom('%', '2', 'e', 'E', 'F', 'f', 'z', '.', '/', '0', 'C', 'A'),
      maxLength: 12,
    }),
  },
  { weight: 1, arbitrary: fc.integer({ min: 150, max: 400 }).map((n) => '9'.repeat(n)) },
);

/** Names a member path may carry: real-looking, hostile and odd. */
const MEMBER_NAMES = ['alice', 'nobody', '%00', '..', 'a%2Fb', '%E2%80%AE', 'x'.repeat(300), '__proto__'];

export const ODD_PATHS = [
  '/',
  '/v3',
  '/v3/',
  '/v2/playlist',
  '//v3/playlist',
  '/v3//playlist',
  '/v3/playlist//',
  '/V3/PLAYLIST',
  '/v3/Playlist',
  '/v3/play%6Cist',
  '/v3/playlist%2F1',
  '/v3/playlist/1/',
  '/v3/playlist/1/2',
  '/v3/playlist/1/image/',
  '/v3/playlist/1/image/x',
  '/v3/playlist/1;x',
  '/v3/playlist;jsessionid=1',
  '/v3/playlist/../playlist',
  '/v3/playlist/%2e%2e/%2e%2e/etc/passwd',
  '/v3/song/1/2',
  '/v3/songs',
  '/v3/*',
  '/*',
  '/v3/openapi.json',
  '/docs',
  '/docs/',
  '/docs/json',
  '/docs/yaml',
  '/docs/static/index.html',
  '/docs/static/..%2f..%2fpackage.json',
  '/docs/static/%2e%2e/%2e%2e/package.json',
  '/docs/static/%00',
  '/healthz',
  '/readyz',
  '/metrics',
  '/favicon.ico',
];

const pathArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom('/v3/playlist', '/v3/playlists', '/v3/playlist/', '/v3/playlists/'),
  },
  { weight: 5, arbitrary: idish.map((id) => `/v3/playlist/${id}`) },
  { weight: 2, arbitrary: idish.map((id) => `/v3/playlists/${id}`) },
  { weight: 2, arbitrary: idish.map((id) => `/v3/playlist/${id}/image`) },
  { weight: 2, arbitrary: fc.constantFrom('/v3/song', '/v3/song/') },
  { weight: 2, arbitrary: idish.map((id) => `/v3/song/${id}`) },
  { weight: 2, arbitrary: fc.constantFrom('/v3/playlist/import', '/v3/playlists/import', '/v3/playlist/import/') },
  {
    weight: 3,
    arbitrary: fc
      .tuple(idish, fc.constantFrom('members', 'links', 'versions', 'diff', 'restore'))
      .map(([id, what]) => `/v3/playlist/${id}/${what}`),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(idish, fc.constantFrom('members', 'links', 'versions'), fc.oneof(idish, fc.constantFrom(...MEMBER_NAMES)))
      .map(([id, what, key]) => `/v3/playlist/${id}/${what}/${key}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('/v3/changes', '/v3/changes/') },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.oneof(fc.base64String({ maxLength: 60 }).map(encode), idish), fc.constantFrom('', '/image', '/x'))
      .map(([token, tail]) => `/s/${token}${tail}`),
  },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_PATHS) },
  { weight: 1, arbitrary: fc.webPath().map((path) => (path.startsWith('/') ? path : `/${path}`)) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(idish, fc.constantFrom('v3', 'playlist', 'playlists', 'song', 'image', '..', '.', '')), {
        maxLength: 5,
      })
      .map((parts) => `/${parts.join('/')}`),
  },
);

// ---------------------------------------------------------------------------------------------- query strings

const queryKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('limit', 'offset', 'search') },
  { weight: 3, arbitrary: fc.constantFrom('format', 'name', 'unmatched', 'scope', 'since', 'from', 'to') },
  {
    weight: 2,
    arbitrary: fc.constantFrom('size', '__proto__', 'constructor', 'limit[]', 'search[0]', 'LIMIT', 'offset ', ''),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);

export const QUERY_VALUES = [
  '',
  ' ',
  '%',
  '_',
  '\\',
  '%_\\',
  '\\%',
  '*',
  '"',
  "'",
  '""',
  '"*^ NEAR( ) OR AND NOT',
  'NaN',
  'Infinity',
  '-0',
  '1e400',
  '2147483647',
  '2147483648',
  '0x10',
  '1.0',
  '١',
  'null',
  '[]',
  'rock',
  'ROCK',
  'Rôck',
  'é',
  'a b',
  'a  b   c',
  'ab\u0000c',
  '\u0000',
  '\ud800abc',
  'ﬁ',
  '🎵🎵🎵',
];

const queryValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -5, max: 150 }).map(String) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }).map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(...QUERY_VALUES),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.integer({ min: 150, max: 400 }).map((n) => 'ä'.repeat(n)) },
);

const queryArb: fc.Arbitrary<string> = fc
  .array(fc.tuple(queryKey, queryValue, fc.boolean()), { maxLength: 5 })
  .map((pairs) =>
    pairs.length === 0
      ? ''
      : `?${pairs.map(([key, value, raw]) => (raw ? `${key}=${value}` : `${encode(key)}=${encode(value)}`)).join('&')}`,
  );

// ---------------------------------------------------------------------------------------------- bodies

const nameArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\t',
      '\u00a0',
      '\u3000',
      'a\u0000b',
      'a\nb',
      'a\u0085b',
      '\ud800',
      'x\udc00y',
      '__proto__',
      'constructor',
      'toString',
      '<script>alert(1)</script>',
      "'; DROP TABLE playlists; --",
      '%_\\',
      'x'.repeat(200),
      'x'.repeat(201),
      '🎵'.repeat(200),
      '🎵'.repeat(201),
    ),
  },
);

const songIdsArb: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.integer({ min: 1, max: 240 }), { maxLength: 30 }) },
  { weight: 2, arbitrary: fc.array(fc.integer({ min: -3, max: 300 }), { maxLength: 10 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Array.from({ length: 1000 }, (_, i) => (i % 240) + 1),
      Array.from({ length: 1001 }, () => 1),
      [Number.MAX_SAFE_INTEGER],
      [2 ** 31],
      [2 ** 63],
      [0],
    ),
  },
);

const newPlaylistJson: fc.Arbitrary<string> = fc
  .record({ name: nameArb, songIds: songIdsArb }, { requiredKeys: [] })
  .map((value) => JSON.stringify(value));

export const WRONG_TYPES = [
  { name: 5, songIds: [] },
  { name: null, songIds: [1] },
  { name: ['a'], songIds: [1] },
  { name: {}, songIds: [1] },
  { name: true, songIds: [1] },
  { name: 'x', songIds: '1,2' },
  { name: 'x', songIds: ['1'] },
  { name: 'x', songIds: [1.5] },
  { name: 'x', songIds: [true] },
  { name: 'x', songIds: [null] },
  { name: 'x', songIds: [[1]] },
  { name: 'x', songIds: [{ id: 1 }] },
  { name: 'x', songIds: { length: 1, 0: 1 } },
  { name: 'x', songIds: [1e308] },
  { name: 'x', songIds: null },
  { name: 'x', songIds: 1 },
  { name: 'x' },
  { songIds: [1] },
  { Name: 'x', SongIds: [1] },
  { name: 'x', songIds: [1], id: 99, owner: 1, extra: { deep: [1, 2, 3] } },
].map((value) => JSON.stringify(value));

export const HOSTILE_TEXTS = [
  '',
  ' ',
  'null',
  'true',
  '1',
  '"name"',
  '[]',
  '{}',
  '[{"name":"x","songIds":[1]}]',
  '{"__proto__":{"admin":true},"name":"x","songIds":[1]}',
  '{"name":"x","songIds":[1],"__proto__":null}',
  '{"constructor":{"prototype":{"admin":true}},"name":"x","songIds":[1]}',
  '{"name":{"__proto__":{"x":1}},"songIds":[]}',
  '{"name":"x","songIds":[1],"name":"y"}',
  '{"name":"x","songIds":[1,]}',
  "{'name':'x','songIds':[1]}",
  '{"name":"x","songIds":[1]',
  '{"name":"x","songIds":[01]}',
  '{"name":"x","songIds":[NaN]}',
  '{"name":"x","songIds":[1e999]}',
  '{"name":"x","songIds":[-0]}',
  '{"name":"\\ud800","songIds":[]}',
  '{"name":"x\\u0000","songIds":[]}',
  '\ufeff{"name":"bom","songIds":[1]}',
  'name=x&songIds=1&songIds=2',
  'name=x&songIds[]=1',
  '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--\r\n',
  '<?xml version="1.0"?><playlist/>',
];

const XSPF_NS = 'xmlns="http://xspf.org/ns/0/"';
const laughs = (levels: number, fanOut: number): string =>
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">' +
  Array.from({ length: levels }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(fanOut)}">`).join('') +
  `]><playlist ${XSPF_NS}><title>&lol${levels};</title></playlist>`;

/** Playlist files that attack the readers: entity expansion, external entities, DTDs, depth, size, bad text. */
export const HOSTILE_FILES: readonly (readonly [string, string | Buffer])[] = [
  ['application/xspf+xml', laughs(10, 10)],
  ['application/xml', laughs(30, 30)],
  [
    'text/xml',
    `<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><playlist ${XSPF_NS}><title>&x;</title></playlist>`,
  ],
  ['application/xspf+xml', `<!DOCTYPE p SYSTEM "http://127.0.0.1:1/x.dtd"><playlist ${XSPF_NS}/>`],
  ['application/xspf+xml', `<!DOCTYPE p [<!ENTITY % e SYSTEM "http://127.0.0.1:1/e">%e;]><playlist/>`],
  ['application/xspf+xml', `<!DOCTYPE p [${'<!ENTITY a "b">'.repeat(3000)}`],
  ['application/xspf+xml', `<playlist ${XSPF_NS}><title>&a;&#0;&#xD800;</title></playlist>`],
  ['application/xspf+xml', `<playlist ${XSPF_NS}>${'<a>'.repeat(5000)}`],
  ['application/xspf+xml', `<playlist ${XSPF_NS}><trackList>${'<track/>'.repeat(1500)}</trackList></playlist>`],
  [
    'application/xspf+xml',
    `<?xml-stylesheet href="http://127.0.0.1:1/x"?><playlist ${XSPF_NS}><title>s</title></playlist>`,
  ],
  [
    'application/xspf+xml',
    `<playlist ${XSPF_NS}><title><![CDATA[]]></title><trackList><track><location>${'/v3/song/'.repeat(500)}1</location></track></trackList></playlist>`,
  ],
  ['application/xspf+xml', '<?xml version="1.0" encoding="UTF-16"?><playlist/>'],
  ['application/xspf+xml', Buffer.from(`<playlist ${XSPF_NS}><title>x</title></playlist>`, 'utf16le')],
  ['application/xspf+xml', '\uFEFF<playlist/>'],
  [
    'application/jspf+json',
    `{"playlist":{"title":"x","track":${'['.repeat(50_000)}${']'.repeat(50_000)}}}`.slice(0, 60_000),
  ],
  [
    'application/jspf+json',
    '{"playlist":{"__proto__":{"title":"polluted"},"track":[{"constructor":{"prototype":{}}}]}}',
  ],
  [
    'application/jspf+json',
    `{"playlist":{"title":"x","track":[${Array(1001).fill('{"title":"a","creator":"b"}').join(',')}]}}`,
  ],
  ['application/jspf+json', '{"playlist":{"title":"\\ud800","track":[{"identifier":["\\u0000/v3/song/1"]}]}}'],
  ['application/jspf+json', '{"playlist":{"title":"","track":[{"title":{"a":1}}]}}'],
  ['audio/mpegurl', `#EXTM3U\n${'\n'.repeat(60_000)}`],
  ['audio/mpegurl', `#EXTM3U\n#PLAYLIST:x\n${'#EXTINF:1,a - b\nhttp://h/v3/song/1\n'.repeat(1200)}`.slice(0, 60_000)],
  [
    'audio/x-mpegurl',
    '#EXTM3U\n#PLAYLIST:\u0000\u0085\n#EXTINF:NaN,"unclosed - quote\n/v3/song/99999999999999999999\n',
  ],
  ['text/plain', '#EXTM3U\r#PLAYLIST:cr only\r/v3/song/1\r'],
  ['text/plain', 'not a playlist'],
  ['application/vnd.apple.mpegurl', '#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nseg1.ts\n#EXT-X-ENDLIST\n'],
];

/** Random files in each format: structure from fragments, text from anywhere. */
const xspfFileArb: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        `<playlist ${XSPF_NS}>`,
        '</playlist>',
        '<trackList>',
        '</trackList>',
        '<track>',
        '</track>',
        '<title>',
        '</title>',
        '<creator>',
        '</creator>',
        '<location>http://x/v3/song/3</location>',
        '<identifier>',
        '</identifier>',
        '<!DOCTYPE x>',
        '<!ENTITY a "b">',
        '&amp;',
        '&a;',
        '&#x0;',
        '<![CDATA[',
        ']]>',
        '<?pi x?>',
        '<!-- c -->',
      ),
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

const jspfFileArb: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue().map((value) => JSON.stringify({ playlist: value })),
  fc
    .record({
      title: fc.oneof(fc.string(), fc.jsonValue()),
      track: fc.array(
        fc.record(
          {
            title: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue()),
            creator: fc.string({ unit: 'grapheme', maxLength: 20 }),
            identifier: fc.oneof(fc.constant('http://x/v3/song/7'), fc.array(fc.string(), { maxLength: 3 })),
            location: fc.jsonValue(),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 10 },
      ),
    })
    .map((playlist) => JSON.stringify({ playlist })),
  fc.string({ maxLength: 60 }),
);

const m3u8FileArb: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '#EXTM3U',
        '#PLAYLIST:',
        '#EXTINF:',
        '#EXTINF:-1,',
        '#EXTALB:',
        ',',
        ' - ',
        '"',
        'http://x/v3/song/',
      ),
      fc.integer({ min: -5, max: 300 }).map(String),
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.constantFrom('\n', '\r\n', '\r', '\u2028', '\u0000'),
    ),
    { maxLength: 40 },
  )
  .map((parts) => `#EXTM3U\n${parts.join('')}`);

export const importFileArb: fc.Arbitrary<{ contentType: string; body: string }> = fc.oneof(
  fc.record({ contentType: fc.constantFrom('application/xspf+xml', 'application/xml', 'text/xml'), body: xspfFileArb }),
  fc.record({ contentType: fc.constant('application/jspf+json'), body: jspfFileArb }),
  fc.record({
    contentType: fc.constantFrom('audio/mpegurl', 'audio/x-mpegurl', 'application/vnd.apple.mpegurl', 'text/plain'),
    body: m3u8FileArb,
  }),
);

export const INVALID_UTF8 = [
  [0xff, 0xfe, 0xfd],
  [0xc0, 0xaf],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
].map((bytes) => Buffer.concat([Buffer.from('{"name":"a'), Buffer.from(bytes), Buffer.from('b","songIds":[1,2,3]}')]));

const anyBody: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  { weight: 4, arbitrary: newPlaylistJson },
  { weight: 3, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
  { weight: 2, arbitrary: fc.constantFrom(...WRONG_TYPES) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_TEXTS) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 40_000 })
      .map((n) => `{"name":"deep","songIds":[1],"x":${'['.repeat(n)}${']'.repeat(n)}}`),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 1000 })
      .map((n) => `{"name":"deep","songIds":${'['.repeat(n)}1${']'.repeat(n)}}`),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 190, max: 70_000 }).map((n) => JSON.stringify({ name: 'é'.repeat(n), songIds: [1] })),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 990, max: 30_000 })
      .map((n) => JSON.stringify({ name: 'big', songIds: Array.from({ length: n }, () => 7) })),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.constantFrom(...INVALID_UTF8) },
  { weight: 1, arbitrary: fc.constant(Buffer.from('{"name":"utf16","songIds":[1]}', 'utf16le')) },
  { weight: 2, arbitrary: fc.constant(undefined) },
);

const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json; charset=utf-16',
      'application/json, text/plain',
      'text/plain',
      'text/plain; charset=utf-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=b',
      'application/vnd.api+json',
      'application/merge-patch+json',
      'application/xml',
      'application/octet-stream',
      'application/xspf+xml',
      'text/xml',
      'application/jspf+json',
      'audio/mpegurl',
      'audio/x-mpegurl',
      'application/vnd.apple.mpegurl',
      'text/html',
      '',
      ';',
      '*/*',
      'application/',
      '/json',
      'json',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

const payloadArb: fc.Arbitrary<{ contentType: string | undefined; body: string | Buffer | undefined }> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8'),
      body: newPlaylistJson,
    }),
  },
  { weight: 6, arbitrary: fc.record({ contentType: contentTypeArb, body: anyBody }) },
);

// ---------------------------------------------------------------------------------------------- credentials

/** Credential values that are not the valid one: each is missing, malformed, wrong or unknown. */
/** Credential values that are missing or malformed, and a few that are well-formed but wrong. */
export function badCredentialConstants(name: string, password: string): string[] {
  return [
    '',
    ' ',
    'Basic',
    'Basic ',
    'basic',
    'Bearer abc',
    'Digest username="x"',
    'Basic ==',
    'Basic =',
    'Basic ====',
    'Basic a',
    'Basic ab',
    'Basic abc',
    'Basic @@@@',
    `Basic ${b64(`${name}:${password}`)}=`,
    `Basic ${b64(`${name}:${password}`)} extra`,
    `Bearer ${b64(`${name}:${password}`)}`,
    `Basic ${b64(name)}`,
    `Basic ${b64(`:${password}`)}`,
    `Basic ${b64(':')}`,
    `Basic ${b64('\u0000:x')}`,
    `Basic ${b64(`${name}\u0000:${password}`)}`,
    `Basic ${b64(`${'x'.repeat(65)}:pw`)}`,
    `Basic ${b64(`${name}:${'p'.repeat(1025)}`)}`,
    `Basic ${Buffer.from([0xff, 0x3a, 0x41]).toString('base64')}`,
    `Basic ${Buffer.from(`${name}:${password}`, 'latin1').toString('base64')}x`,
    `Basic ${b64(`${name}:wrong`)}`,
  ];
}

export function badCredentialValue(name: string, password: string): fc.Arbitrary<string> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(...badCredentialConstants(name, password)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(`Basic ${b64(`${name}:wrong`)}`, b64(`${name}:${password.toUpperCase()}`)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 12 }))
        .map(([n, p]) => `Basic ${b64(`${n}:${p}`)}`),
    },
    { weight: 2, arbitrary: fc.base64String({ maxLength: 40 }).map((s) => `Basic ${s}`) },
    { weight: 1, arbitrary: fc.base64String({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1000, max: 12_000 }).map((n) => `Basic ${'QUFB'.repeat(n)}`) },
    { weight: 1, arbitrary: fc.integer({ min: 1000, max: 12_000 }).map((n) => 'é'.repeat(n)) },
  );
}

export function credentialArb(name: string, password: string): fc.Arbitrary<Headers> {
  const valid = basic(name, password);
  const bad = badCredentialValue(name, password);
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant({ security: valid }) },
    { weight: 2, arbitrary: fc.constant({ security: b64(`${name}:${password}`) }) },
    { weight: 3, arbitrary: fc.constant({ authorization: valid }) },
    { weight: 2, arbitrary: fc.constant({}) },
    { weight: 4, arbitrary: bad.map((value) => ({ security: value })) },
    { weight: 2, arbitrary: bad.map((value) => ({ authorization: value })) },
    { weight: 1, arbitrary: bad.map((value) => ({ security: value, authorization: valid })) },
    { weight: 1, arbitrary: bad.map((value) => ({ security: [valid, value] })) },
  );
}

// ---------------------------------------------------------------------------------------------- requests

const methodArb: fc.Arbitrary<Method> = fc.oneof(
  { weight: 5, arbitrary: fc.constant('GET' as const) },
  { weight: 5, arbitrary: fc.constant('POST' as const) },
  { weight: 2, arbitrary: fc.constant('DELETE' as const) },
  { weight: 3, arbitrary: fc.constantFrom('PUT' as const, 'PATCH' as const, 'HEAD' as const, 'OPTIONS' as const) },
);

export function requestArb(
  credentials: fc.Arbitrary<Headers>,
  addresses: fc.Arbitrary<string>,
): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: methodArb,
      path: pathArb,
      query: queryArb,
      credentials,
      payload: payloadArb,
      accept: fc.option(
        fc.constantFrom(
          'application/json',
          'text/html',
          'image/png',
          '*/*',
          'x',
          'application/xspf+xml',
          'application/jspf+json',
          'audio/mpegurl',
          'audio/*;q=0.5, application/json;q=0',
        ),
        { nil: undefined },
      ),
      remoteAddress: addresses,
    })
    .map(({ method, path, query, credentials: creds, payload, accept, remoteAddress }) => {
      const headers: Headers = { ...creds };
      if (payload.contentType !== undefined) headers['content-type'] = payload.contentType;
      if (accept !== undefined) headers.accept = accept;
      return { method, url: path + query, headers, body: payload.body, remoteAddress };
    });
}

/** Well-formed calls with random values, so that the property reaches the handlers and the database, not only the gates. */
export function wellFormedArb(security: string): fc.Arbitrary<FuzzRequest> {
  const searchText = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.constantFrom('rock', 'seed', 'é', 'ROCK É', '%', '_', '\\', 'a%b_c\\d', '"', 'NEAR', '*', 'ﬁ', 'ａｂｃ'),
  );
  const page = fc
    .record(
      { limit: fc.integer({ min: 1, max: 100 }), offset: fc.integer({ min: 0, max: 50 }), search: searchText },
      { requiredKeys: [] },
    )
    .map((query) => {
      const text = new URLSearchParams(
        Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]),
      ).toString();
      return text === '' ? '' : `?${text}`;
    });
  const call = fc.oneof(
    page.map((query) => ({ method: 'GET' as const, url: `/v3/playlist${query}`, body: undefined })),
    page.map((query) => ({ method: 'GET' as const, url: `/v3/playlists${query}`, body: undefined })),
    page.map((query) => ({ method: 'GET' as const, url: `/v3/song${query}`, body: undefined })),
    fc
      .record({
        name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).filter((n) => /\S/.test(n)),
        songIds: fc.array(fc.integer({ min: 1, max: 240 }), { maxLength: 50 }),
      })
      .map((body) => ({ method: 'POST' as const, url: '/v3/playlist', body: JSON.stringify(body) })),
    fc
      .integer({ min: 1, max: 200 })
      .map((id) => ({ method: 'GET' as const, url: `/v3/playlist/${id}`, body: undefined })),
    fc
      .integer({ min: 1, max: 200 })
      .map((id) => ({ method: 'DELETE' as const, url: `/v3/playlist/${id}`, body: undefined })),
    fc.integer({ min: 1, max: 260 }).map((id) => ({ method: 'GET' as const, url: `/v3/song/${id}`, body: undefined })),
  );
  return call.map(({ method, url, body }): FuzzRequest => {
    const headers: Headers = { security };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return { method, url, headers, body, remoteAddress: '127.0.0.1' };
  });
}

export function injectOptions(request: FuzzRequest): InjectOptions {
  return {
    method: request.method,
    url: request.url,
    headers: request.headers,
    remoteAddress: request.remoteAddress,
    ...(request.body === undefined ? {} : { payload: request.body }),
  };
}
