import { describe, expect, it } from 'vitest';
import { LINKS, SAMPLE } from './fixtures.test-helpers.js';
import { UnreadablePlaylist } from './playlist-format.js';
import { readXspf, writeXspf } from './xspf.js';

const LIMITS = { tracks: 10 };

describe('XSPF', () => {
  it('writes escaped text, milliseconds, optional album and duration, and the same bytes every time', () => {
    const text = writeXspf(SAMPLE, LINKS).toString('utf8');
    expect(
      text.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/">'),
    ).toBe(true);
    expect(text).toContain('<title>Rock &amp; &lt;Roll&gt;</title>');
    expect(text).toContain('<identifier>https://music.test/v3/playlist/7</identifier>');
    expect(text).toContain('<creator>Hollow &quot;Pine&quot;</creator>');
    expect(text).toContain('<duration>304000</duration>');
    expect(text).toContain('<title>Line break</title>');
    expect(text).toContain('<creator>Nova</creator>');
    expect(text.match(/<album>/g)).toHaveLength(2);
    expect(text.match(/<duration>/g)).toHaveLength(2);
    expect(writeXspf(SAMPLE, LINKS).equals(writeXspf(SAMPLE, LINKS))).toBe(true);
  });

  it('reads back what it writes', () => {
    const read = readXspf(writeXspf(SAMPLE, LINKS).toString('utf8'), LIMITS);
    expect(read.title).toBe('Rock & <Roll>');
    expect(read.tracks).toEqual([
      {
        identifiers: ['https://music.test/v3/song/1', 'https://music.test/v3/song/1'],
        title: 'Sawdust & Sparks',
        artist: 'Hollow "Pine"',
        album: 'Smoke',
      },
      {
        identifiers: ['https://music.test/v3/song/2', 'https://music.test/v3/song/2'],
        title: 'Line break',
        artist: 'Nova',
      },
      {
        identifiers: ['https://music.test/v3/song/1', 'https://music.test/v3/song/1'],
        title: 'Sawdust & Sparks',
        artist: 'Hollow "Pine"',
        album: 'Smoke',
      },
    ]);
  });

  it('reads CDATA, character references, a prefixed namespace, and ignores unknown elements', () => {
    const read = readXspf(
      '<x:playlist xmlns:x="http://xspf.org/ns/0/"><x:title>&#x263A; <![CDATA[<b>]]></x:title><x:trackList>' +
        '<x:track><x:extension application="a"><x:title>no</x:title></x:extension><x:title>T</x:title></x:track>' +
        '</x:trackList></x:playlist>',
      LIMITS,
    );
    expect(read).toEqual({ title: '☺ <b>', tracks: [{ identifiers: [], title: 'T' }] });
  });

  it.each([
    ['a DOCTYPE', '<!DOCTYPE playlist><playlist/>', 'DOCTYPE'],
    ['an entity declaration', '<!DOCTYPE p [<!ENTITY a "b">]><playlist>&a;</playlist>', 'DOCTYPE'],
    ['an undeclared entity', '<playlist><title>&a;</title></playlist>', 'well-formed'],
    ['another root', '<rss/>', 'not an XSPF'],
    ['another namespace', '<playlist xmlns="urn:x"/>', 'namespace'],
    ['two roots', '<playlist/><playlist/>', 'XSPF'],
    ['nothing', '', 'no <playlist>'],
    ['too many tracks', `<playlist><trackList>${'<track/>'.repeat(11)}</trackList></playlist>`, 'more than 10'],
    ['deep nesting', `<playlist>${'<a>'.repeat(40)}${'</a>'.repeat(40)}</playlist>`, 'deeper'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => readXspf(text, LIMITS)).toThrow(UnreadablePlaylist);
    expect(() => readXspf(text, LIMITS)).toThrow(message);
  });
});
