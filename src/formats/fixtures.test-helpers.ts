import { exportLinks } from './links.js';
import type { ExportPlaylist } from './playlist-format.js';

/** A playlist with a repeat, an unknown length, an empty album and text that needs escaping. */
export const SAMPLE: ExportPlaylist = {
  id: 7,
  name: 'Rock & <Roll>',
  tracks: [
    { id: 1, title: 'Sawdust & Sparks', artist: 'Hollow "Pine"', album: 'Smoke', duration: 304 },
    { id: 2, title: 'Line\nbreak', artist: 'Nova\u0007', album: '', duration: null },
    { id: 1, title: 'Sawdust & Sparks', artist: 'Hollow "Pine"', album: 'Smoke', duration: 304 },
  ],
};

export const LINKS = exportLinks('https://music.test', '{base}/v3/song/{id}', 7);
