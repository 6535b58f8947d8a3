import { characterCount } from '../domain/search-text.js';
import { codePoint, firstCharacterOf } from '../http/name-characters.js';

/** The most characters a user name has (a longer one in a credential is refused unhashed: credential.ts). */
export const NAME_MAX_LENGTH = 64;

/** A rule a user name or password breaks; the message says which. */
export class UserError extends Error {
  override name = 'UserError';
}

/** Characters no user name has: control (Cc), format (Cf: zero-width, bidirectional controls) and surrogates. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;

/**
 * The one rule for user names, wherever a name comes in (the CLI, the bootstrap user, a sign-in): the name in NFC,
 * so that `josé` typed as one code point or as `e` and a combining accent is one user; 1 to 64 characters; no `:`
 * (it ends the name in a Basic credential), no white space, and no control or format characters, which would let
 * two different names look the same in `user list` and in logs. Returns the name as it is stored and looked up;
 * throws UserError saying what is wrong.
 */
export function userName(given: string): string {
  const name = given.normalize('NFC');
  if (name.length === 0 || characterCount(name) > NAME_MAX_LENGTH) {
    throw new UserError(`A user name must be 1 to ${NAME_MAX_LENGTH} characters.`);
  }
  const invisible = firstCharacterOf(name, INVISIBLE);
  if (invisible !== undefined) {
    throw new UserError(
      `A user name may not contain control or format characters (such as zero-width spaces or bidirectional ` +
        `marks): it has ${invisible}.`,
    );
  }
  if (name.includes(':') || /\s/u.test(name)) throw new UserError('A user name may not contain ":" or spaces.');
  return name;
}

/**
 * A stored name for an operator to read: a name stored before the rule (which may hold such characters or not be
 * in NFC) shows them as `<U+200B>` and says so, so that two such names never look the same.
 */
export function printableName(name: string): string {
  const shown = name.replace(new RegExp(INVISIBLE.source, 'gu'), (character) => `<${codePoint(character)}>`);
  return name === name.normalize('NFC') ? shown : `${shown} (not in NFC)`;
}
