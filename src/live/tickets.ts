import { createHash, randomBytes } from 'node:crypto';
import type { Caller } from '../http/auth.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { rfc3339 } from '../http/times.js';

/** How long a ticket may wait to be taken. */
export const TICKET_MS = 60_000;

/** A user's tickets not yet taken, at most: making one more forgets their oldest. */
const TICKETS_PER_USER = 20;

const digestOf = (ticket: string) => createHash('sha256').update(ticket).digest('base64url');

/**
 * Single-use tickets for the stream of changes (see migration 2026-12-11-stream-tickets): a browser's `EventSource`
 * cannot send a credential header, so a page asks for a ticket with its credential and opens the stream with it.
 */
export function streamTickets(db: Db) {
  return {
    /** A new ticket for the caller, valid TICKET_MS. */
    async issue(userId: number): Promise<{ ticket: string; expiresAt: string }> {
      const ticket = randomBytes(32).toString('base64url');
      const now = Date.now();
      const expiresAt = now + TICKET_MS;
      await db.write(async (trx) => {
        await trx.deleteFrom('stream_tickets').where('expires_at', '<=', now).execute();
        const kept = await trx
          .selectFrom('stream_tickets')
          .select('digest')
          .where('user_id', '=', userId)
          .orderBy('expires_at', 'desc')
          .offset(TICKETS_PER_USER - 1)
          .limit(100)
          .execute();
        if (kept.length > 0) {
          const old = kept.map((row) => row.digest);
          await trx.deleteFrom('stream_tickets').where('digest', 'in', old).execute();
        }
        await trx
          .insertInto('stream_tickets')
          .values({ digest: digestOf(ticket), user_id: userId, expires_at: expiresAt })
          .execute();
      });
      return { ticket, expiresAt: rfc3339(expiresAt) };
    },

    /** The caller a ticket stands for, taking it (it works once); 401 for one unknown, taken or expired. */
    async redeem(ticket: string): Promise<Caller> {
      const refused = () =>
        new ApiError(401, 'This ticket is unknown, used or expired: ask for a new one (POST /v3/changes/tickets).');
      if (!/^[A-Za-z0-9_-]{43}$/.test(ticket)) throw refused();
      const digest = digestOf(ticket);
      const taken = await db.write(async (trx) => {
        const row = await trx
          .selectFrom('stream_tickets')
          .innerJoin('users', 'users.id', 'stream_tickets.user_id')
          .select(['users.id', 'users.name', 'stream_tickets.expires_at'])
          .where('stream_tickets.digest', '=', digest)
          .executeTakeFirst();
        if (row === undefined) return undefined;
        const deleted = await trx.deleteFrom('stream_tickets').where('digest', '=', digest).executeTakeFirst();
        return Number(deleted.numDeletedRows) === 1 && Number(row.expires_at) > Date.now() ? row : undefined;
      });
      if (taken === undefined) throw refused();
      // A ticket opens the stream only: it stands for a read token.
      return { userId: taken.id, name: taken.name, source: 'authorization', via: 'token', scope: 'read' };
    },
  };
}

export type StreamTickets = ReturnType<typeof streamTickets>;
