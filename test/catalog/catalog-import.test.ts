import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parseFile } from 'music-metadata';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CatalogFileError, importCatalogPath } from '../../src/catalog/catalog-files.js';
import type { SongRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/each-database.js';

type Song = Pick<SongRow, 'title' | 'artist' | 'album' | 'genre' | 'duration'>;
type StoredSong = Pick<SongRow, 'id' | 'search_doc'> & Song;

/** A stream that keeps what is written to it; `isTTY` makes it look like a terminal. */
function sink(isTTY = false) {
  const stream = Object.assign(new PassThrough(), { isTTY, columns: 100 });
  let output = '';
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return { stream, output: () => output };
}

function riffChunk(id: string, data: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 'ascii');
  header.writeUInt32LE(data.length, 4);
  return Buffer.concat([header, data, Buffer.alloc(data.length % 2)]);
}

/** A valid WAV file: 8 kHz 8-bit mono silence with RIFF INFO tags (read as Latin-1, as most tools write them). */
function wavFile(tags: Record<string, string>, seconds: number): Buffer {
  const rate = 8000;
  const format = Buffer.alloc(16);
  format.writeUInt16LE(1, 0); // PCM
  format.writeUInt16LE(1, 2); // channels
  format.writeUInt32LE(rate, 4);
  format.writeUInt32LE(rate, 8); // bytes per second
  format.writeUInt16LE(1, 12); // block align
  format.writeUInt16LE(8, 14); // bits per sample
  const info = Object.entries(tags).map(([id, value]) => riffChunk(id, Buffer.from(`${value}\0`, 'latin1')));
  const parts = [Buffer.from('WAVE'), riffChunk('fmt ', format)];
  if (info.length > 0) parts.push(riffChunk('LIST', Buffer.concat([Buffer.from('INFO'), ...info])));
  parts.push(riffChunk('data', Buffer.alloc(Math.round(rate * seconds), 0x80)));
  return riffChunk('RIFF', Buffer.concat(parts));
}

describeEachDatabase('%s', (t) => {
  let dir: string;
  let security: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mixtape-import-'));
    security = await t.addUser();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const allSongs = () =>
    t.db.kysely
      .selectFrom('songs')
      .select(['id', 'title', 'artist', 'album', 'genre', 'duration', 'search_doc'])
      .orderBy('id')
      .execute();
  const write = (name: string, content: string | Buffer): string => {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
    return path;
  };
  const get = async (url: string) => {
    const response = await t.app.inject({ method: 'GET', url, headers: { security } });
    expect(response.statusCode).toBe(200);
    return response.json<{ id: number; title: string; songs?: { title: string }[] }[]>();
  };

  /** Imports the file twice: the first run adds `expected`, the second changes nothing at all. */
  async function importTwice(path: string, expected: Song[]): Promise<StoredSong[]> {
    const before = await allSongs();
    const out = sink();
    expect(await importCatalogPath(t.db, path, out.stream)).toEqual({
      inserted: expected.length,
      updated: 0,
      unchanged: 0,
    });
    expect(out.output()).toBe('');
    const after = await allSongs();
    expect(after).toHaveLength(before.length + expected.length);
    const added = after.filter((song) => !before.some((old) => old.id === song.id));
    expect(added.map(({ id: _id, search_doc: _doc, ...song }) => song)).toEqual(expected);

    expect(await importCatalogPath(t.db, path, sink().stream)).toEqual({
      inserted: 0,
      updated: 0,
      unchanged: expected.length,
    });
    expect(await allSongs()).toEqual(after);
    return added;
  }

  it('imports a CSV file with quoted fields, commas, quotes, line breaks and accents, idempotently', async () => {
    const path = write(
      'songs.csv',
      [
        'id,title,artist,album,genre,duration',
        ',"Café, Late at Night",Zoë Ärtist,"Nights, Vol. 1",Jazz,245.4',
        ',Plain Song,"Smith, ""Smitty"" John",,Folk,',
        '',
        ',"Two',
        'Lines",Quire,Album,Choral,61',
        '900001,Explicit Id Song,Quire,Album,Choral,0',
      ].join('\n'),
    );
    const added = await importTwice(path, [
      { title: 'Café, Late at Night', artist: 'Zoë Ärtist', album: 'Nights, Vol. 1', genre: 'Jazz', duration: 245 },
      { title: 'Plain Song', artist: 'Smith, "Smitty" John', album: '', genre: 'Folk', duration: null },
      { title: 'Two\nLines', artist: 'Quire', album: 'Album', genre: 'Choral', duration: 61 },
      { title: 'Explicit Id Song', artist: 'Quire', album: 'Album', genre: 'Choral', duration: 0 },
    ]);
    expect(added.at(-1)?.id).toBe(900001);

    // The catalog search finds them, accent-insensitively, and the answer matches the response schema.
    expect(await get('/v3/song?search=cafe%20%C3%A4rtist')).toEqual([
      {
        id: added[0]!.id,
        title: 'Café, Late at Night',
        artist: 'Zoë Ärtist',
        album: 'Nights, Vol. 1',
        genre: 'Jazz',
        duration: 245,
        // When the import brought it in (1.8.0).
        added: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as string,
      },
    ]);
    expect((await get('/v3/song?search=smitty')).map((s) => s.title)).toEqual(['Plain Song']);
  });

  it('imports a JSON array, idempotently; new songs get ids after the explicit ones', async () => {
    const path = write(
      'songs.json',
      JSON.stringify([
        { title: 'Fjärran Vals', artist: 'Åsa Nordström', album: 'Norrsken', genre: 'Folk', duration: 180 },
        { title: 'Ballade sans album', artist: 'Hélène', duration: 99.5 },
      ]),
    );
    const added = await importTwice(path, [
      { title: 'Fjärran Vals', artist: 'Åsa Nordström', album: 'Norrsken', genre: 'Folk', duration: 180 },
      { title: 'Ballade sans album', artist: 'Hélène', album: '', genre: '', duration: 100 },
    ]);
    expect(added[0]!.id).toBeGreaterThan(900001);
    expect((await get('/v3/song?search=fjarran')).map((s) => s.title)).toEqual(['Fjärran Vals']);
    expect((await get('/v3/song?search=helene')).map((s) => s.title)).toEqual(['Ballade sans album']);
  });

  it('imports JSON Lines (.jsonl and .ndjson, CRLF, blank lines), idempotently', async () => {
    const lines = [
      '{"title":"Ñandú Dance","artist":"Los Pájaros","album":"Sur","genre":"Cumbia","duration":201}',
      '',
      '{"title":"Quiet Ending","artist":"Los Pájaros","album":null,"genre":"Cumbia"}',
    ];
    await importTwice(write('songs.jsonl', lines.join('\r\n') + '\r\n'), [
      { title: 'Ñandú Dance', artist: 'Los Pájaros', album: 'Sur', genre: 'Cumbia', duration: 201 },
      { title: 'Quiet Ending', artist: 'Los Pájaros', album: '', genre: 'Cumbia', duration: null },
    ]);
    await importTwice(write('more.ndjson', '{"title":"Ndjson Tune","artist":"Delimited"}\n'), [
      { title: 'Ndjson Tune', artist: 'Delimited', album: '', genre: '', duration: null },
    ]);
    expect((await get('/v3/song?search=nandu')).map((s) => s.title)).toEqual(['Ñandú Dance']);
  });

  it('renames a song by id, and playlists that hold it are then found by the new title only', async () => {
    await importCatalogPath(
      t.db,
      write('rename-1.json', JSON.stringify([{ title: 'Zyzzyva Nocturne', artist: 'Rename Band', genre: 'Ambient' }])),
      sink().stream,
    );
    const song = await t.db.kysely
      .selectFrom('songs')
      .selectAll()
      .where('title', '=', 'Zyzzyva Nocturne')
      .executeTakeFirstOrThrow();
    const created = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security },
      payload: { name: 'Evening mix', songIds: [song.id] },
    });
    expect(created.statusCode).toBe(200);
    const playlistId = created.json<{ id: number }>().id;
    expect((await get('/v3/playlist?search=zyzzyva')).map((p) => p.id)).toEqual([playlistId]);

    const renamed = { id: song.id, title: 'Quokka Serenade', artist: 'Rename Band', genre: 'Ambient' };
    const result = await importCatalogPath(t.db, write('rename-2.jsonl', JSON.stringify(renamed)), sink().stream);
    expect(result).toEqual({ inserted: 0, updated: 1, unchanged: 0 });

    const found = await get('/v3/playlist?search=quokka');
    expect(found.map((p) => p.id)).toEqual([playlistId]);
    expect(found[0]!.songs?.map((s) => s.title)).toEqual(['Quokka Serenade']);
    expect(await get('/v3/playlist?search=zyzzyva')).toEqual([]);
    expect((await get('/v3/song?search=quokka')).map((s) => s.id)).toEqual([song.id]);
    expect(await get('/v3/song?search=zyzzyva')).toEqual([]);
  });

  it.each([
    [
      'missing-title.csv',
      'title,artist\nGood One,Band\n,Band\n',
      /missing-title\.csv, line 3: title must not be empty/,
    ],
    ['crlf.csv', 'title,artist\r\n"Multi\r\nLine",A\r\n\r\n,B\r\n', /crlf\.csv, line 5: title must not be empty/],
    ['no-title.jsonl', '{"title":"Fine","artist":"A"}\n{"artist":"A"}\n', /no-title\.jsonl, line 2: title is missing/],
    ['bad-id.json', '[{"title":"A","artist":"B"},{"id":-3,"title":"C","artist":"D"}]', /entry 2 \(index 1\): id must/],
    ['bad-duration.csv', 'title,artist,duration\nA,B,3:45\n', /bad-duration\.csv, line 2: duration must/],
    // Read in linear time: a number-shaped text is recognised without backtracking over its digits.
    ['digits.csv', `title,artist,duration\nA,B,${'1'.repeat(50_000)}x\n`, /digits\.csv, line 2: duration must/],
    ['long.json', JSON.stringify([{ title: 'x'.repeat(501), artist: 'B' }]), /index 0\): title must be at most 500/],
    ['repeat.csv', 'title,artist\nSame,Band\nOther,Band\nSame,Band\n', /repeat\.csv, line 4: .* as .*line 2/],
    ['no-artist-column.csv', 'title,album\nA,B\n', /no-artist-column\.csv: the header row has no "artist"/],
    ['not-an-array.json', '{"title":"A","artist":"B"}', /not-an-array\.json: must hold a JSON array/],
    ['songs.txt', 'title,artist\n', /songs\.txt: unknown file type/],
  ])('refuses %s and writes nothing', async (name, content, message) => {
    const before = await allSongs();
    const failure = importCatalogPath(t.db, write(`bad/${name}`, content), sink().stream);
    await expect(failure).rejects.toThrow(message);
    await expect(failure).rejects.toBeInstanceOf(CatalogFileError);
    expect(await allSongs()).toEqual(before);
  });

  it('refuses an id that does not match the song with the same title, artist and album, and writes nothing', async () => {
    const first = write('clash-1.json', JSON.stringify([{ title: 'Clash Song', artist: 'Clash Band' }]));
    expect(await importCatalogPath(t.db, first, sink().stream)).toMatchObject({ inserted: 1 });
    const song = await t.db.kysely
      .selectFrom('songs')
      .select('id')
      .where('title', '=', 'Clash Song')
      .executeTakeFirstOrThrow();
    const before = await allSongs();
    const clash = write(
      'clash-2.json',
      JSON.stringify([
        { title: 'Fine Song Before The Clash', artist: 'Clash Band' },
        { id: 999_999, title: 'Clash Song', artist: 'Clash Band', genre: 'New Wave' },
      ]),
    );
    await expect(importCatalogPath(t.db, clash, sink().stream)).rejects.toThrow(
      new RegExp(`clash-2\\.json, entry 2 \\(index 1\\): id 999999 does not match song ${song.id}\\b`),
    );
    expect(await allSongs()).toEqual(before);
  });

  it('reads the tags of the audio files in a folder, at any depth', async () => {
    const tagged = write(
      'music/deep/er/cafe.wav',
      wavFile({ INAM: 'Café Nocturne', IART: 'Zoë Wav', IPRD: 'Wav Album', IGNR: 'Jazz' }, 2.6),
    );
    write('music/Untitled Take.wav', wavFile({}, 1.2));
    write('music/notes.txt', 'not music');
    cpSync(tagged, join(dir, 'music/copy of cafe.wav'));

    // The test file itself must be readable before the import can be trusted with it.
    const metadata = await parseFile(tagged);
    expect(metadata.common).toMatchObject({ title: 'Café Nocturne', artist: 'Zoë Wav', album: 'Wav Album' });
    expect(metadata.common.genre).toEqual(['Jazz']);
    expect(metadata.format.duration).toBeCloseTo(2.6);

    const out = sink();
    const before = await allSongs();
    expect(await importCatalogPath(t.db, join(dir, 'music'), out.stream)).toEqual({
      inserted: 2,
      updated: 0,
      unchanged: 0,
    });
    expect(out.output()).toMatch(/Skipped 1 audio file.*\n.*cafe\.wav/);
    const after = await allSongs();
    const added = after.filter((song) => !before.some((old) => old.id === song.id));
    expect(added.map(({ id: _id, search_doc: _doc, ...song }) => song)).toEqual([
      { title: 'Untitled Take', artist: 'Unknown Artist', album: '', genre: '', duration: 1 },
      { title: 'Café Nocturne', artist: 'Zoë Wav', album: 'Wav Album', genre: 'Jazz', duration: 3 },
    ]);
    expect(await importCatalogPath(t.db, join(dir, 'music'), sink().stream)).toMatchObject({
      inserted: 0,
      unchanged: 2,
    });
    expect(await importCatalogPath(t.db, tagged, sink().stream)).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    expect(await allSongs()).toEqual(after);
    expect((await get('/v3/song?search=nocturne%20wav')).map((s) => s.title)).toEqual(['Café Nocturne']);
  });

  it('shows a progress bar on a terminal, and refuses a path that does not exist', async () => {
    const out = sink(true);
    const path = write('tty.json', JSON.stringify([{ title: 'Progress Song', artist: 'Bar' }]));
    expect(await importCatalogPath(t.db, path, out.stream)).toMatchObject({ inserted: 1 });
    expect(out.output()).toMatch(/Importing .*100% 1\/1/);
    await expect(importCatalogPath(t.db, join(dir, 'nowhere'), sink().stream)).rejects.toThrow(
      /nowhere: no such file or folder/,
    );
  });
});
