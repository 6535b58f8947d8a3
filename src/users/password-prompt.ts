import { UserError } from './user.service.js';

/** How many times a new password is asked for when its two typings differ, before giving up. */
export const PASSWORD_TRIES = 3;

/**
 * Asks for a new password twice with `ask`, again while the two differ, up to `tries` times; says each miss with
 * `tell`. Throws after the last miss, so a script that answers wrong cannot loop forever.
 */
export async function askNewPassword(
  ask: (message: string) => Promise<string>,
  tell: (line: string) => void,
  tries = PASSWORD_TRIES,
): Promise<string> {
  for (let attempt = 1; attempt <= tries; attempt++) {
    const first = await ask('Password:');
    const again = await ask('Password again:');
    if (first === again) return first;
    if (attempt < tries) tell(`The two passwords differ; try again (${tries - attempt} more).`);
  }
  throw new UserError(`The two passwords differed ${tries} times.`);
}
