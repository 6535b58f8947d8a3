import { sql } from 'kysely';
import { Parser as M3u8Parser } from 'm3u8-parser';
import { expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

/** Export (GET with Accept or ?format=) and import (POST /v3/playlist/import) of XSPF, JSPF and M3U8. */

const FORMATS = {
  xspf: 'application/xspf+xml',
  jspf: 'application/jspf+json',
  m3u8: 'audio/mpegurl',
} as const;

interface ImportBody {
  playlist: PlaylistBody;
  unmatched: { position: number; title?: string; artist?: string; album?: string; identifier?: string }[];
}

/** The XSPF namespace and the parts of a track the export writes, for xmllint to check the files against. */
const XSPF_SCHEMA = `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="http://xspf.org/ns/0/"
  xmlns="http://xspf.org/ns/0/" elementFormDefault="qualified">
  <xs:element name="playlist">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="title" type="xs:string"/>
        <xs:element name="identifier" type="xs:anyURI"/>
        <xs:element name="trackList">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="track" minOccurs="0" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:sequence>
                    <xs:element name="location" type="xs:anyURI"/>
                    <xs:element name="identifier" type="xs:anyURI"/>
                    <xs:element name="title" type="xs:string"/>
                    <xs:element name="creator" type="xs:string"/>
                    <xs:element name="album" type="xs:string" minOccurs="0"/>
                    <xs:element name="duration" type="xs:nonNegativeInteger" minOccurs="0"/>
                  </xs:sequence>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
          </xs:complexType>
        </xs:element>
      </xs:sequence>
      <xs:attribute name="version" type="xs:string" use="required" fixed="1"/>
    </xs:complexType>
  </xs:element>
</xs:schema>`;

/** The statement with its parameters written in as literals, for EXPLAIN (which takes no bound parameters on PostgreSQL). */
function inline(statement: string, parameters: readonly unknown[]): string {
  const literal = (value: unknown) =>
    typeof value === 'number' ? String(value) : `'${String(value).replace(/'/g, "''")}'`;
  let i = 0;
  return statement.replace(/\$(\d+)|\?/g, (_m, n: string | undefined) =>
    literal(parameters[n === undefined ? i++ : Number(n) - 1]),
  );
}

describeEachDatabase('playlist files on %s', (t, dialect) => {
  const get = (security: string, id: number, headers: Record<string, string> = {}, query = '') =>
    t.app.inject({ method: 'GET', url: `/v3/playlist/${id}${query}`, headers: { security, ...headers } });
  const importFile = (security: string, type: string, payload: string, query = '') =>
    t.app.inject({
      method: 'POST',
      url: `/v3/playlist/import${query}`,
      headers: { security, 'content-type': type },
      payload,
    });
  const song = async (id: number) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/v3/song/${id}`,
      headers: { security: await t.addUser() },
    });
    return response.json<{ id: number; title: string; artist: string; album: string; duration: number | null }>();
  };
  const countPlaylists = async (security: string) =>
    Number(
      (await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } })).headers['x-total-count'],
    );

  it('answers JSON as before for no Accept, */*, application/json and ?format=json, with Vary: Accept', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Plain', [1, 2]);
    for (const accept of [undefined, '*/*', 'application/json', 'text/html, */*;q=0.8', 'application/*']) {
      const response = await get(security, created.id, accept === undefined ? {} : { accept });
      expect(response.statusCode, accept).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.json()).toEqual(created);
      expect(response.headers.vary).toContain('Accept');
      expect(response.headers['content-disposition']).toBeUndefined();
    }
    const download = await get(security, created.id, { accept: FORMATS.xspf }, '?format=json');
    expect(download.json()).toEqual(created);
    expect(download.headers['content-disposition']).toBe('attachment; filename="Plain.json"');
  });

  it('names a download by its real name in filename* (RFC 8187), with an ASCII filename for older clients', async () => {
    const security = await t.addUser();
    for (const [name, ascii, real] of [
      ['أغاني الصيف', 'playlist.m3u8', 'أغاني الصيف.m3u8'],
      ['夏天的歌', 'playlist.m3u8', '夏天的歌.m3u8'],
      [
        'Café "del" Mar / Vol. 2 (it\'s 100%)',
        'Cafe_del_Mar_Vol. 2_it_s 100.m3u8',
        'Café "del" Mar _ Vol. 2 (it\'s 100%).m3u8',
      ],
    ]) {
      const created = await createPlaylist(t.app, security, name!, [1]);
      const header = String((await get(security, created.id, {}, '?format=m3u8')).headers['content-disposition']);
      const parts = /^attachment; filename="([^"]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+.^_`|~%-]+)$/.exec(header);
      expect(parts, header).not.toBeNull();
      expect(parts![1], name).toBe(ascii);
      expect(decodeURIComponent(parts![2]!), name).toBe(real);
    }
  });

  it('exports XSPF with what the catalog knows, in order with repeats, valid in the XSPF namespace', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Rock & <Roll> "live"', [1, 4, 1]);
    const response = await get(security, created.id, { accept: FORMATS.xspf, host: 'music.test:8080' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/xspf+xml; charset=utf-8');
    expect(response.headers.etag).toMatch(/^"[^"]+"$/);
    const first = await song(1);
    expect(response.body).toContain('<playlist version="1" xmlns="http://xspf.org/ns/0/">');
    expect(response.body).toContain('<title>Rock &amp; &lt;Roll&gt; &quot;live&quot;</title>');
    expect(response.body).toContain(`<identifier>http://music.test:8080/v3/song/1</identifier>`);
    expect(response.body).toContain(`<creator>${first.artist.replace('&', '&amp;')}</creator>`);
    expect(response.body).toContain(`<duration>${first.duration! * 1000}</duration>`);
    expect([...response.body.matchAll(/<identifier>[^<]*\/v3\/song\/(\d+)</g)].map((m) => Number(m[1]))).toEqual([
      1, 4, 1,
    ]);
    const lint = await validateXML({
      xml: [{ fileName: 'playlist.xspf', contents: response.body }],
      schema: [{ fileName: 'xspf.xsd', contents: XSPF_SCHEMA }],
    });
    expect(lint.errors).toEqual([]);
    expect(lint.valid).toBe(true);
  });

  it('exports JSPF as ListenBrainz reads it', async () => {
    const name = `jay_${process.pid}`;
    const security = await t.addUser(name);
    const created = await createPlaylist(t.app, security, 'Jay Spiff', [3, 2]);
    const response = await get(security, created.id, { accept: FORMATS.jspf, host: 'h.test' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/jspf+json; charset=utf-8');
    const third = await song(3);
    const body = response.json<{
      playlist: { title: string; identifier: string; track: Record<string, unknown>[] };
    }>();
    expect(body.playlist.title).toBe('Jay Spiff');
    expect(body.playlist.identifier).toBe(`http://h.test/v3/playlist/${created.id}`);
    expect(body.playlist.track[0]).toEqual({
      location: ['http://h.test/v3/song/3'],
      identifier: ['http://h.test/v3/song/3'],
      title: third.title,
      creator: third.artist,
      album: third.album,
      duration: third.duration! * 1000,
      // Who added the entry and when (1.9.0), as ListenBrainz's track extension says them.
      extension: {
        'https://musicbrainz.org/doc/jspf#track': {
          added_by: name,
          added_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as unknown,
        },
      },
    });
    expect(body.playlist.track.map((track) => track.identifier)).toEqual([
      ['http://h.test/v3/song/3'],
      ['http://h.test/v3/song/2'],
    ]);
  });

  it('exports M3U8 that an M3U parser reads back to the same tracks; no text can break a line', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Line\u2028break\u2029name', [5, 6, 5]);
    for (const accept of ['audio/mpegurl', 'audio/x-mpegurl', 'application/vnd.apple.mpegurl']) {
      const response = await get(security, created.id, { accept, host: 'm.test' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe(`${accept}; charset=utf-8`);
    }
    const response = await get(security, created.id, { host: 'm.test' }, '?format=m3u8');
    expect(response.headers['content-type']).toBe('audio/mpegurl; charset=utf-8');
    expect(response.headers['content-disposition']).toBe('attachment; filename="Line break name.m3u8"');
    const songs = [await song(5), await song(6), await song(5)];
    const lines = response.body.split('\n');
    expect(lines.slice(0, 3)).toEqual([
      '#EXTM3U',
      '#PLAYLIST:Line break name',
      `#EXTINF:${songs[0]!.duration},${songs[0]!.artist} - ${songs[0]!.title}`,
    ]);
    expect(response.body).not.toMatch(/[\r\u2028\u2029\u0085]/);
    const parser = new M3u8Parser();
    parser.push(response.body);
    parser.end();
    const { segments } = parser.manifest;
    expect(segments.map((s) => s.uri)).toEqual([5, 6, 5].map((id) => `http://m.test/v3/song/${id}`));
    expect(segments.map((s) => s.duration)).toEqual(songs.map((s) => s.duration));
    expect(segments.map((s) => s.title)).toEqual(songs.map((s) => `${s.artist} - ${s.title}`));
  });

  it('removes control characters a catalog entry carries from every format', async () => {
    const word = `evil${Date.now()}`;
    await importCatalog(t.db, [
      {
        title: `${word}\nTitle\r\n#EXTM3U\u0001`,
        artist: 'Bad\u0007 <Artist>',
        album: 'A\u2028B',
        genre: 'X',
        duration: 5,
      },
    ]);
    const security = await t.addUser();
    const found = await t.app.inject({ method: 'GET', url: `/v3/song?search=${word}`, headers: { security } });
    const [evil] = found.json<{ id: number }[]>();
    const created = await createPlaylist(t.app, security, 'Evil', [evil!.id, 1]);
    const m3u8 = (await get(security, created.id, { accept: FORMATS.m3u8, host: 'e.test' })).body;
    expect(m3u8.split('\n')).toEqual([
      '#EXTM3U',
      '#PLAYLIST:Evil',
      `#EXTINF:5,Bad <Artist> - ${word} Title  #EXTM3U`,
      '#EXTALB:A B',
      `http://e.test/v3/song/${evil!.id}`,
      expect.stringMatching(/^#EXTINF:/),
      expect.stringMatching(/^#EXTALB:/),
      'http://e.test/v3/song/1',
      '',
    ]);
    const xspf = (await get(security, created.id, { accept: FORMATS.xspf })).body;
    expect(xspf).toContain(`<title>${word} Title  #EXTM3U</title>`);
    expect(xspf).toContain('<creator>Bad &lt;Artist&gt;</creator>');
    const lint = await validateXML({
      xml: [{ fileName: 'evil.xspf', contents: xspf }],
      schema: [{ fileName: 'xspf.xsd', contents: XSPF_SCHEMA }],
    });
    expect(lint.errors).toEqual([]);
    const jspf = (await get(security, created.id, { accept: FORMATS.jspf })).body;
    expect(jspf).not.toMatch(/\\u00|\\n|\\r/);
    for (const [format, type] of Object.entries(FORMATS)) {
      const body = (await get(security, created.id, { accept: type })).body;
      const back = await importFile(security, type, body, '?unmatched=fail');
      expect(
        back.json<ImportBody>().playlist.songs.map((s) => s.id),
        format,
      ).toEqual([evil!.id, 1]);
    }
  });

  it('gives the same bytes and a strong ETag per format, 304 on If-None-Match, new bytes after a catalog rename', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Stable', [7, 8]);
    const tags = new Set<string>();
    for (const [format, accept] of Object.entries(FORMATS)) {
      const one = await get(security, created.id, { accept });
      const two = await get(security, created.id, { accept });
      expect(two.rawPayload.equals(one.rawPayload), format).toBe(true);
      expect(two.headers.etag).toBe(one.headers.etag);
      tags.add(String(one.headers.etag));
      const again = await get(security, created.id, { accept, 'if-none-match': String(one.headers.etag) });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe('');
      expect(again.headers.etag).toBe(one.headers.etag);
    }
    tags.add(String((await get(security, created.id)).headers.etag));
    expect(tags.size).toBe(4);

    const before = await get(security, created.id, { accept: FORMATS.xspf });
    const old = await song(8);
    await importCatalog(t.db, [{ ...old, title: `${old.title} (Remastered)`, genre: 'Pop' }]);
    const after = await get(security, created.id, {
      accept: FORMATS.xspf,
      'if-none-match': String(before.headers.etag),
    });
    expect(after.statusCode).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body).toContain(`<title>${old.title} (Remastered)</title>`);
  });

  it('answers errors with the error body: 400 for an unknown format, 406, 401, 404 and 410', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Errors', [1]);
    const unknown = expectError(await get(security, created.id, {}, '?format=pls'), 400);
    expect(unknown.errormsg).toBe('The "format" query parameter must be one of json, xspf, jspf, m3u8.');
    const refused = expectError(await get(security, created.id, { accept: 'text/html' }), 406);
    expect(refused.errormsg).toContain('application/xspf+xml');
    expectError(await get(security, created.id, { accept: 'application/xml' }), 406);
    const anonymous = await t.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}?format=xspf` });
    expectError(anonymous, 401);
    expectError(await get(await t.addUser(), created.id, { accept: FORMATS.m3u8 }), 404);
    await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${created.id}`, headers: { security } });
    for (const accept of Object.values(FORMATS)) expectError(await get(security, created.id, { accept }), 410);
    const gone = expectError(await get(security, created.id, {}, '?format=jspf'), 410);
    expect(gone.errormsg).toContain('deleted');
  });

  it('round trip: every format exported and imported back as the same user gives the same songs in order', async () => {
    const security = await t.addUser();
    const ids = [9, 3, 9, 240, 1, 3];
    const created = await createPlaylist(t.app, security, 'Round trip ☃ & co', ids);
    for (const [format, type] of Object.entries(FORMATS)) {
      const exported = await get(security, created.id, { host: 'elsewhere.test' }, `?format=${format}`);
      expect(exported.statusCode).toBe(200);
      const response = await importFile(security, type, exported.body, '?unmatched=fail');
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json<ImportBody>();
      expect(body.unmatched).toEqual([]);
      expect(body.playlist.name).toBe('Round trip ☃ & co');
      expect(
        body.playlist.songs.map((s) => s.id),
        format,
      ).toEqual(ids);
      expect(body.playlist.songs).toEqual(created.songs);
      expect(response.headers.location).toBe(`/v3/playlist/${body.playlist.id}`);
      const stored = await get(security, body.playlist.id);
      expect(stored.json()).toEqual(body.playlist);
    }
  });

  it('imports hand-written files by title and artist, case- and accent-insensitively, and reports what did not match', async () => {
    const security = await t.addUser();
    const [a, b] = [await song(1), await song(2)];
    const shout = (text: string) => text.toUpperCase().replace(/E/g, 'É');
    const xspf = `<?xml version="1.0"?>
<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>Hand made</title><trackList>
  <track><title>${shout(a.title).replace('&', '&amp;')}</title><creator>${a.artist.toLowerCase()}</creator></track>
  <track><title><![CDATA[No Such Song]]></title><creator>Nobody</creator><album>Nowhere</album></track>
  <track><location>https://other.example/v3/song/2</location></track>
</trackList></playlist>`;
    const fromXspf = await importFile(security, 'application/xml', xspf);
    expect(fromXspf.statusCode, fromXspf.body).toBe(200);
    const x = fromXspf.json<ImportBody>();
    expect(x.playlist.name).toBe('Hand made');
    expect(x.playlist.songs.map((s) => s.id)).toEqual([1, 2]);
    expect(x.unmatched).toEqual([{ position: 2, title: 'No Such Song', artist: 'Nobody', album: 'Nowhere' }]);

    const jspf = JSON.stringify({
      playlist: {
        title: 'From JSPF',
        track: [
          { title: b.title, creator: b.artist, identifier: 'https://musicbrainz.org/recording/x' },
          { title: 'Ghost', creator: 'Nobody', identifier: ['https://musicbrainz.org/recording/y'] },
        ],
      },
    });
    const fromJspf = await importFile(security, FORMATS.jspf, jspf);
    expect(fromJspf.statusCode, fromJspf.body).toBe(200);
    expect(fromJspf.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([2]);
    expect(fromJspf.json<ImportBody>().unmatched).toEqual([
      { position: 2, title: 'Ghost', artist: 'Nobody', identifier: 'https://musicbrainz.org/recording/y' },
    ]);

    const m3u8 = `#EXTM3U\r\n#PLAYLIST:From M3U\r\n#EXTINF:123,${a.artist} - ${a.title}\r\nfile:///music/a.mp3\r\n\r\n#EXTINF:-1 tvg-id="x,y",Nobody - Nothing\r\n/music/b.mp3\r\nhttp://localhost:8080/v3/song/3\r\n`;
    const fromM3u8 = await importFile(security, 'text/plain', m3u8);
    expect(fromM3u8.statusCode, fromM3u8.body).toBe(200);
    const m = fromM3u8.json<ImportBody>();
    expect(m.playlist.name).toBe('From M3U');
    expect(m.playlist.songs.map((s) => s.id)).toEqual([1, 3]);
    expect(m.unmatched).toEqual([{ position: 2, title: 'Nothing', artist: 'Nobody', identifier: '/music/b.mp3' }]);
  });

  it("matches titles through the songs' title index, not by reading the catalog", async () => {
    const security = await t.addUser();
    const a = await song(5);
    const before = t.queries.length;
    const jspf = JSON.stringify({ playlist: { title: 'Indexed', track: [{ title: a.title, creator: a.artist }] } });
    const answer = await importFile(security, FORMATS.jspf, jspf);
    expect(answer.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([5]);
    const lookup = t.queries.slice(before).find((q) => /from "songs"/.test(q.sql) && /search_doc/.test(q.sql));
    expect(lookup, 'the title lookup').toBeDefined();
    // The catalog here is small enough for PostgreSQL to prefer reading it whole: ask whether the index can serve.
    const plan = await t.db.kysely.transaction().execute(async (trx) => {
      if (dialect === 'postgres') await sql`SET LOCAL enable_seqscan = off`.execute(trx);
      const prefix = dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
      return sql.raw<Record<string, unknown>>(prefix + inline(lookup!.sql, lookup!.parameters)).execute(trx);
    });
    const text = plan.rows.map((row) => Object.values(row).join(' ')).join('\n');
    expect(text).toMatch(/songs_title_key/);
  });

  it('reads each matched song from the catalog once: the create takes the songs the match found', async () => {
    const security = await t.addUser();
    const a = await song(6);
    const before = t.queries.length;
    const m3u8 = `#EXTM3U\n#PLAYLIST:Once\nhttp://a/v3/song/2\n#EXTINF:1,${a.artist} - ${a.title}\nx.mp3\n`;
    const answer = await importFile(security, 'audio/mpegurl', m3u8);
    expect(answer.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([2, 6]);
    // A statement may start with its prepared statement's name, as a comment (src/db/postgres.ts).
    const songReads = t.queries.slice(before).filter((q) => /^(\/\*.*?\*\/ )?select .* from "songs"/i.test(q.sql));
    // One read by id (the link), one by title (the rest); none again for the create.
    expect(songReads.map((q) => q.sql)).toHaveLength(2);
  });

  it('picks among songs of the same title and artist by album, then the lowest id', async () => {
    const word = `twin${Date.now()}`;
    await importCatalog(t.db, [
      { title: `${word} Song`, artist: 'The Twins', album: 'First', genre: 'Pop', duration: 100 },
      { title: `${word} Song`, artist: 'The Twins', album: 'Second', genre: 'Pop', duration: 100 },
    ]);
    const security = await t.addUser();
    const found = await t.app.inject({ method: 'GET', url: `/v3/song?search=${word}`, headers: { security } });
    const [first, second] = found.json<{ id: number; album: string }[]>();
    expect([first!.album, second!.album]).toEqual(['First', 'Second']);
    const jspf = JSON.stringify({
      playlist: {
        title: 'Twins',
        track: [
          { title: `${word.toUpperCase()} song`, creator: 'the twins', album: 'SECOND' },
          { title: `${word} Song`, creator: 'The Twins' },
          { title: `${word} Song`, creator: 'The Twins', album: 'Neither' },
          { title: `${word} Song`, creator: 'Someone Else' },
        ],
      },
    });
    const response = await importFile(security, FORMATS.jspf, jspf);
    const body = response.json<ImportBody>();
    expect(body.playlist.songs.map((s) => s.id)).toEqual([second!.id, first!.id, first!.id]);
    expect(body.unmatched.map((u) => u.position)).toEqual([4]);
  });

  it('?unmatched=fail answers 422 naming the tracks and creates nothing; ?name= names the playlist', async () => {
    const security = await t.addUser();
    const file = '#EXTM3U\n#EXTINF:10,Nobody - Missing One\nx.mp3\n#EXTINF:10,Nobody - Missing Two\ny.mp3\n';
    const refused = expectError(await importFile(security, 'audio/x-mpegurl', file, '?unmatched=fail&name=X'), 422);
    expect(refused.errormsg).toContain('#1 "Nobody - Missing One"');
    expect(refused.errormsg).toContain('#2 "Nobody - Missing Two"');
    expect(await countPlaylists(security)).toBe(0);
    expectError(await importFile(security, 'audio/x-mpegurl', file), 400);
    const named = await importFile(security, 'audio/x-mpegurl', file, '?name=My%20name');
    expect(named.statusCode).toBe(200);
    expect(named.json<ImportBody>().playlist).toMatchObject({ name: 'My name', songs: [] });
    expect(named.json<ImportBody>().unmatched.map((u) => u.position)).toEqual([1, 2]);
    expect(await countPlaylists(security)).toBe(1);
    expectError(await importFile(security, 'audio/x-mpegurl', file, '?name=%01'), 400);
    const maybe = expectError(await importFile(security, 'audio/x-mpegurl', file, '?unmatched=maybe&name=a'), 400);
    expect(maybe.errormsg).toBe('The "unmatched" query parameter must be one of skip, fail.');
  });

  it('refuses hostile and unreadable files with 400 and the error body, creating nothing', async () => {
    const security = await t.addUser();
    const laughs =
      '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n' +
      Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join(
        '\n',
      ) +
      '\n]>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>&lol9;</title></playlist>';
    const external =
      '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>' +
      '<playlist xmlns="http://xspf.org/ns/0/"><title>&xxe;</title></playlist>';
    const doctype =
      '<?xml version="1.0"?><!DOCTYPE playlist SYSTEM "http://example.com/xspf.dtd"><playlist><title>t</title></playlist>';
    const undeclared = '<playlist xmlns="http://xspf.org/ns/0/"><title>&lol9;</title></playlist>';
    for (const [what, body] of Object.entries({ laughs, external, doctype, undeclared })) {
      const refused = expectError(await importFile(security, FORMATS.xspf, body), 400);
      if (what !== 'undeclared') expect(refused.errormsg, what).toContain('DOCTYPE');
      expect(refused.errormsg).not.toContain('root:');
    }
    // An M3U8 file is read up to 8 lines a track of the songs limit (and 64 more), and as many tracks.
    const { songsMax } = t.config.limits;
    const bad = {
      'not XML': [FORMATS.xspf, 'hello'],
      'another root': ['text/xml', '<html><title>x</title></html>'],
      unclosed: [FORMATS.xspf, '<playlist xmlns="http://xspf.org/ns/0/"><title>x</title>'],
      'deep XML': [FORMATS.xspf, `<playlist>${'<a>'.repeat(100)}${'</a>'.repeat(100)}</playlist>`],
      'deep JSON': [FORMATS.jspf, `{"playlist":{"title":"x","track":[${'['.repeat(100)}${']'.repeat(100)}]}}`],
      'not JSON': [FORMATS.jspf, '{"playlist":'],
      'no playlist': [FORMATS.jspf, '{"title":"x"}'],
      'a number for a title': [FORMATS.jspf, '{"playlist":{"title":1}}'],
      'tracks not a list': [FORMATS.jspf, '{"playlist":{"title":"x","track":{}}}'],
      'no #EXTM3U': ['audio/mpegurl', 'song.mp3\n'],
      'too many lines': ['audio/mpegurl', `#EXTM3U\n#PLAYLIST:x\n${'#\n'.repeat(9 * songsMax)}`],
      'too many tracks': ['audio/mpegurl', `#EXTM3U\n#PLAYLIST:x\n${'a.mp3\n'.repeat(songsMax + 1)}`],
      'not UTF-8': [FORMATS.xspf, Buffer.from([0x3c, 0xff, 0xfe]).toString('latin1')],
    } as const;
    for (const [what, [type, body]] of Object.entries(bad)) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v3/playlist/import',
        headers: { security, 'content-type': type },
        payload: what === 'not UTF-8' ? Buffer.from([0x3c, 0xff, 0xfe]) : body,
      });
      expectError(response, 400);
    }
    expect(await countPlaylists(security)).toBe(0);
  });

  it('takes only playlist media types (415), within the import limit (413), and needs a credential (401)', async () => {
    const security = await t.addUser();
    expectError(await importFile(security, 'text/plain', '{"name":"x","songIds":[1]}'), 415);
    expectError(await importFile(security, 'application/json', '{"playlist":{"title":"x"}}'), 415);
    const { bodyBytes, importBytes } = t.config.limits;
    const big = `#EXTM3U\n#PLAYLIST:${'x'.repeat(importBytes)}\n`;
    expect(expectError(await importFile(security, 'audio/mpegurl', big), 413).errormsg).toBe(
      `The request body is larger than the limit of ${importBytes} bytes.`,
    );
    // A file past the limit of other bodies is read: an import has a limit of its own.
    const past = `#EXTM3U\n#PLAYLIST:${'x'.repeat(bodyBytes)}\n#EXTINF:1,Artist - Title\nhttps://other.example/v3/song/3\n`;
    const read = await importFile(security, 'audio/mpegurl', past, '?name=Past');
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([3]);
    const anonymous = await t.app.inject({
      method: 'POST',
      url: '/v3/playlists/import',
      headers: { 'content-type': 'audio/mpegurl' },
      payload: '#EXTM3U\n',
    });
    expectError(anonymous, 401);
    const plural = await t.app.inject({
      method: 'POST',
      url: '/v3/playlists/import?name=Plural',
      headers: { security, 'content-type': 'audio/mpegurl' },
      payload: '#EXTM3U\nhttp://a/v3/songs/4\n',
    });
    expect(plural.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([4]);
    // A media type is read as HTTP has it: any case, parameters aside.
    for (const type of ['Audio/MPEGURL; charset=utf-8', 'TEXT/PLAIN;charset=UTF-8']) {
      const response = await importFile(security, type, '#EXTM3U\nhttp://a/v3/song/5\n', '?name=Typed');
      expect(response.statusCode, type).toBe(200);
      expect(response.json<ImportBody>().playlist.songs.map((s) => s.id)).toEqual([5]);
    }
    // JSON bodies still work on create.
    await createPlaylist(t.app, security, 'Still JSON', [1]);
  });

  it('says an empty or absent body is empty, whatever its type, and creates nothing', async () => {
    const security = await t.addUser();
    const empty = 'The request body is empty: send the playlist file (XSPF, JSPF or M3U8) as the body.';
    for (const type of [...Object.values(FORMATS), 'text/xml', 'text/plain', 'application/x-www-form-urlencoded']) {
      expect(expectError(await importFile(security, type, ''), 400).errormsg, type).toBe(empty);
    }
    const absent = await t.app.inject({ method: 'POST', url: '/v3/playlist/import', headers: { security } });
    expect(expectError(absent, 400).errormsg).toBe(empty);
    // A document that is there but lacks its root is told so.
    const rootless = await importFile(security, FORMATS.xspf, '<?xml version="1.0"?>\n');
    expect(expectError(rootless, 400).errormsg).not.toBe(empty);
    expect(await countPlaylists(security)).toBe(0);
  });

  it('searches an imported playlist like a created one', async () => {
    const security = await t.addUser();
    const response = await importFile(
      security,
      'audio/mpegurl',
      '#EXTM3U\n#PLAYLIST:Zebra Quartz Import\nhttp://x/v3/song/10\n',
    );
    const created = response.json<ImportBody>().playlist;
    const found = await t.app.inject({
      method: 'GET',
      url: '/v3/playlist?search=zebra%20quartz',
      headers: { security },
    });
    expect(found.json<PlaylistBody[]>().map((p) => p.id)).toEqual([created.id]);
  });
});
