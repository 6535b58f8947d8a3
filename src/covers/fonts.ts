import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as fontkit from 'fontkit';

/**
 * The typefaces covers are drawn with. They ship with the package (Noto, SIL Open Font License, from the
 * `@fontsource` packages), so every machine draws the same outlines; system fonts are never looked at.
 *
 * Each package splits its typeface into subset files by Unicode range. A subset is read only when a character in
 * its range is first drawn, so a cover in Latin script loads one small file and the emoji, Arabic or Hebrew
 * subsets cost nothing until a name needs them.
 */

export type Weight = 400 | 700;

/** The fallback order: the first subset whose range holds a character and whose font has a glyph for it draws it. */
const FAMILIES: readonly { readonly pkg: string; readonly subsets: readonly string[] }[] = [
  {
    pkg: 'noto-sans',
    subsets: ['latin', 'latin-ext', 'vietnamese', 'greek', 'greek-ext', 'cyrillic', 'cyrillic-ext', 'devanagari'],
  },
  { pkg: 'noto-sans-arabic', subsets: ['arabic', 'symbols', 'math'] },
  { pkg: 'noto-sans-hebrew', subsets: ['hebrew'] },
  // Monochrome emoji outlines: every subset of the package, in its own order.
  { pkg: 'noto-emoji', subsets: [] },
];

const require = createRequire(import.meta.url);

interface Subset {
  readonly ranges: readonly (readonly [number, number])[];
  readonly file: (weight: Weight) => string;
  readonly loaded: Map<Weight, fontkit.Font>;
}

/** `U+0460-052F,U+20B4` → `[[0x460, 0x52f], [0x20b4, 0x20b4]]`. */
function parseRanges(text: string): [number, number][] {
  return text.split(',').map((part) => {
    const [from = '', to = from] = part.trim().replace(/^U\+/i, '').split('-');
    return [parseInt(from, 16), parseInt(to, 16)];
  });
}

function loadSubsets(): Subset[] {
  const subsets: Subset[] = [];
  for (const { pkg, subsets: wanted } of FAMILIES) {
    const root = dirname(require.resolve(`@fontsource/${pkg}/LICENSE`));
    const ranges = JSON.parse(readFileSync(join(root, 'unicode.json'), 'utf8')) as Record<string, string>;
    const names = wanted.length > 0 ? wanted : Object.keys(ranges);
    for (const name of names) {
      const range = ranges[name];
      if (range === undefined) throw new Error(`@fontsource/${pkg} has no subset "${name}"`);
      const id = name.replace(/^\[(\d+)\]$/, '$1');
      subsets.push({
        ranges: parseRanges(range),
        file: (weight) => join(root, 'files', `${pkg}-${id}-${weight}-normal.woff2`),
        loaded: new Map(),
      });
    }
  }
  return subsets;
}

function inRanges(codePoint: number, ranges: Subset['ranges']): boolean {
  return ranges.some(([from, to]) => codePoint >= from && codePoint <= to);
}

/** The bundled typefaces, read lazily and kept for the life of the process. */
export class FontSet {
  readonly #subsets = loadSubsets();
  readonly #choice = new Map<string, fontkit.Font | null>();

  /** The font that draws the base text of a cover (its `.notdef` box stands in for characters no font has). */
  primary(weight: Weight): fontkit.Font {
    return this.#font(this.#subsets[0]!, weight);
  }

  /** The first font, in fallback order, with a glyph for the code point; null when none has one. */
  fontFor(codePoint: number, weight: Weight): fontkit.Font | null {
    const key = `${weight}:${codePoint}`;
    let font = this.#choice.get(key);
    if (font === undefined) {
      font = null;
      for (const subset of this.#subsets) {
        if (!inRanges(codePoint, subset.ranges)) continue;
        const candidate = this.#font(subset, weight);
        if (candidate.hasGlyphForCodePoint(codePoint)) {
          font = candidate;
          break;
        }
      }
      this.#choice.set(key, font);
    }
    return font;
  }

  #font(subset: Subset, weight: Weight): fontkit.Font {
    let font = subset.loaded.get(weight);
    if (font === undefined) {
      font = fontkit.create(readFileSync(subset.file(weight))) as fontkit.Font;
      subset.loaded.set(weight, font);
    }
    return font;
  }
}
