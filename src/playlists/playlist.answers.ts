import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Grant } from './playlist.access.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';

/** A playlist as the API answers it: the bytes of its body (JSON, or a playlist file) and their strong ETag. */
export interface PlaylistAnswer {
  readonly body: Buffer;
  readonly etag: string;
}

/** The strong ETag of an answer's bytes: equal bytes, equal tag, on every instance and after every restart. */
export function etagOf(bytes: Buffer): string {
  return `"${createHash('sha1').update(bytes).digest('base64url')}"`;
}

/** A playlist's answer: the text the `playlistwithsongs` schema describes, with its fields in the schema's order. */
export function playlistAnswer(playlist: PlaylistWithSongs): PlaylistAnswer {
  const json = Buffer.from(JSON.stringify(playlist));
  return { body: json, etag: etagOf(json) };
}

/**
 * The answer as the caller sees it: the owner's as it is (byte for byte that of API 1.3.0); a member's is the same
 * document with two more fields after the others, `owner` (the owner's name) and `role`, and its own strong ETag.
 */
export function asSeenBy(answer: PlaylistAnswer, grant: Pick<Grant, 'role' | 'ownerName'>): PlaylistAnswer {
  if (grant.role === 'owner') return answer;
  const fields = Buffer.from(`,"owner":${JSON.stringify(grant.ownerName ?? '')},"role":"${grant.role}"}`);
  const body = Buffer.concat([answer.body.subarray(0, answer.body.length - 1), fields]);
  return { body, etag: etagOf(body) };
}

/** Songs serialized between two turns of the event loop. */
const SONGS_PER_TURN = 2000;

/**
 * The answers of several playlists. A page can hold 100 000 songs, about 7 MB: it is written a playlist at a time
 * with the event loop free every 2000 songs, and with the engine's own JSON.stringify, which is several times
 * faster than a schema-compiled serializer on text this long.
 */
export async function playlistAnswers(items: readonly PlaylistWithSongs[]): Promise<PlaylistAnswer[]> {
  const answers: PlaylistAnswer[] = [];
  let songs = 0;
  for (const item of items) {
    answers.push(playlistAnswer(item));
    songs += item.songs.length;
    if (songs >= SONGS_PER_TURN) {
      songs = 0;
      await nextTurn();
    }
  }
  return answers;
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** A page: the JSON array of the playlists' answers, joined as bytes without parsing them again. */
export function pageJson(answers: readonly PlaylistAnswer[]): Buffer {
  const parts: Buffer[] = [OPEN];
  answers.forEach((answer, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(answer.body);
  });
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/**
 * A page's weak ETag, over what it shows: its playlists' own tags and the total in `X-Total-Count`. Weak, since
 * the same tag stands for the page whatever headers (`Link`) come with it.
 */
export function pageEtag(answers: readonly PlaylistAnswer[], total: number): string {
  const hash = createHash('sha1').update(String(total));
  for (const answer of answers) hash.update(answer.etag);
  return `W/"${hash.digest('base64url')}"`;
}
