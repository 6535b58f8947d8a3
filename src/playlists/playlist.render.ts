import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ExportFormat } from '../formats/formats.js';
import type { BodyParts } from '../http/body-parts.js';
import type { Role } from '../domain/roles.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';
import { entryName } from './edits/entry-names.js';

/** A playlist as the API answers it: the bytes of its body (JSON, or a playlist file) and their strong ETag. */
export interface PlaylistAnswer {
  readonly body: Buffer;
  readonly etag: string;
}

/**
 * A playlist at one of its versions, as read at one catalog version: the two numbers decide every byte of its JSON
 * answers (a version's name and songs never change, and the catalog version is counted up whenever an import
 * changes a song's text). Its JSON is written once, when it is read.
 */
export interface Snapshot {
  readonly id: number;
  /** The playlist's version (counted up by each edit, a restore and an undelete). */
  readonly version: number;
  /**
   * The catalog version, read before the songs or in the same statement: a race with an import can only give an
   * answer an older label than its bytes, whose ETag then matches nothing current.
   */
  readonly catalogVersion: number;
  readonly name: string;
  /** Its owner's answer: the text the `playlistwithsongs` schema describes, with its fields in the schema's order. */
  readonly json: Buffer;
  /** Whether it is a smart playlist (has rules), whose songs a read may refresh first (smart/smart.refresh.ts). */
  readonly smart: boolean;
}

/**
 * What a snapshot is made from: the playlist read, with its version and the catalog's, and a smart playlist's rules
 * as stored (JSON text; null or absent for a hand-made playlist).
 */
export type PlaylistRead = Omit<PlaylistWithSongs, 'rules' | 'rulesStatus'> & {
  readonly version: number;
  readonly catalogVersion: number;
  readonly rules?: string | null;
  /** What a smart playlist's answers say beside its rules (JSON text, `{"unreadable": [ids]}`); null or absent for none. */
  readonly rulesStatus?: string | null;
};

/**
 * Whom an answer is for: its owner (the answer of API 1.3.0); a member, whose answer also carries `owner` (the
 * owner's name) and `role`; or anyone holding one of its links (`link`), whose answer carries `owner` only.
 */
export interface Viewer {
  readonly role: Role | 'link';
  /** The owner's name, for a member or a link. */
  readonly ownerName?: string | undefined;
}

/** The playlist's owner, as a viewer. */
export const OWNER: Viewer = { role: 'owner' };

/**
 * The forms a playlist is answered in, each with its own bytes: its JSON (`GET /v3/playlist/{id}`, a version's, an
 * edit's answer), its entries (`GET …/entries`, a merged edit's answer) and its files (XSPF, JSPF, M3U8).
 */
export type PlaylistForm = ExportFormat | 'entries';

/** Every form, so that a write's `If-Match` takes the current tag of any of them (`playlistEtags`). */
export const PLAYLIST_FORMS: readonly PlaylistForm[] = ['json', 'entries', 'xspf', 'jspf', 'm3u8'];

/** What a playlist's answer is at: the playlist, its version and the catalog's (see Snapshot). */
export type AnswerAt = Pick<Snapshot, 'id' | 'version' | 'catalogVersion'>;

/**
 * The strong ETag of a playlist's answer in one form to a reader, from what decides its bytes: the playlist, its
 * version, the catalog's version, the form and the reader's role (an owner's name never changes; a smart
 * playlist's rules and their status change only with a version). Known without writing the answer, so that
 * `If-Match` compares versions and a read answers 304 before it writes anything. The owner's JSON is
 * `"id.version.catalog"`, as it has always been; a member's (or a link's) role follows, then any other form's name:
 * `"7.3.2.viewer.entries"`. The files' links start with the request's origin when no public URL is set: another origin
 * is another resource, whose tags a client keeps apart.
 */
export function playlistEtag(at: AnswerAt, form: PlaylistForm, role: Viewer['role']): string {
  const { id, version, catalogVersion } = at;
  return `"${id}.${version}.${catalogVersion}${role === 'owner' ? '' : `.${role}`}${form === 'json' ? '' : `.${form}`}"`;
}

/**
 * The strong ETag of a page of the entries form (`GET …/entries?limit=N&after=E`): the form's tag with the page's
 * bounds, its limit and the entry it starts after (none for the first page), `"7.3.2.entries.10.e12"`, so that each
 * page, and the whole list, has a tag of its own that changes with the playlist as the form's does.
 */
export function entriesPageEtag(at: AnswerAt, role: Viewer['role'], limit: number, after: string | undefined): string {
  const form = playlistEtag(at, 'entries', role);
  return `${form.slice(0, -1)}.${limit}${after === undefined ? '' : `.${after}`}"`;
}

/** The current tags of every form of a playlist at `at` to a reader in `role`: what a write's `If-Match` may name. */
export function playlistEtags(at: AnswerAt, role: Viewer['role']): string[] {
  return PLAYLIST_FORMS.map((form) => playlistEtag(at, form, role));
}

/**
 * The members a playlist's JSON forms (its JSON, its entries) carry after their own: a smart playlist's `rules`, as
 * stored, then `rulesStatus` when there is one; nothing for a hand-made playlist.
 */
export function rulesMembers(rules: string | null | undefined, rulesStatus: string | null | undefined): string {
  if (rules == null) return '';
  return `,"rules":${rules}${rulesStatus == null ? '' : `,"rulesStatus":${rulesStatus}`}`;
}

/** An entry as the entries form shows it: its song, and who made it and when (1.9.0; null where it is not known). */
export interface ShownEntry {
  readonly entry: number;
  readonly song: { readonly id: number; readonly title: string; readonly artist: string };
  /** The name of the user who made it; null for a user removed since, or an entry made before 1.9.0. */
  readonly addedBy: string | null;
  /** Epoch milliseconds; null for an entry made before 1.9.0. */
  readonly addedAt: number | null;
}

/**
 * The entries form of a playlist (`GET …/entries`, a merged edit's answer, a kept version's entries): the playlist
 * with its entries, then what its JSON carries after its songs (a smart playlist's `rules` and `rulesStatus`, a
 * member's `owner` and `role`).
 */
export function entriesText(
  at: Pick<AnswerAt, 'id' | 'version'>,
  name: string,
  shown: readonly ShownEntry[],
  smart: { readonly rules: string | null; readonly rulesStatus: string | null },
  viewer: Viewer,
): string {
  // Entries made together share their time: each distinct one is written once.
  let last: { readonly at: number; readonly text: string } | undefined;
  const time = (at: number) => {
    if (last?.at !== at) last = { at, text: new Date(at).toISOString() };
    return last.text;
  };
  const entries = shown.map(({ entry, song, addedBy, addedAt }) => ({
    entry: entryName(entry),
    ...song,
    addedBy,
    addedAt: addedAt === null ? null : time(addedAt),
  }));
  const core = JSON.stringify({ id: at.id, name, version: at.version, entries });
  return `${core.slice(0, -1)}${rulesMembers(smart.rules, smart.rulesStatus)}${viewerMembers(viewer)}}`;
}

/**
 * The members a playlist's JSON forms carry last for a reader: a member's `owner` (the owner's name) and `role`, a
 * link's `owner`; nothing for the owner.
 */
export function viewerMembers(viewer: Viewer): string {
  if (viewer.role === 'owner') return '';
  const owner = `,"owner":${JSON.stringify(viewer.ownerName ?? '')}`;
  return viewer.role === 'link' ? owner : `${owner},"role":"${viewer.role}"`;
}

/**
 * The snapshot of a playlist read: its JSON written once. A smart playlist's `rules` follow its songs, as stored
 * (the text `readRules`' result was written as), then `rulesStatus` when its owner may not read a playlist they name: a
 * hand-made playlist's JSON has no `rules` member at all, as before 1.7.0. A playlist's rules and their status change
 * only with a new version, so the snapshot's version still decides its bytes.
 */
export function snapshotOf(read: PlaylistRead): Snapshot {
  const { id, name, songs, version, catalogVersion, rules, rulesStatus } = read;
  const text = JSON.stringify({ id, name, songs });
  const json = rules == null ? text : `${text.slice(0, -1)}${rulesMembers(rules, rulesStatus)}}`;
  return { id, version, catalogVersion, name, json: Buffer.from(json), smart: rules != null };
}

/**
 * As snapshotOf, with its JSON written the first time it is read: a write's snapshot, whose answer with `Prefer:
 * return=minimal` never writes it (see writeAnswer).
 */
export function lazySnapshotOf(read: PlaylistRead): Snapshot {
  let json: Buffer | undefined;
  return {
    id: read.id,
    version: read.version,
    catalogVersion: read.catalogVersion,
    name: read.name,
    smart: read.rules != null,
    get json() {
      json ??= snapshotOf(read).json;
      return json;
    },
  };
}

/**
 * The JSON answer of a playlist to a viewer, and its ETag: the owner's is the snapshot's JSON as it is; a member's
 * or a link's is the same document with its fields after the others.
 */
export function render(snapshot: Snapshot, viewer: Viewer): PlaylistAnswer {
  const etag = playlistEtag(snapshot, 'json', viewer.role);
  if (viewer.role === 'owner') return { body: snapshot.json, etag };
  const fields = `${viewerMembers(viewer)}}`;
  return { body: Buffer.concat([snapshot.json.subarray(0, snapshot.json.length - 1), Buffer.from(fields)]), etag };
}

/**
 * A write's answer to a viewer: the playlist's new version and the ETag of its JSON, known without writing it, and the
 * JSON itself (`body`), written only when asked for: an answer with `Prefer: return=minimal` is `{"version"}`.
 */
export interface WriteAnswer {
  readonly version: number;
  readonly etag: string;
  readonly body: () => Buffer;
}

/** The answer of a write that left the playlist at `snapshot` (a lazy one: lazySnapshotOf), to a viewer. */
export function writeAnswer(snapshot: Snapshot, viewer: Viewer): WriteAnswer {
  return {
    version: snapshot.version,
    etag: playlistEtag(snapshot, 'json', viewer.role),
    body: () => render(snapshot, viewer).body,
  };
}

/** Songs serialized between two turns of the event loop. */
const SONGS_PER_TURN = 2000;

/**
 * The snapshots of several playlists. A page can hold 100 000 songs, about 7 MB: it is written a playlist at a time
 * with the event loop free every 2000 songs, and with the engine's own JSON.stringify, which is several times
 * faster than a schema-compiled serializer on text this long.
 */
export async function snapshotsOf(reads: readonly PlaylistRead[]): Promise<Snapshot[]> {
  const snapshots: Snapshot[] = [];
  let songs = 0;
  for (const read of reads) {
    snapshots.push(snapshotOf(read));
    songs += read.songs.length;
    if (songs >= SONGS_PER_TURN) {
      songs = 0;
      await nextTurn();
    }
  }
  return snapshots;
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/**
 * A playlist as a page shows it to a viewer: the ETag of its JSON answer, and that answer's bytes in pieces (the
 * snapshot's JSON, shared, not copied, and a member's or a link's fields after it), as `render` would join them.
 */
export interface PageItem {
  readonly etag: string;
  readonly parts: readonly Buffer[];
}

/**
 * The snapshot as a page shows it to a viewer. A page of members' answers is joined once, from the snapshots' own
 * bytes: joining each answer first (`render`) copied every song of the page twice, megabytes for a page of long
 * playlists, and the garbage of those copies cost the event loop more than the copying.
 */
export function pageItem(snapshot: Snapshot, viewer: Viewer): PageItem {
  const etag = playlistEtag(snapshot, 'json', viewer.role);
  if (viewer.role === 'owner') return { etag, parts: [snapshot.json] };
  const fields = Buffer.from(`${viewerMembers(viewer)}}`);
  return { etag, parts: [snapshot.json.subarray(0, snapshot.json.length - 1), fields] };
}

/**
 * A page: the JSON array of the playlists' answers, as the pieces of bytes to send in turn, without parsing them
 * again nor joining them here (see sendableBody).
 */
export function pageJson(items: readonly PageItem[]): BodyParts {
  const parts: Buffer[] = [OPEN];
  let length = OPEN.length + CLOSE.length;
  items.forEach((item, i) => {
    if (i > 0) {
      parts.push(COMMA);
      length += COMMA.length;
    }
    for (const part of item.parts) {
      parts.push(part);
      length += part.length;
    }
  });
  parts.push(CLOSE);
  return { parts, length };
}

/**
 * A page's weak ETag, over what it shows: its playlists' own tags and the total in `X-Total-Count`. Weak, since
 * the same tag stands for the page whatever headers (`Link`) come with it.
 */
export function pageEtag(answers: readonly { readonly etag: string }[], total: number): string {
  const hash = createHash('sha1').update(String(total));
  for (const answer of answers) hash.update(answer.etag);
  return `W/"${hash.digest('base64url')}"`;
}
