import { beforeAll, expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { DEFAULT_LOCATION } from '../../src/config.js';
import { WRITERS, type FileFormat } from '../../src/formats/formats.js';
import { TRACK_EXTENSION } from '../../src/formats/jspf.js';
import { exportLinks } from '../../src/formats/links.js';
import type { ExportLinks, ExportTrack } from '../../src/formats/playlist-format.js';
import { describeEachDatabase } from '../helpers/each-database.js';

/** Import and export of playlist files of 10 000 songs (the default songs limit), in every format. */

const SONGS = 10_000;
/** Who imports the files: their export names them as who added each entry. */
const importer = `importer_${process.pid}`;
const FIRST_ID = 100_001;
const TYPES: Readonly<Record<FileFormat, string>> = {
  xspf: 'application/xspf+xml',
  jspf: 'application/jspf+json',
  m3u8: 'audio/mpegurl',
};

/** A catalog of 10 000 songs of their own ids, each title and artist once, with text of more than ASCII. */
const catalog = Array.from({ length: SONGS }, (_v, i) => ({
  id: FIRST_ID + i,
  title: `Lied ${i} — für dich`,
  artist: `Künstler ${i % 97}`,
  album: `Album ${i % 13}`,
  genre: 'Pop',
  duration: 60 + (i % 300),
}));

/** Every song once, shuffled: 7 919 is prime, so i → 7 919 i mod 10 000 visits each. */
const tracks: ExportTrack[] = Array.from({ length: SONGS }, (_v, i) => {
  const { id, title, artist, album, duration } = catalog[(i * 7919) % SONGS]!;
  return { id, title, artist, album, duration };
});
const ids = tracks.map((track) => track.id);

/** Another site's links, which name no song here: the import matches each track by its title and artist. */
const elsewhere: ExportLinks = {
  playlist: 'https://elsewhere.example/lists/1',
  song: (id) => `https://elsewhere.example/track/${id}`,
  location: (id) => `file:///music/${id}.mp3`,
};

interface Imported {
  playlist: { id: number; name: string; songs: { id: number }[] };
  unmatched: unknown[];
}

describeEachDatabase('playlist files of 10 000 songs on %s', (t) => {
  let security: string;
  const importFile = (format: FileFormat, file: Buffer, query = '') =>
    t.app.inject({
      method: 'POST',
      url: `/v3/playlist/import${query}`,
      headers: { security, 'content-type': TYPES[format] },
      payload: file,
    });

  beforeAll(async () => {
    await importCatalog(t.db, catalog);
    security = await t.addUser(importer);
  });

  it.each(['xspf', 'jspf', 'm3u8'] as const)(
    'imports %s by title and artist, exports it as the whole-file writer does, and imports that back, in order',
    async (format) => {
      const name = `Long ${format}`;
      const file = WRITERS[format]({ id: 1, name, tracks }, elsewhere);
      const imported = await importFile(format, file);
      expect(imported.statusCode, imported.body.slice(0, 300)).toBe(200);
      const { playlist, unmatched } = imported.json<Imported>();
      expect(unmatched).toEqual([]);
      expect(playlist.name).toBe(name);
      expect(playlist.songs.map((song) => song.id)).toEqual(ids);

      const exported = await t.app.inject({
        method: 'GET',
        url: `/v3/playlist/${playlist.id}?format=${format}`,
        headers: { security, host: 'music.test' },
      });
      expect(exported.statusCode).toBe(200);
      expect(exported.headers['content-length']).toBe(String(exported.rawPayload.length));
      const links = exportLinks('http://music.test', DEFAULT_LOCATION, playlist.id);
      // JSPF also says who added each entry and when: the importer, at the import's time (one time for them all).
      const addedAt =
        format === 'jspf'
          ? Date.parse(
              exported.json<{ playlist: { track: { extension: Record<string, { added_at: string }> }[] } }>().playlist
                .track[0]!.extension[TRACK_EXTENSION]!.added_at,
            )
          : undefined;
      const added = tracks.map((track) => ({ ...track, addedBy: importer, addedAt }));
      expect(exported.rawPayload.equals(WRITERS[format]({ id: playlist.id, name, tracks: added }, links))).toBe(true);

      // The export names each song by its URL here: matched by id.
      const back = await importFile(format, exported.rawPayload, '?name=Back');
      expect(back.statusCode, back.body.slice(0, 300)).toBe(200);
      expect(back.json<Imported>().unmatched).toEqual([]);
      expect(back.json<Imported>().playlist.songs.map((song) => song.id)).toEqual(ids);
    },
  );
});
