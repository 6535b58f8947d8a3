import { describe, expect, it } from 'vitest';
import { LINKS, SAMPLE } from './fixtures.test-helpers.js';
import { readJspf, writeJspf } from './jspf.js';
import { UnreadablePlaylist } from './playlist-format.js';

const LIMITS = { tracks: 10 };

describe('JSPF', () => {
  it('writes the JSPF object with lists of locations and identifiers, milliseconds, no control characters', () => {
    const document = JSON.parse(writeJspf(SAMPLE, LINKS).toString('utf8')) as {
      playlist: { title: string; identifier: string; track: Record<string, unknown>[] };
    };
    expect(document.playlist.title).toBe('Rock & <Roll>');
    expect(document.playlist.identifier).toBe('https://music.test/v3/playlist/7');
    expect(document.playlist.track[0]).toEqual({
      location: ['https://music.test/v3/song/1'],
      identifier: ['https://music.test/v3/song/1'],
      title: 'Sawdust & Sparks',
      creator: 'Hollow "Pine"',
      album: 'Smoke',
      duration: 304_000,
    });
    expect(document.playlist.track[1]).toEqual({
      location: ['https://music.test/v3/song/2'],
      identifier: ['https://music.test/v3/song/2'],
      title: 'Line break',
      creator: 'Nova',
    });
    expect(document.playlist.track).toHaveLength(3);
  });

  it('reads back what it writes, and single-string identifiers', () => {
    const read = readJspf(writeJspf(SAMPLE, LINKS).toString('utf8'), LIMITS);
    expect(read.title).toBe('Rock & <Roll>');
    expect(read.tracks.map((t) => t.identifiers[1])).toEqual([1, 2, 1].map((id) => `https://music.test/v3/song/${id}`));
    expect(readJspf('{"playlist":{"track":[{"identifier":"u","title":null}]}}', LIMITS)).toEqual({
      tracks: [{ identifiers: ['u'], title: undefined, artist: undefined, album: undefined }],
    });
  });

  it.each([
    ['not JSON', '{', 'not valid JSON'],
    ['no playlist', '[]', 'no "playlist"'],
    ['deep nesting', `{"playlist":${'['.repeat(20)}${']'.repeat(20)}}`, 'nests deeper'],
    ['a track list that is not a list', '{"playlist":{"track":1}}', 'list of tracks'],
    ['a track that is not an object', '{"playlist":{"track":[1]}}', 'must be an object'],
    ['a title that is not text', '{"playlist":{"track":[{"title":[]}]}}', 'title" must be a string'],
    ['identifiers that are not text', '{"playlist":{"track":[{"identifier":[1]}]}}', 'list of strings'],
    ['too many tracks', `{"playlist":{"track":[${Array(11).fill('{}').join(',')}]}}`, 'more than 10'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => readJspf(text, LIMITS)).toThrow(UnreadablePlaylist);
    expect(() => readJspf(text, LIMITS)).toThrow(message);
  });

  it('counts nesting outside strings only', () => {
    expect(readJspf(`{"playlist":{"title":"${'['.repeat(50)}\\"{"}}`, LIMITS).title).toBe(`${'['.repeat(50)}"{`);
  });
});
