import { describe, expect, it } from 'vitest';
import { LINKS, SAMPLE } from './fixtures.test-helpers.js';
import { importFormat, negotiateExport, WRITERS, writePieces, type FileFormat } from './formats.js';
import { TRACKS_PER_PIECE } from './layout.js';
import { exportLinks, SONG_LINK_MAX_LENGTH, songIdMatcher } from './links.js';
import { cleanText, downloadFileName, xmlText } from './text.js';

describe('picking a format', () => {
  it.each([
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'json'],
    ['application/xspf+xml', 'xspf'],
    ['application/jspf+json, application/json;q=0.5', 'jspf'],
    ['audio/*', 'm3u8'],
    ['application/vnd.apple.mpegurl', 'm3u8'],
  ])('by Accept %s', (accept, format) => {
    expect(negotiateExport(accept)?.format).toBe(format);
  });

  it('answers nothing for an Accept that names no format', () => {
    expect(negotiateExport('text/html')).toBeUndefined();
    expect(negotiateExport('application/xml')).toBeUndefined();
    expect(negotiateExport('application/json;q=0')).toBeUndefined();
  });

  it('reads an import by Content-Type, and text/plain only as M3U8', () => {
    expect(importFormat('application/xspf+xml', '')).toBe('xspf');
    expect(importFormat('text/xml', '')).toBe('xspf');
    expect(importFormat('application/jspf+json', '')).toBe('jspf');
    expect(importFormat('audio/x-mpegurl', '')).toBe('m3u8');
    expect(importFormat('text/plain', '#EXTM3U\nx')).toBe('m3u8');
    expect(importFormat('text/plain', '{"name":"x"}')).toBeUndefined();
    expect(importFormat('application/json', '{}')).toBeUndefined();
    expect(importFormat(undefined, '#EXTM3U')).toBeUndefined();
  });
});

describe('writing in pieces', () => {
  // Text of every width in UTF-8, repeats, unknown lengths and empty albums, across the pieces' edges.
  const long = (count: number) => ({
    ...SAMPLE,
    tracks: Array.from({ length: count }, (_v, i) => ({
      ...SAMPLE.tracks[i % SAMPLE.tracks.length]!,
      title: `${i} é😀 \u2028 <&>`,
    })),
  });

  it.each(['xspf', 'jspf', 'm3u8'] as FileFormat[])(
    'writes %s as the whole-file writer does, byte for byte',
    async (format) => {
      for (const count of [0, 1, TRACKS_PER_PIECE, TRACKS_PER_PIECE + 1, 3 * TRACKS_PER_PIECE + 7]) {
        const playlist = long(count);
        const { parts, length } = await writePieces(format, playlist, LINKS);
        const whole = WRITERS[format](playlist, LINKS);
        expect(Buffer.concat(parts).equals(whole), `${count} tracks`).toBe(true);
        expect(length).toBe(whole.length);
        expect(parts).toHaveLength(Math.max(1, Math.ceil(count / TRACKS_PER_PIECE)));
      }
    },
  );
});

describe('links', () => {
  it('writes the template and finds song ids in URLs from any base', () => {
    const links = exportLinks('http://h:1/p', 'https://cdn.test/{id}.mp3?from={base}', 9);
    expect(links.song(3)).toBe('http://h:1/p/v3/song/3');
    expect(links.location(3)).toBe('https://cdn.test/3.mp3?from=http://h:1/p');
    const songIdOf = songIdMatcher('https://cdn.test/{id}.mp3?from={base}');
    expect(songIdOf('https://elsewhere/v3/song/12')).toBe(12);
    expect(songIdOf('http://x/v3/songs/12/')).toBe(12);
    expect(songIdOf('https://cdn.test/44.mp3?from=anything')).toBe(44);
    expect(songIdOf('https://elsewhere/v3/song/12/lyrics')).toBeUndefined();
    expect(songIdOf('https://elsewhere/v3/song/0')).toBeUndefined();
    expect(songIdOf(`/v3/song/${'9'.repeat(30)}`)).toBeUndefined();
    expect(songIdOf('file:///music/a.mp3')).toBeUndefined();
    expect(songIdOf('https://elsewhere/v3/song/12?x=1#t')).toBe(12);
    expect(songIdOf('https://elsewhere/v3/song/12#t')).toBe(12);
  });

  it('looks at no identifier that is too long or holds a line break, space or control', () => {
    const songIdOf = songIdMatcher('{base}/v3/song/{id}');
    const long = `https://h/${'a'.repeat(SONG_LINK_MAX_LENGTH)}/v3/song/7`;
    expect(songIdOf(long.slice(long.length - SONG_LINK_MAX_LENGTH))).toBe(7);
    expect(songIdOf(long)).toBeUndefined();
    for (const separator of ['\n', '\r', '\u2028', '\u2029', ' ', '\t', '\u0000']) {
      expect(songIdOf(`https://h/v3/song/7${separator}`), JSON.stringify(separator)).toBeUndefined();
      expect(songIdOf(`${'/v3/song/1?'.repeat(100)}${separator}x`), JSON.stringify(separator)).toBeUndefined();
    }
  });
});

describe('text', () => {
  it('removes control characters and turns line breaks into spaces', () => {
    expect(cleanText('a\r\nb\u2028c\u0000d\u0085e\uD800f😀')).toBe('a  b cd ef😀');
    expect(xmlText(`<a href="x">'&'</a>\u0001`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  });

  it('makes safe download names', () => {
    expect(downloadFileName('Café "del" Mar / Vol. 2', 'xspf')).toBe('Cafe_del_Mar_Vol. 2.xspf');
    expect(downloadFileName('Line\u2028break  name', 'm3u8')).toBe('Line break name.m3u8');
    expect(downloadFileName('...', 'm3u8')).toBe('playlist.m3u8');
    expect(downloadFileName('☃☃', 'json')).toBe('playlist.json');
    expect(downloadFileName('x'.repeat(300), 'jspf')).toBe(`${'x'.repeat(100)}.jspf`);
  });
});
