import type { CoverFacts } from '../playlists/playlist.service.js';
import { FontSet } from './fonts.js';
import { TextShaper, baseDirection, cleanText, type ShapedLine } from './text.js';

/**
 * The cover of a playlist, as an SVG document with every letter drawn as an outline: a mosaic of colour panels,
 * one per artist (the first four distinct artists, in playlist order), each with the artist's initial, under the
 * playlist's name and song count.
 */

/** Everything a cover depends on (name, song count, first four distinct artists); the ETag is computed from it. */
export type CoverInput = CoverFacts;

/** One panel of the mosaic, in pixels. */
interface Panel {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  /** `#rrggbb`, derived from `label`. */
  readonly colour: string;
  /** The artist's name, or the playlist's name on a cover without songs. */
  readonly label: string;
}

/** Changes whenever the drawing changes, so that ETags computed by an older version no longer match. */
export const DESIGN_VERSION = 1;

/** FNV-1a, 32 bits: a stable, well-spread hash of a short string. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function hslToHex(hue: number, saturation: number, lightness: number): string {
  const a = saturation * Math.min(lightness, 1 - lightness);
  const channel = (n: number) => {
    const k = (n + hue / 30) % 12;
    const value = lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(value * 255)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${channel(0)}${channel(8)}${channel(4)}`;
}

/**
 * The colour of a name: any hue, saturation and lightness in a band where white text stays readable. Case and
 * Unicode normal form do not change it.
 */
export function colourOf(name: string): string {
  const hash = fnv1a(name.normalize('NFC').toLowerCase());
  const hue = hash % 360;
  const saturation = 0.42 + ((hash >>> 9) % 21) / 100;
  const lightness = 0.36 + ((hash >>> 17) % 15) / 100;
  return hslToHex(hue, saturation, lightness);
}

/** One panel for no or one artist, halves for two, a half and two quarters for three, quarters for four. */
function panels(input: CoverInput, size: number): Panel[] {
  const half = size / 2;
  const labels = input.artists.length === 0 ? [input.name] : input.artists.slice(0, 4);
  const boxes: [number, number, number, number][] = [
    [[0, 0, size, size]],
    [
      [0, 0, half, size],
      [half, 0, half, size],
    ],
    [
      [0, 0, half, size],
      [half, 0, half, half],
      [half, half, half, half],
    ],
    [
      [0, 0, half, half],
      [half, 0, half, half],
      [0, half, half, half],
      [half, half, half, half],
    ],
  ][labels.length - 1]! as [number, number, number, number][];
  return boxes.map(([x, y, width, height], i) => ({
    x,
    y,
    width,
    height,
    colour: colourOf(labels[i]!),
    label: labels[i]!,
  }));
}

const songCountText = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'song' : 'songs'}`;

const escapeXml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

const r = (n: number) => Math.round(n * 100) / 100;

export class CoverDesigner {
  readonly #text = new TextShaper(new FontSet());

  /** The cover as a self-contained SVG document of `size` by `size` pixels. */
  svg(input: CoverInput, size: number): string {
    const name = cleanText(input.name);
    const direction = baseDirection(name);
    // Text grows with the cover but never below a size that can be read on a 64-pixel thumbnail.
    const pad = Math.max(4, Math.round(size * 0.06));
    const nameSize = Math.max(11, size * 0.07);
    const countSize = Math.max(9, size * 0.04);
    const width = size - 2 * pad;

    const countLine = this.#text.fit(songCountText(input.songCount), countSize, 400, 'ltr', width);
    const nameLines = this.#text.wrap(name, nameSize, 700, direction, width, size >= 240 ? 2 : 1);

    const countBaseline = size - pad - countSize * 0.25;
    const lastNameBaseline = countBaseline - countSize * 1.1 - nameSize * 0.3;
    const lineHeight = nameSize * 1.18;
    const firstNameBaseline = lastNameBaseline - (nameLines.length - 1) * lineHeight;
    // The shade under the text starts well above it, and no higher than just past the middle.
    const scrimTop = Math.min(size * 0.55, firstNameBaseline - nameSize - size * 0.12);

    const x = (line: ShapedLine) => (direction === 'rtl' ? size - pad - line.width : pad);
    const mosaic = panels(input, size).map((panel, i) => this.#panel(panel, i));
    const names = nameLines.map((line, i) => this.#text.outlines(line, x(line), firstNameBaseline + i * lineHeight));

    return [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}"`,
      ` role="img" aria-label="${escapeXml(name)}">`,
      `<title>${escapeXml(name)}</title>`,
      '<defs><linearGradient id="scrim" x1="0" y1="0" x2="0" y2="1">',
      '<stop offset="0" stop-color="#000" stop-opacity="0"/>',
      '<stop offset="1" stop-color="#000" stop-opacity="0.78"/>',
      '</linearGradient></defs>',
      ...mosaic,
      `<rect x="0" y="${r(scrimTop)}" width="${size}" height="${r(size - scrimTop)}" fill="url(#scrim)"/>`,
      `<g fill="#fff">${names.join('')}</g>`,
      `<g fill="#fff" fill-opacity="0.85">${this.#text.outlines(countLine, x(countLine), countBaseline)}</g>`,
      '</svg>',
    ].join('');
  }

  /** A flat panel with the label's initial, large and faint, in its lower right corner. */
  #panel(panel: Panel, index: number): string {
    const { x, y, width, height, colour } = panel;
    const rect = `<rect x="${r(x)}" y="${r(y)}" width="${r(width)}" height="${r(height)}" fill="${colour}"/>`;
    const initial =
      cleanText(panel.label)
        .match(/^\P{M}\p{M}*/u)?.[0]
        ?.toLocaleUpperCase('en-US') ?? '';
    if (initial === '') return rect;
    const letterSize = Math.min(width, height) * 0.6;
    const line = this.#text.shape(initial, letterSize, 700, 'ltr');
    const inset = Math.min(width, height) * 0.08;
    const letter = this.#text.outlines(line, x + width - inset - line.width, y + height - inset);
    return [
      rect,
      `<clipPath id="p${index}"><rect x="${r(x)}" y="${r(y)}" width="${r(width)}" height="${r(height)}"/></clipPath>`,
      `<g clip-path="url(#p${index})" fill="#fff" fill-opacity="0.22">${letter}</g>`,
    ].join('');
  }
}
