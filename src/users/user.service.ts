import type { Db } from '../db/database.js';
import { NAME_MAX_LENGTH, PASSWORD_MAX_BYTES } from '../credentials/credential.js';
import { hashPassword, verifyPassword } from '../credentials/password.js';
import { characterCount } from '../search/search-text.js';
import * as users from './user.repository.js';

/** A rule a user name or password breaks; the message says which. */
export class UserError extends Error {
  override name = 'UserError';
}

function checkName(name: string): void {
  if (name.length === 0 || characterCount(name) > NAME_MAX_LENGTH) {
    throw new UserError(`A user name must be 1 to ${NAME_MAX_LENGTH} characters.`);
  }
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (name.includes(':') || /[\u0000-\u001f\u007f-\u009f\s]/u.test(name)) {
    throw new UserError('A user name may not contain ":", spaces or control characters.');
  }
}

function checkPassword(password: string): void {
  if (password.length === 0) throw new UserError('The password must not be empty.');
  if (Buffer.byteLength(password) > PASSWORD_MAX_BYTES) {
    throw new UserError(`The password must be at most ${PASSWORD_MAX_BYTES} bytes.`);
  }
}

/** The operator's user management, shared by the CLI and the bootstrap user at start. */
export function userService(db: Db) {
  return {
    /** Creates the user; false when the name is already taken. */
    async add(name: string, password: string): Promise<boolean> {
      checkName(name);
      checkPassword(password);
      return (await users.insertUser(db.kysely, name, await hashPassword(password), Date.now())) !== undefined;
    },
    async setPassword(name: string, password: string): Promise<boolean> {
      checkPassword(password);
      return users.updatePasswordHash(db.kysely, name, await hashPassword(password));
    },
    /** Removes the user and, with them, their playlists. */
    remove(name: string): Promise<boolean> {
      return users.deleteUser(db.kysely, name);
    },
    list() {
      return users.listUsers(db.kysely);
    },
    anyUser(): Promise<boolean> {
      return users.anyUser(db.kysely);
    },
    /** Whether the user's password is this one; undefined when there is no such user. */
    async hasPassword(name: string, password: string): Promise<boolean | undefined> {
      const user = await users.findUserByName(db.kysely, name);
      return user === undefined ? undefined : verifyPassword(password, user.password_hash);
    },
  };
}
