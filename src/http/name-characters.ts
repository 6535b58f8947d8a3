/**
 * Characters that make a name read as another, for the rules of names people see: a user's (`userName`, which
 * refuses every control and format character) and a playlist's (`nameProblem`, which refuses the bidirectional
 * controls and a name with nothing to see). Both find and name a character with `firstCharacterOf`.
 */
import { characterCount } from '../domain/search-text.js';

/** A character as a message names it: `U+202E`. */
export const codePoint = (character: string): string =>
  `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * The first character of `text` that `characters` (a character class, without the `g` flag) matches, as a message
 * names it: `U+202E at character 3`, counting characters, not UTF-16 units. Undefined when there is none.
 */
export function firstCharacterOf(text: string, characters: RegExp): string | undefined {
  const found = characters.exec(text);
  if (found === null) return undefined;
  return `${codePoint(found[0])} at character ${characterCount(text.slice(0, found.index)) + 1}`;
}

/**
 * The bidirectional controls: the Arabic letter mark (U+061C), the left-to-right and right-to-left marks (U+200E,
 * U+200F), the embeddings and overrides (U+202A to U+202E) and the isolates (U+2066 to U+2069). Each changes the order
 * the text after it is shown in: `abc` U+202E `exe.txt` shows as `abctxt.exe`.
 */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/**
 * A character that shows: not white space, a control or format character (zero-width spaces and joiners, the
 * bidirectional controls), a surrogate, a character ignorable by default (the Hangul fillers, variation selectors),
 * nor the blank Braille pattern (U+2800).
 */
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]/u;

/**
 * What is wrong with a name others see (a playlist's), as the rest of a sentence that starts with what holds it
 * (`"name" must …`), or undefined: a bidirectional control, which could make the name read as another, or no visible
 * character at all. Other characters that show nothing (a zero-width space, a joiner in an emoji sequence) are
 * allowed beside visible ones. Control characters, blank names and lengths are the schema's own rules.
 */
export function nameProblem(name: string): string | undefined {
  const control = firstCharacterOf(name, BIDI_CONTROLS);
  if (control !== undefined) {
    return `must not contain bidirectional control characters, which change the order text is shown in (it has ${control})`;
  }
  if (!VISIBLE.test(name)) {
    return 'must have a visible character, not only spaces and invisible characters such as zero-width spaces';
  }
  return undefined;
}
