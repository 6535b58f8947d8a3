import type { Db } from '../db/database.js';
import { PASSWORD_MAX_BYTES } from '../credentials/credential.js';
import { hashPassword, verifyPassword } from '../credentials/password.js';
import { libraryChanged } from '../library/library.repository.js';
import { UserError, userName } from './user-name.js';
import { recordOwnerLeaving } from '../sharing/members.repository.js';
import * as users from './user.repository.js';

export { UserError } from './user-name.js';

function checkPassword(password: string): void {
  if (password.length === 0) throw new UserError('The password must not be empty.');
  if (Buffer.byteLength(password) > PASSWORD_MAX_BYTES) {
    throw new UserError(`The password must be at most ${PASSWORD_MAX_BYTES} bytes.`);
  }
}

/**
 * The operator's user management, shared by the CLI and the bootstrap user at start. Every name given is read by
 * `userName` (NFC; UserError for a name no user can have).
 */
export function userService(db: Db) {
  return {
    /** Creates the user; false when the name is already taken. */
    async add(name: string, password: string): Promise<boolean> {
      const stored = userName(name);
      checkPassword(password);
      return (await users.insertUser(db.kysely, stored, await hashPassword(password), Date.now())) !== undefined;
    },
    async setPassword(name: string, password: string): Promise<boolean> {
      const stored = userName(name);
      checkPassword(password);
      return users.updatePasswordHash(db.kysely, stored, await hashPassword(password));
    },
    /**
     * Removes the user and, with them, their playlists and memberships (by the foreign keys); the members of their
     * playlists hear `unshared` in their change feeds, and their trees (which showed those playlists) a new version.
     */
    async remove(name: string): Promise<boolean> {
      const stored = userName(name);
      return db.write(async (trx) => {
        const user = await users.findUserByName(trx, stored);
        if (user === undefined) return false;
        await recordOwnerLeaving(trx, user.id, Date.now());
        const members = await trx
          .selectFrom('playlist_members')
          .select('user_id')
          .distinct()
          .where('owner_id', '=', user.id)
          .where('user_id', '<>', user.id)
          .execute();
        await libraryChanged(trx, db.dialect, { users: members.map((m) => m.user_id) });
        return users.deleteUser(trx, stored);
      });
    },
    list() {
      return users.listUsers(db.kysely);
    },
    anyUser(): Promise<boolean> {
      return users.anyUser(db.kysely);
    },
    /** Whether the user's password is this one; undefined when there is no such user. */
    async hasPassword(name: string, password: string): Promise<boolean | undefined> {
      const user = await users.findUserByName(db.kysely, userName(name));
      return user === undefined ? undefined : verifyPassword(password, user.password_hash);
    },
  };
}
