import { characterCount } from '../domain/search-text.js';
import { UserError } from './user-name.js';

/**
 * The fewest characters a new password may have (OWASP ASVS 2.1.1 asks for at least 12). It holds where a password
 * is chosen: `mixtape user add`, `user passwd` and their prompt. Sign-in compares only against the stored hash, so a
 * shorter password set before keeps working.
 */
export const PASSWORD_MIN_LENGTH = 12;

/** Why a new password is refused, in words that state the rule, or undefined when it is long enough. */
export function newPasswordProblem(password: string): string | undefined {
  const length = characterCount(password);
  if (length >= PASSWORD_MIN_LENGTH) return undefined;
  return (
    `A new password needs at least ${PASSWORD_MIN_LENGTH} characters; this one has ${length}. ` +
    'A few words in a row make one that is easy to type.'
  );
}

/** Throws UserError, stating the rule, for a new password that is too short. */
export function checkNewPassword(password: string): void {
  const problem = newPasswordProblem(password);
  if (problem !== undefined) throw new UserError(problem);
}
