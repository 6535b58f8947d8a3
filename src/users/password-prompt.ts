import { PASSWORD_MIN_LENGTH, newPasswordProblem } from './password-rule.js';
import { UserError } from './user-name.js';

/** How many times a new password is asked for when it is refused or its two typings differ, before giving up. */
export const PASSWORD_TRIES = 3;

/**
 * Asks for a new password with `ask`, then for it again, up to `tries` times while it is too short or the two
 * typings differ; says each miss with `tell`. Throws after the last miss, so a script that answers wrong cannot loop
 * forever.
 */
export async function askNewPassword(
  ask: (message: string) => Promise<string>,
  tell: (line: string) => void,
  tries = PASSWORD_TRIES,
): Promise<string> {
  let differed = 0;
  for (let attempt = 1; ; attempt++) {
    const first = await ask(`Password (at least ${PASSWORD_MIN_LENGTH} characters):`);
    const problem = newPasswordProblem(first);
    if (problem === undefined) {
      const again = await ask('Password again:');
      if (first === again) return first;
      differed += 1;
    }
    if (attempt === tries) {
      throw new UserError(problem ?? `The two passwords differed ${differed === 1 ? 'once' : `${differed} times`}.`);
    }
    const more = `try again (${tries - attempt} more)`;
    tell(problem === undefined ? `The two passwords differ; ${more}.` : `${problem} Please ${more}.`);
  }
}
