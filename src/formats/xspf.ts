import sax from 'sax';
import {
  UnreadablePlaylist,
  type ExportLinks,
  type ExportPlaylist,
  type ImportPlaylist,
  type ImportTrack,
  type ReadLimits,
} from './playlist-format.js';
import { wholeFile, type PlaylistLayout } from './layout.js';
import { xmlText } from './text.js';

/** XSPF version 1 (https://xspf.org/spec). */
export const XSPF_NAMESPACE = 'http://xspf.org/ns/0/';

/** Elements deeper than this are refused: no playlist needs them. */
const MAX_DEPTH = 32;

/** The playlist as an XSPF 1 document: the same playlist always gives the same bytes. */
export const xspfLayout: PlaylistLayout = (playlist, links) => ({
  head: [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<playlist version="1" xmlns="${XSPF_NAMESPACE}">`,
    `  <title>${xmlText(playlist.name)}</title>`,
    `  <identifier>${xmlText(links.playlist)}</identifier>`,
    '  <trackList>\n',
  ].join('\n'),
  track(track) {
    const lines = [
      '    <track>',
      `      <location>${xmlText(links.location(track.id))}</location>`,
      `      <identifier>${xmlText(links.song(track.id))}</identifier>`,
      `      <title>${xmlText(track.title)}</title>`,
      `      <creator>${xmlText(track.artist)}</creator>`,
    ];
    if (track.album !== '') lines.push(`      <album>${xmlText(track.album)}</album>`);
    if (track.duration !== null) lines.push(`      <duration>${track.duration * 1000}</duration>`);
    lines.push('    </track>\n');
    return lines.join('\n');
  },
  separator: '',
  tail: '  </trackList>\n</playlist>\n',
});

export function writeXspf(playlist: ExportPlaylist, links: ExportLinks): Buffer {
  return wholeFile(xspfLayout(playlist, links), playlist.tracks);
}

type TrackField = 'location' | 'identifier' | 'title' | 'creator' | 'album';
const TRACK_FIELDS = new Set<string>(['location', 'identifier', 'title', 'creator', 'album']);

/**
 * The playlist an XSPF document describes. The parser (sax, strict) expands only XML's five predefined entities
 * and character references: a document with a DOCTYPE (and so any entity declaration, internal or external) is
 * refused as soon as the parser meets it, so neither entity expansion nor external resources can happen.
 */
export function readXspf(text: string, limits: ReadLimits): ImportPlaylist {
  const parser = sax.parser(true, { xmlns: true, position: false });
  const path: string[] = [];
  const tracks: ImportTrack[] = [];
  let title: string | undefined;
  let track: { identifiers: string[]; title?: string; artist?: string; album?: string } | undefined;
  let field: { name: TrackField | 'playlist-title'; text: string } | undefined;
  const seen = { root: false };

  const fail = (message: string): never => {
    throw new UnreadablePlaylist(message);
  };

  parser.ondoctype = () => fail('The XSPF document has a DOCTYPE; DTDs and entity declarations are not accepted.');
  parser.onopentag = (tag) => {
    const name = (tag as sax.QualifiedTag).local;
    if (path.length === 0) {
      if (seen.root) fail('The XSPF document has more than one root element.');
      seen.root = true;
      if (name !== 'playlist') fail(`The XML document is not an XSPF playlist (its root is <${tag.name}>).`);
      const ns = (tag as sax.QualifiedTag).uri;
      if (ns !== '' && ns !== XSPF_NAMESPACE) fail(`The <playlist> element is not in the XSPF namespace (${ns}).`);
    }
    path.push(name);
    if (path.length > MAX_DEPTH) fail(`The XSPF document nests elements deeper than ${MAX_DEPTH}.`);
    const where = path.join('/');
    if (where === 'playlist/title') field = { name: 'playlist-title', text: '' };
    else if (where === 'playlist/trackList/track') {
      if (tracks.length >= limits.tracks) fail(`The playlist has more than ${limits.tracks} tracks.`);
      track = { identifiers: [] };
    } else if (track !== undefined && path.length === 4 && TRACK_FIELDS.has(name)) {
      field = { name: name as TrackField, text: '' };
    }
  };
  const append = (chunk: string) => {
    if (field !== undefined) field.text += chunk;
  };
  parser.ontext = append;
  parser.oncdata = append;
  parser.onclosetag = () => {
    const depth = path.length;
    path.pop();
    if (field !== undefined && (depth === 2 || depth === 4)) {
      const value = field.text.trim();
      switch (field.name) {
        case 'playlist-title':
          title = value;
          break;
        case 'location':
        case 'identifier':
          if (value !== '') track?.identifiers.push(value);
          break;
        case 'title':
          if (track !== undefined) track.title = value;
          break;
        case 'creator':
          if (track !== undefined) track.artist = value;
          break;
        case 'album':
          if (track !== undefined) track.album = value;
          break;
      }
      field = undefined;
    } else if (depth === 3 && track !== undefined) {
      tracks.push(track);
      track = undefined;
    }
  };
  parser.onerror = (error) => fail(`The XSPF document is not well-formed XML: ${error.message.split('\n')[0]}.`);

  parser.write(text).close();
  if (!seen.root) fail('The XSPF document has no <playlist> element.');
  return title === undefined ? { tracks } : { title, tracks };
}
