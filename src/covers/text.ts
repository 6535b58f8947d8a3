import bidiModule from 'bidi-js';
import type * as fontkit from 'fontkit';
import type { FontSet, Weight } from './fonts.js';

/**
 * Text for covers: shaped with the bundled fonts (ligatures, Arabic joining, emoji sequences), ordered with the
 * Unicode bidirectional algorithm, cut or wrapped to a width, and drawn as outlines, so that an SVG, a PNG and a
 * JPEG of the same cover show the same letters on every machine.
 */

/** One glyph placed on a line: `x` from the line's left edge, `y` up from the baseline, in pixels. */
interface PlacedGlyph {
  readonly font: fontkit.Font;
  readonly id: number;
  readonly x: number;
  readonly y: number;
}

/** A line of text laid out left to right, as it will appear. */
export interface ShapedLine {
  readonly glyphs: readonly PlacedGlyph[];
  readonly width: number;
  readonly size: number;
}

export type Direction = 'ltr' | 'rtl';

const ELLIPSIS = '…';
// bidi-js's CommonJS build exports the factory itself, which its type declarations name `default`.
const bidi = (bidiModule as unknown as typeof bidiModule.default)();
const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });
const words = new Intl.Segmenter('und', { granularity: 'word' });

/** Marks, format characters (joiners, direction marks) and variation selectors belong to the character before. */
const ATTACHED = /^[\p{M}\p{Cf}\uFE00-\uFE0F\u{E0020}-\u{E007F}]$/u;
/** Characters that draw nothing: when no font has them they are left out rather than shown as a box. */
const INVISIBLE = /^[\p{Cf}\uFE00-\uFE0F\u{E0020}-\u{E007F}]$/u;

/**
 * bidi-js classifies UTF-16 code units, so a character outside the Basic Multilingual Plane would be read as two
 * unknown units (left to right). Each is stood in for by two units of the right class, keeping every index: a
 * symbol or emoji by the object replacement character (neutral), anything else by a left-to-right letter.
 */
function forBidi(text: string): string {
  return text.replace(/[\u{10000}-\u{10FFFF}]/gu, (char) => (/[\p{S}\p{P}]/u.test(char) ? '\uFFFC\uFFFC' : 'AA'));
}

/** One line of plain text: NFC, no control or line-breaking characters, single spaces, trimmed. */
export function cleanText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]/gu, ' ')
    .replace(/\s+/gu, ' ')
    .trim();
}

/** The direction of the first strong character: a Hebrew or Arabic name is set right to left. */
export function baseDirection(text: string): Direction {
  const [paragraph] = bidi.getEmbeddingLevels(forBidi(text), 'auto').paragraphs;
  return (paragraph?.level ?? 0) % 2 === 1 ? 'rtl' : 'ltr';
}

interface Run {
  readonly font: fontkit.Font;
  readonly level: number;
  readonly text: string;
}

export class TextShaper {
  readonly #fonts: FontSet;
  readonly #paths = new WeakMap<fontkit.Font, Map<number, string>>();

  constructor(fonts: FontSet) {
    this.#fonts = fonts;
  }

  /** Lays out one line at `size` pixels, whatever its width. */
  shape(text: string, size: number, weight: Weight, direction: Direction): ShapedLine {
    const placed: PlacedGlyph[] = [];
    let x = 0;
    for (const run of this.#visualRuns(text, weight, direction)) {
      const scale = size / run.font.unitsPerEm;
      const layout = run.font.layout(run.text, undefined, undefined, undefined, run.level % 2 === 1 ? 'rtl' : 'ltr');
      layout.glyphs.forEach((glyph, i) => {
        const position = layout.positions[i]!;
        const invisible = glyph.id === 0 && glyph.codePoints.every((c) => INVISIBLE.test(String.fromCodePoint(c)));
        if (invisible) return;
        placed.push({ font: run.font, id: glyph.id, x: x + position.xOffset * scale, y: position.yOffset * scale });
        x += position.xAdvance * scale;
      });
    }
    return { glyphs: placed, width: x, size };
  }

  /** One line no wider than `maxWidth`: cut at a character boundary and ended with `…` when it is too long. */
  fit(text: string, size: number, weight: Weight, direction: Direction, maxWidth: number): ShapedLine {
    const whole = this.shape(text, size, weight, direction);
    if (whole.width <= maxWidth) return whole;
    const parts = Array.from(graphemes.segment(text), (s) => s.segment);
    const cut = (n: number) => this.shape(parts.slice(0, n).join('').trimEnd() + ELLIPSIS, size, weight, direction);
    // The longest prefix that fits with its ellipsis: a binary search over grapheme counts.
    let low = 0;
    let high = parts.length - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (cut(mid).width <= maxWidth) low = mid;
      else high = mid - 1;
    }
    return cut(low);
  }

  /**
   * At most `maxLines` lines no wider than `maxWidth`, broken between words where it can be (inside a word too
   * long for a line otherwise); the last line is cut with `…` when text is left over.
   */
  wrap(text: string, size: number, weight: Weight, direction: Direction, maxWidth: number, maxLines: number) {
    const lines: ShapedLine[] = [];
    let rest = text;
    while (lines.length < maxLines - 1 && rest !== '') {
      const whole = this.shape(rest, size, weight, direction);
      if (whole.width <= maxWidth) {
        lines.push(whole);
        return lines;
      }
      const [head, tail] = this.#breakLine(rest, size, weight, direction, maxWidth);
      lines.push(this.shape(head, size, weight, direction));
      rest = tail;
    }
    if (rest !== '') lines.push(this.fit(rest, size, weight, direction, maxWidth));
    return lines;
  }

  /** SVG outlines of a line whose left end is at `left` and whose baseline is at `baseline`. */
  outlines(line: ShapedLine, left: number, baseline: number): string {
    return line.glyphs
      .map((g) => {
        const d = this.#path(g.font, g.id);
        if (d === '') return '';
        const scale = line.size / g.font.unitsPerEm;
        // The scale keeps its precision: rounded to hundredths, a 14-pixel name's 0.014 would draw every glyph at
        // 0.01, too small for its advance (letters apart, Arabic joins broken) or too large (emoji over their room).
        const matrix = [roundScale(scale), 0, 0, -roundScale(scale), round(left + g.x), round(baseline - g.y)].join(
          ' ',
        );
        return `<path transform="matrix(${matrix})" d="${d}"/>`;
      })
      .join('');
  }

  /** Splits off the longest run of whole words that fits, or of characters when the first word alone is too wide. */
  #breakLine(text: string, size: number, weight: Weight, direction: Direction, maxWidth: number): [string, string] {
    const fits = (s: string) => this.shape(s.trimEnd(), size, weight, direction).width <= maxWidth;
    let head = '';
    for (const { segment } of words.segment(text)) {
      if (!fits(head + segment)) break;
      head += segment;
    }
    if (head.trim() === '') {
      head = '';
      for (const { segment } of graphemes.segment(text)) {
        if (head !== '' && !fits(head + segment)) break;
        head += segment;
      }
    }
    return [head.trimEnd(), text.slice(head.length).trimStart()];
  }

  /** The text split into runs of one font and one embedding level, in the order they appear left to right. */
  #visualRuns(text: string, weight: Weight, direction: Direction): Run[] {
    const { levels } = bidi.getEmbeddingLevels(forBidi(text), direction);
    const runs: { font: fontkit.Font; level: number; text: string }[] = [];
    let index = 0;
    for (const char of text) {
      const level = levels[index] ?? 0;
      const last = runs.at(-1);
      const font =
        last !== undefined && ATTACHED.test(char)
          ? last.font
          : (this.#fonts.fontFor(char.codePointAt(0)!, weight) ?? this.#fonts.primary(weight));
      if (last?.font === font && last.level === level) last.text += char;
      else runs.push({ font, level, text: char });
      index += char.length;
    }
    // Rule L2 of the bidirectional algorithm: from the highest level down to the lowest odd one, reverse every
    // stretch of runs at that level or higher.
    const highest = Math.max(0, ...runs.map((r) => r.level));
    const lowestOdd = Math.min(...runs.map((r) => r.level).filter((l) => l % 2 === 1), highest + 1);
    for (let level = highest; level >= lowestOdd; level--) {
      for (let start = 0; start < runs.length; start++) {
        if (runs[start]!.level < level) continue;
        let end = start;
        while (end + 1 < runs.length && runs[end + 1]!.level >= level) end++;
        runs.splice(start, end - start + 1, ...runs.slice(start, end + 1).reverse());
        start = end;
      }
    }
    return runs;
  }

  #path(font: fontkit.Font, id: number): string {
    let cache = this.#paths.get(font);
    if (cache === undefined) {
      cache = new Map();
      this.#paths.set(font, cache);
    }
    let d = cache.get(id);
    if (d === undefined) {
      d = font.getGlyph(id).path.toSVG();
      cache.set(id, d);
    }
    return d;
  }
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** A glyph's scale to six significant digits: the ink then lands within a thousandth of a pixel of its place. */
function roundScale(n: number): number {
  return Number(n.toPrecision(6));
}
