/**
 * Search text: what a playlist or song is found by. Both the stored documents and the words a client
 * searches for go through `normaliseText`, so matching is case- and accent-insensitive on every database.
 */

/** Lower case, accents removed, compatibility forms folded (ﬁ → fi, full-width → ASCII), spaces squeezed. */
export function normaliseText(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/\s+/gu, ' ').trim();
}

/** Length in Unicode code points, as JSON Schema counts `maxLength`. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** The distinct normalised words of a search string. */
export function searchWords(search: string): string[] {
  return [...new Set(normaliseText(search.replace(/\p{Cc}/gu, ' ')).split(' '))].filter((word) => word !== '');
}

/** How long the words are as a search, once normalised: what `search`'s length limit bounds. */
export function normalisedLength(words: readonly string[]): number {
  return characterCount(words.join(' '));
}

/** Fields normalised lately: a playlist's document is made again at each write, from the same titles and artists. */
const normalised = new Map<string, string>();
const NORMALISED_KEPT = 20_000;

function normalisedField(field: string): string {
  let normal = normalised.get(field);
  if (normal === undefined) {
    if (normalised.size >= NORMALISED_KEPT) normalised.clear();
    normalised.set(field, (normal = normaliseText(field)));
  }
  return normal;
}

/** One document from several fields; the line breaks keep a word from matching across two fields. */
export function searchDocument(fields: Iterable<string>): string {
  const parts = new Set<string>();
  for (const field of fields) {
    const normal = normalisedField(field);
    if (normal !== '') parts.add(normal);
  }
  return [...parts].join('\n');
}

/** A playlist's search document: its name and its songs' titles, artists and genres (the "type of song"). */
export function playlistDocument(
  name: string,
  songs: readonly { title: string; artist: string; genre: string }[],
): string {
  // A long playlist repeats titles, artists and genres: each distinct text is normalised once.
  const fields = new Set([name]);
  for (const song of songs) fields.add(song.title).add(song.artist).add(song.genre);
  return searchDocument(fields);
}

/** A LIKE pattern that finds the word anywhere, with `%`, `_` and `\` taken literally (ESCAPE '\'). */
export function containsPattern(word: string): string {
  return `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
