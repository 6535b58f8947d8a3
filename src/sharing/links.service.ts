import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/database.js';
import type { FileFormat } from '../formats/formats.js';
import { ApiError } from '../http/errors.js';
import { futureTime, rfc3339 } from '../http/times.js';
import type { PlaylistFile, PlaylistFiles } from '../playlists/playlist-files.service.js';
import { lockPlaylist } from '../playlists/playlist.repository.js';
import type { CoverFacts, PlaylistService } from '../playlists/playlist.service.js';
import * as links from './links.repository.js';
import { playlistSummary, renderSharePage, songLength } from './share-page.render.js';

/*
 * Share links: made, listed and revoked by the playlist's owner (`linkService`), and what a live one shows, the page
 * `/s/{token}` and its JSON, files and cover (`sharedPlaylists`).
 */

/** A link as its owner lists it. */
export interface Link {
  readonly id: number;
  readonly createdAt: string;
  readonly expiresAt: string | null;
}

/** A new link, with the one answer that ever shows its URL. */
export interface NewLink extends Link {
  readonly url: string;
}

/** What a live link opens: the playlist, read as its owner reads it, and the owner's name to show. */
export interface OpenedLink {
  readonly playlistId: number;
  readonly ownerId: number;
  readonly owner: string;
}

/** Random bytes in a token: 256 bits, far past guessing. */
const TOKEN_BYTES = 32;

/** The one form a token is kept in and looked up by: SHA-256, hex (a token is random, so no salt is needed). */
export const tokenDigest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

const iso = (at: number | string | null): string | null => (at === null ? null : rfc3339(Number(at)));

/**
 * Links anyone may open (README.md, Sharing): made, listed and revoked by the playlist's owner, as the access module
 * decides (`own`). A link's token is made here and shown once, in the URL of the answer that made it; only its
 * digest is stored. At most `linksMax` live links per playlist; expired ones are forgotten when the next is made.
 */
export function linkService(db: Db, playlists: PlaylistService, linksMax: number) {
  const q = db.kysely;
  const { access } = playlists;

  return {
    /** A new link to the playlist; `base` is the public origin (and path prefix) its URL starts with. */
    async create(userId: number, playlistId: number, expiresAt: string | undefined, base: string): Promise<NewLink> {
      const now = Date.now();
      let expires: number | null = null;
      if (expiresAt !== undefined) {
        expires = futureTime(expiresAt, 'expiresAt', now);
      }
      const { ownerId } = await access.requireAccess(userId, playlistId, 'own');
      const token = randomBytes(TOKEN_BYTES).toString('base64url');
      const made = await playlists.asWrite(userId, () =>
        db.write(async (trx) => {
          if ((await lockPlaylist(trx, db.dialect, playlistId)) === undefined) return undefined;
          await links.deleteExpiredLinks(trx, playlistId, now);
          if ((await links.countLiveLinks(trx, playlistId, now)) >= linksMax) {
            throw ApiError.conflict(
              `This playlist has ${linksMax} live links, the most it may have; revoke one to make another.`,
            );
          }
          const digest = tokenDigest(token);
          return links.insertLink(trx, { playlistId, ownerId, digest, createdAt: now, expiresAt: expires });
        }),
      );
      // Deleted since access was granted.
      if (made === undefined) throw await access.refusal(userId, playlistId);
      return { id: made.id, url: `${base}/s/${token}`, createdAt: iso(now)!, expiresAt: iso(expires) };
    },

    /** The playlist's live links, in id order, without their secret. */
    async list(userId: number, playlistId: number): Promise<Link[]> {
      await access.requireAccess(userId, playlistId, 'own');
      const rows = await links.liveLinks(q, playlistId, Date.now());
      // Deleted since access was granted.
      if (rows === undefined) throw await access.refusal(userId, playlistId);
      return rows.map((row) => ({ id: row.id, createdAt: iso(row.created_at)!, expiresAt: iso(row.expires_at) }));
    },

    /** Revokes a live link of the playlist: it opens nothing from its next request on, on every instance. */
    async revoke(userId: number, playlistId: number, linkId: number): Promise<void> {
      await access.requireAccess(userId, playlistId, 'own');
      const now = Date.now();
      const deleted = await playlists.asWrite(userId, () =>
        db.write(async (trx) => {
          if ((await lockPlaylist(trx, db.dialect, playlistId)) === undefined) return undefined;
          return links.deleteLink(trx, playlistId, linkId, now);
        }),
      );
      // Deleted since access was granted.
      if (deleted === undefined) throw await access.refusal(userId, playlistId);
      if (!deleted) throw ApiError.notFound('This playlist has no such link.');
    },

    /**
     * What a token opens, or undefined. Every token costs the same: its digest, then one indexed statement that
     * finds nothing alike for an unknown, revoked or expired token and for a deleted playlist's.
     */
    async open(token: string): Promise<OpenedLink | undefined> {
      const found = await links.openLink(q, tokenDigest(token), Date.now());
      return found === undefined
        ? undefined
        : { playlistId: found.playlist_id, ownerId: found.owner_id, owner: found.owner };
    },
  };
}

export type LinkService = ReturnType<typeof linkService>;

/**
 * What a live link shows: the playlist's current version, read through the playlist service with the link as the
 * reader (the access module grants a link `read` on its one playlist, role `link`), so the answers are the API's own
 * and its cache serves them. A playlist deleted between the link's lookup and the read shows nothing (undefined), as
 * a link that never was.
 */
export function sharedPlaylists(links: LinkService, playlists: PlaylistService, files: PlaylistFiles) {
  /** The read's answer, or undefined when the playlist went meanwhile (the access module's 404 or 410). */
  async function unlessGone<T>(read: Promise<T>): Promise<T | undefined> {
    try {
      return await read;
    } catch (error) {
      if (error instanceof ApiError && (error.statusCode === 404 || error.statusCode === 410)) return undefined;
      throw error;
    }
  }

  return {
    /** What the token opens, or undefined (see LinkService.open: every token costs the same). */
    open: (token: string): Promise<OpenedLink | undefined> => links.open(token),

    /** The page's HTML; `path` is the page's own path, which the cover and the files hang under. */
    async page(link: OpenedLink, path: string): Promise<string | undefined> {
      const playlist = await unlessGone(playlists.exportable(link, link.playlistId));
      if (playlist === undefined) return undefined;
      return renderSharePage({
        name: playlist.name,
        owner: link.owner,
        path,
        songs: playlist.tracks.map((track, i) => ({
          number: i + 1,
          title: track.title,
          artist: track.artist,
          album: track.album,
          length: songLength(track.duration),
        })),
        summary: playlistSummary(playlist.tracks.map((track) => track.duration)),
      });
    },

    /** The playlist's JSON as the API gives it (`playlistwithsongs`), with `owner`: the owner's name. */
    async json(link: OpenedLink): Promise<Buffer | undefined> {
      const answer = await unlessGone(playlists.get(link, link.playlistId));
      return answer?.body;
    },

    /** The playlist as a file, as `GET /v3/playlist/{id}?format=` writes it; `origin` as there. */
    file(link: OpenedLink, format: FileFormat, origin: string): Promise<PlaylistFile | undefined> {
      return unlessGone(files.get(link, link.playlistId, format, origin));
    },

    /** What the cover is drawn from. */
    cover(link: OpenedLink): Promise<CoverFacts | undefined> {
      return unlessGone(playlists.coverFacts(link, link.playlistId));
    },
  };
}

export type SharedPlaylists = ReturnType<typeof sharedPlaylists>;
