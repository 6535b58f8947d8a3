// A small client that keeps a copy of a Mixtape user's playlists in a JSON file and replays edits queued offline.
// Node.js 22 or later, no dependencies. docs/api.md ("Keeping a copy") explains each step.
//
//   node examples/sync-client.mjs API USER:PASSWORD COPY.json sync          # bring the copy up to date, print it
//   node examples/sync-client.mjs API USER:PASSWORD COPY.json watch S       # then wait up to S seconds for a change
//   node examples/sync-client.mjs API USER:PASSWORD COPY.json replay QUEUE.json
//                                   # QUEUE.json: {"playlist": ID, "base": VERSION, "ops": [...]}, made offline on
//                                   # that version of the copy
import { readFileSync, writeFileSync, existsSync, renameSync } from 'node:fs';

const [api, credential, file, command, argument] = process.argv.slice(2);
const auth = { security: `Basic ${Buffer.from(credential).toString('base64')}` };
const copy = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { next: undefined, catalog: 0, playlists: {} };
const save = () => {
  writeFileSync(`${file}.tmp`, JSON.stringify(copy, null, 2));
  renameSync(`${file}.tmp`, file); // a crash leaves the old copy or the new one, never half of one
};

async function call(method, path, body, headers = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(`${api}${path}`, {
        method,
        headers: { ...auth, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // 503 and 429 say when to come back; a write with a `key` is safe to send again.
      if ((response.status === 503 || response.status === 429) && attempt < 5) {
        await new Promise((resolve) => setTimeout(resolve, 1000 * Number(response.headers.get('retry-after') ?? 1)));
        continue;
      }
      return response;
    } catch (error) {
      if (attempt >= 5) throw error; // the network: try again, the same request
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

/** Forgets a playlist the user no longer has. */
const drop = (id) => {
  copy.playlists = Object.fromEntries(Object.entries(copy.playlists).filter(([held]) => held !== String(id)));
};

async function json(method, path, body, headers) {
  const response = await call(method, path, body, headers);
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Fetches a playlist's entries unless the copy has them already (304). */
async function refresh(id) {
  const held = copy.playlists[id];
  const response = await call('GET', `/playlist/${id}/entries`, undefined, held ? { 'if-none-match': held.etag } : {});
  if (response.status === 304) return;
  if (response.status === 404 || response.status === 410) return drop(id);
  if (!response.ok) throw new Error(`GET entries ${id}: ${response.status}`);
  const { name, version, entries, role } = await response.json();
  copy.playlists[id] = { name, version, role, etag: response.headers.get('etag'), entries };
}

/** Reads the change feed from the copy's token until it has nothing more (waiting up to `wait` s when it is empty). */
async function sync(wait) {
  for (;;) {
    const since = copy.next === undefined ? '' : `&since=${encodeURIComponent(copy.next)}`;
    const page = await json('GET', `/changes?types=playlist,catalog&limit=500${since}${wait ? `&wait=${wait}` : ''}`);
    for (const item of page.changes) {
      if (item.change === 'catalog') await catalog(item.catalog);
      else if (item.change === 'delete' || item.change === 'unshared') drop(item.id);
      else await refresh(item.id);
    }
    copy.next = page.next;
    save();
    if (!page.more) return page.changes.length;
  }
}

/** Songs renamed by a catalog import: updates the titles and artists the copy shows. */
async function catalog(version) {
  for (let offset = 0; ; offset += 100) {
    const songs = await json('GET', `/song?changedSince=${copy.catalog}&limit=100&offset=${offset}`);
    const byId = new Map(songs.map((song) => [song.id, song]));
    for (const playlist of Object.values(copy.playlists)) {
      for (const entry of playlist.entries) {
        const song = byId.get(entry.id);
        if (song !== undefined) Object.assign(entry, { title: song.title, artist: song.artist });
      }
    }
    if (songs.length < 100) break;
  }
  copy.catalog = version;
}

/** Sends a queue made offline on version `base`, 100 ops a request, each request naming the ones before in `seen`. */
async function replay(queue) {
  const keys = [];
  for (let start = 0; start < queue.ops.length; start += 100) {
    const key = `${queue.playlist}-${queue.base}-${start}`; // the same queue replayed sends the same keys
    const body = { base: queue.base, key, seen: [...keys], ops: queue.ops.slice(start, start + 100) };
    const { results } = await json('POST', `/playlist/${queue.playlist}/edits`, body);
    results.forEach((result, i) => !result.applied && console.log(`op ${start + i}: ${result.message}`));
    keys.push(key);
  }
  await refresh(queue.playlist);
  save();
}

if (command === 'replay') await replay(JSON.parse(readFileSync(argument, 'utf8')));
await sync(command === 'watch' ? Number(argument) : undefined);
for (const [id, playlist] of Object.entries(copy.playlists)) {
  console.log(`${id}\t${playlist.name}\tv${playlist.version}\t${playlist.entries.map((e) => e.title).join(' | ')}`);
}
