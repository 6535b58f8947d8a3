import { describe, expect, it } from 'vitest';
import { LINKS, SAMPLE } from './fixtures.test-helpers.js';
import { looksLikeM3u8, readM3u8, writeM3u8 } from './m3u8.js';
import { UnreadablePlaylist } from './playlist-format.js';

const LIMITS = { tracks: 10 };

describe('M3U8', () => {
  it('writes #EXTM3U, #PLAYLIST, #EXTINF in seconds (-1 unknown), #EXTALB and the location, one per line', () => {
    expect(writeM3u8(SAMPLE, LINKS).toString('utf8')).toBe(
      [
        '#EXTM3U',
        '#PLAYLIST:Rock & <Roll>',
        '#EXTINF:304,Hollow "Pine" - Sawdust & Sparks',
        '#EXTALB:Smoke',
        'https://music.test/v3/song/1',
        '#EXTINF:-1,Nova - Line break',
        'https://music.test/v3/song/2',
        '#EXTINF:304,Hollow "Pine" - Sawdust & Sparks',
        '#EXTALB:Smoke',
        'https://music.test/v3/song/1',
        '',
      ].join('\n'),
    );
  });

  it('reads back what it writes', () => {
    const read = readM3u8(writeM3u8(SAMPLE, LINKS).toString('utf8'), LIMITS);
    expect(read.title).toBe('Rock & <Roll>');
    expect(read.tracks[0]).toEqual({
      identifiers: ['https://music.test/v3/song/1'],
      artist: 'Hollow "Pine"',
      title: 'Sawdust & Sparks',
      album: 'Smoke',
    });
    expect(read.tracks[1]).toEqual({
      identifiers: ['https://music.test/v3/song/2'],
      artist: 'Nova',
      title: 'Line break',
    });
    expect(read.tracks).toHaveLength(3);
  });

  it('reads CR and CRLF lines, a byte order mark, attributes with commas, and entries without #EXTINF', () => {
    const read = readM3u8(
      '\uFEFF#EXTM3U\r\n#EXTINF:12 tvg-name="a, b",Just a title\r\nx.mp3\r#EXTVLCOPT:foo\rb.mp3\r',
      LIMITS,
    );
    expect(read).toEqual({ tracks: [{ identifiers: ['x.mp3'], title: 'Just a title' }, { identifiers: ['b.mp3'] }] });
    expect(looksLikeM3u8('#EXTM3U')).toBe(true);
    expect(looksLikeM3u8('#EXTM3UX\n')).toBe(false);
  });

  it.each([
    ['no header', 'a.mp3\n', '#EXTM3U'],
    ['too many tracks', `#EXTM3U\n${'a\n'.repeat(11)}`, 'more than 10 tracks'],
    ['too many lines', `#EXTM3U\n${'#x\n'.repeat(200)}`, 'lines'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => readM3u8(text, LIMITS)).toThrow(UnreadablePlaylist);
    expect(() => readM3u8(text, LIMITS)).toThrow(message);
  });
});
